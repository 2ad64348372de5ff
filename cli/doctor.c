/*
 * pcie-tune doctor: reads the NCCL_DEBUG=INFO logs of a real job and says
 * whether the plugin was loaded, which profile each rank of each
 * communicator uses, what it refused and why, and (with PCIE_TUNER_TRACE=1)
 * what it decided. The line formats are import/ncclog.c's; this file only
 * gathers the lines per process and communicator and judges them.
 *
 * How lines are tied together: NCCL prints "comm %p rank R nRanks N nNodes M"
 * on the initialising thread before it calls the tuner's init (src/init.cc,
 * initTransportsRank), so the plugin's next line on the same host:pid:tid
 * belongs to that rank; "... commId 0x.. - Init COMPLETE" gives the
 * communicator's id for the same comm pointer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmds.h"
#include "import/ncclog.h"

#define PT_NAME "PcieTuner"

enum { EXIT_WORKING = 0, EXIT_NOINPUT = 1, EXIT_USAGE = 2, EXIT_NOT_LOADED = 3, EXIT_IDLE = 4,
       EXIT_MISMATCH = 5 };

static const char usage[] =
    "usage: pcie-tune doctor [-q|--quiet] LOG...\n"
    "\n"
    "Reads the logs of a job run with NCCL_DEBUG=INFO (best with\n"
    "NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV, and PCIE_TUNER_TRACE=1 to see decisions):\n"
    "one file, one file per rank (NCCL_DEBUG_FILE=/tmp/nccl.%h.%p), or the job's\n"
    "whole output with NCCL's lines among the rest; '-' reads stdin. Reports the\n"
    "NCCL version, whether NCCL loaded the plugin and with which tuner ABI (or\n"
    "why not), the profile each rank of each communicator uses and its hash,\n"
    "every refusal with its reason, and the traced decisions.\n"
    "\n"
    "  -q, --quiet   print only the verdict line\n"
    "\n"
    "Exit status: 0 working (at least one communicator tuned, all ranks agree),\n"
    "1 no NCCL log lines or unreadable input, 2 bad usage, 3 plugin not loaded,\n"
    "4 loaded but every communicator left to NCCL, 5 ranks disagree.\n";

struct proc {
  char host[128];
  long pid;
  char version[64], tuner_env[256], loaded[512], name[128], notfound[512], openerr[512];
  char unsupported[512];
  int abi, nosym_min, internal, ours; /* ours: our plugin said something */
};

enum mstate { M_SILENT, M_PROFILE, M_REFUSED };

struct member {
  int proc;
  long tid;
  char ptr[32], commid[32];
  int rank, nranks, nnodes;
  enum mstate state;
  char path[512], name[128], hash[32], reason[640];
  const char *cls;
  int warn, intervals;
};

struct decision {
  char coll[24], mode[8], choice[48], why[48];
  unsigned long long bytes;
  int ch;
  unsigned long count;
};

struct doctor {
  struct proc *procs;
  size_t nproc;
  struct member *mem;
  size_t nmem;
  struct decision *dec;
  size_t ndec;
  char bare_version[64];
  unsigned long nccl_lines, trace_calls, trace_nccl;
  int oom;
};

/* Copies as much of src as fits; log fields may be longer than our slots. */
static void set_str(char *dst, size_t len, const char *src) {
  size_t n = strlen(src);
  if (n >= len) n = len - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}
#define SET(dst, src) set_str((dst), sizeof(dst), (src))

static void set_version(char *dst, size_t len, const struct nl_line *l) {
  set_str(dst, len, l->field[0]);
  set_str(dst + strlen(dst), len - strlen(dst), l->field[1]);
}

/* NCCL prints the commId as 0x%llx, the plugin as %016llx: compare them
 * without leading zeros. */
static void set_commid(char *dst, size_t len, const char *hex) {
  while (hex[0] == '0' && hex[1]) hex++;
  set_str(dst, len, hex);
}

