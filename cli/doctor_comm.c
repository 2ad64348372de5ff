/*
 * What NCCL built for each communicator, from its INFO lines
 * (import/ncclog.c names the format strings), and what the user can change.
 * On PCIe boxes the largest losses on record come from here, not from the
 * algorithm choice: SHM through the host where P2P was possible, P2P that
 * NVML reports disabled, and a topology search that settled on one or two
 * channels. Every inference names the NCCL code it rests on, and every
 * effect quoted names the published table it comes from (test/data/real/
 * holds copies; the test suite checks the figures against them).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

/* Prints to o; a quiet run passes NULL and only the judgement counts. */
__attribute__((format(printf, 2, 3))) static void say(FILE *o, const char *fmt, ...) {
  va_list ap;
  if (!o) return;
  va_start(ap, fmt);
  vfprintf(o, fmt, ap);
  va_end(ap);
}

struct pair {
  int rank, peer, via;
};

static int cmp_pair(const void *a, const void *b) {
  const struct pair *x = a, *y = b;
  if (x->via != y->via) return x->via - y->via;
  if (x->rank != y->rank) return x->rank - y->rank;
  return x->peer - y->peer;
}

static const char *env_of(const struct dr_proc *p, const char *name) {
  for (int i = 0; i < p->nenv; i++)
    if (!strcmp(p->env[i][0], name)) return p->env[i][1];
  return NULL;
}

/* NCCL 2.21-2.22 defaulted to P2P level SYS except on Intel, ARM and
 * Zhaoxin CPUs; 2.23 made PXB the default (src/graph/paths.cc,
 * ncclTopoCheckP2p, per tag). */
static int old_level(const char *version) {
  int maj = 0, min = 0;
  return sscanf(version, "%d.%d", &maj, &min) == 2 && maj == 2 && min <= 22;
}

/* The process's NCCL version, else the first any process printed. */
static const char *version_of(const struct dr_doctor *d, const struct dr_proc *p) {
  for (size_t i = 0; !p->version[0] && i < d->nproc; i++)
    if (d->procs[i].version[0]) return d->procs[i].version;
  return p->version[0] ? p->version : d->bare_version;
}

static const char *pattern_name(int p) {
  /* src/include/graph.h, NCCL_TOPO_PATTERN_* */
  static const char *const names[] = {"?", "balanced tree", "split tree", "tree", "ring", "NVLS",
                                      "CollNet direct"};
  return p > 0 && p < 7 ? names[p] : "?";
}

/* The member of the communicator with this rank, from a rank-indexed map. */
static const struct dr_member *by_rank(const struct dr_member *const *map, int nranks, int r) {
  return r >= 0 && r < nranks ? map[r] : NULL;
}

static int same_host(const struct dr_doctor *d, const struct dr_member *a, const struct dr_member *b) {
  return a && b && !strcmp(d->procs[a->proc].host, d->procs[b->proc].host);
}

/* Prints one transport's pairs: "P2P/CUMEM: 56 pairs" or the first few. */
static void print_pairs(FILE *o, const char *via, const struct pair *p, size_t n) {
  say(o, "    via %s: %zu pair%s", via, n, n == 1 ? "" : "s");
  if (strncmp(via, "P2P/", 4) == 0)
    say(o, " (%s)", strstr(via, "/read") ? "P2P read" : "P2P write");
  say(o, ": ");
  for (size_t i = 0; i < n && i < 8; i++) say(o, "%s%d->%d", i ? " " : "", p[i].rank, p[i].peer);
  say(o, "%s\n", n > 8 ? " ..." : "");
}

struct findings {
  int shm_local, net_local, fallback, few_sys, few_unknown, ipc, indirect, ce;
  int sys_channels, fallback_pattern, channels;
  const struct dr_member *shm_from; /* a rank that used SHM, for its process's settings */
  const struct dr_proc *nvml;       /* a process NVML told P2P is off */
};

