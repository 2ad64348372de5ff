/*
 * Ties every NCCL line to its process and communicator, whatever order the
 * lines arrive in (one file per process, one interleaved stream, an engine's
 * capture that moved the plugin's line ahead of NCCL's).
 *
 * - Process: NCCL's prefix "host:pid:tid" (src/debug.cc, ncclDebugLog);
 *   engine prefixes before it are ignored. A hash over host:pid keeps each
 *   line O(1).
 * - Communicator: "... comm %p rank %d nranks %d ... commId 0x%llx - Init
 *   START" (src/init.cc, ncclCommInitRankFunc) gives pointer, rank, GPU and
 *   commId first; "comm %p rank %d nRanks %d nNodes %d" (initTransportsRank)
 *   the node count; the plugin's init line carries the commId it was given
 *   (tuner/core.c). Lines without a pointer or commId (channels, rings,
 *   trees, transports, the graph search) belong to the communicator their
 *   thread is initialising: NCCL prints them on that thread between START
 *   and COMPLETE.
 * - The plugin's init lines (the INFO line and every refusal, which end
 *   with "(commId %016llx)" since issue 19) are tied after the last line:
 *   by commId where they have one, else (older plugins) to the first
 *   communicator of its thread (then process)
 *   with the same nRanks that no plugin line took yet, so a plugin line
 *   printed before NCCL's still lands on its rank and counts once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

/* More distinct processes than any job has: a bound on memory for input
 * that only looks like NCCL's. */
#define DR_MAX_PROCS 200000

