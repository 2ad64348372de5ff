/*
 * The NCCL half of the double (test/double/dbl.h): communicators whose
 * ranks meet in shared memory, all-reduce computed exactly, the tuner
 * plugin loaded and asked as NCCL 2.28 does, and time from the box.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "dbl.h"
#include "nccl/tuner_v5.h"

#define DBL_NCCL_VERSION 22809 /* 2.28.9, the version the double imitates */

struct pt_nccl_comm_s {
  int rank, n, dev;
  int connected; /* its first collective connected the peers (runtime connect) */
  unsigned long long id;
  struct dbl_shm *shm;
  void *tctx;
};

/* The tuner, loaded once per process and shared by its communicators. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *tuner_lib;
static const ncclTuner_v5_t *tuner;
static int tuner_refs;

static __thread int group_depth;
static __thread size_t npending;
static __thread struct pending {
  struct dbl_op op;
  struct pt_cu_stream_s *st;
} pending[256];
static __thread char last_error[256];

/* Executions per (candidate, size) in this process, for corrupt#N. */
static struct {
  int algo, proto, ch;
  size_t nbytes;
  unsigned n;
} execs[512];
static size_t nexecs;

DBL_API const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error";
  case ncclSystemError: return "unhandled system error";
  case ncclInternalError: return "internal error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  case ncclRemoteError: return "remote process exited or there was a network error";
  default: return "unknown result code";
  }
}

DBL_API const char *ncclGetLastError(struct pt_nccl_comm_s *c) {
  (void)c;
  return last_error;
}

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  dbl_warn(dbl_cur_dev(), "%s", last_error);
  return r;
}

DBL_API ncclResult_t ncclGetVersion(int *v) {
  *v = DBL_NCCL_VERSION;
  return ncclSuccess;
}

DBL_API ncclResult_t ncclGetUniqueId(pt_nccl_uid *id) {
  memset(id, 0, sizeof *id);
  if (getrandom(id->internal, 16, 0) != 16) return fail(ncclSystemError, "getrandom failed");
  return ncclSuccess;
}

static void tuner_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void tuner_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                      const char *fmt, ...) {
  char buf[512];
  va_list ap;
  (void)flags, (void)file, (void)line;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (level == NCCL_LOG_WARN) dbl_warn(dbl_cur_dev(), "%s", buf);
  else if (level <= NCCL_LOG_INFO) dbl_info(dbl_cur_dev(), "%s", buf);
}

/* As NCCL 2.28 (src/plugin/plugin_open.cc, tuner.cc): NCCL_TUNER_PLUGIN
 * names a file to dlopen, else libnccl-tuner-<name>.so; "none" disables;
 * unset tries libnccl-tuner.so. RTLD_LOCAL, so the plugin's symbols never
 * leak into the process. Called with mu held. */
static void tuner_load(int dev) {
  const char *name = getenv("NCCL_TUNER_PLUGIN");
  char lib[1100];
  if (tuner_refs++ > 0 || (name && !strcmp(name, "none"))) return;
  if (name && *name) {
    dbl_info(dev, "TUNER/Plugin: Plugin name set by env to %s", name);
    tuner_lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!tuner_lib) {
      snprintf(lib, sizeof lib, "libnccl-tuner-%s.so", name);
      tuner_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    }
  } else {
    tuner_lib = dlopen("libnccl-tuner.so", RTLD_NOW | RTLD_LOCAL);
  }
  if (!tuner_lib) {
    dbl_info(dev, "TUNER/Plugin: Could not find: %s. Using internal tuner plugin.", name ? name : "libnccl-tuner.so");
    return;
  }
  tuner = dlsym(tuner_lib, "ncclTunerPlugin_v5");
  if (!tuner) {
    dbl_info(dev, "TUNER/Plugin: Failed to find ncclTunerPlugin_v5 symbol.");
    dlclose(tuner_lib);
    tuner_lib = NULL;
    return;
  }
  dbl_info(dev, "TUNER/Plugin: Using %s (v5)", tuner->name);
}

static void tuner_unload(void) {
  if (--tuner_refs > 0) return;
  if (tuner_lib) dlclose(tuner_lib);
  tuner_lib = NULL;
  tuner = NULL;
}

/* NCCL 2.22+ connects the peers at a communicator's first collective, not
 * at init (NCCL_RUNTIME_CONNECT=1, init.cc): the "Channel ... via" lines
 * come then. */
static void connect_log(struct pt_nccl_comm_s *c, const struct dbl_env *e) {
  const char *via = e->box.truth.transport == PT_XPORT_P2P ? "P2P/IPC" : "SHM/direct/direct";
  if (c->connected) return;
  c->connected = 1;
  for (int ch = 0; ch < e->comm_channels && c->n > 1; ch++)
    dbl_info(c->dev, "Channel %02d/0 : %d[%d] -> %d[%d] via %s", ch, c->rank, c->dev, (c->rank + 1) % c->n,
             (c->rank + 1) % c->n, via);
}