static void *grow(void *p, size_t n, size_t size, int *oom) {
  /* Doubles at powers of two; n is the count before the new element. */
  if (n & (n - 1) || (n && n < 8)) return p;
  void *q = realloc(p, (n ? n * 2 : 8) * size);
  if (!q) *oom = 1;
  return q;
}

static int find_proc(struct doctor *d, const struct nl_line *l) {
  for (size_t i = 0; i < d->nproc; i++)
    if (d->procs[i].pid == l->pid && !strcmp(d->procs[i].host, l->host)) return (int)i;
  struct proc *p = grow(d->procs, d->nproc, sizeof *p, &d->oom);
  if (!p) return -1;
  d->procs = p;
  p = &d->procs[d->nproc];
  memset(p, 0, sizeof *p);
  SET(p->host, l->host);
  p->pid = l->pid;
  return (int)d->nproc++;
}

static struct member *new_member(struct doctor *d, int proc, long tid) {
  struct member *m = grow(d->mem, d->nmem, sizeof *m, &d->oom);
  if (!m) return NULL;
  d->mem = m;
  m = &d->mem[d->nmem++];
  memset(m, 0, sizeof *m);
  m->proc = proc;
  m->tid = tid;
  m->rank = -1;
  return m;
}

/* The rank the plugin's init line belongs to: the newest communicator of
 * that thread still waiting for the plugin's word, else of that process. */
static struct member *pending(struct doctor *d, int proc, long tid) {
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = d->nmem; i-- > 0;)
      if (d->mem[i].proc == proc && (pass || d->mem[i].tid == tid) && d->mem[i].state == M_SILENT)
        return &d->mem[i];
  return new_member(d, proc, tid);
}

static void add_decision(struct doctor *d, const struct nl_line *l) {
  struct decision key;
  memset(&key, 0, sizeof key);
  SET(key.coll, l->field[0]);
  key.bytes = strtoull(l->field[1], NULL, 10);
  SET(key.mode, l->field[2]);
  SET(key.choice, l->field[3]);
  key.ch = atoi(l->field[4]);
  SET(key.why, l->field[5]);
  d->trace_calls++;
  if (!key.choice[0]) d->trace_nccl++;
  for (size_t i = 0; i < d->ndec; i++) {
    struct decision *x = &d->dec[i];
    if (x->bytes == key.bytes && x->ch == key.ch && !strcmp(x->coll, key.coll) &&
        !strcmp(x->mode, key.mode) && !strcmp(x->choice, key.choice) && !strcmp(x->why, key.why)) {
      x->count++;
      return;
    }
  }
  struct decision *n = grow(d->dec, d->ndec, sizeof *n, &d->oom);
  if (!n) return;
  d->dec = n;
  key.count = 1;
  d->dec[d->ndec++] = key;
}

static void take(struct doctor *d, const struct nl_line *l) {
  if (l->level == NL_BARE) {
    set_version(d->bare_version, sizeof d->bare_version, l);
    return;
  }
  int pi = find_proc(d, l);
  if (pi < 0) return;
  struct proc *p = &d->procs[pi];
  struct member *m;
  d->nccl_lines++;
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
  case NL_COMM:
    if (!(m = new_member(d, pi, l->tid))) break;
    SET(m->ptr, l->field[0]);
    m->rank = atoi(l->field[1]);
    m->nranks = atoi(l->field[2]);
    m->nnodes = atoi(l->field[3]);
    break;
  case NL_COMM_DONE:
    for (size_t i = d->nmem; i-- > 0;)
      if (d->mem[i].proc == pi && !strcmp(d->mem[i].ptr, l->field[0])) {
        if (!d->mem[i].commid[0]) set_commid(d->mem[i].commid, sizeof d->mem[i].commid, l->field[3]);
        break;
      }
    break;
  case NL_PT_PROFILE:
    p->ours = 1;
    if (!(m = pending(d, pi, l->tid))) break;
    m->state = M_PROFILE;
    SET(m->path, l->field[0]);
    SET(m->name, l->field[1]);
    SET(m->hash, l->field[2]);
    m->intervals = atoi(l->field[3]);
    if (!m->nranks) m->nranks = atoi(l->field[4]);
    if (!m->nnodes) m->nnodes = atoi(l->field[5]);
    /* v2 has no commId and passes 0. */
    if (!m->commid[0] && l->commid[0] && strspn(l->commid, "0") != strlen(l->commid))
      set_commid(m->commid, sizeof m->commid, l->commid);
    break;
  case NL_PT_MSG:
    p->ours = 1;
    /* A WARN at init always means the plugin stepped aside (tuner/core.c);
     * read it as a refusal even if its wording changed. */
    if (l->level != NL_WARN) break;
    /* fall through */
  case NL_PT_REFUSE:
    p->ours = 1;
    if (!(m = pending(d, pi, l->tid))) break;
    m->state = M_REFUSED;
    m->warn = l->level == NL_WARN;
    m->cls = nl_refusal_class(l->field[0], l->level);
    SET(m->reason, l->field[0]);
    break;
  case NL_PT_TRACE: p->ours = 1; add_decision(d, l); break;
  case NL_CHANNELS:
  case NL_ENV:
  case NL_OTHER: break;
  }
}

