/*
 * The GPU smoke test's probe (bench/gpu_smoke.sh): CUDA and NCCL through
 * dlopen, no headers, so it builds wherever cc does. It checks on the real
 * stack the two CUDA/NCCL behaviours the GPU backend and its test double
 * (test/double) rest on:
 *  - a device-to-device cudaMemcpy on the legacy stream returns before the
 *    copy is done, and a non-blocking stream does not wait for it (why
 *    --in-place restores its inputs on the measuring stream);
 *  - a one-rank ncclAllReduce, 20 per captured graph: capture, upload,
 *    replay, time, check; and whether NCCL loaded the tuner plugin.
 * Prints "PROBE key values..." lines that the script reads.
 *
 *   probe LIBCUDART LIBNCCL PLUGIN
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *cudart, *nccl;

/* dlsym into a function pointer without a cast from void * (C11). */
#define GET(lib, var, name)                          \
  do {                                               \
    void *p_ = lib ? dlsym(lib, name) : NULL;        \
    memcpy(&(var), &p_, sizeof p_);                  \
  } while (0)
#define TRY(x)                                                              \
  do {                                                                      \
    int e_ = (x);                                                           \
    if (e_) {                                                               \
      printf("PROBE error %s = %d (line %d)\n", #x, e_, __LINE__);          \
      return 1;                                                             \
    }                                                                       \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int (*Malloc)(void **, size_t);
static int (*Memset)(void *, int, size_t);
static int (*Memcpy)(void *, const void *, size_t, int);
static int (*MemcpyAsync)(void *, const void *, size_t, int, void *);
static int (*StreamCreate)(void **, unsigned);
static int (*StreamSync)(void *);
static int (*StreamQuery)(void *);
static int (*DeviceSync)(void);

/* 1 GiB copied on the legacy stream; right after it returns, a
 * non-blocking stream reads the copy's last word. */
static int legacy_copy(void) {
  const size_t n = (size_t)1 << 30;
  void *a, *b, *s;
  unsigned last = 0;
  int stale = 0, notdone = 0;
  double ret_us = 0;
  if (!Memset || !StreamQuery || !DeviceSync) {
    printf("PROBE legacy_copy skipped (the runtime lacks cudaMemset, cudaStreamQuery or cudaDeviceSynchronize)\n");
    return 0;
  }
  TRY(Malloc(&a, n));
  TRY(Malloc(&b, n));
  TRY(StreamCreate(&s, 1 /* cudaStreamNonBlocking */));
  for (int t = 0; t < 5; t++) {
    TRY(Memset(a, 0x11 + t, n));
    TRY(Memset(b, 0x22, n));
    TRY(DeviceSync());
    double t0 = now_us();
    TRY(Memcpy(b, a, n, 3 /* D2D */));
    ret_us += now_us() - t0;
    notdone += StreamQuery(NULL) == 600; /* cudaErrorNotReady */
    TRY(MemcpyAsync(&last, (char *)b + n - 4, 4, 2 /* D2H */, s));
    TRY(StreamSync(s));
    stale += last == 0x22222222u;
    TRY(DeviceSync());
  }
  printf("PROBE d2d_returned_us %.0f\n", ret_us / 5);
  printf("PROBE d2d_notready_after_return %d\n", notdone);
  printf("PROBE d2d_stale_read_on_nonblocking_stream %d\n", stale);
  return 0;
}

typedef struct {
  char internal[128];
} uid_t128;

static int graph_allreduce(const char *plugin) {
  int (*GetUniqueId)(uid_t128 *), (*CommInitRank)(void **, int, uid_t128, int), (*GroupStart)(void),
      (*GroupEnd)(void), (*GetVersion)(int *);
  int (*AllReduce)(const void *, void *, size_t, int, int, void *, void *);
  int (*BeginCapture)(void *, int), (*EndCapture)(void *, void **), (*Upload)(void *, void *),
      (*Launch)(void *, void *), (*EventCreate)(void **), (*EventRecord)(void *, void *), (*EventSync)(void *),
      (*Elapsed)(float *, void *, void *), (*Instantiate)(void **, void *, unsigned long long);
  GET(nccl, GetUniqueId, "ncclGetUniqueId");
  GET(nccl, CommInitRank, "ncclCommInitRank");
  GET(nccl, GroupStart, "ncclGroupStart");
  GET(nccl, GroupEnd, "ncclGroupEnd");
  GET(nccl, GetVersion, "ncclGetVersion");
  GET(nccl, AllReduce, "ncclAllReduce");
  GET(cudart, BeginCapture, "cudaStreamBeginCapture");
  GET(cudart, EndCapture, "cudaStreamEndCapture");
  GET(cudart, Instantiate, "cudaGraphInstantiateWithFlags");
  GET(cudart, Upload, "cudaGraphUpload");
  GET(cudart, Launch, "cudaGraphLaunch");
  GET(cudart, EventCreate, "cudaEventCreate");
  GET(cudart, EventRecord, "cudaEventRecord");
  GET(cudart, EventSync, "cudaEventSynchronize");
  GET(cudart, Elapsed, "cudaEventElapsedTime");
  if (!GetUniqueId || !CommInitRank || !GroupStart || !GroupEnd || !AllReduce || !BeginCapture || !EndCapture ||
      !Instantiate || !Upload || !Launch || !EventCreate || !EventRecord || !EventSync || !Elapsed) {
    printf("PROBE graph_allreduce skipped (a symbol is missing)\n");
    return 1;
  }
  int version = 0;
  if (GetVersion) GetVersion(&version);
  printf("PROBE nccl_version %d\n", version);
  uid_t128 id;
  void *comm, *st, *e0, *e1;
  TRY(GetUniqueId(&id));
  TRY(CommInitRank(&comm, 1, id, 0));
  void *pl = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
  printf("PROBE plugin_loaded_by_nccl %d\n", pl && dlsym(pl, "pcieTunerControl_v1"));
  TRY(StreamCreate(&st, 1));
  TRY(EventCreate(&e0));
  TRY(EventCreate(&e1));
  static const size_t sizes[] = {14336, 114688, 1 << 20, 2 << 20};
  const int ops = 20;
  const size_t cap = (size_t)(2 << 20) * ops;
  float *send, *recv, *host = malloc(cap);
  if (!host) return 1;
  /* cudaMalloc, as torch's caching allocator and pcie-tune's default. */
  TRY(Malloc((void **)&send, cap));
  TRY(Malloc((void **)&recv, cap));
  for (size_t i = 0; i < cap / 4; i++) host[i] = (float)(i % 1021 + 1);
  TRY(Memcpy(send, host, cap, 1 /* H2D */));
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t cnt = sizes[k] / 4;
    void *g, *x;
    float best = 1e30f, sum = 0;
    int wrong = 0;
    TRY(BeginCapture(st, 1 /* thread-local */));
    for (int j = 0; j < ops; j++) {
      TRY(GroupStart());
      TRY(AllReduce(send + (size_t)j * cnt, recv + (size_t)j * cnt, cnt, 7 /* float32 */, 0 /* sum */, comm, st));
      TRY(GroupEnd());
    }
    TRY(EndCapture(st, &g));
    TRY(Instantiate(&x, g, 0));
    TRY(Upload(x, st));
    for (int w = 0; w < 50; w++) TRY(Launch(x, st));
    TRY(StreamSync(st));
    for (int r = 0; r < 10; r++) {
      float ms = 0;
      TRY(EventRecord(e0, st));
      TRY(Launch(x, st));
      TRY(EventRecord(e1, st));
      TRY(EventSync(e1));
      TRY(Elapsed(&ms, e0, e1));
      sum += ms;
      best = ms < best ? ms : best;
    }
    TRY(MemcpyAsync(host, recv, cnt * ops * 4, 2, st));
    TRY(StreamSync(st));
    for (size_t i = 0; i < cnt * ops; i++) wrong += host[i] != (float)(i % 1021 + 1);
    printf("PROBE graph_allreduce_1rank %zu us_per_op_min %.3f us_per_op_mean %.3f wrong %d\n", sizes[k],
           best * 1000.0 / ops, sum * 100.0 / ops, wrong);
    for (size_t i = 0; i < cap / 4; i++) host[i] = (float)(i % 1021 + 1);
  }
  free(host);
  return 0;
}

int main(int argc, char **argv) {
  int (*DriverVersion)(int *), (*RuntimeVersion)(int *), (*DeviceCount)(int *), (*SetDevice)(int);
  int drv = 0, rt = 0, n = 0;
  if (argc != 4) {
    fprintf(stderr, "usage: probe LIBCUDART LIBNCCL PLUGIN\n");
    return 2;
  }
  cudart = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  nccl = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!cudart || !nccl) {
    printf("PROBE cannot_load %s\n", dlerror());
    return 2;
  }
  GET(cudart, DriverVersion, "cudaDriverGetVersion");
  GET(cudart, RuntimeVersion, "cudaRuntimeGetVersion");
  GET(cudart, DeviceCount, "cudaGetDeviceCount");
  GET(cudart, SetDevice, "cudaSetDevice");
  GET(cudart, Malloc, "cudaMalloc");
  GET(cudart, Memset, "cudaMemset");
  GET(cudart, Memcpy, "cudaMemcpy");
  GET(cudart, MemcpyAsync, "cudaMemcpyAsync");
  GET(cudart, StreamCreate, "cudaStreamCreateWithFlags");
  GET(cudart, StreamSync, "cudaStreamSynchronize");
  GET(cudart, StreamQuery, "cudaStreamQuery");
  GET(cudart, DeviceSync, "cudaDeviceSynchronize");
  if (DriverVersion) DriverVersion(&drv);
  if (RuntimeVersion) RuntimeVersion(&rt);
  int e = DeviceCount ? DeviceCount(&n) : -1;
  printf("PROBE cuda_driver %d cuda_runtime %d devices %d err %d\n", drv, rt, n, e);
  if (e || n < 1 || !SetDevice || SetDevice(0) || !Malloc || !Memcpy || !MemcpyAsync || !StreamCreate || !StreamSync)
    return 2;
  int rc = legacy_copy();
  rc |= graph_allreduce(argv[3]);
  return rc ? 1 : 0;
}