static void init_log(const struct pt_nccl_comm_s *c, const struct dbl_env *e) {
  if (c->rank == 0) dbl_info(c->dev, "NCCL version 2.28.9+cuda%d.%d (device double)", e->runtime / 1000, e->runtime % 1000 / 10);
  dbl_info(c->dev, "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels per peer",
           e->comm_channels, e->comm_channels, 0, 2 * e->comm_channels, 2);
  dbl_info(c->dev, "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %x commId 0x%llx - Init COMPLETE",
           (const void *)c, c->rank, c->n, c->dev, c->dev, 0x10 + c->dev, c->id);
}

DBL_API ncclResult_t ncclCommInitRank(struct pt_nccl_comm_s **out, int nranks, pt_nccl_uid id, int rank) {
  const struct dbl_env *e = dbl_env();
  *out = NULL;
  if (!e) return fail(ncclSystemError, "the device double is not configured (PTDOUBLE_BOX)");
  if (nranks < 1 || nranks > DBL_MAX_DEV || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "rank %d of %d", rank, nranks);
  if (dbl_fail("init", 0)) return fail(ncclSystemError, "PTDOUBLE_FAIL=init: bootstrap failed");
  if (e->init_s > 0) usleep((useconds_t)(e->init_s * 1e6)); /* a slow bootstrap */
  struct pt_nccl_comm_s *c = calloc(1, sizeof *c);
  if (!c) return fail(ncclSystemError, "out of memory");
  c->rank = rank;
  c->n = nranks;
  c->dev = dbl_cur_dev();
  memcpy(&c->id, id.internal, sizeof c->id);
  if (!(c->shm = dbl_shm_join(&id, nranks, rank, 60))) {
    free(c);
    return fail(ncclSystemError, "rank %d: the other ranks did not join within 60 s", rank);
  }
  /* NCCL's host hash: NCCL_HOSTID when set, else the host name
   * (src/misc/utils.cc, getHostHash); ranks with different hashes are on
   * different nodes to NCCL, ranks with the same hash and device are an
   * error. */
  char hn[256] = "";
  const char *hostid = getenv("NCCL_HOSTID");
  if (!hostid || !*hostid) {
    gethostname(hn, sizeof hn - 1);
    hostid = hn;
  }
  unsigned long long hh = 1469598103934665603ULL;
  for (const char *q = hostid; *q; q++) hh = (hh ^ (unsigned char)*q) * 1099511628211ULL;
  int dup, nnodes = dbl_shm_peers(c->shm, c->dev, hh, &dup);
  if (dup >= 0) {
    dbl_shm_leave(c->shm);
    free(c);
    return fail(ncclInvalidUsage, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %x", rank < dup ? rank : dup,
                rank < dup ? dup : rank, 0x10 + dbl_cur_dev());
  }
  pthread_mutex_lock(&mu);
  tuner_load(c->dev);
  ncclNvlDomainInfo_v5_t nvl = {nnodes, nranks, nranks / nnodes};
  ncclTunerConstants_v5_t k;
  memset(&k, 0, sizeof k);
  if (tuner && tuner->init(&c->tctx, c->id, (size_t)nranks, (size_t)nnodes, tuner_log, &nvl, &k) != ncclSuccess)
    c->tctx = NULL;
  pthread_mutex_unlock(&mu);
  init_log(c, e);
  *out = c;
  return ncclSuccess;
}

DBL_API ncclResult_t ncclCommDestroy(struct pt_nccl_comm_s *c) {
  if (!c) return ncclInvalidArgument;
  pthread_mutex_lock(&mu);
  if (tuner && c->tctx) tuner->finalize(c->tctx);
  tuner_unload();
  pthread_mutex_unlock(&mu);
  dbl_shm_leave(c->shm);
  free(c);
  return ncclSuccess;
}

DBL_API ncclResult_t ncclCommCount(const struct pt_nccl_comm_s *c, int *n) {
  *n = c->n;
  return ncclSuccess;
}

/* NCCL's choice with the tuner asked first (enqueue.cc getAlgoInfo): the
 * cost table, the plugin's changes, the cheapest entry, and the plugin's
 * channel count clamped to the communicator's (enqueue.cc, the channel
 * sum bounded by comm->nChannels). */
