/* bench/net: the net plugin driven as NCCL drives a net plugin, against
 * NCCL's own socket transport in the same run, over loopback and over two
 * veth links between network namespaces the bench makes: one plain, one
 * that caps every TCP connection (per-flow shaping or ECMP pinning one
 * flow to one path, as cloud networks do).
 *
 *   bench/net [--anchor PATH] [--quick]
 *
 * PATH is NCCL's socket transport built as a net plugin (build.sh of the
 * shared tools/nccl-socket, from an NCCL source); without it the NCCL
 * columns are skipped with a message. --quick: one run, fewer sizes and
 * bytes (CI). Environment:
 *   NCCL_BUFFSIZE        NCCL's buffer per connection (default 4 MiB)
 *   BENCH_NET_REPS       interleaved runs (default 5)
 *   BENCH_NET_MODES      comma list of p2p, ring, rtt (default all)
 *   BENCH_NET_LINKS      comma list of lo, veth, capped (default all)
 *   BENCH_NET_RTT_SIZES  round-trip sizes in bytes, comma list (default
 *                        8 B - 64 KiB, 11 sizes)
 *   BENCH_NET_MS         unshaped windows: bytes that take this long at
 *                        1 GB/s (default 1000)
 *   BENCH_NET_CAP_MBIT   the capped link's per-connection rate (default 1000)
 *   BENCH_NET_TUNED      NCCL's transport tuned by hand, "THREADS,SOCKS"
 *                        (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD;
 *                        default "4,2": 8 data sockets; "0": not run)
 *   BENCH_NET_ALT        "VAR=VAL,...": the plugin once more with these
 *                        settings ("alt"), interleaved with the others
 *   BENCH_NET_ALT_SO     that second plugin from another build (a baseline)
 *   BENCH_NET_EACH       set: every run's figure on stderr too
 * The plugin always runs with its own defaults (PCIE_NET_* unset), each
 * transport chooses its interface through NCCL_SOCKET_IFNAME.
 *
 * As NCCL's proxy (src/transport/net.cc, sendProxyProgress and
 * recvProxyProgress), in fresh processes per measurement (the transports
 * read their variables once per load), each registering its buffers with
 * regMr and deregistering them before close:
 *   p2p   sender and receiver in two processes; a transfer of S bytes in
 *         steps of NCCL_BUFFSIZE / NCCL_STEPS (Simple, sliceSteps 1, as
 *         p2p operations post), 8 requests in flight; receive rate.
 *   ring  both processes send and receive at once, as two ranks of a ring
 *         all-reduce: per channel (1 or 2) a send comm and a receive comm,
 *         all driven from one thread, one proxy turn (post, test the
 *         oldest) per sub-operation in a round; the step shapes of ring
 *         all-reduce over a network (Simple: 2 steps per isend, 4 in
 *         flight; LL, LL128: their own step sizes, 8 in flight; see
 *         protos[]); the receive rate of one side per direction.
 *   rtt   ping-pong of 8 B - 64 KiB over two connections (one per
 *         direction, as NCCL has), the next irecv posted before the
 *         isend; p50 and p99 of 2000 round trips.
 * Throughput is timed after a first warm-up transfer. On the capped link
 * both processes connect, then the bench gives every TCP connection its
 * own htb class by its exact ports (nn_cap_flows) before any data moves,
 * and logs the ports on stderr.
 *
 * Contenders run interleaved, the order rotating each run; each line
 * gives medians and the median and range of the per-run ratios
 * plugin/other, so a load spike hits both sides of a pair. Not a test: it
 * never fails on numbers. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nccl/net_v12.h"
#include "support/net_ns.h"

#define NSTEPS 8 /* NCCL_STEPS */
#define MAX_REPS 31
#define RTT_ITERS 2000
#define RTT_WARM 200
#define NCONT 4 /* pcie, nccl, nccl-tuned, pcie with BENCH_NET_ALT */
#define MAX_CH 2

enum kind { THROUGHPUT, RING, RTT };

/* How NCCL's proxy cuts a ring all-reduce for a network connection
 * (src/transport/net.cc with src/include/collectives.h and device.h):
 * Simple posts sliceSteps = ALLREDUCE_SLICESTEPS = NCCL_STEPS/4 = 2 steps
 * per isend, so NCCL_STEPS/2 = 4 requests in flight; LL and LL128 post
 * one step per isend, 8 in flight, of their own buffer's step size (LL:
 * NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x 16-byte lines
 * = 64 KiB, half of it data; LL128: NCCL_LL128_ELEMS_PER_THREAD 120 x
 * NCCL_LL128_MAX_NTHREADS 640 x 8 B = 600 KiB, 15/16 data). The bench
 * moves the bytes on the wire (LL twice the data, LL128 16/15 of it). */