static int read_input(struct doctor *d, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  struct nl_line l;
  if (!f) {
    fprintf(stderr, "pcie-tune doctor: %s: %s\n", path, strerror(errno));
    return -1;
  }
  while ((n = getline(&line, &cap, f)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (nl_parse(line, &l)) take(d, &l);
  }
  int err = ferror(f);
  free(line);
  if (f != stdin) fclose(f);
  if (err) fprintf(stderr, "pcie-tune doctor: %s: read error\n", path);
  return err ? -1 : 0;
}

/* The newest tuner ABI an NCCL release tries first (src/plugin/tuner.cc,
 * ncclTunerPluginLoad, per tag); 0 when unknown. */
static int newest_abi(const char *version) {
  int maj = 0, min = 0;
  if (sscanf(version, "%d.%d", &maj, &min) != 2 || maj != 2) return 0;
  if (min <= 21) return min >= 19 ? 2 : 0;
  if (min <= 23) return 3;
  if (min <= 27) return 4;
  if (min <= 29) return 5;
  if (min <= 31) return 6;
  return 7;
}

static int proc_abi(const struct proc *p) {
  if (p->abi) return p->abi;
  if (!p->name[0]) return 0;
  /* NCCL <= 2.27 names no version; it tries the newest first and says which
   * symbols were missing. */
  if (p->nosym_min) return p->nosym_min - 1;
  return newest_abi(p->version);
}

static int loaded_ours(const struct proc *p) {
  return p->ours || !strcmp(p->name, PT_NAME) || strstr(p->loaded, "libnccl-tuner-pcie");
}

/* "0-3,5,7" into buf. */
static void ranks_text(char *buf, size_t len, const int *r, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && used + 1 < len;) {
    size_t j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
    if (r[i] < 0)
      used += (size_t)snprintf(buf + used, len - used, "%s?", used ? "," : "");
    else if (j > i)
      used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", r[i], r[j]);
    else
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", r[i]);
    if (used >= len) break; /* truncated; snprintf kept it terminated */
    i = j + 1;
  }
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static int same_outcome(const struct member *a, const struct member *b) {
  if (a->state != b->state) return 0;
  if (a->state == M_PROFILE) return !strcmp(a->hash, b->hash);
  if (a->state == M_REFUSED) return !strcmp(a->reason, b->reason);
  return 1;
}

static int same_comm(const struct member *a, const struct member *b) {
  if (a->commid[0] || b->commid[0]) return !strcmp(a->commid, b->commid);
  return a->nranks == b->nranks && a->nnodes == b->nnodes;
}

static void describe(const struct doctor *d, const struct member *m, char *buf, size_t len) {
  const struct proc *p = &d->procs[m->proc];
  if (m->state == M_PROFILE)
    snprintf(buf, len, "profile '%s' hash %s (%s, %d intervals)", m->name, m->hash, m->path,
             m->intervals);
  else if (m->state == M_REFUSED)
    snprintf(buf, len, "left to NCCL, %s%s: %s", m->cls, m->warn ? " (WARN)" : "", m->reason);
  else if (loaded_ours(p))
    snprintf(buf, len, "no word from the plugin (NCCL_DEBUG_SUBSYS without INIT or TUNING?)");
  else
    snprintf(buf, len, "plugin not loaded in this process");
}

/* Prints each communicator; returns the number whose ranks disagree and
 * counts those using a profile on every rank. */
static int report_comms(const struct doctor *d, int quiet, int *tuned) {
  int bad = 0;
  char *done = calloc(d->nmem ? d->nmem : 1, 1);
  int *ranks = malloc((d->nmem ? d->nmem : 1) * sizeof *ranks);
  char *grp = calloc(d->nmem ? d->nmem : 1, 1);
  *tuned = 0;
  if (!done || !ranks || !grp) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    bad = -1;
    goto out;
  }
  for (size_t i = 0; i < d->nmem; i++) {
    if (done[i]) continue;
    const struct member *c = &d->mem[i];
    int outcomes = 0, all_profile = 1;
    size_t members = 0;
    memset(grp, 0, d->nmem);
    for (size_t j = i; j < d->nmem; j++)
      if (!done[j] && same_comm(c, &d->mem[j])) {
        grp[j] = 1;
        done[j] = 1;
        members++;
        all_profile &= d->mem[j].state == M_PROFILE;
      }
    /* One line per distinct outcome, with the ranks that had it. */
    char *seen = calloc(d->nmem, 1);
    if (!seen) {
      bad = -1;
      goto out;
    }
    if (!quiet) {
      printf("\ncommunicator %s: nRanks %d nNodes %d, %zu rank%s in the log\n",
             c->commid[0] ? c->commid : "(no commId in the log)", c->nranks, c->nnodes, members,
             members == 1 ? "" : "s");
    }
    for (size_t j = i; j < d->nmem; j++) {
      if (!grp[j] || seen[j]) continue;
      size_t n = 0;
      for (size_t k = j; k < d->nmem; k++)
        if (grp[k] && !seen[k] && same_outcome(&d->mem[j], &d->mem[k])) {
          seen[k] = 1;
          ranks[n++] = d->mem[k].rank;
        }
      qsort(ranks, n, sizeof *ranks, cmp_int);
      char rt[256], what[1200];
      ranks_text(rt, sizeof rt, ranks, n);
      describe(d, &d->mem[j], what, sizeof what);
      if (!quiet) printf("  rank%s %s: %s\n", n == 1 && ranks[0] >= 0 ? "" : "s", rt, what);
      outcomes++;
    }
    free(seen);
    if (outcomes > 1) {
      bad++;
      fprintf(stderr,
              "pcie-tune doctor: ERROR: the ranks of communicator %s (nRanks %d) disagree: NCCL "
              "needs the same decision on every rank; give every rank the same profile and "
              "environment\n",
              c->commid[0] ? c->commid : "?", c->nranks);
    }
    if (c->nranks > 0 && members < (size_t)c->nranks && !quiet)
      printf("  (only %zu of %d ranks in these logs: pass every rank's file)\n", members, c->nranks);
    if (all_profile && outcomes == 1) (*tuned)++;
  }
out:
  free(done);
  free(ranks);
  free(grp);
  return bad;
}

