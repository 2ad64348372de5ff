/*
 * The GPU measurement backend (measure/gpu_nccl.h): NCCL set-up with the
 * plugin as tuner, one measurement per request (force, probe, capture or
 * launch, time, check), tear-down. Provenance text is assembled here from
 * CUDA/NCCL facts; quoting and the environment are measure/gpu_prov.c's.
 * Compiled only with PT_HAVE_GPU (mk/gpu.mk); measure/gpu_absent.c otherwise.
 */
#ifdef PT_HAVE_GPU
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_nccl.h"
#include "gpu_ncclapi.h"
#include "gpu_pattern.h"
#include "gpu_prov.h"
#include "pcie/control.h"

extern char **environ;

/* Bytes of rotating output buffers per rank: each of the `ops` collectives
 * of a launch writes its own buffer (so every one is checked) until this
 * much memory is used; beyond that they share. */
#define OUT_BUDGET ((size_t)256 << 20)

struct gpu {
  struct pt_nccl_api api;
  void *plugin; /* our own reference to the plugin NCCL loaded */
  const pcieTunerControl_v1_t *ctl;
  int n, dev[PT_GPU_MAX];
  int ncomm, nres; /* how many comms / stream+event sets exist */
  ncclComm_t comm[PT_GPU_MAX];
  cudaStream_t st[PT_GPU_MAX];
  cudaEvent_t ev0[PT_GPU_MAX], ev1[PT_GPU_MAX];
  float *send[PT_GPU_MAX], *recv[PT_GPU_MAX];
  size_t send_cap, recv_cap; /* bytes per rank */
  float *host;
  size_t host_cap;
  unsigned ops, warmup;
  int poisoned; /* a CUDA/NCCL error happened: nothing more may run */
  char tmpdir[64];
  struct pt_backend_info info;
};

static int gerr(struct pt_error_rec *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int gerr(struct pt_error_rec *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(err, code, "nccl backend", 0, fmt, ap);
  va_end(ap);
  return code;
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

/* A CUDA/NCCL call failed while measuring: the candidate crashed, and the
 * context may be poisoned (sticky errors), so the worker must leave. */
#define CU(what, call)                                                                       \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      g->poisoned = 1;                                                                       \
      outcome(res, PT_PT_CRASH, "%s failed: %s", what, cudaGetErrorString(e_));              \
      goto out;                                                                              \
    }                                                                                        \
  } while (0)
#define NC(what, call)                                                                       \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      g->poisoned = 1;                                                                       \
      outcome(res, PT_PT_CRASH, "%s failed: %s (%s)", what, g->api.GetErrorString(r_),       \
              g->api.GetLastError(NULL));                                                    \
      goto out;                                                                              \
    }                                                                                        \
  } while (0)

/* Grows the per-rank buffers; a new send buffer gets the rank's pattern.
 * Returns 0, 1 with res set (CUDA error), or a negative code when memory
 * runs out (not the candidate's fault: the sweep stops with a message). */
static int ensure(struct gpu *g, size_t nbytes, size_t recv_bytes, struct pt_measure_res *res,
                  struct pt_error_rec *err) {
  int rc = 1;
  if (nbytes > g->host_cap) {
    float *h = realloc(g->host, nbytes);
    if (!h) return gerr(err, PT_ENOMEM, "cannot allocate %zu host bytes", nbytes);
    g->host = h;
    g->host_cap = nbytes;
  }
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    if (nbytes > g->send_cap) {
      cudaFree(g->send[r]);
      g->send[r] = NULL;
      if (cudaMalloc((void **)&g->send[r], nbytes) != cudaSuccess)
        return gerr(err, PT_ENOMEM, "cannot allocate %zu bytes on GPU %d; lower --sizes", nbytes,
                    g->dev[r]);
      pt_pattern_fill(g->host, nbytes / sizeof(float), r);
      CU("cudaMemcpy", cudaMemcpy(g->send[r], g->host, nbytes, cudaMemcpyHostToDevice));
    }
    if (recv_bytes > g->recv_cap) {
      cudaFree(g->recv[r]);
      g->recv[r] = NULL;
      if (cudaMalloc((void **)&g->recv[r], recv_bytes) != cudaSuccess)
        return gerr(err, PT_ENOMEM, "cannot allocate %zu bytes on GPU %d; lower --sizes",
                    recv_bytes, g->dev[r]);
    }
  }
  if (nbytes > g->send_cap) g->send_cap = nbytes;
  if (recv_bytes > g->recv_cap) g->recv_cap = recv_bytes;
  rc = 0;