static void advise(FILE *o, const struct dr_doctor *d, const struct findings *f) {
  if (f->shm_local) {
    const struct dr_proc *p = &d->procs[f->shm_from->proc];
    const char *level = env_of(p, "NCCL_P2P_LEVEL"), *off = env_of(p, "NCCL_P2P_DISABLE");
    say(o, "  DEGRADED: %d pair%s of GPUs in one host talk through shared host memory (SHM), not "
           "GPU peer-to-peer (src/transport/p2p.cc, p2pCanConnect, refused P2P; "
           "src/transport/shm.cc took over).\n",
           f->shm_local, f->shm_local == 1 ? "" : "s");
    if (f->nvml)
      say(o, "    why: NVML reports P2P disabled between GPUs %d and %d (src/graph/paths.cc, "
             "ncclTopoCheckP2p, \"P2P is disabled between connected GPUs\"): the driver, ACS "
             "on a PCIe switch or root port, or the IOMMU blocks it.\n"
             "    change: check `nvidia-smi topo -p2p r`; disable ACS on the switch ports "
             "(setpci), boot with iommu=off or iommu=pt, or use a driver that enables P2P on "
             "these GPUs.\n",
             f->nvml->p2p_off[0][0], f->nvml->p2p_off[0][1]);
    else if ((off && strcmp(off, "0")) || level)
      say(o, "    why: the job sets %s%s (NCCL logged it; src/graph/paths.cc, ncclGetLevel).\n"
             "    change: unset it, or NCCL_P2P_LEVEL=SYS.\n",
             off ? "NCCL_P2P_DISABLE=" : "NCCL_P2P_LEVEL=", off ? off : level);
    else
      say(o, "    why: their PCIe path crosses a CPU host bridge or the CPU interconnect (PHB, "
             "SYS), beyond NCCL's default P2P level PXB (src/graph/paths.cc, ncclTopoCheckP2p: "
             "%s).\n"
             "    change: NCCL_P2P_LEVEL=SYS lets NCCL use P2P there, where the platform routes "
             "peer-to-peer between root ports (check with `nvidia-smi topo -p2p r`).\n",
          old_level(version_of(d, p)) ? "2.21-2.22 on Intel, ARM and Zhaoxin CPUs; AMD's default is SYS"
                                : "2.23 and later, AMD hosts with two GPUs excepted");
    say(o, "    effect on record: 4 GPUs on two NUMA nodes, all-reduce of 32 MB: 30.3 GB/s bus "
           "bandwidth with SHM between the nodes, 39.3 GB/s with NCCL_P2P_LEVEL=SYS (1.30x; "
           "test/data/real/rtxpro6000-4x8x-nccl-vs-pcieoneshot-voipmonitor-asus-broadcom.txt).\n");
  }
  if (f->net_local)
    say(o, "  DEGRADED: %d pair%s of ranks on one host connect through the network (NET): NCCL "
           "found neither P2P nor SHM between them. Either their processes see different host "
           "hashes or /dev/shm (src/graph/paths.cc, ncclTopoCheckP2p, \"isolated containers\"; "
           "src/transport/shm.cc, shmCanConnect), or NCCL_P2P_DISABLE and NCCL_SHM_DISABLE are "
           "set, or the NIC is the better path (src/graph/paths.cc, ncclTopoCheckNet).\n"
           "    change: run the ranks of one host in one container, or give the containers the "
           "host's IPC namespace and /dev/shm (docker --ipc=host).\n",
           f->net_local, f->net_local == 1 ? "" : "s");
  if (f->fallback || f->few_sys) {
    if (f->fallback)
      say(o, "  DEGRADED: the topology search found no path for the %s pattern and fell back to "
             "one channel in rank order (src/graph/search.cc, ncclTopoCompute).\n",
             pattern_name(f->fallback_pattern));
    else
      say(o, "  DEGRADED: the ring search settled on %d channel%s over SYS paths: the rings "
             "cross the CPU interconnect, and the search lowers its bandwidth target until a "
             "ring fits (src/graph/search.cc, ncclTopoCompute), which on dual-socket boxes "
             "leaves 1-2 channels.\n",
             f->sys_channels, f->sys_channels == 1 ? "" : "s");
    say(o, "    change: NCCL_MIN_NCHANNELS=4 makes NCCL duplicate the channels it found "
           "(src/graph/connect.cc, ncclTopoPostset, ncclMinNchannels); `pcie-tune profile "
           "--explore-channels` measures which count pays on this box.\n"
           "    effect on record: 8 GPUs on two EPYC sockets, all-reduce of 32 KB: 48.16 us with "
           "the search's 2 channels (SYS/SYS), 26.20 us with 4 channels and LL (1.84x; "
           "test/data/real/rtxpro6000-8x-graphXML-vs-default-voipmonitor-turin.txt).\n");
  } else if (f->few_unknown) {
    say(o, "  note: only %d channel%s; add GRAPH to NCCL_DEBUG_SUBSYS to see whether the search "
           "fell back.\n",
           f->channels, f->channels == 1 ? "" : "s");
  }
  if (f->ipc)
    say(o, "  note: P2P through legacy CUDA IPC, not cuMem: NCCL_CUMEM_ENABLE=0 or a driver "
           "without cuMem (src/transport/p2p.cc, p2pSendSetup).\n");
  if (f->indirect)
    say(o, "  note: some P2P goes through an intermediate GPU (src/graph/paths.cc, "
           "ncclTopoCheckP2p: the path's first hop is a GPU).\n");
  if (f->ce)
    say(o, "  note: P2P copies by the copy engine (/CE: NCCL_P2P_USE_CUDA_MEMCPY; "
           "src/transport/p2p.cc).\n");
}