static int cmp_dec(const void *a, const void *b) {
  const struct decision *x = a, *y = b;
  int c = strcmp(x->coll, y->coll);
  if (!c) c = strcmp(x->mode, y->mode);
  if (!c) c = x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
  if (!c) c = strcmp(x->choice, y->choice);
  return c;
}

static void report_trace(struct doctor *d) {
  if (!d->ndec) return;
  qsort(d->dec, d->ndec, sizeof *d->dec, cmp_dec);
  printf("\ndecisions traced (PCIE_TUNER_TRACE=1), calls summed over ranks:\n");
  printf("  %-14s %-5s %12s  %-22s %8s  %s\n", "collective", "mode", "bytes", "choice", "calls",
         "why");
  for (size_t i = 0; i < d->ndec; i++) {
    const struct decision *x = &d->dec[i];
    char ch[64];
    if (x->choice[0]) snprintf(ch, sizeof ch, "%s %d ch", x->choice, x->ch);
    else snprintf(ch, sizeof ch, "NCCL's own");
    printf("  %-14s %-5s %12llu  %-22s %8lu  %s\n", x->coll, x->mode, x->bytes, ch, x->count, x->why);
  }
  printf("  %lu of %lu traced calls left to NCCL\n", d->trace_nccl, d->trace_calls);
}