out:
  return rc;
}

/* ops all-reduces per rank, each its own group: in one group NCCL would
 * merge them and the tuner would see their summed size. */
static int launch(struct gpu *g, size_t count, unsigned nout, struct pt_measure_res *res) {
  int rc = 1;
  for (unsigned k = 0; k < g->ops; k++) {
    NC("ncclGroupStart", g->api.GroupStart());
    for (int r = 0; r < g->n; r++)
      NC("ncclAllReduce", g->api.AllReduce(g->send[r], g->recv[r] + (size_t)(k % nout) * count,
                                           count, ncclFloat, ncclSum, g->comm[r], g->st[r]));
    NC("ncclGroupEnd", g->api.GroupEnd());
  }
  rc = 0;
out:
  return rc;
}

static int run_once(struct gpu *g, const cudaGraphExec_t *exec, size_t count, unsigned nout,
                    struct pt_measure_res *res) {
  int rc = 1;
  if (!exec) return launch(g, count, nout, res);
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    CU("cudaGraphLaunch", cudaGraphLaunch(exec[r], g->st[r]));
  }
  rc = 0;
out:
  return rc;
}

static int sync_all(struct gpu *g, struct pt_measure_res *res) {
  int rc = 1;
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    CU("cudaStreamSynchronize", cudaStreamSynchronize(g->st[r]));
  }
  rc = 0;
out:
  return rc;
}

/* Whether the forced choice really ran: NCCL must have asked the tuner,
 * and must not have had the combination disabled. Returns 1 (res set to
 * unsupported) when the measurement would not be of this candidate. */
static int verdict(struct gpu *g, const struct pt_measure_req *req, struct pt_measure_res *res) {
  struct pt_control_stats s;
  if (req->is_default) return 0;
  g->ctl->stats(&s);
  if (s.disabled)
    return outcome(res, PT_PT_UNSUPPORTED, "NCCL has %s/%s disabled at %llu B (%lu of %lu decisions)",
                   pt_algo_name(req->algo), pt_proto_name(req->proto),
                   (unsigned long long)req->nbytes, s.disabled, s.disabled + s.applied);
  if (!s.applied)
    return outcome(res, PT_PT_UNSUPPORTED,
                   "NCCL never asked the tuner (%d rank%s), so %s/%s/%d cannot be forced", g->n,
                   g->n == 1 ? "" : "s", pt_algo_name(req->algo), pt_proto_name(req->proto),
                   req->channels);
  return 0;
}

/* Asks NCCL, without running anything, whether the forced combination is
 * enabled at this size: ncclGroupSimulateEnd calls the tuner but launches
 * nothing. Stats are reset afterwards by forcing again. */
static int probe(struct gpu *g, const struct pt_measure_req *req, size_t count,
                 struct pt_measure_res *res) {
  int rc = 1;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  if (req->is_default || !g->api.GroupSimulateEnd) return 0;
  NC("ncclGroupStart", g->api.GroupStart());
  for (int r = 0; r < g->n; r++)
    NC("ncclAllReduce", g->api.AllReduce(g->send[r], g->recv[r], count, ncclFloat, ncclSum,
                                         g->comm[r], g->st[r]));
  NC("ncclGroupSimulateEnd", g->api.GroupSimulateEnd(&sim));
  if (verdict(g, req, res)) goto out;
  g->ctl->force(req->algo, req->proto, req->channels, 0);
  rc = 0;
out:
  return rc;
}

static int check_outputs(struct gpu *g, size_t count, unsigned nout, const char *when,
                         struct pt_measure_res *res) {
  int rc = 1;
  size_t bad;
  float got, want;
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    for (unsigned k = 0; k < nout; k++) {
      CU("cudaMemcpy", cudaMemcpy(g->host, g->recv[r] + (size_t)k * count, count * sizeof(float),
                                  cudaMemcpyDeviceToHost));
      if (pt_pattern_check(g->host, count, g->n, &bad, &got, &want)) {
        outcome(res, PT_PT_WRONG, "%s: rank %d output %u element %zu is %g, want %g", when, r, k,
                bad, (double)got, (double)want);
        goto out;
      }
    }
  }
  rc = 0;
