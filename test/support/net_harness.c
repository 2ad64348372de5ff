/* See net_harness.h. The only file of the tests that knows the per-version
 * struct layouts (through the project's own nccl/net_vN.h). */
#include "net_harness.h"
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl/net_v10.h"
#include "nccl/net_v11.h"
#include "nccl/net_v12.h"
#include "nccl/net_v8.h"
#include "nccl/net_v9.h"

const int nh_versions[NH_NVERSIONS] = {8, 9, 10, 11, 12};

#define V8 ((const ncclNet_v8_t *)n->plugin)
#define V9 ((const ncclNet_v9_t *)n->plugin)
#define V10 ((const ncclNet_v10_t *)n->plugin)
#define V11 ((const ncclNet_v11_t *)n->plugin)
#define V12 ((const ncclNet_v12_t *)n->plugin)
/* Slots whose signature is the same in every version sit at the same
 * offset (checked by the static assertions of the headers), so one cast
 * serves them all. */
#define ANY V12

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_warn[1024];
static int warn_count;

void nh_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
               const char *fmt, ...)
{
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&log_mu);
  vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
  warn_count++;
  pthread_mutex_unlock(&log_mu);
  va_end(ap);
}

int nh_warn_count(void)
{
  pthread_mutex_lock(&log_mu);
  int c = warn_count;
  pthread_mutex_unlock(&log_mu);
  return c;
}

const char *nh_last_warn(void)
{
  return last_warn;
}

int nh_open(struct nh_net *n, int version)
{
  char sym[32];
  const char *so = getenv("PCIE_TUNER_SO");
  memset(n, 0, sizeof(*n));
  n->version = version;
  if (!so || !(n->lib = dlopen(so, RTLD_NOW | RTLD_LOCAL)))
    return -1;
  snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
  n->plugin = dlsym(n->lib, sym);
  return n->plugin ? 0 : -1;
}

void nh_close(struct nh_net *n)
{
  if (n->lib)
    dlclose(n->lib);
  n->lib = NULL;
  n->plugin = NULL;
}

const char *nh_name(const struct nh_net *n)
{
  return ANY->name;
}

const char *nh_missing_slot(const struct nh_net *n)
{
  const ncclNet_v12_t *p = ANY;
  if (!p->name) return "name";
  if (!p->init) return "init";
  if (!p->devices) return "devices";
  if (!p->getProperties) return "getProperties";
  if (!p->listen) return "listen";
  if (!p->connect) return "connect";
  if (!p->accept) return "accept";
  if (!p->regMr) return "regMr";
  if (!p->deregMr) return "deregMr";
  if (!p->isend) return "isend";
  if (!p->irecv) return "irecv";
  if (!p->iflush) return "iflush";
  if (!p->test) return "test";
  if (!p->closeSend) return "closeSend";
  if (!p->closeRecv) return "closeRecv";
  if (!p->closeListen) return "closeListen";
  if (n->version >= 11 && !p->finalize) return "finalize";
  return NULL;
}

ncclResult_t nh_init(struct nh_net *n, void **ctx)
{
  ncclNetCommConfig_v12_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  *ctx = NULL;
  switch (n->version) {
  case 8: return V8->init(nh_logger);
  case 9: return V9->init(nh_logger);
  case 10: return V10->init(nh_logger, NULL);
  case 11: return V11->init(ctx, 0x1234, &cfg, nh_logger, NULL);
  default: return V12->init(ctx, 0x1234, &cfg, nh_logger, NULL);
  }
}

ncclResult_t nh_finalize(struct nh_net *n, void *ctx)
{
  return n->version >= 11 ? ANY->finalize(ctx) : ncclSuccess;
}

ncclResult_t nh_devices(struct nh_net *n, int *ndev)
{
  return ANY->devices(ndev);
}