/* Why no process loaded this plugin, from what NCCL said. */
static void why_not_loaded(const struct proc *p) {
  if (p->unsupported[0])
    printf("  %s:%ld: NCCL opened %s but found no tuner ABI it supports (wrong ABI: this NCCL "
           "tries up to v%d; see README, Compatibility)\n",
           p->host, p->pid, p->unsupported, newest_abi(p->version));
  else if (p->name[0] && strcmp(p->name, PT_NAME))
    printf("  %s:%ld: NCCL loaded another tuner plugin, '%s'\n", p->host, p->pid, p->name);
  else if (p->openerr[0])
    printf("  %s:%ld: the library failed to load: %s\n", p->host, p->pid, p->openerr);
  else if (p->notfound[0])
    printf("  %s:%ld: not found: NCCL tried %s (wrong name, or not in the loader's path: give "
           "NCCL_TUNER_PLUGIN the absolute path of libnccl-tuner-pcie.so)\n",
           p->host, p->pid, p->notfound);
  else if (p->nosym_min)
    printf("  %s:%ld: the library exports no tuner ABI this NCCL knows (wrong ABI)\n", p->host,
           p->pid);
  else if (!p->tuner_env[0])
    printf("  %s:%ld: NCCL_TUNER_PLUGIN is not set in this process (NCCL_DEBUG_SUBSYS must "
           "include ENV to show it; with Ray, set it in the workers' runtime_env)\n",
           p->host, p->pid);
  else
    printf("  %s:%ld: NCCL_TUNER_PLUGIN=%s but NCCL said nothing more about the tuner (add TUNING "
           "to NCCL_DEBUG_SUBSYS)\n",
           p->host, p->pid, p->tuner_env);
}