out:
  return rc;
}

/* Graph mode: one graph per rank holding the ops collectives. */
static int capture(struct gpu *g, size_t count, unsigned nout, cudaGraphExec_t *exec,
                   struct pt_measure_res *res) {
  int rc = 1, began = 0, ended = 0;
  cudaGraph_t graph = NULL;
  for (; began < g->n; began++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[began]));
    /* Thread-local: NCCL's own threads may make unsafe CUDA calls meanwhile. */
    CU("cudaStreamBeginCapture",
       cudaStreamBeginCapture(g->st[began], cudaStreamCaptureModeThreadLocal));
  }
  if (launch(g, count, nout, res)) goto out;
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    cudaError_t e = cudaStreamEndCapture(g->st[r], &graph);
    ended = r + 1; /* capture mode ends even when EndCapture fails */
    CU("cudaStreamEndCapture", e);
    e = cudaGraphInstantiate(&exec[r], graph, 0);
    cudaGraphDestroy(graph);
    CU("cudaGraphInstantiate", e);
  }
  rc = 0;
out:
  /* A failed capture is still ended, so no stream is left capturing while
   * the worker reports (it leaves anyway: g->poisoned is set). */
  for (int r = ended; rc && r < began; r++) {
    cudaGraph_t dead = NULL;
    cudaSetDevice(g->dev[r]);
    if (cudaStreamEndCapture(g->st[r], &dead) == cudaSuccess && dead) cudaGraphDestroy(dead);
  }
  return rc;
}

static int gpu_measure(void *self, const struct pt_measure_req *req, double *samples,
                       struct pt_measure_res *res, struct pt_error_rec *err) {
  struct gpu *g = self;
  cudaGraphExec_t exec[PT_GPU_MAX] = {0};
  int graph = req->mode == PT_MODE_GRAPH, rc;
  res->state = PT_PT_OK;
  res->detail[0] = 0;
  if (g->poisoned) return gerr(err, PT_EIO, "the GPU backend is unusable after an earlier error");
  if (req->coll != PT_ALLREDUCE) {
    outcome(res, PT_PT_UNSUPPORTED, "the nccl backend measures allreduce only");
    return 0;
  }
  if (req->nbytes % sizeof(float) || req->nbytes > ((uint64_t)1 << 40)) {
    outcome(res, PT_PT_UNSUPPORTED, "sizes must be multiples of 4 bytes (fp32) up to 1 TiB");
    return 0;
  }
  size_t nbytes = (size_t)req->nbytes, count = nbytes / sizeof(float);
  unsigned nout = g->ops;
  if (nbytes * nout > OUT_BUDGET) nout = nbytes >= OUT_BUDGET ? 1 : (unsigned)(OUT_BUDGET / nbytes);
  if ((rc = ensure(g, nbytes, nbytes * nout, res, err))) return rc < 0 ? rc : 0;
  rc = 0;
  if (req->is_default) {
    g->ctl->force(-1, 0, 0, 0);
  } else if (g->ctl->force(req->algo, req->proto, req->channels, 0)) {
    outcome(res, PT_PT_UNSUPPORTED, "the plugin rejects %d/%d/%d", req->algo, req->proto,
            req->channels);
    return 0;
  }
  if (probe(g, req, count, res)) goto out;
  /* NaN everywhere: an output no collective wrote cannot pass the check. */
  for (int r = 0; r < g->n; r++) {
    CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
    CU("cudaMemsetAsync", cudaMemsetAsync(g->recv[r], 0xff, nbytes * nout, g->st[r]));
  }
  if (graph && capture(g, count, nout, exec, res)) goto out;
  if (graph && verdict(g, req, res)) goto out; /* captured, never run */
  /* Eager mode learns the verdict from a first launch, which runs NCCL's
   * own choice when the candidate is disabled: harmless, and not timed. */
  for (unsigned w = 0; w < (graph ? g->warmup : (g->warmup ? g->warmup : 1)); w++)
    if (run_once(g, graph ? exec : NULL, count, nout, res)) goto out;
  if (!graph && verdict(g, req, res)) goto out;
  if (sync_all(g, res) || check_outputs(g, count, nout, "after warm-up", res)) goto out;
  for (unsigned i = 0; i < req->reps; i++) {
    double worst = 0;
    for (int r = 0; r < g->n; r++) {
      CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
      CU("cudaEventRecord", cudaEventRecord(g->ev0[r], g->st[r]));
    }
    if (run_once(g, graph ? exec : NULL, count, nout, res)) goto out;
    for (int r = 0; r < g->n; r++) {
      CU("cudaSetDevice", cudaSetDevice(g->dev[r]));
      CU("cudaEventRecord", cudaEventRecord(g->ev1[r], g->st[r]));
    }
    /* The slowest rank sets the collective's time. */
    for (int r = 0; r < g->n; r++) {
      float ms = 0;
      CU("cudaEventSynchronize", cudaEventSynchronize(g->ev1[r]));
      CU("cudaEventElapsedTime", cudaEventElapsedTime(&ms, g->ev0[r], g->ev1[r]));
      if (ms > worst) worst = ms;
    }
    samples[i] = worst * 1000.0 / g->ops;
  }
  if (check_outputs(g, count, nout, "after timing", res)) goto out;
out:
  for (int r = 0; r < g->n; r++)
    if (exec[r]) cudaGraphExecDestroy(exec[r]);
  g->ctl->force(-1, 0, 0, 0);
  return rc;
}