void dr_set(char *dst, size_t len, const char *src) {
  size_t n = strlen(src);
  if (n >= len) n = len - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

static void *dr_grow(void *p, size_t n, size_t size, int *oom) {
  /* Doubles at powers of two; n is the count before the new element. */
  if (n & (n - 1) || (n && n < 8)) return p;
  void *q = realloc(p, (n ? n * 2 : 8) * size);
  if (!q) *oom = 1;
  return q;
}

static void set_version(char *dst, size_t len, const struct nl_line *l) {
  dr_set(dst, len, l->field[0]);
  dr_set(dst + strlen(dst), len - strlen(dst), l->field[1]);
}

/* NCCL prints the commId as 0x%llx, the plugin as %016llx: compare them
 * without leading zeros; 0 (ABI v2, a split) is no commId. */
static void set_commid(char *dst, size_t len, const char *hex) {
  while (hex[0] == '0' && hex[1]) hex++;
  dr_set(dst, len, strcmp(hex, "0") ? hex : "");
}

static size_t hash_key(const char *host, long pid) {
  size_t h = 1469598103934665603ull ^ (size_t)pid;
  for (; *host; host++) h = (h ^ (unsigned char)*host) * 1099511628211ull;
  return h;
}

static int rehash(struct dr_doctor *d) {
  size_t cap = d->hash_cap ? d->hash_cap * 2 : 1024;
  int *t = calloc(cap, sizeof *t);
  if (!t) return d->oom = 1, -1;
  for (size_t i = 0; i < d->nproc; i++) {
    size_t h = hash_key(d->procs[i].host, d->procs[i].pid) & (cap - 1);
    while (t[h]) h = (h + 1) & (cap - 1);
    t[h] = (int)i + 1;
  }
  free(d->proc_hash);
  d->proc_hash = t;
  d->hash_cap = cap;
  return 0;
}

static int find_proc(struct dr_doctor *d, const struct nl_line *l) {
  if (d->nproc * 2 >= d->hash_cap && rehash(d)) return -1;
  size_t h = hash_key(l->host, l->pid) & (d->hash_cap - 1);
  for (; d->proc_hash[h]; h = (h + 1) & (d->hash_cap - 1)) {
    struct dr_proc *p = &d->procs[d->proc_hash[h] - 1];
    if (p->pid == l->pid && !strcmp(p->host, l->host)) return d->proc_hash[h] - 1;
  }
  if (d->nproc >= DR_MAX_PROCS) return d->too_many = 1, -1;
  struct dr_proc *p = dr_grow(d->procs, d->nproc, sizeof *p, &d->oom);
  if (!p) return -1;
  d->procs = p;
  p = &d->procs[d->nproc];
  memset(p, 0, sizeof *p);
  SET(p->host, l->host);
  p->pid = l->pid;
  p->head = p->tail = -1;
  p->first = d->nccl_lines;
  d->proc_hash[h] = (int)d->nproc + 1;
  return (int)d->nproc++;
}

static int new_member(struct dr_doctor *d, int pi, long tid) {
  struct dr_member *m = dr_grow(d->mem, d->nmem, sizeof *m, &d->oom);
  if (!m) return -1;
  d->mem = m;
  m = &d->mem[d->nmem];
  memset(m, 0, sizeof *m);
  m->proc = pi;
  m->next = -1;
  m->tid = tid;
  m->rank = m->cudadev = -1;
  m->busid = -1;
  m->coll_ch = m->p2p_ch = m->p2p_per_peer = -1;
  m->fallback_pattern = -1;
  struct dr_proc *p = &d->procs[pi];
  if (p->tail >= 0) d->mem[p->tail].next = (int)d->nmem;
  else p->head = (int)d->nmem;
  p->tail = (int)d->nmem;
  return (int)d->nmem++;
}

static int *thread_slot(struct dr_proc *p, long tid) {
  for (int i = 0; i < p->ncur; i++)
    if (p->cur[i].tid == tid) return &p->cur[i].mem;
  int i = p->ncur < DR_NTHREAD ? p->ncur++ : DR_NTHREAD - 1;
  p->cur[i].tid = tid;
  p->cur[i].mem = -1;
  return &p->cur[i].mem;
}

enum ptr_line { PTR_START, PTR_COMM, PTR_COMPLETE };

/* Whether line l, which begins a communicator at m's pointer, is a repeat of
 * the line that began m (a log shipper's retry, tee output merged): the same
 * rank, size and GPU or commId. A communicator NCCL re-creates at the same
 * address with all of those equal cannot be told from a repeat; it counts once. */
static int repeats(const struct dr_member *m, const struct nl_line *l, enum ptr_line kind) {
  if (kind == PTR_COMM)
    return m->rank == atoi(l->field[1]) && m->nranks == atoi(l->field[2]) &&
           m->nnodes == atoi(l->field[3]);
  char id[32];
  set_commid(id, sizeof id, l->field[3]);
  return m->rank == atoi(l->field[1]) && m->nranks == atoi(l->field[2]) &&
         m->busid == strtoll(l->field[5], NULL, 16) && !strcmp(m->commid, id);
}

/* The member a line with a comm pointer names: the newest of this process
 * with that pointer, unless the line begins a communicator that one already
 * began (NCCL reuses addresses) and is not a repeat of its line; else the
 * thread's placeholder; else new. */
static int by_pointer(struct dr_doctor *d, int pi, const struct nl_line *l, enum ptr_line kind) {
  struct dr_proc *p = &d->procs[pi];
  const char *ptr = l->field[0];
  int *slot = thread_slot(p, l->tid), found = -1;
  for (int i = p->head; i >= 0; i = d->mem[i].next)
    if (!strcmp(d->mem[i].ptr, ptr)) found = i;
  if (found >= 0) {
    const struct dr_member *m = &d->mem[found];
    int begun = kind == PTR_START ? m->comm_line || m->busid >= 0 : kind == PTR_COMM && m->comm_line;
    if (!begun || repeats(m, l, kind)) return *slot = found;
  }
  if (*slot >= 0 && !d->mem[*slot].ptr[0]) found = *slot;
  else found = new_member(d, pi, l->tid);
  if (found >= 0) {
    SET(d->mem[found].ptr, ptr);
    *slot = found;
  }
  return found;
}

/* The member a line without pointer or commId belongs to: the one its
 * thread is initialising (a placeholder until NCCL names it). */
static int current(struct dr_doctor *d, int pi, long tid) {
  int *slot = thread_slot(&d->procs[pi], tid);
  if (*slot < 0) *slot = new_member(d, pi, tid);
  return *slot;
}

static int via_index(struct dr_doctor *d, const char *via) {
  for (int i = 0; i < d->nvia; i++)
    if (!strcmp(d->via[i], via)) return i;
  if (d->nvia == (int)(sizeof d->via / sizeof d->via[0])) return d->nvia - 1;
  if (!(d->via[d->nvia] = strdup(via))) return d->oom = 1, 0;
  return d->nvia++;
}

static void add_link(struct dr_doctor *d, int pi, const struct nl_line *l) {
  int rank = atoi(l->field[1]), peer = atoi(l->field[3]);
  /* NET prints both ends; the sender's line is the pair's. */
  if (!strcmp(l->field[5], "receive")) return;
  int mi = current(d, pi, l->tid);
  /* Connections made at the first collective (NCCL_RUNTIME_CONNECT) may come
   * on another thread: the rank says which of the process's members. */
  if (mi >= 0 && d->mem[mi].rank >= 0 && d->mem[mi].rank != rank)
    for (int i = d->procs[pi].head; i >= 0; i = d->mem[i].next)
      if (d->mem[i].rank == rank) mi = i;
  if (mi < 0) return;
  struct dr_member *m = &d->mem[mi];
  if (m->rank < 0) m->rank = rank;
  struct dr_link *n = dr_grow(m->links, m->nlinks, sizeof *n, &d->oom);
  if (!n) return;
  m->links = n;
  m->links[m->nlinks].peer = peer;
  m->links[m->nlinks++].via = via_index(d, l->field[6]);
}

static void add_decision(struct dr_doctor *d, int pi, const struct nl_line *l) {
  struct dr_decision key;
  memset(&key, 0, sizeof key);
  key.proc = pi;
  SET(key.coll, l->field[0]);
  key.bytes = strtoull(l->field[1], NULL, 10);
  SET(key.mode, l->field[2]);
  SET(key.choice, l->field[3]);
  key.ch = atoi(l->field[4]);
  SET(key.why, l->field[5]);
  /* Few distinct decisions (sizes x collectives x processes); the trace is
   * optional. */
  for (size_t i = 0; i < d->ndec; i++) {
    struct dr_decision *x = &d->dec[i];
    if (x->proc == pi && x->bytes == key.bytes && x->ch == key.ch && !strcmp(x->coll, key.coll) &&
        !strcmp(x->mode, key.mode) && !strcmp(x->choice, key.choice) && !strcmp(x->why, key.why)) {
      x->count++;
      return;
    }
  }
  struct dr_decision *n = dr_grow(d->dec, d->ndec, sizeof *n, &d->oom);
  if (!n) return;
  d->dec = n;
  key.count = 1;
  d->dec[d->ndec++] = key;
}

/* The hex digits after the last "(commId " in msg, or NULL. */
static const char *last_commid(const char *msg) {
  const char *at = NULL;
  for (const char *c = msg; c && (c = strstr(c, "(commId ")); c++) at = c;
  return at ? at + strlen("(commId ") : NULL;
}

/* A reason without the trailing " (commId ...)" the plugin adds. */
static void set_reason(char *dst, size_t len, const char *reason) {
  const char *c = last_commid(reason);
  size_t n = c ? (size_t)(c - strlen(" (commId ") - reason) : strlen(reason);
  if (n >= len) n = len - 1;
  memcpy(dst, reason, n);
  dst[n] = 0;
}

static void add_plug(struct dr_doctor *d, int pi, const struct nl_line *l, const struct dr_outcome *o) {
  struct dr_plug *n = dr_grow(d->plugs, d->nplug, sizeof *n, &d->oom);
  if (!n) return;
  d->plugs = n;
  n = &d->plugs[d->nplug++];
  memset(n, 0, sizeof *n);
  n->proc = pi;
  n->tid = l->tid;
  n->out = *o;
  if (o->state == DR_PROFILE) {
    set_commid(n->commid, sizeof n->commid, l->commid);
    n->nranks = atoi(l->field[4]);
    n->nnodes = atoi(l->field[5]);
  } else {
    /* The plugin ends every init refusal with "(commId %016llx)"
     * (tuner/core.c, initf); older lines have none, and are tied by thread
     * and order (dr_tie). */
    char hex[32];
    const char *c = last_commid(l->msg);
    if (c && sscanf(c, "%31[0-9a-fA-F]", hex) == 1) set_commid(n->commid, sizeof n->commid, hex);
  }
}

/* Enough for every captured graph of a serving job; beyond, counted only. */
#define DR_MAX_COLLS 2000000

static void add_coll(struct dr_doctor *d, int pi, const struct nl_line *l) {
  if (d->ncoll >= DR_MAX_COLLS) {
    d->colls_dropped++;
    return;
  }
  struct dr_coll *n = dr_grow(d->colls, d->ncoll, sizeof *n, &d->oom);
  if (!n) return;
  d->colls = n;
  n = &d->colls[d->ncoll++];
  memset(n, 0, sizeof *n);
  n->proc = pi;
  SET(n->op, l->field[0]);
  n->count = strtoull(l->field[2], NULL, 10);
  n->dtype = atoi(l->field[3]);
  SET(n->ptr, l->field[4]);
  n->nranks = atoi(l->field[5]);
}

static void add_env(struct dr_proc *p, const struct nl_line *l) {
  int i = 0;
  while (i < p->nenv && strcmp(p->env[i][0], l->field[0])) i++;
  if (i == DR_NENV) return;
  if (i == p->nenv) p->nenv++;
  SET(p->env[i][0], l->field[0]);
  SET(p->env[i][1], l->field[1]);
}

static void take_comm(struct dr_doctor *d, int pi, const struct nl_line *l) {
  int mi;
  struct dr_member *m;
  switch (l->kind) {
  case NL_COMM:
    if ((mi = by_pointer(d, pi, l, PTR_COMM)) < 0) return;
    m = &d->mem[mi];
    m->comm_line = 1;
    m->rank = atoi(l->field[1]);
    m->nranks = atoi(l->field[2]);
    m->nnodes = atoi(l->field[3]);
    break;
  case NL_COMM_INIT: {
    enum ptr_line kind = strcmp(l->field[6], "START") ? PTR_COMPLETE : PTR_START;
    if ((mi = by_pointer(d, pi, l, kind)) < 0) return;
    m = &d->mem[mi];
    m->rank = atoi(l->field[1]);
    m->nranks = atoi(l->field[2]);
    if (l->field[3][0] && !m->commid[0]) set_commid(m->commid, sizeof m->commid, l->field[3]);
    m->cudadev = atoi(l->field[4]);
    m->busid = strtoll(l->field[5], NULL, 16);
    break;
  }
  case NL_CHANNELS:
    if ((mi = current(d, pi, l->tid)) < 0) return;
    m = &d->mem[mi];
    m->coll_ch = atoi(l->field[0]);
    if (l->field[3][0]) m->p2p_ch = atoi(l->field[3]);
    if (l->field[4][0]) m->p2p_per_peer = atoi(l->field[4]);
    break;
  case NL_RING:
    if ((mi = current(d, pi, l->tid)) < 0) return;
    m = &d->mem[mi];
    m->ring_total = atoi(l->field[1]);
    /* One ring per channel: a repeated line is the same ring. */
    int seen = 0, ch = atoi(l->field[0]);
    for (int r = 0; r < m->nrings; r++) seen |= m->ring_ch[r] == ch;
    if (!seen && m->nrings < DR_NRING) {
      m->ring_ch[m->nrings] = ch;
      /* One blank between ranks, whatever width NCCL padded them to. */
      char ranks[NL_FIELD_LEN], *w = ranks;
      for (const char *r = l->field[2]; *r; r++)
        if (*r != ' ' || (w > ranks && w[-1] != ' ')) *w++ = *r;
      *w = 0;
      if (!(m->rings[m->nrings] = strdup(ranks))) d->oom = 1;
      else m->nrings++;
    }
    break;
  case NL_TREES:
    if ((mi = current(d, pi, l->tid)) >= 0) SET(d->mem[mi].trees, l->field[0]);
    break;
  case NL_TRANSPORT: add_link(d, pi, l); break;
  case NL_GRAPH: {
    if ((mi = current(d, pi, l->tid)) < 0) return;
    m = &d->mem[mi];
    struct dr_graph g;
    memset(&g, 0, sizeof g);
    g.pattern = atoi(l->field[0]);
    g.nchannels = atoi(l->field[1]);
    g.bw_intra = atof(l->field[2]);
    g.bw_inter = atof(l->field[3]);
    SET(g.type_intra, l->field[4]);
    SET(g.type_inter, l->field[5]);
    /* NCCL prints each graph it searched once per communicator. */
    int i = 0;
    while (i < m->ngraph && m->graph[i].pattern != g.pattern) i++;
    if (i < DR_NGRAPH) m->graph[i] = g;
    if (i == m->ngraph && i < DR_NGRAPH) m->ngraph++;
    break;
  }
  case NL_GRAPH_FALLBACK:
    if ((mi = current(d, pi, l->tid)) >= 0) d->mem[mi].fallback_pattern = atoi(l->field[0]);
    break;
  default: break;
  }
}

void dr_take(struct dr_doctor *d, const struct nl_line *l) {
  if (l->level == NL_BARE) {
    set_version(d->bare_version, sizeof d->bare_version, l);
    return;
  }
  int pi = find_proc(d, l);
  if (pi < 0) return;
  dr_engine_tie(d, pi);
  struct dr_proc *p = &d->procs[pi];
  struct dr_outcome o;
  p->last = d->nccl_lines++;
  if (d->mtime > p->mtime) p->mtime = d->mtime;
  switch (l->kind) {
  case NL_VERSION: set_version(p->version, sizeof p->version, l); break;
  case NL_TUNER_ENV: SET(p->tuner_env, l->field[0]); break;
  case NL_TUNER_USING_V:
    SET(p->name, l->field[0]);
    p->abi = atoi(l->field[1]);
    break;
  case NL_TUNER_USING: SET(p->name, l->field[0]); break;
  case NL_TUNER_NOSYM: {
    int v = atoi(l->field[0]);
    if (!p->nosym_min || v < p->nosym_min) p->nosym_min = v;
    break;
  }
  case NL_TUNER_LOADED: SET(p->loaded, l->field[0]); break;
  case NL_TUNER_UNSUPPORTED: SET(p->unsupported, l->field[0]); break;
  case NL_TUNER_NOTFOUND: {
    const char *s = l->field[0];
    while (*s == ' ') s++;
    SET(p->notfound, s);
    char *cut = strstr(p->notfound, ". Using");
    if (cut) *cut = 0;
    break;
  }
  case NL_TUNER_INTERNAL: p->internal = 1; break;
  case NL_TUNER_MSG: SET(p->openerr, l->field[0]); break;
  case NL_ENV: add_env(p, l); break;
  case NL_P2P_DISABLED:
    for (int i = 0; i < p->np2p_off; i++)
      if (p->p2p_off[i][0] == atoi(l->field[0]) && p->p2p_off[i][1] == atoi(l->field[1])) return;
    if (p->np2p_off < 8) {
      p->p2p_off[p->np2p_off][0] = atoi(l->field[0]);
      p->p2p_off[p->np2p_off++][1] = atoi(l->field[1]);
    }
    break;
  case NL_PT_PROFILE:
    p->ours = 1;
    memset(&o, 0, sizeof o);
    o.state = DR_PROFILE;
    SET(o.path, l->field[0]);
    SET(o.name, l->field[1]);
    SET(o.hash, l->field[2]);
    o.intervals = atoi(l->field[3]);
    add_plug(d, pi, l, &o);
    break;
  case NL_PT_MSG:
    p->ours = 1;
    /* A WARN at init always means the plugin stepped aside (tuner/core.c);
     * read it as a refusal even if its wording changed. */
    if (l->level != NL_WARN) break;
    /* fall through */
  case NL_PT_REFUSE:
    p->ours = 1;
    /* A WARN that the profile still decides (NCCL_* differ from when it
     * was measured, a global NCCL_PROTO/NCCL_ALGO) is no outcome: the init
     * line after it is. */
    if (strstr(l->msg, "is set for the whole job")) SET(p->global_warn, l->msg);
    if (strstr(l->msg, "; the profile still decides")) break;
    memset(&o, 0, sizeof o);
    o.state = DR_REFUSED;
    o.warn = l->level == NL_WARN;
    o.cls = nl_refusal_class(l->field[0], l->level);
    set_reason(o.reason, sizeof o.reason, l->field[0]);
    add_plug(d, pi, l, &o);
    break;
  case NL_PT_TRACE: p->ours = 1; add_decision(d, pi, l); break;
  case NL_COLL: add_coll(d, pi, l); break;
  default: take_comm(d, pi, l); break;
  }
}

/* Whether plug line g may be member m's: not taken, no other commId, the
 * same nRanks where both are known. */
static int fits(const struct dr_plug *g, const struct dr_member *m) {
  if (m->plugged) return 0;
  if (g->commid[0] && m->commid[0] && strcmp(g->commid, m->commid)) return 0;
  return !g->nranks || !m->nranks || g->nranks == m->nranks;
}

static int pick(const struct dr_doctor *d, const struct dr_plug *g, int exact_id, int same_tid) {
  for (int i = d->procs[g->proc].head; i >= 0; i = d->mem[i].next) {
    const struct dr_member *m = &d->mem[i];
    if (!fits(g, m) || (same_tid && m->tid != g->tid)) continue;
    if (exact_id && (!g->commid[0] || strcmp(g->commid, m->commid))) continue;
    /* Only NCCL's communicators, not placeholders of stray lines. */
    if (!exact_id && !m->comm_line && m->busid < 0 && !m->commid[0]) continue;
    return i;
  }
  return -1;
}

static int same_out(const struct dr_outcome *a, const struct dr_outcome *b) {
  return a->state == b->state && !strcmp(a->hash, b->hash) && !strcmp(a->reason, b->reason);
}

/* A plugin line with no member left for it is a repeat when a rank of its
 * process already took the same outcome for the same commId (or, without
 * one, the same nRanks): more such lines than ranks is a repeated line. */
static int repeated_plug(const struct dr_doctor *d, const struct dr_plug *g) {
  for (int i = d->procs[g->proc].head; i >= 0; i = d->mem[i].next) {
    const struct dr_member *m = &d->mem[i];
    if (!m->plugged || !same_out(&m->out, &g->out)) continue;
    if (g->commid[0] ? !strcmp(g->commid, m->commid) : !g->nranks || g->nranks == m->nranks) return 1;
  }
  return 0;
}

void dr_tie(struct dr_doctor *d) {
  for (size_t k = 0; k < d->nplug; k++) {
    const struct dr_plug *g = &d->plugs[k];
    int mi = pick(d, g, 1, 1);
    if (mi < 0) mi = pick(d, g, 1, 0);
    if (mi < 0) mi = pick(d, g, 0, 1);
    if (mi < 0) mi = pick(d, g, 0, 0);
    if (mi < 0 && repeated_plug(d, g)) continue;
    if (mi < 0 && (mi = new_member(d, g->proc, g->tid)) < 0) return;
    struct dr_member *m = &d->mem[mi];
    m->out = g->out;
    m->plugged = 1;
    if (!m->commid[0]) SET(m->commid, g->commid);
    if (!m->nranks) m->nranks = g->nranks;
    if (!m->nnodes) m->nnodes = g->nnodes;
  }
}

void dr_free(struct dr_doctor *d) {
  for (size_t i = 0; i < d->nmem; i++) {
    for (int r = 0; r < d->mem[i].nrings; r++) free(d->mem[i].rings[r]);
    free(d->mem[i].links);
  }
  for (int i = 0; i < d->nvia; i++) free(d->via[i]);
  free(d->procs);
  free(d->mem);
  free(d->plugs);
  free(d->dec);
  free(d->colls);
  free(d->proc_hash);
  free(d->eng);
}

/* A member that stands for a rank: NCCL's comm lines or the plugin's; a
 * placeholder holding only stray lines of a thread is not one. */
static int is_rank(const struct dr_member *m) {
  return m->comm_line || m->busid >= 0 || m->commid[0] || m->plugged || m->nranks;
}

static const struct dr_doctor *sort_d;

static int cmp_member(const void *a, const void *b) {
  const struct dr_member *x = &sort_d->mem[*(const size_t *)a], *y = &sort_d->mem[*(const size_t *)b];
  /* Without a commId, nRanks and nNodes are all there is to group by. */
  int c = strcmp(x->commid, y->commid);
  if (!c && !x->commid[0]) c = x->nranks != y->nranks ? x->nranks - y->nranks : x->nnodes - y->nnodes;
  if (!c) c = x->rank - y->rank;
  if (!c) c = *(const size_t *)a < *(const size_t *)b ? -1 : 1;
  return c;
}

int dr_comms(const struct dr_doctor *d, int job, struct dr_comms *c) {
  size_t n = 0;
  memset(c, 0, sizeof *c);
  c->order = malloc((d->nmem + 1) * sizeof *c->order);
  c->start = malloc((d->nmem + 2) * sizeof *c->start);
  if (!c->order || !c->start) return -1;
  for (size_t i = 0; i < d->nmem; i++)
    if (is_rank(&d->mem[i]) && (job < 0 || d->procs[d->mem[i].proc].job == job)) c->order[n++] = i;
  sort_d = d;
  qsort(c->order, n, sizeof *c->order, cmp_member);
  for (size_t i = 0; i < n; i++) {
    const struct dr_member *x = &d->mem[c->order[i]];
    const struct dr_member *y = i ? &d->mem[c->order[i - 1]] : NULL;
    if (!y || strcmp(x->commid, y->commid) ||
        (!x->commid[0] && (x->nranks != y->nranks || x->nnodes != y->nnodes)))
      c->start[c->n++] = i;
  }
  c->start[c->n] = n;
  return (int)c->n;
}

void dr_comms_free(struct dr_comms *c) {
  free(c->order);
  free(c->start);
}

int dr_ranks_seen(const struct dr_doctor *d, const struct dr_comms *c, size_t k) {
  int seen = 0, nranks = d->mem[c->order[c->start[k]]].nranks, last = -2;
  for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
    int r = d->mem[c->order[i]].rank;
    /* Sorted by rank: a repeated rank is one rank (the same file twice). */
    if (r < 0 || r != last) seen++;
    last = r;
  }
  return nranks > 0 && seen > nranks ? nranks : seen;
}

void dr_busid(long long id, char *buf, size_t len) {
  /* NCCL's busId is the PCI address read as hex without its separators
   * (src/misc/utils.cc, busIdToInt64): 0x17000 is 0000:17:00.0. */
  snprintf(buf, len, "%04llx:%02llx:%02llx.%llx", (id >> 20) & 0xffff, (id >> 12) & 0xff,
           (id >> 4) & 0xff, id & 0xf);
}

void dr_where(const struct dr_doctor *d, const struct dr_member *m, char *buf, size_t len) {
  const struct dr_proc *p = &d->procs[m->proc];
  char dev[32] = "", bus[48] = "";
  if (m->cudadev >= 0) snprintf(dev, sizeof dev, " cudaDev %d", m->cudadev);
  if (m->busid >= 0) {
    memcpy(bus, " busId ", 8);
    dr_busid(m->busid, bus + 7, sizeof bus - 7);
  }
  snprintf(buf, len, "%s:%ld%s%s", p->host, p->pid, dev, bus);
}
