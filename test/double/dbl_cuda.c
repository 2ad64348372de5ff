/*
 * The CUDA runtime half of the double (test/double/dbl.h): devices,
 * memory, streams, events on a virtual clock, and stream capture into
 * graphs that are replayed by dbl_run_op.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbl.h"

static __thread int cur_dev;
static __thread double hclk;

/* Device-to-device cudaMemcpy on the legacy stream, not yet done. CUDA
 * returns from such a copy before it runs, and a non-blocking stream does
 * not wait for the legacy stream: so it runs here only when something
 * orders it (a synchronous copy on the legacy stream, a synchronize of the
 * legacy stream, cudaFree), never before work on a non-blocking stream. */
#define MAX_LEGACY 256
static pthread_mutex_t legacy_mu = PTHREAD_MUTEX_INITIALIZER;
static struct legacy {
  int dev;
  void *dst;
  const void *src;
  size_t n;
} legacy[MAX_LEGACY];
static size_t nlegacy;

void dbl_legacy_flush(int dev) {
  pthread_mutex_lock(&legacy_mu);
  size_t keep = 0;
  for (size_t i = 0; i < nlegacy; i++)
    if (dev < 0 || legacy[i].dev == dev) memcpy(legacy[i].dst, legacy[i].src, legacy[i].n);
    else legacy[keep++] = legacy[i];
  nlegacy = keep;
  pthread_mutex_unlock(&legacy_mu);
}

int dbl_cur_dev(void) { return cur_dev; }
double *dbl_hclk(void) { return &hclk; }

static double maxd(double a, double b) { return a > b ? a : b; }

DBL_API const char *cudaGetErrorString(int e) {
  switch (e) {
  case PT_CU_SUCCESS: return "no error";
  case PT_CU_ERR_INVALID_VALUE: return "invalid argument";
  case PT_CU_ERR_MEMORY: return "out of memory";
  case PT_CU_ERR_INSUFFICIENT_DRIVER: return "CUDA driver version is insufficient for CUDA runtime version";
  case PT_CU_ERR_DEVICES_UNAVAILABLE: return "CUDA-capable device(s) is/are busy or unavailable";
  case PT_CU_ERR_NO_DEVICE: return "no CUDA-capable device is detected";
  case PT_CU_ERR_LAUNCH_FAILURE: return "unspecified launch failure";
  default: return "unknown error";
  }
}

DBL_API int cudaDriverGetVersion(int *v) {
  const struct dbl_env *e = dbl_env();
  *v = e ? e->driver : 0;
  return PT_CU_SUCCESS;
}

DBL_API int cudaRuntimeGetVersion(int *v) {
  const struct dbl_env *e = dbl_env();
  *v = e ? e->runtime : 0;
  return PT_CU_SUCCESS;
}

DBL_API int cudaGetDeviceCount(int *n) {
  const struct dbl_env *e = dbl_env();
  *n = 0;
  if (!e || dbl_fail("nodevice", 0)) return PT_CU_ERR_NO_DEVICE;
  if (e->driver < e->runtime) return PT_CU_ERR_INSUFFICIENT_DRIVER;
  *n = e->ndev;
  return PT_CU_SUCCESS;
}

static int bad_dev(int d) {
  const struct dbl_env *e = dbl_env();
  return !e || d < 0 || d >= e->ndev;
}

DBL_API int cudaSetDevice(int d) {
  if (bad_dev(d)) return PT_CU_ERR_INVALID_VALUE;
  cur_dev = d;
  return PT_CU_SUCCESS;
}

DBL_API int cudaGetDevice(int *d) {
  *d = cur_dev;
  return PT_CU_SUCCESS;
}

static int props(void *p, int d) {
  if (bad_dev(d)) return PT_CU_ERR_INVALID_VALUE;
  memset(p, 0, 256);
  snprintf(p, 256, "NCCL double of %s", dbl_env()->box.name);
  return PT_CU_SUCCESS;
}
/* CUDA 12 exports the _v2 name, CUDA 11 and 13 the plain one. */
DBL_API int cudaGetDeviceProperties(void *p, int d) { return props(p, d); }
DBL_API int cudaGetDeviceProperties_v2(void *p, int d) { return props(p, d); }