static int gpu_info(void *self, struct pt_backend_info *out) {
  *out = ((const struct gpu *)self)->info;
  return 0;
}

static void gpu_close(void *self) {
  struct gpu *g = self;
  if (!g) return;
  if (g->ctl) g->ctl->force(-1, 0, 0, 0);
  /* After a CUDA error teardown may block on a dead context; the process
   * is about to exit, which frees everything anyway. */
  if (!g->poisoned) {
    for (int r = 0; r < g->nres; r++) {
      cudaSetDevice(g->dev[r]);
      cudaFree(g->send[r]);
      cudaFree(g->recv[r]);
      cudaEventDestroy(g->ev0[r]);
      cudaEventDestroy(g->ev1[r]);
      cudaStreamDestroy(g->st[r]);
    }
    for (int r = 0; r < g->ncomm; r++) g->api.CommDestroy(g->comm[r]);
    if (g->plugin) dlclose(g->plugin);
    pt_nccl_api_unload(&g->api);
  }
  if (g->tmpdir[0]) rmdir(g->tmpdir);
  free(g->host);
  free(g);
}

/* The plugin next to this executable (build tree: build/), or in ../lib
 * (installed: PREFIX/bin and PREFIX/lib). */
static int find_plugin(const char *given, char *out, struct pt_error_rec *err) {
  char exe[PATH_MAX], cand[PATH_MAX + 64];
  if (given) {
    if (!realpath(given, out)) return gerr(err, PT_EINVAL, "--plugin %s: %s", given, strerror(errno));
    return 0;
  }
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k < 0) return gerr(err, PT_EIO, "cannot read /proc/self/exe: %s", strerror(errno));
  exe[k] = 0;
  const char *dir = dirname(exe);
  const char *rel[] = {"/libnccl-tuner-pcie.so", "/../lib/libnccl-tuner-pcie.so"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
    if (realpath(cand, out)) return 0;
  }
  return gerr(err, PT_EIO, "cannot find libnccl-tuner-pcie.so next to %s or in ../lib; give --plugin PATH",
              dir);
}