ncclResult_t nh_props(struct nh_net *n, int dev, struct nh_props *p)
{
  ncclResult_t r;
  memset(p, 0, sizeof(*p));
  p->vdevs = 1;
  p->vdev0 = dev;
  p->max_p2p = 1;
  p->max_multi = 1;
  p->rail = p->plane = -1;
#define COMMON(q)                                                                       \
  p->name = q.name, p->pci_path = q.pciPath, p->ptr_support = q.ptrSupport,           \
  p->reg_is_global = q.regIsGlobal, p->speed = q.speed, p->max_comms = q.maxComms,    \
  p->max_recvs = q.maxRecvs, p->dev_type = q.netDeviceType,                           \
  p->dev_version = q.netDeviceVersion, p->latency = q.latency
  if (n->version == 8) {
    ncclNetProperties_v8_t q;
    if ((r = V8->getProperties(dev, &q)) == ncclSuccess)
      COMMON(q);
  } else if (n->version <= 10) {
    ncclNetProperties_v9_t q;
    if ((r = V9->getProperties(dev, &q)) == ncclSuccess) {
      COMMON(q);
      p->vdevs = q.vProps.ndevs, p->vdev0 = q.vProps.devs[0], p->max_p2p = q.maxP2pBytes;
    }
  } else if (n->version == 11) {
    ncclNetProperties_v11_t q;
    if ((r = V11->getProperties(dev, &q)) == ncclSuccess) {
      COMMON(q);
      p->vdevs = q.vProps.ndevs, p->vdev0 = q.vProps.devs[0], p->max_p2p = q.maxP2pBytes;
      p->max_multi = q.maxMultiRequestSize;
    }
  } else {
    ncclNetProperties_v12_t q;
    if ((r = V12->getProperties(dev, &q)) == ncclSuccess) {
      COMMON(q);
      p->vdevs = q.vProps.ndevs, p->vdev0 = q.vProps.devs[0], p->max_p2p = q.maxP2pBytes;
      p->max_multi = q.maxMultiRequestSize, p->rail = q.railId, p->plane = q.planeId;
    }
  }
#undef COMMON
  return r;
}

ncclResult_t nh_listen(struct nh_net *n, void *ctx, int dev, void *handle, void **lc)
{
  if (n->version >= 11)
    return ANY->listen(ctx, dev, handle, lc);
  return V8->listen(dev, handle, lc);
}

ncclResult_t nh_connect(struct nh_net *n, void *ctx, int dev, void *handle, void **sc)
{
  ncclNetDeviceHandle_v12_t *dh = NULL;
  ncclNetCommConfig_v10_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  switch (n->version) {
  case 8: return V8->connect(dev, handle, sc, &dh);
  case 9: return V9->connect(dev, handle, sc, &dh);
  case 10: return V10->connect(dev, &cfg, handle, sc, &dh);
  default: return ANY->connect(ctx, dev, handle, sc, &dh);
  }
}

ncclResult_t nh_accept(struct nh_net *n, void *lc, void **rc)
{
  ncclNetDeviceHandle_v12_t *dh = NULL;
  return ANY->accept(lc, rc, &dh);
}

ncclResult_t nh_reg(struct nh_net *n, void *comm, void *data, size_t size, int type, void **mh)
{
  return ANY->regMr(comm, data, size, type, mh);
}

ncclResult_t nh_dereg(struct nh_net *n, void *comm, void *mh)
{
  return ANY->deregMr(comm, mh);
}

ncclResult_t nh_isend(struct nh_net *n, void *sc, void *data, size_t size, int tag, void *mh,
                      void **req)
{
  switch (n->version) {
  case 8: return V8->isend(sc, data, (int)size, tag, mh, req);
  case 9: return V9->isend(sc, data, size, tag, mh, req);
  default: return ANY->isend(sc, data, size, tag, mh, NULL, req);
  }
}

ncclResult_t nh_irecv(struct nh_net *n, void *rc, int cnt, void **data, size_t *sizes,
                      int *tags, void **mhs, void **req)
{
  int small[PT_NH_MAXN];
  switch (n->version) {
  case 8:
    for (int i = 0; i < cnt && i < PT_NH_MAXN; i++)
      small[i] = (int)sizes[i];
    return V8->irecv(rc, cnt, data, small, tags, mhs, req);
  case 9: return V9->irecv(rc, cnt, data, sizes, tags, mhs, req);
  default: return ANY->irecv(rc, cnt, data, sizes, tags, mhs, NULL, req);
  }
}

ncclResult_t nh_iflush(struct nh_net *n, void *rc, void *data, int size, void *mh, void **req)
{
  return ANY->iflush(rc, 1, &data, &size, &mh, req);
}

ncclResult_t nh_test(struct nh_net *n, void *req, int *done, int *sizes)
{
  return ANY->test(req, done, sizes);
}

ncclResult_t nh_close_send(struct nh_net *n, void *sc)
{
  return ANY->closeSend(sc);
}

ncclResult_t nh_close_recv(struct nh_net *n, void *rc)
{
  return ANY->closeRecv(rc);
}

ncclResult_t nh_close_listen(struct nh_net *n, void *lc)
{
  return ANY->closeListen(lc);
}

double nh_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A call that waits for the peer would stall this single thread: 200 ms is
 * far above any non-blocking call even under sanitizers on a loaded box. */
#define NH_MAX_CALL_MS 200.0
#define NH_PAIR_TIMEOUT_MS 10000.0

