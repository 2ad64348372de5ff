/* bench/net: the net plugin against NCCL's own socket transport and a plain
 * multi-stream TCP baseline, measured in the same run over loopback.
 *
 *   bench/net [--anchor PATH]
 *
 * PATH is NCCL's socket transport built as a net plugin
 * (tools/nccl-socket/build.sh in the shared tools); without it (or when it
 * cannot be loaded) that comparison is skipped. NCCL's own variables apply
 * to it (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD; NCCL_SOCKET_IFNAME
 * defaults to lo here).
 *
 *   throughput: 64 KiB .. 64 MiB messages, one sender and one receiver
 *     thread driving a transport (v12, through dlopen, as NCCL's proxies
 *     would), 4 messages in flight; the TCP baseline splits each message
 *     evenly over the same number of blocking streams, one thread per
 *     stream and side.
 *   round trip: 8-byte ping-pong between two threads, each transport
 *     sending on one connection and answering on another, as NCCL does;
 *     the TCP baseline is one TCP_NODELAY connection per direction polled
 *     with MSG_DONTWAIT (NCCL's proxy polls test).
 *
 * Runs are interleaved (plugin, anchor, TCP, rotating which goes first),
 * BENCH_NET_REPS times (default 7); each line gives the medians and the
 * median of the per-run ratios plugin/other, so a load spike on the
 * shared machine hits both sides of a ratio. PCIE_NET_NSTREAMS (default
 * 2, the plugin's loopback default) sets the plugin's and the baseline's
 * stream count; BENCH_NET_RTT_ONLY=1 skips throughput. Not a test: it
 * never fails on numbers. */
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

#define MAX_REPS 31
#define INFLIGHT 4
#define RTT_ITERS 2000
#define MAX_STREAMS 16

/* A transport loaded as NCCL loads a net plugin. */
struct tr {
  const char *name;
  void *lib;
  const ncclNet_v12_t *net;
  void *ctx;
  void *sc, *rc, *sc2, *rc2; /* one pair for throughput, two for the ping-pong */
};

static int nstreams, reps;

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

static void quiet(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                  const char *fmt, ...)
{
  (void)flags, (void)file, (void)line, (void)fmt;
  if (level == NCCL_LOG_WARN)
    fprintf(stderr, "bench/net: a transport logged a WARN\n");
}

/* ---- transports through the plugin ABI */

static void tr_pair(const struct tr *t, void **sc, void **rc)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc;
  ncclNetDeviceHandle_v12_t *dh = NULL;
  *sc = *rc = NULL;
  if (t->net->listen(t->ctx, 0, handle, &lc) != ncclSuccess)
    die("listen failed");
  while (!*sc || !*rc) {
    if (!*sc && t->net->connect(t->ctx, 0, handle, sc, &dh) != ncclSuccess)
      die("connect failed");
    if (!*rc && t->net->accept(lc, rc, &dh) != ncclSuccess)
      die("accept failed");
  }
  t->net->closeListen(lc);
}

/* 0 when loaded and connected, -1 when the library is absent or unusable. */
static int tr_open(struct tr *t, const char *name, const char *path)
{
  ncclNetCommConfig_v12_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  int ndev = 0;
  memset(t, 0, sizeof(*t));
  t->name = name;
  if (!path || !(t->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) ||
      !(t->net = dlsym(t->lib, "ncclNetPlugin_v12")) ||
      t->net->init(&t->ctx, 1, &cfg, quiet, NULL) != ncclSuccess ||
      t->net->devices(&ndev) != ncclSuccess || ndev < 1) {
    if (t->lib)
      dlclose(t->lib);
    t->lib = NULL;
    return -1;
  }
  tr_pair(t, &t->sc, &t->rc);
  tr_pair(t, &t->sc2, &t->rc2);
  return 0;
}

static void tr_close(struct tr *t)
{
  if (!t->lib)
    return;
  t->net->closeSend(t->sc);
  t->net->closeRecv(t->rc);
  t->net->closeSend(t->sc2);
  t->net->closeRecv(t->rc2);
  t->net->finalize(t->ctx);
  dlclose(t->lib);
  t->lib = NULL;
}

static void wait_req(const ncclNet_v12_t *net, void *req)
{
  int done = 0, sizes[64];
  while (!done)
    if (net->test(req, &done, sizes) != ncclSuccess)
      die("test failed");
}