static int setup_env(struct gpu *g, const char *plugin, struct pt_error_rec *err) {
  const char *old = getenv("NCCL_TUNER_PLUGIN");
  if (old && strcmp(old, plugin))
    fprintf(stderr, "pcie-tune worker: NCCL_TUNER_PLUGIN=%s replaced by %s for the measurement\n", old,
            plugin);
  /* An empty directory: the plugin finds no profile and stays passive
   * unless forced, so "NCCL default" really is NCCL's own choice. */
  const char *tmp = getenv("TMPDIR");
  snprintf(g->tmpdir, sizeof g->tmpdir, "%s/pcie-tune-noprofile.XXXXXX",
           tmp && strlen(tmp) < 30 ? tmp : "/tmp");
  if (!mkdtemp(g->tmpdir)) {
    g->tmpdir[0] = 0;
    return gerr(err, PT_EIO, "cannot create an empty profile directory: %s", strerror(errno));
  }
  if (setenv("NCCL_TUNER_PLUGIN", plugin, 1) || setenv("PCIE_TUNER_PROFILE", g->tmpdir, 1))
    return gerr(err, PT_ENOMEM, "cannot set the environment");
  return 0;
}

static void write_prov(struct gpu *g, FILE *f, const char *plugin, int nccl_version) {
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  fprintf(f, "    gpu = {\n      backend = \"nccl\";\n      nccl_version = \"%s\";\n      nccl_version_code = %d;\n",
          g->info.nccl_version, nccl_version);
  fputs("      nccl_library = ", f);
  pt_prov_quote(f, g->api.path);
  fputs(";\n      plugin = ", f);
  pt_prov_quote(f, plugin);
  fprintf(f, ";\n      cuda_driver = %d;\n      cuda_runtime = %d;\n", drv, rt);
  fprintf(f, "      datatype = \"float32\";\n      ops_per_launch = %u;\n      warmup = %u;\n",
          g->ops, g->warmup);
  fputs("      check = \"exact integer pattern, every output of every rank\";\n", f);
  fputs("      devices = (", f);
  for (int r = 0; r < g->n; r++) {
    struct cudaDeviceProp p;
    char bus[32] = "?";
    memset(&p, 0, sizeof p);
    cudaGetDeviceProperties(&p, g->dev[r]);
    cudaDeviceGetPCIBusId(bus, sizeof bus, g->dev[r]);
    fprintf(f, "%s\n        { cuda_index = %d; name = ", r ? "," : "", g->dev[r]);
    pt_prov_quote(f, p.name);
    fputs("; pci_bus_id = ", f);
    pt_prov_quote(f, bus);
    fprintf(f, "; compute_capability = \"%d.%d\"; }", p.major, p.minor);
  }
  /* What CUDA allows; which transport NCCL then picked (P2P or SHM) is
   * not reported through its API (NCCL_DEBUG=INFO prints it on stderr). */
  fputs(" );\n      p2p_access = [", f);
  for (int a = 0, first = 1; a < g->n; a++)
    for (int b = 0; b < g->n; b++) {
      int can = 0;
      if (a == b) continue;
      cudaDeviceCanAccessPeer(&can, g->dev[a], g->dev[b]);
      fprintf(f, "%s\"%d>%d %s\"", first ? " " : ", ", g->dev[a], g->dev[b], can ? "yes" : "no");
      first = 0;
    }
  fputs(" ];\n      ", f);
  pt_prov_nccl_env(f, (const char *const *)environ);
  fputs("\n    };\n", f);
}

static int max_channels(void) {
  const char *v = getenv("NCCL_MAX_NCHANNELS");
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  /* NCCL clamps a forced count to its own channel count, which it does not
   * publish; a candidate above it measures (and later runs) clamped, so it
   * is consistent, just redundant. NCCL_MAX_NCHANNELS bounds it. */
  if (v && *v && !*end && n >= 1 && n <= PT_MAX_CHANNELS) return (int)n;
  return PT_MAX_CHANNELS;
}

int pt_gpu_built(void) { return 1; }