int nh_pair(struct nh_net *n, void *ctx, int dev, void **sc, void **rc, int *calls)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  int count = 0, rcode = -1;
  *sc = *rc = NULL;
  if (nh_listen(n, ctx, dev, handle, &lc) != ncclSuccess || !lc)
    return -1;
  double start = nh_now_ms();
  while (!*sc || !*rc) {
    double t0 = nh_now_ms();
    if (!*sc && nh_connect(n, ctx, dev, handle, sc) != ncclSuccess)
      goto out;
    double t1 = nh_now_ms();
    if (!*rc && nh_accept(n, lc, rc) != ncclSuccess)
      goto out;
    double t2 = nh_now_ms();
    count += 2;
    if (t1 - t0 > NH_MAX_CALL_MS || t2 - t1 > NH_MAX_CALL_MS || t2 - start > NH_PAIR_TIMEOUT_MS)
      goto out;
  }
  rcode = 0;
out:
  nh_close_listen(n, lc);
  if (calls)
    *calls = count;
  return rcode;
}

ncclResult_t nh_wait(struct nh_net *n, void *req, int *sizes, int timeout_ms, int *timed_out)
{
  double end = nh_now_ms() + timeout_ms;
  int done = 0;
  if (timed_out)
    *timed_out = 0;
  while (!done) {
    ncclResult_t r = nh_test(n, req, &done, sizes);
    if (r != ncclSuccess)
      return r;
    if (!done && nh_now_ms() > end) {
      if (timed_out)
        *timed_out = 1;
      return ncclInternalError;
    }
  }
  return ncclSuccess;
}

ncclResult_t nh_xfer(struct nh_net *n, void *sc, void *rc, void *sbuf, size_t size, void *rbuf,
                     size_t rcap, int *got)
{
  void *sreq = NULL, *rreq = NULL;
  int tag = 7, sdone = 0, rdone = 0, sizes[PT_NH_MAXN] = {0};
  ncclResult_t r;
  while (!rreq)
    if ((r = nh_irecv(n, rc, 1, &rbuf, &rcap, &tag, NULL, &rreq)) != ncclSuccess)
      return r;
  while (!sreq)
    if ((r = nh_isend(n, sc, sbuf, size, tag, NULL, &sreq)) != ncclSuccess)
      return r;
  double end = nh_now_ms() + 60000;
  while (!sdone || !rdone) {
    if (!sdone && (r = nh_test(n, sreq, &sdone, NULL)) != ncclSuccess)
      return r;
    if (!rdone && (r = nh_test(n, rreq, &rdone, sizes)) != ncclSuccess)
      return r;
    if (nh_now_ms() > end)
      return ncclInternalError;
  }
  *got = sizes[0];
  return ncclSuccess;
}

/* xorshift keyed by (seed, 8-byte word index): any shift, loss or mix-up
 * of bytes between messages shows. */
static uint64_t word(uint64_t seed, size_t i)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + i + 1;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 29;
  return x;
}

void nh_fill(void *buf, size_t size, uint64_t seed)
{
  unsigned char *p = buf;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w = word(seed, i / 8);
    memcpy(p + i, &w, 8);
  }
  uint64_t w = word(seed, i / 8);
  memcpy(p + i, &w, size - i);
}

long nh_check(const void *buf, size_t size, uint64_t seed)
{
  const unsigned char *p = buf;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w = word(seed, i / 8);
    if (memcmp(p + i, &w, 8) != 0)
      return (long)i;
  }
  uint64_t w = word(seed, i / 8);
  return memcmp(p + i, &w, size - i) ? (long)i : -1;
}

static int count_dir(const char *path)
{
  DIR *d = opendir(path);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

int nh_count_fds(void)
{
  return count_dir("/proc/self/fd");
}

int nh_count_threads(void)
{
  return count_dir("/proc/self/task");
}

int nh_settled_threads(int want)
{
  int n = nh_count_threads();
  for (int i = 0; i < 2000 && n > want; i++) {
    usleep(1000);
    n = nh_count_threads();
  }
  return n;
}

static void *idle(void *arg)
{
  *(pid_t *)arg = gettid();
  return arg;
}

void nh_warm_threads(void)
{
  pthread_t t;
  pid_t tid = 0;
  char path[64];
  if (pthread_create(&t, NULL, idle, &tid) != 0)
    return;
  pthread_join(t, NULL);
  /* pthread_join can return while the kernel still lists the thread in
   * /proc/self/task; a baseline counted then is one too high. */
  snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
  for (int i = 0; i < 1000 && access(path, F_OK) == 0; i++)
    usleep(1000);
}