enum proto { P_SIMPLE, P_LL, P_LL128 };
static const struct {
  const char *name;
  size_t step; /* 0: stepsize x 2 (Simple) */
  int inflight;
  int wire_num, wire_den;
} protos[] = {{"simple", 0, NSTEPS / 2, 1, 1},
              {"ll", 64 << 10, NSTEPS, 2, 1},
              {"ll128", 600 << 10, NSTEPS, 16, 15}};

struct link {
  const char *label;
  int in_ns;            /* 0: both ends in the bench's own namespace, over lo */
  const char *ifname[2]; /* receiver (a), sender (b) */
  int cap_mbit;
  int index; /* its link in struct nn */
};

struct contender {
  const char *name;
  const char *path;
  int tuned;
  const char *env; /* "VAR=VAL,..." set in its processes (BENCH_NET_ALT) */
};

struct job {
  const struct contender *c;
  const struct link *l;
  const struct nn *ns;
  enum kind kind;
  size_t size;  /* bytes per transfer (ring: per direction, all channels), or per round trip */
  int count;    /* throughput, ring: transfers after the warm-up one */
  int nch;      /* ring: channels, each a send and a receive comm per process */
  enum proto proto; /* ring */
  int ready_fd, go_fd; /* child side of the setup barrier (run_job) */
};

/* A run's figure: GB/s, or the round trip's p50 (v) and p99 (v2) in us. */
struct fig {
  double v, v2;
};

static size_t buffsize, stepsize;
static int tuned_threads = 4, tuned_socks = 2;

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

