/* One rank of the GPU backend (measure/gpu_rank.h). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpu_gap.h"
#include "gpu_pattern.h"
#include "gpu_prov.h"
#include "gpu_rank.h"
#include "pcie/control.h"

/* Bytes of rotating buffers per rank and direction: each of the `ops`
 * collectives of a launch reads its own input and writes its own output
 * (so every one is checked) until this much memory is used; beyond that
 * they share. */
#define OUT_BUDGET ((size_t)256 << 20)

struct rank {
  const struct pt_rank_cfg *c;
  const struct pt_gpu_api *api;
  int fd, dev;
  pt_nccl_comm comm;
  pt_cu_stream st;
  pt_cu_event ev0, ev1;
  float *send, *recv, *host, *bar; /* bar: the one float of the aligning all-reduce */
  size_t cap, host_cap, filled_count; /* bytes per direction; count the inputs hold */
  unsigned filled_nout;
  void *plugin;
  const pcieTunerControl_v1_t *ctl;
  struct pt_gap gap;
  double gap_window_us[2]; /* [graph]: one launch of the gaps alone, us; < 0 until timed */
  char why[1024];
};

static int say(struct rank *k, struct pt_rank_msg *m) {
  m->rank = k->c->rank;
  return send(k->fd, m, sizeof *m, MSG_NOSIGNAL) == (ssize_t)sizeof *m ? 0 : -1;
}