DBL_API int cudaDeviceGetAttribute(int *v, int attr, int d) {
  static const int major[] = {7, 8, 9, 10}, minor[] = {0, 9, 0, 0};
  if (bad_dev(d)) return PT_CU_ERR_INVALID_VALUE;
  int cc = dbl_env()->box.nccl.compcap;
  if (cc < 0 || cc > 3) cc = 1;
  if (attr == PT_CU_ATTR_CC_MAJOR) *v = major[cc];
  else if (attr == PT_CU_ATTR_CC_MINOR) *v = minor[cc];
  else return PT_CU_ERR_INVALID_VALUE;
  return PT_CU_SUCCESS;
}

DBL_API int cudaDeviceGetPCIBusId(char *out, int len, int d) {
  if (bad_dev(d) || len < 13) return PT_CU_ERR_INVALID_VALUE;
  snprintf(out, (size_t)len, "00000000:%02X:00.0", 0x10 + d);
  return PT_CU_SUCCESS;
}

DBL_API int cudaDeviceCanAccessPeer(int *can, int a, int b) {
  if (bad_dev(a) || bad_dev(b)) return PT_CU_ERR_INVALID_VALUE;
  *can = a != b && dbl_env()->box.truth.transport == PT_XPORT_P2P;
  return PT_CU_SUCCESS;
}

DBL_API int cudaMalloc(void **p, size_t n) {
  *p = NULL;
  if (!dbl_env() || dbl_fail("malloc", n)) return PT_CU_ERR_MEMORY;
  *p = malloc(n ? n : 1);
  return *p ? PT_CU_SUCCESS : PT_CU_ERR_MEMORY;
}

DBL_API int cudaFree(void *p) {
  dbl_legacy_flush(-1); /* cudaFree synchronises the device */
  free(p);
  return PT_CU_SUCCESS;
}

DBL_API int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
  if (dbl_fail("memcpy", n)) return PT_CU_ERR_DEVICES_UNAVAILABLE;
  if (kind == PT_CU_D2D) {
    pthread_mutex_lock(&legacy_mu);
    int full = nlegacy == MAX_LEGACY;
    if (!full) legacy[nlegacy++] = (struct legacy){cur_dev, dst, src, n};
    pthread_mutex_unlock(&legacy_mu);
    return full ? PT_CU_ERR_MEMORY : PT_CU_SUCCESS;
  }
  /* Host<->device on the legacy stream: after its earlier work. */
  dbl_legacy_flush(cur_dev);
  memcpy(dst, src, n);
  if (kind == PT_CU_D2H) hclk += dbl_host_cost_us(cur_dev, n);
  return PT_CU_SUCCESS;
}

DBL_API int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, struct pt_cu_stream_s *s) {
  struct dbl_op op = {.kind = DBL_OP_COPY, .dst = dst, .src = src, .bytes = n};
  if (!s || kind < PT_CU_H2D || kind > PT_CU_D2D) return PT_CU_ERR_INVALID_VALUE;
  if (dbl_fail("memcpy", n)) return PT_CU_ERR_DEVICES_UNAVAILABLE;
  if (kind == PT_CU_D2H) hclk += dbl_host_cost_us(cur_dev, n); /* the host's work on what it copied */
  return dbl_issue(s, &op, PT_MODE_EAGER);
}

DBL_API int cudaStreamCreateWithFlags(struct pt_cu_stream_s **s, unsigned flags) {
  (void)flags;
  *s = calloc(1, sizeof **s);
  if (!*s) return PT_CU_ERR_MEMORY;
  (*s)->dev = cur_dev;
  (*s)->vtime = hclk;
  return PT_CU_SUCCESS;
}

DBL_API int cudaStreamDestroy(struct pt_cu_stream_s *s) {
  free(s);
  return PT_CU_SUCCESS;
}

DBL_API int cudaStreamSynchronize(struct pt_cu_stream_s *s) {
  if (!s) {
    dbl_legacy_flush(cur_dev); /* the legacy stream */
    return PT_CU_SUCCESS;
  }
  if (s->capturing) return PT_CU_ERR_INVALID_VALUE;
  hclk = maxd(hclk, s->vtime);
  return PT_CU_SUCCESS;
}

static int graph_add(struct pt_cu_graph_s *g, const struct dbl_op *op) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 16;
    struct dbl_op *ops = realloc(g->ops, cap * sizeof *ops);
    if (!ops) return PT_CU_ERR_MEMORY;
    g->ops = ops;
    g->cap = cap;
  }
  g->ops[g->n++] = *op;
  return PT_CU_SUCCESS;
}

/* Called by the NCCL half for work issued on a stream: captured when the
 * stream captures, otherwise run now. */
int dbl_issue(struct pt_cu_stream_s *s, const struct dbl_op *op, int mode) {
  if (s->capturing) return graph_add(s->capturing, op);
  return dbl_run_op(s, op, mode, hclk);
}