/* Transports: every (rank, peer) pair once per transport, as the sender
 * logged it. */
static int report_links(FILE *o, const struct dr_doctor *d, const struct dr_comms *c, size_t k,
                        const struct dr_member *const *map, int nranks, struct findings *f) {
  size_t n = 0, from = c->start[k], to = c->start[k + 1];
  for (size_t i = from; i < to; i++) n += d->mem[c->order[i]].nlinks;
  if (!n) {
    say(o, "  transports: not in the log (NCCL_DEBUG_SUBSYS needs INIT or P2P,SHM,NET)\n");
    return 0;
  }
  struct pair *p = malloc(n * sizeof *p);
  if (!p) return -1;
  n = 0;
  for (size_t i = from; i < to; i++) {
    const struct dr_member *m = &d->mem[c->order[i]];
    for (size_t j = 0; j < m->nlinks; j++)
      p[n++] = (struct pair){m->rank, m->links[j].peer, m->links[j].via};
  }
  qsort(p, n, sizeof *p, cmp_pair);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || cmp_pair(&p[i], &p[u - 1])) p[u++] = p[i];
  say(o, "  transports (as each sender logged them):\n");
  for (size_t i = 0; i < u;) {
    size_t j = i;
    while (j < u && p[j].via == p[i].via) j++;
    const char *via = d->via[p[i].via];
    print_pairs(o, via, p + i, j - i);
    for (size_t x = i; x < j; x++) {
      const struct dr_member *a = by_rank(map, nranks, p[x].rank), *b = by_rank(map, nranks, p[x].peer);
      if (!strncmp(via, "SHM/", 4)) {
        f->shm_local++;
        if (!f->shm_from) f->shm_from = a ? a : &d->mem[c->order[from]];
      } else if (!strncmp(via, "NET/", 4) && same_host(d, a, b)) {
        f->net_local++;
      }
    }
    f->ipc |= !strncmp(via, "P2P/IPC", 7);
    f->indirect |= !strncmp(via, "P2P/indirect", 12);
    f->ce |= strstr(via, "/CE") != NULL && !strncmp(via, "P2P/", 4);
    i = j;
  }
  free(p);
  return 0;
}

