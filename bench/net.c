/* bench/net: the net plugin against a plain multi-stream TCP baseline,
 * measured in the same run over loopback.
 *
 *   throughput: 1 MiB .. 256 MiB messages, one sender thread and one
 *     receiver thread driving the plugin (v12, through dlopen, as NCCL's
 *     two proxies would), 4 messages in flight; the baseline splits each
 *     message evenly over the same number of blocking TCP streams, one
 *     thread per stream and side.
 *   round trip: 8-byte ping-pong between two threads. The plugin, like
 *     NCCL, sends on one connection (send comm -> recv comm) and answers on
 *     another. Baselines, TCP_NODELAY: one connection per direction polled
 *     with MSG_DONTWAIT (the like-for-like one: NCCL's proxy polls test,
 *     and NCCL's send/recv comms are one-way connections, so every ACK is
 *     a bare segment); and one socket pair carrying both directions, once
 *     polling and once sleeping in recv (its ACKs ride on the replies,
 *     which no one-way transport can do; in a VM a sleeping receiver pays
 *     the idle-CPU wake-up instead).
 *
 * Prints medians of REPS runs and the ratios plugin/baseline (targets:
 * throughput >= 0.9x, round trip <= 1.2x). PCIE_NET_NSTREAMS (default 4)
 * sets the stream count of both; BENCH_NET_RTT_ONLY=1 skips throughput.
 * Not a test: it never fails on numbers. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "nccl/net_v12.h"

#define REPS 5
#define INFLIGHT 4
#define RTT_ITERS 2000
#define MAX_STREAMS 16

static const ncclNet_v12_t *net;
static void *ctx;
static int nstreams;

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
  fprintf(stderr, "bench/net: %s\n", what);
  exit(1);
}

/* ---- plugin side */

static void plugin_pair(void **sc, void **rc)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc;
  ncclNetDeviceHandle_v12_t *dh = NULL;
  *sc = *rc = NULL;
  if (net->listen(ctx, 0, handle, &lc) != ncclSuccess)
    die("listen failed");
  while (!*sc || !*rc) {
    if (!*sc && net->connect(ctx, 0, handle, sc, &dh) != ncclSuccess)
      die("connect failed");
    if (!*rc && net->accept(lc, rc, &dh) != ncclSuccess)
      die("accept failed");
  }
  net->closeListen(lc);
}

static void wait_req(void *req)
{
  int done = 0, sizes[64];
  while (!done)
    if (net->test(req, &done, sizes) != ncclSuccess)
      die("test failed");
}

struct pjob {
  void *comm;
  char *buf;
  size_t size;
  int count;
  int send;
  int ring; /* buffers cycled through by the messages in flight */
};

static void *plugin_stream(void *arg)
{
  struct pjob *j = arg;
  void *req[INFLIGHT] = {0};
  int tag = 0;
  for (int m = 0; m < j->count + INFLIGHT; m++) {
    int k = m % INFLIGHT;
    if (req[k])
      wait_req(req[k]);
    req[k] = NULL;
    if (m >= j->count)
      continue;
    char *b = j->buf + (size_t)(k % j->ring) * j->size;
    while (!req[k]) {
      ncclResult_t r = j->send ? net->isend(j->comm, b, j->size, tag, NULL, NULL, &req[k])
                               : net->irecv(j->comm, 1, (void **)&b, &j->size, &tag, NULL, NULL,
                                            &req[k]);
      if (r != ncclSuccess)
        die("isend/irecv failed");
    }
  }
  return NULL;
}

static double plugin_gbps(void *sc, void *rc, char *sbuf, char *rbuf, size_t size, int count,
                          int ring)
{
  struct pjob s = {sc, sbuf, size, count, 1, ring}, r = {rc, rbuf, size, count, 0, ring};
  pthread_t ts, tr;
  double t0 = now_s();
  pthread_create(&tr, NULL, plugin_stream, &r);
  pthread_create(&ts, NULL, plugin_stream, &s);
  pthread_join(ts, NULL);
  pthread_join(tr, NULL);
  return (double)size * count / (now_s() - t0) / 1e9;
}

struct ppong {
  void *sc, *rc;
  int first;
  double *lat;
};

static void *plugin_pingpong(void *arg)
{
  struct ppong *p = arg;
  char buf[8] = {0};
  size_t cap = sizeof(buf);
  int tag = 0;
  for (int i = 0; i < RTT_ITERS; i++) {
    void *req = NULL, *d = buf;
    double t0 = now_s();
    for (int step = 0; step < 2; step++) {
      req = NULL;
      if ((step == 0) == p->first) {
        while (!req)
          if (net->isend(p->sc, buf, sizeof(buf), tag, NULL, NULL, &req) != ncclSuccess)
            die("isend failed");
      } else {
        while (!req)
          if (net->irecv(p->rc, 1, &d, &cap, &tag, NULL, NULL, &req) != ncclSuccess)
            die("irecv failed");
      }
      wait_req(req);
    }
    if (p->lat)
      p->lat[i] = (now_s() - t0) * 1e6;
  }
  return NULL;
}