static int decide(const struct pt_nccl_comm_s *c, size_t nbytes, int capturing, struct dbl_op *op) {
  const struct dbl_env *e = dbl_env();
  float table[7][3];
  int nch = 0, algo, proto;
  pt_box_nccl_table(&e->box, PT_ALLREDUCE, nbytes, table);
  /* One rank: NCCL copies without choosing an algorithm, so it never asks
   * the tuner (NCCL 2.28 enqueue.cc: nRanks == 1 goes to ncclLaunchOneRank). */
  if (tuner && c->tctx && c->n > 1)
    tuner->getCollInfo(c->tctx, ncclFuncAllReduce, nbytes, 1, (float **)table, 7, 3, capturing, &nch);
  if (pt_nccl_select(table, &algo, &proto)) return -1;
  if (!nch) nch = pt_nccl_channels(&e->box.nccl, algo, proto, nbytes);
  if (nch > e->comm_channels) nch = e->comm_channels;
  op->algo = algo;
  op->proto = proto;
  op->channels = nch < 1 ? 1 : nch;
  return 0;
}

static unsigned count_exec(const struct dbl_op *op, size_t nbytes) {
  unsigned n = 0;
  pthread_mutex_lock(&mu);
  size_t i = 0;
  for (; i < nexecs; i++)
    if (execs[i].algo == op->algo && execs[i].proto == op->proto && execs[i].ch == op->channels &&
        execs[i].nbytes == nbytes)
      break;
  if (i == nexecs && nexecs < sizeof execs / sizeof execs[0]) {
    execs[i].algo = op->algo, execs[i].proto = op->proto, execs[i].ch = op->channels;
    execs[i].nbytes = nbytes, execs[i].n = 0;
    nexecs++;
  }
  if (i < nexecs) n = ++execs[i].n;
  pthread_mutex_unlock(&mu);
  return n;
}

/* tear: LL128 lines whose flag word arrived before their data (NCCL's
 * LL128 line: 128 bytes, 120 of data, the flag in the last word;
 * src/device/prims_ll128.h). In every 8th line the first half of the data
 * is what the receiver's FIFO slot held before: modelled as what this
 * output position held after the previous execution on the same buffer.
 * With the same inputs every time that is the right value, and only
 * changing inputs (the LL128 screen) show it. The first execution on a
 * buffer has nothing stale. */
static struct {
  const float *recv;
  size_t count;
  float *prev;
} stale[64];

static void tear(const struct dbl_op *op) {
  float *copy = malloc(op->count * sizeof *copy);
  size_t i = 0;
  if (!copy) return;
  memcpy(copy, op->recv, op->count * sizeof *copy);
  pthread_mutex_lock(&mu);
  while (i < sizeof stale / sizeof stale[0] && stale[i].recv && stale[i].recv != op->recv) i++;
  if (i < sizeof stale / sizeof stale[0]) {
    if (stale[i].recv && stale[i].count == op->count)
      for (size_t line = 3; line * 30 < op->count; line += 8)
        for (size_t w = 0; w < 15 && line * 30 + w < op->count; w++) op->recv[line * 30 + w] = stale[i].prev[line * 30 + w];
    free(stale[i].prev);
    stale[i].recv = op->recv;
    stale[i].count = op->count;
    stale[i].prev = copy;
    copy = NULL;
  }
  pthread_mutex_unlock(&mu);
  free(copy);
}

int dbl_run_op(struct pt_cu_stream_s *st, const struct dbl_op *op, int mode, double submit_us) {
  const struct dbl_env *e = dbl_env();
  double arrive = st->vtime > submit_us ? st->vtime : submit_us, slow = 0;
  int back_to_back = st->after_coll && st->vtime >= submit_us;
  st->after_coll = 0;
  if (op->kind == DBL_OP_SPIN) { /* an ideal GPU: exactly the time asked for */
    st->vtime = arrive + (double)op->bytes / 1000.0;
    return PT_CU_SUCCESS;
  }
  if (op->kind == DBL_OP_MEMSET || op->kind == DBL_OP_COPY) {
    if (op->kind == DBL_OP_MEMSET) memset(op->dst, op->value, op->bytes);
    else memcpy(op->dst, op->src, op->bytes);
    st->vtime = arrive;
    return PT_CU_SUCCESS;
  }
  size_t nbytes = op->count * sizeof(float);
  int f = dbl_fault(op->algo, op->proto, op->channels, nbytes, count_exec(op, nbytes), &slow);
  if (f == DBL_F_HANG) {
    dbl_info(st->dev, "device double: %s/%s/%d hangs at %zu B (PTDOUBLE_FAULTS)", pt_algo_name(op->algo),
             pt_proto_name(op->proto), op->channels, nbytes);
    for (;;) pause();
  }
  if (f == DBL_F_CRASH) raise(SIGSEGV);
  if (f == DBL_F_SLOW) usleep((useconds_t)(slow * 1e6));
  double start = dbl_shm_allreduce(op->comm->shm, op->send, op->recv, op->count, arrive);
  if (f == DBL_F_CORRUPT && op->comm->rank == 0 && op->count) op->recv[op->count / 2] += 1.0f;
  if (f == DBL_F_TEAR) tear(op);
  double us = pt_box_true_us(&e->box, PT_ALLREDUCE, mode, op->algo, op->proto, op->channels, nbytes);
  /* Queued right behind another all-reduce, NCCL's next kernel starts
   * while the peers still finish the previous one (connection buffers
   * persist across kernels): part of its time hides in the previous op's
   * tail. Anything else in between (a compute kernel) ends the burst. */
  if (back_to_back && op->proto >= 0 && op->proto < 3) us *= 1.0 - e->overlap[op->proto];
  st->vtime = start + us;
  st->after_coll = 1;
  return PT_CU_SUCCESS;
}