DBL_API int cudaMemsetAsync(void *dst, int value, size_t n, struct pt_cu_stream_s *s) {
  struct dbl_op op = {.kind = DBL_OP_MEMSET, .dst = dst, .value = value, .bytes = n};
  if (!s) return PT_CU_ERR_INVALID_VALUE;
  return dbl_issue(s, &op, PT_MODE_EAGER);
}

DBL_API int cudaEventCreate(struct pt_cu_event_s **e) {
  *e = calloc(1, sizeof **e);
  return *e ? PT_CU_SUCCESS : PT_CU_ERR_MEMORY;
}

DBL_API int cudaEventDestroy(struct pt_cu_event_s *e) {
  free(e);
  return PT_CU_SUCCESS;
}

DBL_API int cudaEventRecord(struct pt_cu_event_s *e, struct pt_cu_stream_s *s) {
  if (!e || !s || s->capturing) return PT_CU_ERR_INVALID_VALUE;
  e->t = maxd(s->vtime, hclk);
  e->recorded = 1;
  return PT_CU_SUCCESS;
}

DBL_API int cudaEventSynchronize(struct pt_cu_event_s *e) {
  if (!e || !e->recorded) return PT_CU_ERR_INVALID_VALUE;
  hclk = maxd(hclk, e->t);
  return PT_CU_SUCCESS;
}

DBL_API int cudaEventElapsedTime(float *ms, struct pt_cu_event_s *a, struct pt_cu_event_s *b) {
  if (!a || !b || !a->recorded || !b->recorded) return PT_CU_ERR_INVALID_VALUE;
  *ms = (float)((b->t - a->t) / 1000.0);
  return PT_CU_SUCCESS;
}

DBL_API int cudaStreamBeginCapture(struct pt_cu_stream_s *s, int mode) {
  if (!s || s->capturing || mode != PT_CU_CAPTURE_THREAD_LOCAL) return PT_CU_ERR_INVALID_VALUE;
  s->capturing = calloc(1, sizeof *s->capturing);
  return s->capturing ? PT_CU_SUCCESS : PT_CU_ERR_MEMORY;
}

DBL_API int cudaStreamEndCapture(struct pt_cu_stream_s *s, struct pt_cu_graph_s **g) {
  if (!s || !s->capturing) return PT_CU_ERR_INVALID_VALUE;
  *g = s->capturing;
  s->capturing = NULL;
  return PT_CU_SUCCESS;
}

DBL_API int cudaGraphDestroy(struct pt_cu_graph_s *g) {
  if (g) free(g->ops);
  free(g);
  return PT_CU_SUCCESS;
}

DBL_API int cudaGraphInstantiateWithFlags(struct pt_cu_exec_s **x, struct pt_cu_graph_s *g,
                                          unsigned long long flags) {
  (void)flags;
  *x = calloc(1, sizeof **x);
  if (!*x) return PT_CU_ERR_MEMORY;
  (*x)->n = g->n;
  (*x)->ops = malloc((g->n ? g->n : 1) * sizeof *g->ops);
  if (!(*x)->ops) {
    free(*x);
    return PT_CU_ERR_MEMORY;
  }
  memcpy((*x)->ops, g->ops, g->n * sizeof *g->ops);
  return PT_CU_SUCCESS;
}

DBL_API int cudaGraphExecDestroy(struct pt_cu_exec_s *x) {
  if (x) free(x->ops);
  free(x);
  return PT_CU_SUCCESS;
}

DBL_API int cudaGraphUpload(struct pt_cu_exec_s *x, struct pt_cu_stream_s *s) {
  if (!x || !s) return PT_CU_ERR_INVALID_VALUE;
  hclk += dbl_env()->upload_us;
  x->uploaded = 1;
  return PT_CU_SUCCESS;
}

/* Host time of the launch, then every node in order. A graph never
 * uploaded pays the upload on its first launch. */
DBL_API int cudaGraphLaunch(struct pt_cu_exec_s *x, struct pt_cu_stream_s *s) {
  if (!x || !s || s->capturing) return PT_CU_ERR_INVALID_VALUE;
  if (!x->uploaded) hclk += dbl_env()->upload_us;
  x->uploaded = 1;
  hclk += dbl_env()->graph_launch_us;
  for (size_t i = 0; i < x->n; i++) {
    int rc = dbl_run_op(s, &x->ops[i], PT_MODE_GRAPH, hclk);
    if (rc) return rc;
  }
  return PT_CU_SUCCESS;
}