/* ---- baseline: blocking TCP, one thread per stream */

static void tcp_pairs(int n, int *sfd, int *rfd)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0 || bind(l, (struct sockaddr *)&a, len) || listen(l, 64) ||
      getsockname(l, (struct sockaddr *)&a, &len))
    die("baseline listen failed");
  for (int i = 0; i < n; i++) {
    sfd[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(sfd[i], (struct sockaddr *)&a, len) || (rfd[i] = accept(l, NULL, NULL)) < 0)
      die("baseline connect failed");
    setsockopt(sfd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(rfd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  close(l);
}

struct tjob {
  int fd, send, count, ring;
  char *buf;
  size_t len;
};

static void *tcp_stream(void *arg)
{
  struct tjob *j = arg;
  for (int m = 0; m < j->count; m++) {
    size_t done = 0;
    char *b = j->buf + (size_t)(m % j->ring) * j->len * (size_t)nstreams;
    while (done < j->len) {
      ssize_t n = j->send ? send(j->fd, b + done, j->len - done, MSG_NOSIGNAL)
                          : recv(j->fd, b + done, j->len - done, 0);
      if (n <= 0)
        die("baseline transfer failed");
      done += (size_t)n;
    }
  }
  return NULL;
}

static double tcp_gbps(int *sfd, int *rfd, char *sbuf, char *rbuf, size_t size, int count,
                       int ring)
{
  struct tjob jobs[2 * MAX_STREAMS];
  pthread_t th[2 * MAX_STREAMS];
  size_t slice = size / (size_t)nstreams;
  double t0 = now_s();
  for (int i = 0; i < nstreams; i++) {
    jobs[2 * i] = (struct tjob){sfd[i], 1, count, ring, sbuf + slice * (size_t)i, slice};
    jobs[2 * i + 1] = (struct tjob){rfd[i], 0, count, ring, rbuf + slice * (size_t)i, slice};
  }
  for (int i = 0; i < 2 * nstreams; i++)
    pthread_create(&th[i], NULL, tcp_stream, &jobs[i]);
  for (int i = 0; i < 2 * nstreams; i++)
    pthread_join(th[i], NULL);
  return (double)slice * (size_t)nstreams * count / (now_s() - t0) / 1e9;
}

struct tpong {
  int sfd, rfd, first, spin;
  double *lat;
};

/* Receives exactly len bytes; spin = poll with MSG_DONTWAIT as a proxy
 * thread does, instead of sleeping in the kernel. */
static ssize_t tcp_recv_all(int fd, char *buf, size_t len, int spin)
{
  size_t got = 0;
  while (got < len) {
    ssize_t n = recv(fd, buf + got, len - got, spin ? MSG_DONTWAIT : MSG_WAITALL);
    if (n == 0 || (n < 0 && !(spin && (errno == EAGAIN || errno == EWOULDBLOCK))))
      return -1;
    if (n > 0)
      got += (size_t)n;
  }
  return (ssize_t)got;
}

static void *tcp_pingpong(void *arg)
{
  struct tpong *p = arg;
  char buf[8] = {0};
  for (int i = 0; i < RTT_ITERS; i++) {
    double t0 = now_s();
    for (int step = 0; step < 2; step++) {
      ssize_t n = (step == 0) == p->first ? send(p->sfd, buf, sizeof(buf), MSG_NOSIGNAL)
                                          : tcp_recv_all(p->rfd, buf, sizeof(buf), p->spin);
      if (n != (ssize_t)sizeof(buf))
        die("baseline ping-pong failed");
    }
    if (p->lat)
      p->lat[i] = (now_s() - t0) * 1e6;
  }
  return NULL;
}

/* ---- driver */

/* plugin: 1 = the plugin; 0 = TCP sleeping in recv; -1 = TCP polling.
 * TCP: side 1 sends on fa[0] and receives on fa[1], side 2 sends on fb[0]
 * and receives on fb[1] (the same socket twice for a two-way pair). */
static double rtt_us(int plugin, void *a_sc, void *a_rc, void *b_sc, void *b_rc, const int *fa,
                     const int *fb)
{
  static double lat[RTT_ITERS];
  pthread_t t1, t2;
  if (plugin > 0) {
    struct ppong p1 = {a_sc, b_rc, 1, lat}, p2 = {b_sc, a_rc, 0, NULL};
    pthread_create(&t2, NULL, plugin_pingpong, &p2);
    pthread_create(&t1, NULL, plugin_pingpong, &p1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
  } else {
    struct tpong p1 = {fa[0], fa[1], 1, plugin < 0, lat}, p2 = {fb[0], fb[1], 0, plugin < 0, NULL};
    pthread_create(&t2, NULL, tcp_pingpong, &p2);
    pthread_create(&t1, NULL, tcp_pingpong, &p1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
  }
  return median(lat, RTT_ITERS);
}

int main(void)
{
  static const size_t sizes[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  const char *only_rtt = getenv("BENCH_NET_RTT_ONLY");
  const char *so = getenv("PCIE_TUNER_SO"), *ns = getenv("PCIE_NET_NSTREAMS");
  ncclNetCommConfig_v12_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  nstreams = ns ? atoi(ns) : 4;
  if (nstreams < 1 || nstreams > MAX_STREAMS)
    die("PCIE_NET_NSTREAMS out of range");
  char nsbuf[8];
  snprintf(nsbuf, sizeof(nsbuf), "%d", nstreams);
  setenv("PCIE_NET_NSTREAMS", nsbuf, 1);
  if (!getenv("PCIE_NET_IFNAME"))
    setenv("PCIE_NET_IFNAME", "=lo", 1);
  void *lib = so ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!lib || !(net = dlsym(lib, "ncclNetPlugin_v12")))
    die("cannot load ncclNetPlugin_v12 from $PCIE_TUNER_SO");
  if (net->init(&ctx, 1, &cfg, NULL, NULL) != ncclSuccess)
    die("init failed (no loopback?)");

  void *sc, *rc;
  int sfd[MAX_STREAMS], rfd[MAX_STREAMS];
  plugin_pair(&sc, &rc);
  tcp_pairs(nstreams, sfd, rfd);
  size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
  /* Up to 16 MiB every message in flight has its own buffer; above that
   * they share one (the kernel copies are what is measured). */
  char *sbuf = malloc(max), *rbuf = malloc(max);
  if (!sbuf || !rbuf)
    die("out of memory");
  memset(sbuf, 1, max);
  memset(rbuf, 0, max);

  printf("bench/net: loopback, %d streams, %d messages in flight, median of %d runs\n",
         nstreams, INFLIGHT, REPS);
  printf("%10s %14s %14s %8s\n", "size", "plugin GB/s", "baseline GB/s", "ratio");
  for (size_t k = 0; !only_rtt && k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t size = sizes[k];
    int ring = size * INFLIGHT <= max ? INFLIGHT : 1;
    int count = (int)((256u << 20) / size) < 3 ? 3 : (int)((256u << 20) / size);
    double p[REPS], b[REPS];
    for (int r = 0; r < REPS; r++) {
      p[r] = plugin_gbps(sc, rc, sbuf, rbuf, size, count, ring);
      b[r] = tcp_gbps(sfd, rfd, sbuf, rbuf, size, count, ring);
    }
    double pm = median(p, REPS), bm = median(b, REPS);
    printf("%7zu MB %14.2f %14.2f %7.2fx\n", size >> 20, pm, bm, pm / bm);
  }

  void *sc2, *rc2;
  int ta, tb, ua[2], ub[2]; /* one two-way pair; two one-way connections */
  plugin_pair(&sc2, &rc2);
  tcp_pairs(1, &ta, &tb);
  tcp_pairs(1, &ua[0], &ub[1]); /* side 1 -> side 2 */
  tcp_pairs(1, &ub[0], &ua[1]); /* side 2 -> side 1 */
  int fa[2] = {ta, ta}, fb[2] = {tb, tb};
  double p[REPS], b[REPS], q[REPS], u[REPS];
  for (int r = 0; r < REPS; r++) {
    p[r] = rtt_us(1, sc, rc, sc2, rc2, NULL, NULL);
    u[r] = rtt_us(-1, NULL, NULL, NULL, NULL, ua, ub);
    q[r] = rtt_us(-1, NULL, NULL, NULL, NULL, fa, fb);
    b[r] = rtt_us(0, NULL, NULL, NULL, NULL, fa, fb);
  }
  double pm = median(p, REPS), bm = median(b, REPS), qm = median(q, REPS), um = median(u, REPS);
  printf("%10s %14s %14s %8s\n", "", "plugin us", "baseline us", "ratio");
  printf("%10s %14.1f %14.1f %7.2fx  (baseline: a polled one-way connection per direction, as "
         "the plugin)\n", "8 B RTT", pm, um, pm / um);
  printf("%10s %14.1f %14.1f %7.2fx  (baseline: one two-way socket pair, polling)\n", "8 B RTT",
         pm, qm, pm / qm);
  printf("%10s %14.1f %14.1f %7.2fx  (baseline: one two-way socket pair, sleeping in recv)\n",
         "8 B RTT", pm, bm, pm / bm);

  net->closeSend(sc);
  net->closeRecv(rc);
  net->closeSend(sc2);
  net->closeRecv(rc2);
  net->finalize(ctx);
  for (int i = 0; i < nstreams; i++) {
    close(sfd[i]);
    close(rfd[i]);
  }
  close(ta);
  close(tb);
  for (int i = 0; i < 2; i++) {
    close(ua[i]);
    close(ub[i]);
  }
  free(sbuf);
  free(rbuf);
  dlclose(lib);
  return 0;
}