DBL_API ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

static ncclResult_t flush(int simulate, pt_nccl_siminfo *info) {
  ncclResult_t rc = ncclSuccess;
  double est = 0;
  const struct dbl_env *e = dbl_env();
  for (size_t i = 0; i < npending; i++) {
    struct pending *p = &pending[i];
    if (simulate) {
      est += pt_box_true_us(&e->box, PT_ALLREDUCE, PT_MODE_EAGER, p->op.algo, p->op.proto, p->op.channels,
                            p->op.count * sizeof(float));
    } else if (dbl_issue(p->st, &p->op, PT_MODE_EAGER)) {
      rc = fail(ncclUnhandledCudaError, "launch failed");
      break;
    }
  }
  npending = 0;
  if (info) info->estimatedTime = (float)est;
  return rc;
}

DBL_API ncclResult_t ncclGroupEnd(void) {
  if (group_depth < 1) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  return --group_depth ? ncclSuccess : flush(0, NULL);
}

DBL_API ncclResult_t ncclGroupSimulateEnd(pt_nccl_siminfo *info) {
  if (group_depth < 1) return fail(ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
  if (!info || info->magic != PT_NCCL_SIMINFO_MAGIC) return fail(ncclInvalidArgument, "bad simInfo");
  group_depth = 0;
  return flush(1, info);
}

DBL_API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op,
                                   struct pt_nccl_comm_s *c, struct pt_cu_stream_s *st) {
  struct dbl_op o = {.kind = DBL_OP_ALLREDUCE, .comm = c, .send = send, .recv = recv, .count = count};
  if (!c || !st) return fail(ncclInvalidArgument, "null communicator or stream");
  if (dtype != PT_NCCL_FLOAT32 || op != PT_NCCL_SUM)
    return fail(ncclInvalidArgument, "the device double only sums float32");
  if (decide(c, count * sizeof(float), st->capturing != NULL, &o))
    return fail(ncclInternalError, "no algorithm/protocol enabled");
  /* Enqueueing costs host time (the eager launch path); capture does not. */
  if (!st->capturing) *dbl_hclk() += dbl_env()->enqueue_us;
  connect_log(c, dbl_env());
  /* NCCL_DEBUG_SUBSYS=TUNING: rank 0 logs every collective it plans
   * (enqueue.cc), eagerly issued ones each time; writing it is host time. */
  if (c->rank == 0 && dbl_env()->log_tuning && dbl_logging()) {
    dbl_info(c->dev, "AllReduce: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}", count * sizeof(float),
             pt_algo_name(o.algo), pt_proto_name(o.proto), o.channels - 1);
    *dbl_hclk() += dbl_env()->log_us;
  }
  if (st->capturing || !group_depth) {
    int rc = dbl_issue(st, &o, PT_MODE_EAGER);
    return rc ? fail(ncclUnhandledCudaError, "launch failed") : ncclSuccess;
  }
  if (npending == sizeof pending / sizeof pending[0]) return fail(ncclInvalidUsage, "group too large");
  pending[npending].op = o;
  pending[npending++].st = st;
  return ncclSuccess;
}

/* NCCL >= 2.19 allocates through cuMem; here host memory, like cudaMalloc. */
DBL_API ncclResult_t ncclMemAlloc(void **p, size_t n) {
  *p = NULL;
  if (dbl_fail("malloc", n)) return fail(ncclUnhandledCudaError, "PTDOUBLE_FAIL=malloc: out of memory");
  *p = malloc(n ? n : 1);
  return *p ? ncclSuccess : fail(ncclSystemError, "out of memory");
}

DBL_API ncclResult_t ncclMemFree(void *p) {
  dbl_legacy_flush(-1); /* frees synchronise the device, as cudaFree */
  free(p);
  return ncclSuccess;
}