static void report_layout(FILE *o, const struct dr_doctor *d, const struct dr_comms *c, size_t k,
                          const struct dr_member *const *map, int nranks, struct findings *f) {
  const struct dr_member *first = &d->mem[c->order[c->start[k]]], *r0 = by_rank(map, nranks, 0);
  const struct dr_member *ch = NULL, *gr = NULL;
  for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
    const struct dr_member *m = &d->mem[c->order[i]];
    if (!ch && m->coll_ch >= 0) ch = m;
    if (!gr && (m->ngraph || m->fallback_pattern >= 0)) gr = m;
    if (m->fallback_pattern >= 0) f->fallback = 1, f->fallback_pattern = m->fallback_pattern;
  }
  /* The version each rank's process printed (showVersion, src/init.cc). */
  const char *v = NULL;
  size_t others = 0, known = 0;
  for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
    const char *pv = d->procs[d->mem[c->order[i]].proc].version;
    if (!pv[0]) continue;
    known++;
    if (!v) v = pv;
    else others += strcmp(v, pv) != 0;
  }
  if (v && others)
    say(o, "  NCCL %s on some ranks, another version on %zu: every rank must run the same NCCL\n", v,
        others);
  else if (v)
    say(o, "  NCCL %s (printed by the processes of %zu of %zu ranks)\n", v, known, c->start[k + 1] - c->start[k]);
  if (ch) {
    say(o, "  channels: %d coll", ch->coll_ch);
    if (ch->p2p_ch >= 0) say(o, ", %d p2p, %d p2p per peer", ch->p2p_ch, ch->p2p_per_peer);
    say(o, " (src/init.cc, initTransportsRank)\n");
    f->channels = ch->coll_ch;
  } else {
    say(o, "  channels: not in the log (NCCL_DEBUG_SUBSYS needs INIT)\n");
  }
  if (r0 && r0->nrings) {
    say(o, "  rings (rank 0):");
    for (int i = 0; i < r0->nrings && i < 4; i++) say(o, "%s %02d: %s", i ? ";" : "", i, r0->rings[i]);
    say(o, "%s\n", r0->nrings > 4 ? "; ..." : "");
  }
  if (r0 && r0->trees[0]) say(o, "  trees (rank 0: [channel] down/down/down->rank->up):%s\n", r0->trees);
  if (gr) {
    for (int i = 0; i < gr->ngraph; i++) {
      const struct dr_graph *g = &gr->graph[i];
      say(o, "  graph search, %s (pattern %d): %d channel%s, bw %.1f/%.1f GB/s, paths %s/%s\n",
             pattern_name(g->pattern), g->pattern, g->nchannels, g->nchannels == 1 ? "" : "s",
             g->bw_intra, g->bw_inter, g->type_intra, g->type_inter);
      /* The dual-socket fallback: a single-node ring over SYS with 1-2 channels. */
      if (g->pattern == 4 && !strcmp(g->type_intra, "SYS") && g->nchannels <= 2 &&
          first->nnodes <= 1 && first->nranks > 2)
        f->few_sys = 1, f->sys_channels = g->nchannels;
    }
    if (gr->fallback_pattern >= 0)
      say(o, "  graph search: no path for pattern %d, fell back to simple order\n",
             gr->fallback_pattern);
  } else if (ch && ch->coll_ch <= 2 && first->nranks > 2 && first->nnodes <= 1) {
    f->few_unknown = 1;
  }
}

int dr_comm_report(const struct dr_doctor *d, const struct dr_comms *c, size_t k, int quiet) {
  const struct dr_member *first = &d->mem[c->order[c->start[k]]];
  int nranks = first->nranks > 0 ? first->nranks : 0;
  struct findings f;
  memset(&f, 0, sizeof f);
  const struct dr_member **map = calloc(nranks ? (size_t)nranks : 1, sizeof *map);
  if (!map) return -1;
  for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
    const struct dr_member *m = &d->mem[c->order[i]];
    if (m->rank >= 0 && m->rank < nranks && !map[m->rank]) map[m->rank] = m;
    if (!f.nvml && d->procs[m->proc].np2p_off) f.nvml = &d->procs[m->proc];
  }
  /* Printed only when NCCL said something about what it built. */
  int any = 0;
  for (size_t i = c->start[k]; i < c->start[k + 1] && !any; i++) {
    const struct dr_member *m = &d->mem[c->order[i]];
    any = m->coll_ch >= 0 || m->nlinks || m->ngraph || m->nrings || m->fallback_pattern >= 0;
  }
  if (!any) {
    free(map);
    return 0;
  }
  FILE *o = quiet ? NULL : stdout;
  say(o, "  what NCCL built:\n");
  report_layout(o, d, c, k, (const struct dr_member *const *)map, nranks, &f);
  int rc = report_links(o, d, c, k, (const struct dr_member *const *)map, nranks, &f);
  advise(o, d, &f);
  free(map);
  if (rc) return -1;
  return f.shm_local || f.net_local || f.fallback || f.few_sys;
}