int pt_gpu_open(struct pt_backend *b, const struct pt_gpu_opts *o, char **prov,
                struct pt_error_rec *err) {
  char plugin[PATH_MAX], why[600], *text = NULL;
  size_t textlen = 0;
  int count = 0, version = 0, rc;
  cudaError_t ce;
  *prov = NULL;
  if (o->ngpus < 1 || o->ngpus > PT_GPU_MAX || o->ops < 1 || o->ops > 1000 || o->warmup > 1000)
    return gerr(err, PT_EINVAL, "bad options (%d GPUs, %u ops, %u warm-up)", o->ngpus, o->ops, o->warmup);
  if ((ce = cudaGetDeviceCount(&count)) != cudaSuccess || count < 1)
    return gerr(err, PT_EIO, "no CUDA device: cudaGetDeviceCount says '%s'",
                ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
  for (int i = 0; i < o->ngpus; i++)
    if (o->gpus[i] < 0 || o->gpus[i] >= count)
      return gerr(err, PT_EIO, "no CUDA device %d (this machine has %d)", o->gpus[i], count);
  if ((rc = find_plugin(o->plugin, plugin, err))) return rc;
  struct gpu *g = calloc(1, sizeof *g);
  if (!g) return gerr(err, PT_ENOMEM, "out of memory");
  g->n = o->ngpus;
  g->ops = o->ops;
  g->warmup = o->warmup;
  memcpy(g->dev, o->gpus, sizeof(int) * (size_t)o->ngpus);
  if ((rc = setup_env(g, plugin, err))) goto fail;
  rc = PT_EIO;
  if (pt_nccl_api_load(&g->api, o->nccl_lib, why, sizeof why)) {
    gerr(err, PT_EIO, "%s", why);
    goto fail;
  }
  g->api.GetVersion(&version);
  ncclResult_t nr = g->api.CommInitAll(g->comm, g->n, g->dev);
  if (nr != ncclSuccess) {
    gerr(err, PT_EIO, "ncclCommInitAll over %d GPUs failed: %s (%s)", g->n, g->api.GetErrorString(nr),
         g->api.GetLastError(NULL));
    goto fail;
  }
  g->ncomm = g->n;
  /* The library NCCL loaded as its tuner, found without loading anything. */
  g->plugin = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
  void *sym = g->plugin ? dlsym(g->plugin, PCIE_CONTROL_SYMBOL) : NULL;
  g->ctl = sym;
  if (!g->ctl || g->ctl->version != 1) {
    gerr(err, PT_EIO, "NCCL did not load the tuner plugin %s (or it lacks %s v1); the measurement "
                      "cannot force candidates", plugin, PCIE_CONTROL_SYMBOL);
    goto fail;
  }
  for (; g->nres < g->n; g->nres++) {
    int r = g->nres;
    if (cudaSetDevice(g->dev[r]) != cudaSuccess ||
        cudaStreamCreateWithFlags(&g->st[r], cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&g->ev0[r]) != cudaSuccess || cudaEventCreate(&g->ev1[r]) != cudaSuccess) {
      gerr(err, PT_EIO, "cannot create streams and events on GPU %d", g->dev[r]);
      g->nres++; /* partially made: destroy what exists */
      goto fail;
    }
  }
  snprintf(g->info.name, sizeof g->info.name, "nccl");
  /* NCCL >= 2.9 encodes X.Y.Z as X*10000 + Y*100 + Z. */
  snprintf(g->info.nccl_version, sizeof g->info.nccl_version, "%d.%d.%d", version / 10000,
           version / 100 % 100, version % 100);
  struct cudaDeviceProp p;
  memset(&p, 0, sizeof p);
  cudaGetDeviceProperties(&p, g->dev[0]);
  int k = snprintf(g->info.target, sizeof g->info.target, "%dx %s, CUDA devices", g->n, p.name);
  for (int r = 0; r < g->n && k > 0 && (size_t)k < sizeof g->info.target; r++)
    k += snprintf(g->info.target + k, sizeof g->info.target - (size_t)k, "%s%d", r ? "," : " ", g->dev[r]);
  g->info.nranks = g->n;
  g->info.nnodes = 1;
  g->info.max_channels = max_channels();
  FILE *f = open_memstream(&text, &textlen);
  if (!f) {
    rc = gerr(err, PT_ENOMEM, "out of memory");
    goto fail;
  }
  write_prov(g, f, plugin, version);
  if (fclose(f) || !text) {
    free(text);
    rc = gerr(err, PT_ENOMEM, "out of memory");
    goto fail;
  }
  *prov = text;
  b->self = g;
  b->info = gpu_info;
  b->measure = gpu_measure;
  b->close = gpu_close;
  return 0;
fail:
  gpu_close(g);
  return rc;
}
#endif