static int judge(struct doctor *d, int quiet) {
  const char *version = d->bare_version;
  size_t loaded = 0, hosts = 0;
  for (size_t i = 0; i < d->nproc; i++) {
    if (d->procs[i].version[0]) version = d->procs[i].version;
    loaded += loaded_ours(&d->procs[i]) != 0;
    size_t k = 0;
    while (k < i && strcmp(d->procs[k].host, d->procs[i].host)) k++;
    hosts += k == i;
  }
  if (!quiet) {
    printf("NCCL %s, %zu process%s on %zu host%s\n", version[0] ? version : "version not in the log",
           d->nproc, d->nproc == 1 ? "" : "es", hosts, hosts == 1 ? "" : "s");
    for (size_t i = 0; i < d->nproc; i++) {
      const struct proc *p = &d->procs[i];
      if (p->version[0] && strcmp(p->version, version))
        printf("  %s:%ld runs NCCL %s: the ranks mix NCCL versions\n", p->host, p->pid, p->version);
    }
  }
  /* The loaded library and ABI, once per distinct pair. */
  for (size_t i = 0; i < d->nproc && !quiet; i++) {
    const struct proc *p = &d->procs[i];
    if (!loaded_ours(p)) continue;
    size_t k = 0;
    while (k < i && !(loaded_ours(&d->procs[k]) && !strcmp(d->procs[k].loaded, p->loaded) &&
                      proc_abi(&d->procs[k]) == proc_abi(p)))
      k++;
    if (k < i) continue;
    size_t same = 0;
    for (size_t j = 0; j < d->nproc; j++)
      same += loaded_ours(&d->procs[j]) && !strcmp(d->procs[j].loaded, p->loaded) &&
              proc_abi(&d->procs[j]) == proc_abi(p);
    char abi[32];
    if (proc_abi(p)) snprintf(abi, sizeof abi, "v%d", proc_abi(p));
    else snprintf(abi, sizeof abi, "version not in the log");
    /* NCCL <= 2.27 prints no path; the variable it was given is next best. */
    char where[600];
    if (p->loaded[0]) SET(where, p->loaded);
    else if (p->tuner_env[0]) snprintf(where, sizeof where, "NCCL_TUNER_PLUGIN=%.500s", p->tuner_env);
    else SET(where, "path not in the log");
    printf("tuner plugin loaded: %s (%s, ABI %s) in %zu of %zu processes\n", where,
           p->name[0] ? p->name : PT_NAME, abi, same, d->nproc);
  }
  if (loaded < d->nproc && !quiet) {
    printf("tuner plugin NOT loaded in %zu of %zu processes:\n", d->nproc - loaded, d->nproc);
    for (size_t i = 0; i < d->nproc; i++)
      if (!loaded_ours(&d->procs[i])) why_not_loaded(&d->procs[i]);
  }
  int tuned = 0, bad = report_comms(d, quiet, &tuned);
  if (bad < 0) return EXIT_NOINPUT;
  if (!quiet) {
    int refused = 0;
    for (size_t i = 0; i < d->nmem; i++) refused += d->mem[i].state == M_REFUSED;
    if (refused) {
      printf("\nrefusals (the plugin left these communicators to NCCL):\n");
      for (size_t i = 0; i < d->nmem; i++) {
        const struct member *m = &d->mem[i];
        if (m->state != M_REFUSED) continue;
        printf("  %s:%ld rank %d nRanks %d: [%s] %s\n", d->procs[m->proc].host, d->procs[m->proc].pid,
               m->rank, m->nranks, m->cls, m->reason);
      }
    }
    report_trace(d);
  }
  const char *verdict;
  int rc;
  /* Some ranks with the plugin and some without is a disagreement too. */
  if (bad || (loaded && loaded < d->nproc)) {
    verdict = "MISMATCH: ranks disagree (see above)";
    rc = EXIT_MISMATCH;
    if (!bad)
      fprintf(stderr, "pcie-tune doctor: ERROR: the plugin is loaded in %zu of %zu processes; "
                      "NCCL needs the same decision on every rank\n",
              loaded, d->nproc);
  } else if (!loaded) {
    verdict = "NOT LOADED: NCCL ran with its own tuning";
    rc = EXIT_NOT_LOADED;
  } else if (!tuned) {
    verdict = "LOADED BUT IDLE: every communicator was left to NCCL";
    rc = EXIT_IDLE;
  } else {
    verdict = "WORKING";
    rc = EXIT_WORKING;
  }
  printf("%sverdict: %s\n", quiet ? "" : "\n", verdict);
  return rc;
}

int cmd_doctor(int argc, char **argv) {
  int quiet = 0, i = 1, rc;
  struct doctor d;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
      continue;
    }
    return cli_usage_error("doctor", "unknown option '%s'", argv[i]);
  }
  if (i == argc) {
    return cli_usage_error("doctor", "no log given");
  }
  if (nl_init()) {
    fprintf(stderr, "pcie-tune doctor: internal error: a log pattern does not compile\n");
    return EXIT_NOINPUT;
  }
  memset(&d, 0, sizeof d);
  rc = EXIT_WORKING;
  for (; i < argc; i++)
    if (read_input(&d, argv[i])) rc = EXIT_NOINPUT;
  if (d.oom) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    rc = EXIT_NOINPUT;
  } else if (rc == EXIT_WORKING && !d.nproc) {
    fprintf(stderr,
            "pcie-tune doctor: no NCCL log lines (\"host:pid:tid [dev] NCCL INFO ...\") in the "
            "input: run the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV\n");
    rc = EXIT_NOINPUT;
  } else if (rc == EXIT_WORKING) {
    rc = judge(&d, quiet);
  }
  free(d.procs);
  free(d.mem);
  free(d.dec);
  nl_release();
  return rc;
}