struct pjob {
  const ncclNet_v12_t *net;
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
  const ncclNet_v12_t *net = j->net;
  void *req[INFLIGHT] = {0};
  int tag = 0;
  for (int m = 0; m < j->count + INFLIGHT; m++) {
    int k = m % INFLIGHT;
    if (req[k])
      wait_req(net, req[k]);
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

static double tr_gbps(const struct tr *t, char *sbuf, char *rbuf, size_t size, int count,
                      int ring)
{
  struct pjob s = {t->net, t->sc, sbuf, size, count, 1, ring},
              r = {t->net, t->rc, rbuf, size, count, 0, ring};
  pthread_t ts, tr;
  double t0 = now_s();
  pthread_create(&tr, NULL, plugin_stream, &r);
  pthread_create(&ts, NULL, plugin_stream, &s);
  pthread_join(ts, NULL);
  pthread_join(tr, NULL);
  return (double)size * count / (now_s() - t0) / 1e9;
}

struct ppong {
  const ncclNet_v12_t *net;
  void *sc, *rc;
  int first;
  double *lat;
};

static void *plugin_pingpong(void *arg)
{
  struct ppong *p = arg;
  const ncclNet_v12_t *net = p->net;
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
      wait_req(net, req);
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

static double tr_rtt_us(const struct tr *t)
{
  static double lat[RTT_ITERS];
  pthread_t t1, t2;
  struct ppong p1 = {t->net, t->sc, t->rc2, 1, lat}, p2 = {t->net, t->sc2, t->rc, 0, NULL};
  pthread_create(&t2, NULL, plugin_pingpong, &p2);
  pthread_create(&t1, NULL, plugin_pingpong, &p1);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  return median(lat, RTT_ITERS);
}

static double tcp_rtt_us(const int *fa, const int *fb)
{
  static double lat[RTT_ITERS];
  pthread_t t1, t2;
  struct tpong p1 = {fa[0], fa[1], 1, 1, lat}, p2 = {fb[0], fb[1], 0, 1, NULL};
  pthread_create(&t2, NULL, tcp_pingpong, &p2);
  pthread_create(&t1, NULL, tcp_pingpong, &p1);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  return median(lat, RTT_ITERS);
}

/* One figure per run for each of plugin (0), anchor (1), TCP (2). */
struct series {
  double v[3][MAX_REPS];
};

static void print_line(const char *label, const char *unit, const struct series *s, int other,
                       const char *other_name, int lower_is_better)
{
  double a[MAX_REPS], b[MAX_REPS], ratio[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    a[r] = s->v[0][r];
    b[r] = s->v[other][r];
    ratio[r] = a[r] / b[r];
  }
  double rm = median(ratio, reps), lo = ratio[0], hi = ratio[reps - 1];
  printf("%10s  plugin %8.2f %s  %-12s %8.2f %s  plugin/%s %5.2fx (runs %.2f..%.2f)%s\n", label,
         median(a, reps), unit, other_name, median(b, reps), unit, other == 1 ? "nccl" : "tcp",
         rm, lo, hi, lower_is_better ? "  lower is better" : "");
}

int main(int argc, char **argv)
{
  static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  const char *only_rtt = getenv("BENCH_NET_RTT_ONLY");
  const char *so = getenv("PCIE_TUNER_SO"), *ns = getenv("PCIE_NET_NSTREAMS");
  const char *nr = getenv("BENCH_NET_REPS"), *anchor_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--anchor") == 0 && i + 1 < argc)
      anchor_path = argv[++i];
    else
      die("usage: bench/net [--anchor PATH-to-libnccl-net-ncclsocket.so]");
  }
  nstreams = ns ? atoi(ns) : 2;
  reps = nr ? atoi(nr) : 7;
  if (nstreams < 1 || nstreams > MAX_STREAMS)
    die("PCIE_NET_NSTREAMS out of range");
  if (reps < 1 || reps > MAX_REPS)
    die("BENCH_NET_REPS out of range (1..31)");
  char nsbuf[8];
  snprintf(nsbuf, sizeof(nsbuf), "%d", nstreams);
  setenv("PCIE_NET_NSTREAMS", nsbuf, 1);
  if (!getenv("PCIE_NET_IFNAME"))
    setenv("PCIE_NET_IFNAME", "=lo", 1);
  if (!getenv("NCCL_SOCKET_IFNAME"))
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);

  struct tr tp, ta;
  if (tr_open(&tp, "pcie", so) != 0)
    die("cannot load ncclNetPlugin_v12 from $PCIE_TUNER_SO");
  int have_anchor = anchor_path && tr_open(&ta, "nccl-socket", anchor_path) == 0;
  if (anchor_path && !have_anchor)
    fprintf(stderr, "bench/net: anchor %s not usable; comparing with plain TCP only\n",
            anchor_path);
  int sfd[MAX_STREAMS], rfd[MAX_STREAMS];
  tcp_pairs(nstreams, sfd, rfd);
  size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
  /* Up to 16 MiB every message in flight has its own buffer; above that
   * they share one (the kernel copies are what is measured). */
  size_t bufsize = max > (16u << 20) * INFLIGHT ? max : (16u << 20) * INFLIGHT;
  char *sbuf = malloc(bufsize), *rbuf = malloc(bufsize);
  if (!sbuf || !rbuf)
    die("out of memory");
  memset(sbuf, 1, bufsize);
  memset(rbuf, 0, bufsize);

  const char *nt = getenv("NCCL_SOCKET_NTHREADS"), *nk = getenv("NCCL_NSOCKS_PERTHREAD");
  printf("bench/net: loopback, plugin and TCP %d streams, NCCL socket %s (NCCL_SOCKET_NTHREADS=%s "
         "NCCL_NSOCKS_PERTHREAD=%s), %d in flight, %d interleaved runs, medians\n", nstreams,
         have_anchor ? "loaded" : "absent", nt ? nt : "default", nk ? nk : "default", INFLIGHT,
         reps);
  for (size_t k = 0; !only_rtt && k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t size = sizes[k];
    int ring = size * INFLIGHT <= bufsize ? INFLIGHT : 1;
    int count = (int)((256u << 20) / size) < 3 ? 3 : (int)((256u << 20) / size);
    struct series s;
    for (int r = 0; r < reps; r++)
      for (int j = 0; j < 3; j++) {
        int who = (r + j) % 3;
        if (who == 0)
          s.v[0][r] = tr_gbps(&tp, sbuf, rbuf, size, count, ring);
        else if (who == 1 && have_anchor)
          s.v[1][r] = tr_gbps(&ta, sbuf, rbuf, size, count, ring);
        else if (who == 2)
          s.v[2][r] = tcp_gbps(sfd, rfd, sbuf, rbuf, size, count, ring);
      }
    char label[32];
    if (size >= (1u << 20))
      snprintf(label, sizeof(label), "%zu MiB", size >> 20);
    else
      snprintf(label, sizeof(label), "%zu KiB", size >> 10);
    if (have_anchor)
      print_line(label, "GB/s", &s, 1, "nccl-socket", 0);
    print_line(label, "GB/s", &s, 2, "tcp", 0);
  }

  int ua[2], ub[2]; /* two one-way connections */
  tcp_pairs(1, &ua[0], &ub[1]); /* side 1 -> side 2 */
  tcp_pairs(1, &ub[0], &ua[1]); /* side 2 -> side 1 */
  struct series s;
  for (int r = 0; r < reps; r++)
    for (int j = 0; j < 3; j++) {
      int who = (r + j) % 3;
      if (who == 0)
        s.v[0][r] = tr_rtt_us(&tp);
      else if (who == 1 && have_anchor)
        s.v[1][r] = tr_rtt_us(&ta);
      else if (who == 2)
        s.v[2][r] = tcp_rtt_us(ua, ub);
    }
  if (have_anchor)
    print_line("8 B RTT", "us  ", &s, 1, "nccl-socket", 1);
  print_line("8 B RTT", "us  ", &s, 2, "tcp", 1);

  tr_close(&tp);
  if (have_anchor)
    tr_close(&ta);
  for (int i = 0; i < nstreams; i++) {
    close(sfd[i]);
    close(rfd[i]);
  }
  for (int i = 0; i < 2; i++) {
    close(ua[i]);
    close(ub[i]);
  }
  free(sbuf);
  free(rbuf);
  return 0;
}