/* An environment failure: the set-up, not the candidate. */
static int envfail(struct rank *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int envfail(struct rank *k, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(k->why, sizeof k->why, "GPU %d (rank %d): ", k->dev, k->c->rank);
  va_start(ap, fmt);
  vsnprintf(k->why + n, sizeof k->why - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static int outcome(struct pt_measure_res *res, int state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int outcome(struct pt_measure_res *res, int state, const char *fmt, ...) {
  va_list ap;
  res->state = state;
  va_start(ap, fmt);
  vsnprintf(res->detail, sizeof res->detail, fmt, ap);
  va_end(ap);
  return 1;
}

/* A CUDA/NCCL call failed while the candidate ran: its crash. */
#define CU(what, call)                                                                          \
  do {                                                                                          \
    pt_cuerr e_ = (call);                                                                       \
    if (e_) {                                                                                   \
      outcome(res, PT_PT_CRASH, "GPU %d: %s failed: %s", k->dev, what, k->api->GetErrorString(e_)); \
      goto out;                                                                                 \
    }                                                                                           \
  } while (0)
#define NC(what, call)                                                                          \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) {                                                                    \
      outcome(res, PT_PT_CRASH, "GPU %d: %s failed: %s (%s)", k->dev, what,                     \
              k->api->NcclErrorString(r_), k->api->NcclLastError(k->comm));                     \
      goto out;                                                                                 \
    }                                                                                           \
  } while (0)
/* A CUDA call of the set-up failed: the environment's. */
#define ENV(what, call)                                                                         \
  do {                                                                                          \
    pt_cuerr e_ = (call);                                                                       \
    if (e_) {                                                                                   \
      rc = envfail(k, "%s failed: %s", what, k->api->GetErrorString(e_));                       \
      goto out;                                                                                 \
    }                                                                                           \
  } while (0)

static int open_rank(struct rank *k, pt_nccl_uid uid) {
  const struct pt_gpu_api *a = k->api;
  int n = 0, drv = 0, rt = 0, rc = -1;
  char dv[16], rv[16];
  a->DriverGetVersion(&drv);
  a->RuntimeGetVersion(&rt);
  pt_cuda_version_text(drv, dv, sizeof dv);
  pt_cuda_version_text(rt, rv, sizeof rv);
  pt_cuerr e = a->GetDeviceCount(&n);
  if (e || n < 1)
    return envfail(k, "no CUDA device: cudaGetDeviceCount says '%s' (%s%s, runtime %s is %s%s)",
                   e ? a->GetErrorString(e) : "0 devices", drv ? "driver supports CUDA " : "no NVIDIA driver found",
                   drv ? dv : "", a->cudart_path, rv,
                   drv && rt > drv ? "; the driver is older than the runtime: install a newer driver, or "
                                     "give --nccl-lib/--cudart-lib from an older CUDA stack" : "");
  if (k->dev >= n) return envfail(k, "no CUDA device %d (this machine has %d)", k->dev, n);
  if ((e = a->SetDevice(k->dev))) return envfail(k, "cudaSetDevice: %s", a->GetErrorString(e));
  ncclResult_t r = a->CommInitRank(&k->comm, k->c->nranks, uid, k->c->rank);
  if (r != ncclSuccess) {
    k->comm = NULL;
    return envfail(k, "ncclCommInitRank failed: %s (%s)", a->NcclErrorString(r), a->NcclLastError(NULL));
  }
  /* The library NCCL loaded as its tuner, found without loading anything. */
  k->plugin = dlopen(k->c->plugin, RTLD_NOW | RTLD_NOLOAD);
  void *sym = k->plugin ? dlsym(k->plugin, PCIE_CONTROL_SYMBOL) : NULL;
  k->ctl = sym;
  if (!k->ctl || k->ctl->version != 1)
    return envfail(k, "NCCL did not load the tuner plugin %s (or it lacks %s v1); the measurement "
                      "cannot force candidates", k->c->plugin, PCIE_CONTROL_SYMBOL);
  if ((e = a->StreamCreateWithFlags(&k->st, PT_CU_STREAM_NON_BLOCKING)) || (e = a->EventCreate(&k->ev0)) ||
      (e = a->EventCreate(&k->ev1)))
    return envfail(k, "cannot create a stream and events: %s", a->GetErrorString(e));
  if ((e = a->Malloc((void **)&k->bar, 256)))
    return envfail(k, "cannot allocate the aligning buffer: %s", a->GetErrorString(e));
  char gwhy[512];
  if (pt_gap_open(&k->gap, a, k->dev, k->c->gap_us, gwhy, sizeof gwhy)) return envfail(k, "%s", gwhy);
  k->gap_window_us[0] = k->gap_window_us[1] = -1;
  rc = 0;
  return rc;
}

/* Buffers as the engine's (docs/gpu.md, "Buffers"): cudaMalloc by default,
 * as torch's caching allocator without expandable segments, which NCCL
 * does not register under graph capture; ncclMemAlloc (cuMem, registered)
 * when asked, as an engine's NCCL memory pool. The backend checked that
 * NCCL has ncclMemAlloc before asking for it. */
static int alloc(struct rank *k, float **p, size_t n) {
  if (k->c->nccl_mem) return k->api->MemAlloc((void **)p, n) == ncclSuccess ? 0 : -1;
  return k->api->Malloc((void **)p, n) ? -1 : 0;
}

static void release(struct rank *k, float *p) {
  if (!p) return;
  if (k->c->nccl_mem) k->api->MemFree(p);
  else k->api->Free(p);
}

static void close_rank(struct rank *k, int poisoned) {
  const struct pt_gpu_api *a = k->api;
  if (k->ctl && k->c->rank == 0) k->ctl->force(-1, 0, 0, 0);
  /* After a CUDA error teardown may block on a dead context; the process
   * is about to exit, which frees everything anyway. */
  if (!poisoned) {
    release(k, k->send);
    release(k, k->recv);
    if (k->bar) a->Free(k->bar);
    if (k->ev0) a->EventDestroy(k->ev0);
    if (k->ev1) a->EventDestroy(k->ev1);
    if (k->st) a->StreamDestroy(k->st);
    if (k->comm) a->CommDestroy(k->comm);
    if (k->plugin) dlclose(k->plugin);
    pt_gap_close(&k->gap, a);
  }
  free(k->host);
}

/* Grows the buffers and writes op j's input into send slot j. */
static int ensure(struct rank *k, size_t count, unsigned nout) {
  const struct pt_gpu_api *a = k->api;
  size_t bytes = count * sizeof(float), need = bytes * nout;
  int rc = -1;
  if (bytes > k->host_cap) {
    float *h = realloc(k->host, bytes);
    if (!h) return envfail(k, "cannot allocate %zu host bytes", bytes);
    k->host = h;
    k->host_cap = bytes;
  }
  if (need > k->cap) {
    release(k, k->send);
    release(k, k->recv);
    k->send = k->recv = NULL;
    k->cap = 0;
    k->filled_count = 0;
    if (alloc(k, &k->send, need) || alloc(k, &k->recv, need))
      return envfail(k, "cannot allocate 2 x %zu bytes; lower --sizes or --ops", need);
    k->cap = need;
  }
  if (k->filled_count != count || k->filled_nout != nout) {
    for (unsigned j = 0; j < nout; j++) {
      pt_pattern_fill_op(k->host, count, k->c->rank, j);
      /* On the measuring stream: a legacy-stream copy is not ordered with
       * a non-blocking stream (CUDA's stream semantics). */
      ENV("cudaMemcpyAsync of the inputs", a->MemcpyAsync(k->send + (size_t)j * count, k->host, bytes, PT_CU_H2D, k->st));
      ENV("cudaStreamSynchronize", a->StreamSynchronize(k->st));
    }
    k->filled_count = count;
    k->filled_nout = nout;
  }
  rc = 0;
out:
  return rc;
}

/* The compute gap before op j (none with --gap 0). */
static int gap(struct rank *k, struct pt_measure_res *res) {
  const char *what = NULL;
  if (!k->gap.fn) return 0;
  if (pt_gap_launch(&k->gap, k->api, k->st, &what))
    return outcome(res, PT_PT_CRASH, "GPU %d: cuLaunchKernel of the gap kernel failed: %s", k->dev, what);
  return 0;
}

/* ops all-reduces, each its own group: in one group NCCL would merge them
 * and the tuner would see their summed size. Each follows a compute gap,
 * as in a verify step (measure/gpu_gap.h). */
static int launch(struct rank *k, size_t count, unsigned nout, struct pt_measure_res *res) {
  int rc = 1;
  for (unsigned j = 0; j < k->c->ops; j++) {
    size_t off = (size_t)(j % nout) * count;
    const float *in = (k->c->in_place ? k->recv : k->send) + off;
    if (gap(k, res)) goto out;
    NC("ncclGroupStart", k->api->GroupStart());
    NC("ncclAllReduce", k->api->AllReduce(in, k->recv + off, count, PT_NCCL_FLOAT32, PT_NCCL_SUM,
                                          k->comm, k->st));
    NC("ncclGroupEnd", k->api->GroupEnd());
  }
  rc = 0;
out:
  return rc;
}

/* Whether the forced choice really ran: NCCL must have asked the tuner,
 * and must not have had the combination disabled. */
static int verdict(struct rank *k, const struct pt_rank_cmd *cmd, struct pt_measure_res *res) {
  const struct pt_measure_req *q = &cmd->req;
  struct pt_control_stats s;
  if (q->is_default || !cmd->do_verdict) return 0;
  k->ctl->stats(&s);
  if (s.disabled)
    return outcome(res, PT_PT_UNSUPPORTED, "NCCL has %s/%s disabled at %llu B (%lu of %lu decisions)",
                   pt_algo_name(q->algo), pt_proto_name(q->proto), (unsigned long long)q->nbytes,
                   s.disabled, s.disabled + s.applied);
  if (!s.applied)
    return outcome(res, PT_PT_UNSUPPORTED, "NCCL never asked the tuner (%d rank%s), so %s/%s/%d cannot be forced",
                   k->c->nranks, k->c->nranks == 1 ? "" : "s", pt_algo_name(q->algo), pt_proto_name(q->proto),
                   q->channels);
  return 0;
}

static int force(struct rank *k, const struct pt_measure_req *q, struct pt_measure_res *res) {
  if (q->is_default) return k->ctl->force(-1, 0, 0, 0), 0;
  if (k->ctl->force(q->algo, q->proto, q->channels, q->chunk))
    return outcome(res, PT_PT_UNSUPPORTED, "the plugin rejects %d/%d/%d", q->algo, q->proto, q->channels);
  return 0;
}

/* ncclGroupSimulateEnd runs NCCL's tuning, plugin included, and launches
 * nothing: a disabled combination is known before anything runs. */
static int probe(struct rank *k, const struct pt_rank_cmd *cmd, size_t count, struct pt_measure_res *res) {
  int rc = 1;
  pt_nccl_siminfo sim = {sizeof sim, PT_NCCL_SIMINFO_MAGIC, PT_NCCL_SIMINFO_VERSION, -1.0f};
  if (cmd->req.is_default || !k->api->GroupSimulateEnd) return 0;
  NC("ncclGroupStart", k->api->GroupStart());
  NC("ncclAllReduce", k->api->AllReduce(k->send, k->recv, count, PT_NCCL_FLOAT32, PT_NCCL_SUM, k->comm, k->st));
  NC("ncclGroupSimulateEnd", k->api->GroupSimulateEnd(&sim));
  if (verdict(k, cmd, res)) goto out;
  if (cmd->do_force) force(k, &cmd->req, res); /* resets the counters for the real run */
  rc = 0;
out:
  return rc;
}

static int capture(struct rank *k, size_t count, unsigned nout, pt_cu_exec *exec, struct pt_measure_res *res) {
  const struct pt_gpu_api *a = k->api;
  int rc = 1, capturing = 0;
  pt_cu_graph graph = NULL;
  /* Thread-local: NCCL's own threads may make unsafe CUDA calls meanwhile. */
  CU("cudaStreamBeginCapture", a->StreamBeginCapture(k->st, PT_CU_CAPTURE_THREAD_LOCAL));
  capturing = 1;
  if (launch(k, count, nout, res)) goto out;
  capturing = 0;
  CU("cudaStreamEndCapture", a->StreamEndCapture(k->st, &graph));
  pt_cuerr e = a->GraphInstantiateWithFlags(exec, graph, 0);
  a->GraphDestroy(graph);
  CU("cudaGraphInstantiateWithFlags", e);
  /* Uploaded before the first launch, so no launch does the upload while a
   * peer's kernel spins (NCCL's CUDA-graph notes; NVIDIA/nccl#787). */
  CU("cudaGraphUpload", a->GraphUpload(*exec, k->st));
  rc = 0;
out:
  if (capturing && a->StreamEndCapture(k->st, &graph) == 0 && graph) a->GraphDestroy(graph);
  return rc;
}

static int run_once(struct rank *k, pt_cu_exec exec, size_t count, unsigned nout, struct pt_measure_res *res) {
  int rc = 1;
  if (!exec) return launch(k, count, nout, res);
  CU("cudaGraphLaunch", k->api->GraphLaunch(exec, k->st));
  rc = 0;
out:
  return rc;
}

static int check_ops(struct rank *k, size_t count, unsigned nout, unsigned base, const char *when,
                     struct pt_measure_res *res) {
  size_t bad;
  float got, want;
  int rc = 1;
  for (unsigned j = 0; j < nout; j++) {
    CU("cudaMemcpyAsync", k->api->MemcpyAsync(k->host, k->recv + (size_t)j * count, count * sizeof(float), PT_CU_D2H, k->st));
    CU("cudaStreamSynchronize", k->api->StreamSynchronize(k->st));
    if (pt_pattern_check_op(k->host, count, k->c->nranks, base + j, &bad, &got, &want)) {
      outcome(res, PT_PT_WRONG, "%s: GPU %d output of op %u element %zu is %g, want %g", when, k->dev, j, bad,
              (double)got, (double)want);
      goto out;
    }
  }
  rc = 0;
out:
  return rc;
}

static int check(struct rank *k, size_t count, unsigned nout, const char *when, struct pt_measure_res *res) {
  return check_ops(k, count, nout, 0, when, res);
}

static void beat(struct rank *k, unsigned rep);

/* What the gaps alone take in one launch, timed the way the collectives
 * are (the same mode, ops gaps back to back), so that the timed window
 * less this leaves the collectives: the smallest of a few launches after
 * an untimed one. Once per mode and worker. Returns 0, or 1 (res says). */
static int gap_window(struct rank *k, int graph, struct pt_measure_res *res) {
  const struct pt_gpu_api *a = k->api;
  pt_cu_graph g = NULL;
  pt_cu_exec x = NULL;
  int rc = 1, capturing = 0;
  double best = -1;
  if (!k->gap.fn || k->gap_window_us[graph] >= 0) return 0;
  if (graph) {
    CU("cudaStreamBeginCapture", a->StreamBeginCapture(k->st, PT_CU_CAPTURE_THREAD_LOCAL));
    capturing = 1;
    for (unsigned j = 0; j < k->c->ops; j++)
      if (gap(k, res)) goto out;
    capturing = 0;
    CU("cudaStreamEndCapture", a->StreamEndCapture(k->st, &g));
    CU("cudaGraphInstantiateWithFlags", a->GraphInstantiateWithFlags(&x, g, 0));
    CU("cudaGraphUpload", a->GraphUpload(x, k->st));
  }
  for (unsigned i = 0; i < 4; i++) {
    float ms = 0;
    /* One untimed gap first, as the aligning collective precedes a timed
     * window: the launch's latency then hides behind queued work in both.
     * No NCCL call here: the tuner's counters are the candidate's. */
    if (gap(k, res)) goto out;
    CU("cudaEventRecord", a->EventRecord(k->ev0, k->st));
    if (graph) CU("cudaGraphLaunch", a->GraphLaunch(x, k->st));
    else
      for (unsigned j = 0; j < k->c->ops; j++)
        if (gap(k, res)) goto out;
    CU("cudaEventRecord", a->EventRecord(k->ev1, k->st));
    CU("cudaEventSynchronize", a->EventSynchronize(k->ev1));
    CU("cudaEventElapsedTime", a->EventElapsedTime(&ms, k->ev0, k->ev1));
    if (i && (best < 0 || ms * 1000.0 < best)) best = (double)ms * 1000.0;
  }
  k->gap_window_us[graph] = best;
  rc = 0;
out:
  if (capturing) a->StreamEndCapture(k->st, &g);
  if (x) a->GraphExecDestroy(x);
  if (g) a->GraphDestroy(g);
  return rc;
}

/* Microseconds per collective of a timed launch of ms milliseconds. */
static double per_op(const struct rank *k, int graph, float ms) {
  double us = (double)ms * 1000.0 - (k->gap.fn ? k->gap_window_us[graph] : 0);
  return us > 0 ? us / k->c->ops : 1e-3;
}

/* The LL128 screen (measure/screen.h): replay r reads input set r % 2 (ops
 * 0..nout-1, then nout..2*nout-1: every word differs from the previous
 * replay's), outputs NaN before each replay, every output checked after.
 * Like the timed loop it never stops early: the peers wait in the same
 * collectives. Returns 0 (res says WRONG/CRASH) or -1 (k->why). */
static int screen(struct rank *k, pt_cu_exec exec, size_t count, unsigned nout, unsigned replays,
                  double *samples, struct pt_measure_res *res) {
  const struct pt_gpu_api *a = k->api;
  size_t bytes = count * sizeof(float);
  float *in = k->c->in_place ? k->recv : k->send;
  int rc = -1;
  struct pt_measure_res bad = {PT_PT_OK, ""};
  k->filled_count = 0; /* the measurements' inputs are gone */
  for (unsigned r = 0; r < replays; r++) {
    unsigned base = (r & 1) * nout;
    char when[48];
    for (unsigned j = 0; j < nout; j++) {
      pt_pattern_fill_op(k->host, count, k->c->rank, base + j);
      ENV("cudaMemcpyAsync of the screen's inputs", a->MemcpyAsync(in + (size_t)j * count, k->host, bytes, PT_CU_H2D, k->st));
      ENV("cudaStreamSynchronize", a->StreamSynchronize(k->st));
    }
    if (!k->c->in_place) {
      ENV("cudaMemsetAsync", a->MemsetAsync(k->recv, 0xff, bytes * nout, k->st));
      ENV("cudaStreamSynchronize", a->StreamSynchronize(k->st));
    }
    /* Each replay's own time, for the record only (ranks not aligned). */
    float ms = 0;
    if (a->EventRecord(k->ev0, k->st) || run_once(k, exec, count, nout, res) || a->EventRecord(k->ev1, k->st) ||
        a->EventSynchronize(k->ev1) || a->EventElapsedTime(&ms, k->ev0, k->ev1)) {
      if (res->state == PT_PT_OK) outcome(res, PT_PT_CRASH, "GPU %d: an LL128 screen replay failed", k->dev);
      return 0;
    }
    samples[r] = per_op(k, exec != NULL, ms);
    snprintf(when, sizeof when, "LL128 screen replay %u", r + 1);
    if (bad.state == PT_PT_OK) check_ops(k, count, nout, base, when, &bad);
    if (bad.state == PT_PT_CRASH) break;
    beat(k, r + 1);
  }
  if (bad.state != PT_PT_OK) *res = bad;
  rc = 0;
out:
  return rc;
}

/* Before every replay, outside any timed window: out of place, NaN in
 * every output, so an output the replay does not write cannot pass the
 * check; in place, the pristine inputs again (a sum is never equal to one
 * rank's input, so an unwritten output fails too). Set-up work, so an
 * error is the environment's. */
static int nan_fill(struct rank *k, size_t bytes) {
  int rc = -1;
  /* The restore goes on the measuring stream: a device-to-device
   * cudaMemcpy returns before it copies, on the legacy stream, which the
   * non-blocking measuring stream does not wait for. */
  if (k->c->in_place)
    ENV("cudaMemcpyAsync of the inputs", k->api->MemcpyAsync(k->recv, k->send, bytes, PT_CU_D2D, k->st));
  else ENV("cudaMemsetAsync", k->api->MemsetAsync(k->recv, 0xff, bytes, k->st));
  ENV("cudaStreamSynchronize", k->api->StreamSynchronize(k->st));
  rc = 0;
out:
  return rc;
}

/* Aligns the ranks on the GPU just before a timed window: a one-float
 * all-reduce on the measuring stream ends at the same moment on every GPU,
 * however long each rank's host took to get here (checking the previous
 * replay takes milliseconds at MiB sizes), so the start event that
 * follows marks the same instant on every rank and no rank's window holds
 * its peers' host work. Untimed; its value is never read. */
static int align(struct rank *k, struct pt_measure_res *res) {
  int rc = 1;
  NC("ncclGroupStart", k->api->GroupStart());
  NC("ncclAllReduce (aligning)", k->api->AllReduce(k->bar, k->bar, 1, PT_NCCL_FLOAT32, PT_NCCL_SUM, k->comm, k->st));
  NC("ncclGroupEnd", k->api->GroupEnd());
  rc = 0;
out:
  return rc;
}

/* NCCL (2.22+, NCCL_RUNTIME_CONNECT) connects the peers at the first
 * collective, not at init: one untimed all-reduce with NCCL's own choice,
 * so that its log names the transports before the provenance is read. */
static void connect_peers(struct rank *k, struct pt_measure_res *res) {
  NC("ncclGroupStart", k->api->GroupStart());
  NC("ncclAllReduce (connecting)", k->api->AllReduce(k->bar, k->bar, 64, PT_NCCL_FLOAT32, PT_NCCL_SUM, k->comm, k->st));
  NC("ncclGroupEnd", k->api->GroupEnd());
  CU("cudaStreamSynchronize", k->api->StreamSynchronize(k->st));
out:
  return;
}

static void beat(struct rank *k, unsigned rep) {
  struct pt_rank_msg *m = calloc(1, sizeof *m);
  if (!m) return;
  m->type = PT_RK_BEAT;
  m->rep = rep;
  say(k, m);
  free(m);
}

/* Warm-up by time, so clocks and links settle: one replay is timed, the
 * coordinator turns the slowest rank's time into a count for every rank,
 * and that many replays follow. Returns 0, 1 when the candidate failed
 * (res set), or -1 for an environment failure (k->why). */
static int warm_by_time(struct rank *k, pt_cu_exec exec, size_t count, unsigned nout, struct pt_measure_res *res) {
  const struct pt_gpu_api *a = k->api;
  size_t bytes = count * sizeof(float) * nout;
  struct pt_rank_msg *m = NULL;
  struct pt_rank_cmd c;
  float ms = 0;
  int rc = 1;
  if (k->c->in_place && (rc = nan_fill(k, bytes))) goto out;
  rc = 1;
  if (align(k, res)) goto out;
  CU("cudaEventRecord", a->EventRecord(k->ev0, k->st));
  if (run_once(k, exec, count, nout, res)) goto out;
  CU("cudaEventRecord", a->EventRecord(k->ev1, k->st));
  CU("cudaEventSynchronize", a->EventSynchronize(k->ev1));
  CU("cudaEventElapsedTime", a->EventElapsedTime(&ms, k->ev0, k->ev1));
  if (!(m = calloc(1, sizeof *m))) {
    rc = envfail(k, "out of memory");
    goto out;
  }
  m->type = PT_RK_WARM;
  m->warm_us = (double)ms * 1000.0;
  if (say(k, m) || recv(k->fd, &c, sizeof c, 0) != (ssize_t)sizeof c || c.type != PT_RK_CMD_WARM) {
    rc = envfail(k, "lost the coordinator during warm-up");
    goto out;
  }
  for (unsigned w = 0; w < c.warm; w++) {
    if (k->c->in_place && (rc = nan_fill(k, bytes))) goto out;
    rc = 1;
    if (run_once(k, exec, count, nout, res)) goto out;
  }
  rc = 0;
out:
  free(m);
  return rc;
}

/* One measurement. Returns 0 with res set (a CRASH leaves the rank
 * unusable), or -1 for an environment failure (k->why). */
static int measure(struct rank *k, const struct pt_rank_cmd *cmd, double *samples, struct pt_measure_res *res) {
  const struct pt_gpu_api *a = k->api;
  const struct pt_measure_req *q = &cmd->req;
  size_t count = (size_t)q->nbytes / sizeof(float), bytes = (size_t)q->nbytes;
  unsigned nout = k->c->ops;
  int graph = q->mode == PT_MODE_GRAPH, rc = 0;
  pt_cu_exec exec = NULL;
  if (bytes * nout > OUT_BUDGET) nout = bytes >= OUT_BUDGET ? 1 : (unsigned)(OUT_BUDGET / bytes);
  res->state = PT_PT_OK;
  res->detail[0] = 0;
  if ((rc = ensure(k, count, nout))) return rc;
  if (cmd->do_force && force(k, q, res)) return 0;
  if (probe(k, cmd, count, res)) return 0;
  if (gap_window(k, graph, res)) return 0;
  if ((rc = nan_fill(k, bytes * nout))) return rc;
  if (graph && capture(k, count, nout, &exec, res)) goto out;
  if (graph && verdict(k, cmd, res)) goto out; /* captured, never run */
  if (q->screen) {
    if ((rc = screen(k, exec, count, nout, q->reps, samples, res)) || res->state != PT_PT_OK) goto out;
    if (!graph) verdict(k, cmd, res); /* eager: NCCL's own choice may have run */
    goto out;
  }
  /* Always one untimed replay, then --warmup more: with --warmup 0 the
   * first timed replay would otherwise pay first-launch costs. Eager mode
   * learns the verdict from it (it runs NCCL's own choice when the
   * candidate is disabled: harmless, and not timed). */
  for (unsigned w = 0; w < 1 + k->c->warmup; w++) {
    if (k->c->in_place && w && (rc = nan_fill(k, bytes * nout))) goto out;
    if (run_once(k, exec, count, nout, res)) goto out;
  }
  if (!graph && verdict(k, cmd, res)) goto out;
  if (k->c->warmup_ms > 0 && (rc = warm_by_time(k, exec, count, nout, res)) != 0) {
    if (rc > 0) rc = 0; /* the candidate failed: res says how */
    goto out;
  }
  CU("cudaStreamSynchronize", a->StreamSynchronize(k->st));
  /* A wrong result is remembered, but the rank runs on: its peers wait in
   * the same collectives, so every rank keeps the same sequence. */
  struct pt_measure_res bad = {PT_PT_OK, ""};
  check(k, count, nout, "warm-up", &bad);
  for (unsigned i = 0; i < q->reps; i++) {
    float ms = 0;
    char when[48];
    if ((rc = nan_fill(k, bytes * nout))) goto out;
    /* This rank's own events around its own launch, after the ranks were
     * aligned: no other GPU's launch and no rank's host work lies inside
     * the window. */
    if (align(k, res)) goto out;
    CU("cudaEventRecord", a->EventRecord(k->ev0, k->st));
    if (run_once(k, exec, count, nout, res)) goto out;
    CU("cudaEventRecord", a->EventRecord(k->ev1, k->st));
    CU("cudaEventSynchronize", a->EventSynchronize(k->ev1));
    CU("cudaEventElapsedTime", a->EventElapsedTime(&ms, k->ev0, k->ev1));
    samples[i] = per_op(k, graph, ms);
    snprintf(when, sizeof when, "timed replay %u", q->first_rep + i + 1);
    if (bad.state == PT_PT_OK) check(k, count, nout, when, &bad);
    if (bad.state == PT_PT_CRASH) break;
    beat(k, i + 1);
  }
  if (bad.state != PT_PT_OK) *res = bad;
out:
  if (exec) a->GraphExecDestroy(exec);
  return rc;
}

static void prov(struct rank *k, char *out, size_t len) {
  const struct pt_gpu_api *a = k->api;
  int drv = 0, rt = 0, version = 0;
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&text, &tlen);
  if (!f) return;
  a->DriverGetVersion(&drv);
  a->RuntimeGetVersion(&rt);
  a->GetVersion(&version);
  fprintf(f, "    gpu = {\n      backend = \"nccl\";\n      nccl_version = \"%d.%d.%d\";\n      nccl_version_code = %d;\n",
          version / 10000, version / 100 % 100, version % 100, version);
  fputs("      nccl_library = ", f);
  pt_prov_quote(f, a->nccl_path);
  fputs(";\n      cudart_library = ", f);
  pt_prov_quote(f, a->cudart_path);
  fputs(";\n      plugin = ", f);
  pt_prov_quote(f, k->c->plugin);
  fprintf(f, ";\n      cuda_driver = %d;\n      cuda_runtime = %d;\n", drv, rt);
  fprintf(f, "      datatype = \"float32\";\n      ops_per_launch = %u;\n      warmup = %u;\n      warmup_ms = %g;\n",
          k->c->ops, k->c->warmup, k->c->warmup_ms);
  fprintf(f, "      gap_us = %g;\n      shape = \"%s\";\n", k->c->gap_us,
          k->gap.fn ? "each timed all-reduce after a kernel that keeps every SM busy for gap_us; the gaps' own time "
                      "(timed alone, same mode) subtracted"
                    : "the timed all-reduces back to back");
  fprintf(f, "      placement = \"%s\";\n      buffers = \"%s\";\n", k->c->in_place ? "in-place" : "out-of-place",
          k->c->nccl_mem ? "ncclMemAlloc" : "cudaMalloc");
  fputs("      check = \"exact integer pattern, every output of every op of every rank, every timed replay\";\n", f);
  fputs("      devices = (", f);
  for (int r = 0; r < k->c->nranks; r++) {
    static char p[PT_CU_PROP_BYTES];
    char bus[32] = "?";
    int major = 0, minor = 0;
    memset(p, 0, sizeof p);
    a->GetDeviceProperties(p, k->c->devs[r]);
    p[255] = 0;
    a->DeviceGetPCIBusId(bus, sizeof bus, k->c->devs[r]);
    a->DeviceGetAttribute(&major, PT_CU_ATTR_CC_MAJOR, k->c->devs[r]);
    a->DeviceGetAttribute(&minor, PT_CU_ATTR_CC_MINOR, k->c->devs[r]);
    fprintf(f, "%s\n        { cuda_index = %d; name = ", r ? "," : "", k->c->devs[r]);
    pt_prov_quote(f, p);
    fputs("; pci_bus_id = ", f);
    pt_prov_quote(f, bus);
    fprintf(f, "; compute_capability = \"%d.%d\"; }", major, minor);
  }
  fputs(" );\n      p2p_access = [", f);
  for (int x = 0, first = 1; x < k->c->nranks; x++)
    for (int y = 0; y < k->c->nranks; y++) {
      int can = 0;
      if (x == y) continue;
      a->DeviceCanAccessPeer(&can, k->c->devs[x], k->c->devs[y]);
      fprintf(f, "%s\"%d>%d %s\"", first ? " " : ", ", k->c->devs[x], k->c->devs[y], can ? "yes" : "no");
      first = 0;
    }
  fputs(" ];\n", f);
  if (fclose(f) == 0 && text) snprintf(out, len, "%s", text);
  free(text);
}

int pt_rank_serve(int fd, const struct pt_rank_cfg *c) {
  struct rank k = {.c = c, .api = c->api, .fd = fd, .dev = c->devs[c->rank]};
  struct pt_rank_msg *m = calloc(1, sizeof *m);
  struct pt_rank_cmd cmd;
  int status = 1, poisoned = 0;
  if (!m) return 1;
  if (c->rank == 0) {
    ncclResult_t r = c->api->GetUniqueId(&m->uid);
    if (r != ncclSuccess) {
      envfail(&k, "ncclGetUniqueId failed: %s", c->api->NcclErrorString(r));
      goto fail;
    }
    m->type = PT_RK_UID;
    if (say(&k, m)) goto out;
  }
  if (recv(fd, &cmd, sizeof cmd, 0) != (ssize_t)sizeof cmd || cmd.type != PT_RK_CMD_UID) goto out;
  if (open_rank(&k, cmd.uid)) goto fail;
  memset(m, 0, sizeof *m);
  m->type = PT_RK_READY;
  if (c->rank == 0) prov(&k, m->text, sizeof m->text);
  if (say(&k, m)) goto out;
  for (;;) {
    ssize_t n = recv(fd, &cmd, sizeof cmd, 0);
    if (n == 0) {
      status = 0; /* the coordinator is done with us */
      goto out;
    }
    if (n != (ssize_t)sizeof cmd) goto out;
    memset(m, 0, sizeof *m);
    m->type = PT_RK_DONE;
    m->res.state = PT_PT_OK;
    if (cmd.type == PT_RK_CMD_FORCE) force(&k, &cmd.req, &m->res);
    else if (cmd.type == PT_RK_CMD_CONNECT) connect_peers(&k, &m->res);
    else if (measure(&k, &cmd, m->samples, &m->res)) goto fail;
    if (say(&k, m)) goto out;
    /* A crash it caught itself (a CUDA error) leaves the context in an
     * unknown state: report it, then leave for a fresh worker. */
    if (m->res.state == PT_PT_CRASH) {
      poisoned = 1;
      goto out;
    }
  }
fail:
  memset(m, 0, sizeof *m);
  m->type = PT_RK_FAIL;
  m->code = PT_EIO;
  snprintf(m->text, sizeof m->text, "%s", k.why);
  say(&k, m);
  poisoned = 1;
out:
  close_rank(&k, poisoned);
  free(m);
  return status;
}