static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench/net: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...)
{
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench/net: WARN ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* ---- one endpoint: a child process, exits 0 after writing its figure */

struct ep {
  const ncclNet_v12_t *net;
  void *ctx;
};

#define CHECK(call, what)                                                                          \
  do {                                                                                             \
    if ((call) != ncclSuccess)                                                                     \
      die("%s failed", what);                                                                      \
  } while (0)

static void ep_open(struct ep *e, const struct job *j, int side)
{
  char ifname[32];
  ncclNetCommConfig_v12_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
  int ndev = 0;
  void *lib;
  if (j->l->in_ns && nn_enter(j->ns, side) != 0)
    die("cannot enter namespace %c", "ab"[side]);
  snprintf(ifname, sizeof(ifname), "=%s", j->l->ifname[side]);
  unsetenv("PCIE_NET_IFNAME");
  setenv("NCCL_SOCKET_IFNAME", ifname, 1);
  if (j->c->tuned) {
    char v[16];
    snprintf(v, sizeof(v), "%d", tuned_threads);
    setenv("NCCL_SOCKET_NTHREADS", v, 1);
    snprintf(v, sizeof(v), "%d", tuned_socks);
    setenv("NCCL_NSOCKS_PERTHREAD", v, 1);
  } else {
    unsetenv("NCCL_SOCKET_NTHREADS");
    unsetenv("NCCL_NSOCKS_PERTHREAD");
  }
  if (j->c->env) {
    char *list = strdup(j->c->env), *save = NULL;
    for (char *kv = strtok_r(list, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
      if (putenv(strdup(kv)) != 0)
        die("bad BENCH_NET_ALT entry '%s'", kv);
    free(list);
  }
  if (!(lib = dlopen(j->c->path, RTLD_NOW | RTLD_LOCAL)) ||
      !(e->net = dlsym(lib, "ncclNetPlugin_v12")))
    die("cannot load ncclNetPlugin_v12 from %s", j->c->path);
  CHECK(e->net->init(&e->ctx, 1, &cfg, logger, NULL), "init");
  CHECK(e->net->devices(&ndev), "devices");
  if (ndev < 1)
    die("%s found no device on %s", j->c->name, j->l->ifname[side]);
}

static void xwrite(int fd, const void *buf, size_t len)
{
  if (write(fd, buf, len) != (ssize_t)len)
    die("pipe write failed");
}

static void xread(int fd, void *buf, size_t len)
{
  if (read(fd, buf, len) != (ssize_t)len)
    die("pipe read failed (the other side died)");
}

/* Connects and accepts from one thread, alternating as NCCL's proxy does;
 * want_send / want_recv say which comms this side needs. */
static void ep_connect(const struct ep *e, int to_peer, int from_peer, int want_send,
                       int want_recv, void **sc, void **rc)
{
  char mine[NCCL_NET_HANDLE_MAXSIZE], theirs[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  ncclNetDeviceHandle_v12_t *dh = NULL;
  *sc = *rc = NULL;
  if (want_recv) {
    CHECK(e->net->listen(e->ctx, 0, mine, &lc), "listen");
    xwrite(to_peer, mine, sizeof(mine));
  }
  if (want_send)
    xread(from_peer, theirs, sizeof(theirs));
  double t0 = now_s();
  while ((want_send && !*sc) || (want_recv && !*rc)) {
    if (want_send && !*sc)
      CHECK(e->net->connect(e->ctx, 0, theirs, sc, &dh), "connect");
    if (want_recv && !*rc)
      CHECK(e->net->accept(lc, rc, &dh), "accept");
    if (now_s() - t0 > 30)
      die("no connection after 30 s");
  }
  if (lc)
    e->net->closeListen(lc);
}

static void wait_req(const ncclNet_v12_t *net, void *req, int *size)
{
  int done = 0, sizes[64];
  while (!done)
    CHECK(net->test(req, &done, sizes), "test");
  if (size)
    *size = sizes[0];
}

/* NCCL's proxy loop over nsteps steps; returns the time of the completion
 * of step `mark` (the end of the warm-up) in *t_mark. */
static void run_steps(const struct ep *e, void *comm, int send, char *buf, void *mh,
                      const size_t *len, long nsteps, long mark, double *t_mark)
{
  void *req[NSTEPS] = {0};
  long posted = 0, done = 0;
  int tag = 0;
  while (done < nsteps) {
    int k = (int)(posted % NSTEPS);
    if (posted < nsteps && !req[k]) {
      void *data = buf + (size_t)k * stepsize;
      size_t cap = stepsize;
      ncclResult_t r =
          send ? e->net->isend(comm, data, len[posted], tag, mh, NULL, &req[k])
               : e->net->irecv(comm, 1, &data, &cap, &tag, &mh, NULL, &req[k]);
      CHECK(r, send ? "isend" : "irecv");
      if (req[k])
        posted++;
    }
    int d = (int)(done % NSTEPS), fin = 0, sizes[64];
    if (req[d]) {
      CHECK(e->net->test(req[d], &fin, sizes), "test");
      if (fin) {
        if (!send && (size_t)sizes[0] != len[done])
          die("step %ld: received %d bytes, expected %zu", done, sizes[0], len[done]);
        req[d] = NULL;
        if (++done == mark)
          *t_mark = now_s();
      }
    }
  }
}

/* Step sizes of 1 + count transfers of size bytes in steps of step. */
static size_t *plan(size_t size, size_t step, int count, long *nsteps, long *warm)
{
  long per = (long)((size + step - 1) / step);
  *nsteps = per * (1 + count);
  *warm = per;
  size_t *len = malloc(sizeof(*len) * (size_t)*nsteps);
  if (!len)
    die("out of memory");
  for (long t = 0, i = 0; t <= count; t++)
    for (size_t left = size; left; left -= len[i - 1])
      len[i++] = left < step ? left : step;
  return len;
}

/* Both sides connected: tell the parent, which caps each flow of a capped
 * link now that their ports exist, and wait for its go. */
static void barrier(const struct job *j)
{
  char c = 1;
  xwrite(j->ready_fd, &c, 1);
  xread(j->go_fd, &c, 1);
}

/* The proxy's buffers as NCCL allocates them: page-aligned host memory
 * (ncclCudaHostCalloc), each protocol's buffer at a multiple of the page
 * size in it and each step at a multiple of its step size
 * (src/transport/net.cc, sendProxySetup and recvProxySetup), so every
 * pointer NCCL hands a transport is page-aligned. malloc's 16 bytes are
 * not what a transport sees, and they matter: the plugin's 64 KiB round
 * trip on lo took ~1.4x as long from a buffer 16 bytes past a 64-byte
 * boundary as from any other (docs/performance.md). */
static char *host_buffer(size_t size, int fill)
{
  void *p = NULL;
  if (posix_memalign(&p, 4096, size) != 0)
    die("out of memory");
  memset(p, fill, size);
  return p;
}

static void ep_throughput(const struct job *j, int side, int to_peer, int from_peer, int res_fd)
{
  struct ep e;
  void *sc, *rc, *mh;
  long nsteps, warm;
  double t_mark = 0, t_end;
  char *buf = host_buffer(buffsize, side);
  size_t *len = plan(j->size, stepsize, j->count, &nsteps, &warm);
  ep_open(&e, j, side);
  ep_connect(&e, to_peer, from_peer, side == 1, side == 0, &sc, &rc);
  barrier(j);
  void *comm = side == 1 ? sc : rc;
  CHECK(e.net->regMr(comm, buf, buffsize, NCCL_PTR_HOST, &mh), "regMr");
  run_steps(&e, comm, side == 1, buf, mh, len, nsteps, warm, &t_mark);
  t_end = now_s();
  CHECK(e.net->deregMr(comm, mh), "deregMr");
  if (side == 0) {
    struct fig f = {(double)j->size * j->count / (t_end - t_mark) / 1e9, 0};
    xwrite(res_fd, &f, sizeof(f));
    /* the sender closes once the receiver has everything */
    e.net->closeRecv(rc);
  } else {
    e.net->closeSend(sc);
  }
  e.net->finalize(e.ctx);
  free(len);
  free(buf);
}

/* One direction of one channel in the ring: NCCL's proxy sub-operation. */
struct ring_dir {
  void *comm, *mh;
  char *buf;
  int send;
  void *req[NSTEPS];
  long posted, done;
};

/* One turn of NCCL's proxy over a sub-operation: post the next step if its
 * slot is free, test the oldest request (src/transport/net.cc,
 * sendProxyProgress/recvProxyProgress). Returns 1 when the warm-up mark
 * was reached in this turn. */
static int ring_turn(const struct ep *e, struct ring_dir *d, const size_t *len, long nsteps,
                     size_t slot, int inflight, long mark)
{
  int tag = 0;
  int k = (int)(d->posted % inflight);
  if (d->posted < nsteps && !d->req[k]) {
    void *data = d->buf + (size_t)k * slot;
    size_t cap = slot;
    CHECK(d->send ? e->net->isend(d->comm, data, len[d->posted], tag, d->mh, NULL, &d->req[k])
                  : e->net->irecv(d->comm, 1, &data, &cap, &tag, &d->mh, NULL, &d->req[k]),
          d->send ? "isend" : "irecv");
    if (d->req[k])
      d->posted++;
  }
  int o = (int)(d->done % inflight), fin = 0, sizes[64];
  if (d->done < nsteps && d->req[o]) {
    CHECK(e->net->test(d->req[o], &fin, sizes), "test");
    if (fin) {
      if (!d->send && (size_t)sizes[0] != len[d->done])
        die("ring step %ld: received %d bytes, expected %zu", d->done, sizes[0], len[d->done]);
      d->req[o] = NULL;
      return ++d->done == mark;
    }
  }
  return 0;
}

/* A ring rank's proxy: a send comm to the next rank and a receive comm
 * from the previous one per channel (with two processes both are the
 * other process), all driven from this one thread. The figure is the
 * receive rate of side 0, wire bytes per second per direction. */
static void ep_ring(const struct job *j, int side, int to_peer, int from_peer, int res_fd)
{
  struct ep e;
  struct ring_dir d[2 * MAX_CH];
  size_t slot = protos[j->proto].step ? protos[j->proto].step : 2 * stepsize;
  int inflight = protos[j->proto].inflight;
  size_t wire = j->size / (size_t)j->nch * (size_t)protos[j->proto].wire_num /
                (size_t)protos[j->proto].wire_den;
  long nsteps, warm;
  size_t *len = plan(wire, slot, j->count, &nsteps, &warm);
  double t_mark = 0;
  int marks = 0;
  ep_open(&e, j, side);
  memset(d, 0, sizeof(d));
  for (int c = 0; c < j->nch; c++) {
    void *sc, *rc;
    ep_connect(&e, to_peer, from_peer, 1, 1, &sc, &rc);
    d[2 * c] = (struct ring_dir){.comm = sc, .send = 1};
    d[2 * c + 1] = (struct ring_dir){.comm = rc, .send = 0};
  }
  barrier(j);
  for (int i = 0; i < 2 * j->nch; i++) {
    d[i].buf = host_buffer(slot * (size_t)inflight, side);
    CHECK(e.net->regMr(d[i].comm, d[i].buf, slot * (size_t)inflight, NCCL_PTR_HOST, &d[i].mh),
          "regMr");
  }
  for (int busy = 1; busy;) {
    busy = 0;
    for (int i = 0; i < 2 * j->nch; i++) {
      if (d[i].done == nsteps)
        continue;
      busy = 1;
      /* the mark: every receive direction past its warm-up transfer */
      if (ring_turn(&e, &d[i], len, nsteps, slot, inflight, warm) && !d[i].send &&
          ++marks == j->nch)
        t_mark = now_s();
    }
  }
  double t_end = now_s();
  for (int i = 0; i < 2 * j->nch; i++)
    CHECK(e.net->deregMr(d[i].comm, d[i].mh), "deregMr");
  if (side == 0) {
    struct fig f = {(double)wire * (double)j->nch * j->count / (t_end - t_mark) / 1e9, 0};
    xwrite(res_fd, &f, sizeof(f));
  }
  /* both sides received everything before either closes */
  char c = 0;
  xwrite(to_peer, &c, 1);
  xread(from_peer, &c, 1);
  for (int i = 0; i < 2 * j->nch; i++) {
    if (d[i].send)
      e.net->closeSend(d[i].comm);
    else
      e.net->closeRecv(d[i].comm);
    free(d[i].buf);
  }
  e.net->finalize(e.ctx);
  free(len);
}

static void ep_rtt(const struct job *j, int side, int to_peer, int from_peer, int res_fd)
{
  static double lat[RTT_ITERS];
  struct ep e;
  void *sc, *rc, *smh, *rmh, *sreq, *rreq;
  char *buf = host_buffer(buffsize, 0);
  ep_open(&e, j, side);
  ep_connect(&e, to_peer, from_peer, 1, 1, &sc, &rc);
  barrier(j);
  CHECK(e.net->regMr(sc, buf, stepsize, NCCL_PTR_HOST, &smh), "regMr");
  CHECK(e.net->regMr(rc, buf + stepsize, stepsize, NCCL_PTR_HOST, &rmh), "regMr");
  void *rdata = buf + stepsize;
  size_t cap = stepsize;
  int tag = 0;
  for (int i = 0; i < RTT_WARM + RTT_ITERS; i++) {
    double t0 = now_s();
    rreq = sreq = NULL;
    while (!rreq)
      CHECK(e.net->irecv(rc, 1, &rdata, &cap, &tag, &rmh, NULL, &rreq), "irecv");
    if (side == 1)
      wait_req(e.net, rreq, NULL);
    while (!sreq)
      CHECK(e.net->isend(sc, buf, j->size, tag, smh, NULL, &sreq), "isend");
    wait_req(e.net, sreq, NULL);
    if (side == 0)
      wait_req(e.net, rreq, NULL);
    if (i >= RTT_WARM)
      lat[i - RTT_WARM] = (now_s() - t0) * 1e6;
  }
  CHECK(e.net->deregMr(sc, smh), "deregMr");
  CHECK(e.net->deregMr(rc, rmh), "deregMr");
  if (side == 0) {
    qsort(lat, RTT_ITERS, sizeof(lat[0]), cmp_double);
    struct fig f = {lat[RTT_ITERS / 2], lat[RTT_ITERS * 99 / 100]};
    xwrite(res_fd, &f, sizeof(f));
  }
  /* both sides are done with both comms before either closes */
  char c = 0;
  xwrite(to_peer, &c, 1);
  xread(from_peer, &c, 1);
  e.net->closeSend(sc);
  e.net->closeRecv(rc);
  e.net->finalize(e.ctx);
  free(buf);
}

/* Runs one measurement in two fresh processes; returns the figure. Both
 * connect, then wait at the barrier while a capped link gets one htb
 * class per TCP connection (nn_cap_flows; the ports go to stderr). */
static struct fig run_job(const struct job *proto)
{
  int ab[2], ba[2], res[2], ready[2], go[2];
  pid_t pid[2];
  struct job j = *proto;
  if (pipe(ab) || pipe(ba) || pipe(res) || pipe(ready) || pipe(go))
    die("pipe: %s", strerror(errno));
  j.ready_fd = ready[1];
  j.go_fd = go[0];
  for (int side = 0; side < 2; side++) {
    pid[side] = fork();
    if (pid[side] < 0)
      die("fork: %s", strerror(errno));
    if (pid[side] == 0) {
      alarm(120); /* a hung transport must not hang the bench */
      close(ready[0]), close(go[1]);
      int to = side == 0 ? ab[1] : ba[1], from = side == 0 ? ba[0] : ab[0];
      if (j.kind == THROUGHPUT)
        ep_throughput(&j, side, to, from, res[1]);
      else if (j.kind == RING)
        ep_ring(&j, side, to, from, res[1]);
      else
        ep_rtt(&j, side, to, from, res[1]);
      _exit(0);
    }
  }
  close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]), close(res[1]);
  close(ready[1]), close(go[0]);
  char c[2];
  int ok = read(ready[0], c, 1) == 1 && read(ready[0], c + 1, 1) == 1;
  if (ok && j.l->cap_mbit) {
    char ports[4096];
    if (nn_cap_flows(j.ns, j.l->index, ports, sizeof(ports)) != 0)
      die("cannot cap the flows of %s: %s", j.l->label, ports);
    fprintf(stderr, "bench/net: %s %s: one %d Mbit/s class per connection: %s\n", j.c->name,
            j.l->label, j.l->cap_mbit, ports);
  }
  if (ok)
    (void)!write(go[1], "gg", 2);
  close(ready[0]), close(go[1]);
  struct fig f = {-1, -1};
  if (read(res[0], &f, sizeof(f)) != (ssize_t)sizeof(f))
    f.v = -1;
  close(res[0]);
  for (int side = 0; side < 2; side++) {
    int st;
    waitpid(pid[side], &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  if (!ok || f.v < 0)
    die("%s on %s failed (see above)", j.c->name, j.l->label);
  return f;
}

/* ---- driver */

static void label_size(char *buf, size_t len, size_t size)
{
  if (size >= (1u << 20) && size % (1u << 20) == 0)
    snprintf(buf, len, "%zu MiB", size >> 20);
  else if (size >= 1024 && size % 1024 == 0)
    snprintf(buf, len, "%zu KiB", size >> 10);
  else
    snprintf(buf, len, "%zu B", size);
}

static void print_ratio(const char *other, double v[NCONT][MAX_REPS], int o, int reps)
{
  double r[MAX_REPS];
  for (int i = 0; i < reps; i++)
    r[i] = v[0][i] / v[o][i];
  double m = median(r, reps);
  printf("  pcie/%s %5.2fx (%.2f..%.2f)", other, m, r[0], r[reps - 1]);
}

static void measure(const struct job *proto, const struct contender *c, int ncont, int reps,
                    const char *what)
{
  double v[NCONT][MAX_REPS], v2[NCONT][MAX_REPS], med[NCONT];
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < ncont; k++) {
      int who = (r + k) % ncont;
      struct job j = *proto;
      j.c = &c[who];
      struct fig f = run_job(&j);
      v[who][r] = f.v;
      v2[who][r] = f.v2;
      if (getenv("BENCH_NET_EACH"))
        fprintf(stderr, "  run %d %s %.3f\n", r, c[who].name, f.v);
    }
  int rtt = proto->kind == RTT;
  printf("%-7s %-16s", proto->l->label, what);
  for (int k = 0; k < ncont; k++) {
    double tmp[MAX_REPS];
    memcpy(tmp, v[k], sizeof(tmp));
    med[k] = median(tmp, reps);
    printf("  %s %7.3f", c[k].name, med[k]);
    if (rtt) {
      memcpy(tmp, v2[k], sizeof(tmp));
      printf(" p99 %7.3f", median(tmp, reps));
    }
  }
  printf(rtt ? " us" : " GB/s");
  for (int k = 1; k < ncont; k++)
    print_ratio(c[k].name, v, k, reps);
  if (rtt && ncont > 1)
    print_ratio("nccl p99", v2, 1, reps);
  printf("%s\n", rtt ? "  (time: lower is better)" : "");
  fflush(stdout);
}

static long env_long(const char *name, long def, long lo, long hi)
{
  const char *s = getenv(name);
  if (!s)
    return def;
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > hi)
    die("bad %s='%s': expected an integer in [%ld, %ld]", name, s, lo, hi);
  return v;
}

/* Which parts run: BENCH_NET_MODES, a comma list of p2p, ring, rtt (all
 * by default); BENCH_NET_LINKS, of lo, veth, capped (all by default). */
static int listed(const char *var, const char *name)
{
  const char *s = getenv(var);
  if (!s || !*s)
    return 1;
  size_t n = strlen(name);
  for (const char *p = s; (p = strstr(p, name)); p += n)
    if ((p == s || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
      return 1;
  return 0;
}

/* What one link's measurements share. */
struct runs {
  const struct contender *c;
  int ncont, reps, quick;
  const struct nn *ns;
  double bytes; /* per measurement */
};

static void run_p2p(const struct runs *r, const struct link *l)
{
  static const size_t all_sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  static const size_t quick_sizes[] = {1 << 20, 16 << 20};
  const size_t *sizes = r->quick ? quick_sizes : all_sizes;
  size_t nsizes = r->quick ? 2 : sizeof(all_sizes) / sizeof(all_sizes[0]);
  for (size_t k = 0; k < nsizes; k++) {
    char label[32], what[48];
    int count = (int)(r->bytes / (double)sizes[k]);
    struct job j = {.l = l, .ns = r->ns, .kind = THROUGHPUT, .size = sizes[k],
                    .count = count < 2 ? 2 : count};
    label_size(label, sizeof(label), sizes[k]);
    snprintf(what, sizeof(what), "p2p %s", label);
    measure(&j, r->c, r->ncont, r->reps, what);
  }
}

static void run_ring(const struct runs *r, const struct link *l)
{
  static const size_t ring_sizes[] = {1 << 20, 4 << 20, 16 << 20, 64 << 20};
  for (int nch = 1; nch <= MAX_CH; nch++)
    for (size_t k = 0; k < sizeof(ring_sizes) / sizeof(ring_sizes[0]); k++) {
      if (r->quick && (k % 2 || nch == 1))
        continue;
      char label[32], what[48];
      int count = (int)(r->bytes / (double)ring_sizes[k]);
      struct job j = {.l = l, .ns = r->ns, .kind = RING, .size = ring_sizes[k],
                      .count = count < 2 ? 2 : count, .nch = nch, .proto = P_SIMPLE};
      label_size(label, sizeof(label), ring_sizes[k]);
      snprintf(what, sizeof(what), "ring%d %s", nch, label);
      measure(&j, r->c, r->ncont, r->reps, what);
    }
  /* LL and LL128 step shapes, at sizes NCCL would run them over a net */
  for (int p = P_LL; p <= P_LL128 && !r->quick; p++) {
    size_t size = p == P_LL ? 256 << 10 : 4 << 20;
    char label[32], what[48];
    int count = (int)(r->bytes / (double)size);
    struct job j = {.l = l, .ns = r->ns, .kind = RING, .size = size,
                    .count = count < 2 ? 2 : count, .nch = 2, .proto = (enum proto)p};
    label_size(label, sizeof(label), size);
    snprintf(what, sizeof(what), "ring2 %s %s", protos[p].name, label);
    measure(&j, r->c, r->ncont, r->reps, what);
  }
}

/* BENCH_NET_RTT_SIZES: the round trips' sizes in bytes, a comma list;
 * else the default sweep (fewer with --quick). */
static size_t rtt_plan(size_t *out, size_t max, int quick)
{
  static const size_t rtt_sizes[] = {8, 64, 128, 129, 160, 256, 1024, 4096, 16384, 16385, 65536};
  static const size_t quick_rtt[] = {8, 1024, 65536};
  size_t n = 0;
  for (const char *p = getenv("BENCH_NET_RTT_SIZES"); p && *p && n < max;) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v > (size_t)stepsize || (*end && *end != ','))
      die("bad BENCH_NET_RTT_SIZES: expected byte counts up to %zu, comma-separated", stepsize);
    out[n++] = v;
    p = *end ? end + 1 : end;
  }
  if (n)
    return n;
  const size_t *def = quick ? quick_rtt : rtt_sizes;
  n = quick ? 3 : sizeof(rtt_sizes) / sizeof(rtt_sizes[0]);
  memcpy(out, def, n * sizeof(*def));
  return n;
}

static void run_rtt(const struct runs *r, const struct link *l, const size_t *sizes, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    char label[32], what[48];
    struct job j = {.l = l, .ns = r->ns, .kind = RTT, .size = sizes[k]};
    label_size(label, sizeof(label), sizes[k]);
    snprintf(what, sizeof(what), "rtt %s", label);
    measure(&j, r->c, r->ncont, r->reps, what);
  }
}

/* The contenders: the plugin, NCCL's transport (defaults, and tuned
 * unless BENCH_NET_TUNED=0) when the anchor is readable, and "alt". */
static int contenders(struct contender *c, const char *so, const char *anchor)
{
  const char *tuned = getenv("BENCH_NET_TUNED");
  int no_tuned = tuned && strcmp(tuned, "0") == 0, n = 0;
  if (tuned && !no_tuned &&
      (sscanf(tuned, "%d,%d", &tuned_threads, &tuned_socks) != 2 || tuned_threads < 1 ||
       tuned_socks < 1))
    die("bad BENCH_NET_TUNED='%s': expected THREADS,SOCKS or 0", tuned);
  c[n++] = (struct contender){"pcie", so, 0, NULL};
  if (!anchor || access(anchor, R_OK) != 0) {
    printf("bench/net: NCCL's socket transport skipped (%s); plugin figures only. Build it with "
           "nccl-socket/build.sh of the shared tools and pass --anchor.\n",
           anchor ? "the --anchor library is not readable" : "no --anchor given");
  } else {
    c[n++] = (struct contender){"nccl", anchor, 0, NULL};
    if (!no_tuned)
      c[n++] = (struct contender){"tuned", anchor, 1, NULL};
  }
  /* BENCH_NET_ALT="PCIE_NET_NTHREADS=0,...": the plugin once more with
   * these settings, interleaved with the others (to choose a default) */
  const char *alt = getenv("BENCH_NET_ALT"), *alt_so = getenv("BENCH_NET_ALT_SO");
  if ((alt && *alt) || (alt_so && *alt_so))
    c[n++] = (struct contender){"alt", alt_so && *alt_so ? alt_so : so, 0,
                                alt && *alt ? alt : NULL};
  return n;
}

int main(int argc, char **argv)
{
  const char *anchor = NULL, *so = getenv("PCIE_TUNER_SO");
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--anchor") == 0 && i + 1 < argc)
      anchor = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0)
      quick = 1;
    else
      die("usage: bench/net [--anchor PATH-to-libnccl-net-ncclsocket.so] [--quick]");
  }
  if (!so)
    die("PCIE_TUNER_SO is not set (make bench sets it)");
  buffsize = (size_t)env_long("NCCL_BUFFSIZE", 4 << 20, 64 << 10, 1L << 30);
  stepsize = buffsize / NSTEPS;
  int reps = (int)env_long("BENCH_NET_REPS", quick ? 1 : 5, 1, MAX_REPS);
  int cap = (int)env_long("BENCH_NET_CAP_MBIT", 1000, 10, 100000);
  double secs = (double)env_long("BENCH_NET_MS", 1000, 10, 600000) / 1000;
  size_t rtt[16], nrtt = rtt_plan(rtt, 16, quick);
  struct contender c[NCONT];
  int ncont = contenders(c, so, anchor);
  unsetenv("PCIE_NET_NSTREAMS"); /* the plugin picks its own stream count */
  signal(SIGPIPE, SIG_IGN);

  struct nn ns;
  char why[256];
  struct nn_link nl[2] = {{.flow_cap_mbit = 0}, {.flow_cap_mbit = cap}};
  int want_ns = listed("BENCH_NET_LINKS", "veth") || listed("BENCH_NET_LINKS", "capped");
  int have_ns = want_ns && nn_create(&ns, nl, 2, why, sizeof(why)) == 0;
  struct link links[3];
  int nlinks = 0;
  if (listed("BENCH_NET_LINKS", "lo"))
    links[nlinks++] = (struct link){"lo", 0, {"lo", "lo"}, 0, 0};
  if (have_ns) {
    if (listed("BENCH_NET_LINKS", "veth"))
      links[nlinks++] =
          (struct link){"veth", 1, {ns.links[0].name[0], ns.links[0].name[1]}, 0, 0};
    if (listed("BENCH_NET_LINKS", "capped"))
      links[nlinks++] =
          (struct link){"capped", 1, {ns.links[1].name[0], ns.links[1].name[1]}, cap, 1};
  } else if (want_ns) {
    printf("bench/net: veth links skipped: %s\n", why);
  }

  printf("bench/net: NCCL_BUFFSIZE %zu (steps of %zu, %d in flight), %d interleaved runs, "
         "medians; tuned = NCCL_SOCKET_NTHREADS=%d NCCL_NSOCKS_PERTHREAD=%d; capped = %d Mbit/s "
         "per TCP connection (one htb class each); unshaped windows ~%.1f s at 1 GB/s\n",
         buffsize, stepsize, NSTEPS, reps, tuned_threads, tuned_socks, cap, secs);
  for (int li = 0; li < nlinks; li++) {
    const struct link *l = &links[li];
    /* bytes per measurement: ~0.3 s at one capped flow's rate, or
     * BENCH_NET_MS at 1 GB/s on an unshaped link */
    double bytes = l->cap_mbit ? l->cap_mbit * 1e6 / 8 * 0.3 : secs * 1e9;
    if (quick)
      bytes /= 8;
    struct runs r = {c, ncont, reps, quick, &ns, bytes};
    if (listed("BENCH_NET_MODES", "p2p"))
      run_p2p(&r, l);
    if (listed("BENCH_NET_MODES", "ring"))
      run_ring(&r, l);
    if (listed("BENCH_NET_MODES", "rtt"))
      run_rtt(&r, l, rtt, nrtt);
  }
  if (have_ns)
    nn_destroy(&ns);
  return 0;
}
