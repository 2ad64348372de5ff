/* bench/net: the net plugin driven as NCCL drives a net plugin, against
 * NCCL's own socket transport in the same run, over loopback and over two
 * veth links between network namespaces the bench makes: one plain, one
 * that caps every TCP flow (per-flow shaping or ECMP pinning one flow to
 * one path, as cloud networks do).
 *
 *   bench/net [--anchor PATH] [--quick]
 *
 * PATH is NCCL's socket transport built as a net plugin (build.sh of the
 * shared tools/nccl-socket, from an NCCL source); without it the NCCL
 * columns are skipped with a message. --quick: one run, fewer sizes and
 * bytes (CI). Environment:
 *   NCCL_BUFFSIZE        NCCL's buffer per connection (default 4 MiB)
 *   BENCH_NET_REPS       interleaved runs (default 5)
 *   BENCH_NET_CAP_MBIT   the capped link's per-flow rate (default 1000)
 *   BENCH_NET_TUNED      NCCL's transport tuned by hand, "THREADS,SOCKS"
 *                        (NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD;
 *                        default "4,2": 8 data sockets)
 * The plugin always runs with its own defaults (PCIE_NET_* unset), each
 * transport chooses its interface through NCCL_SOCKET_IFNAME.
 *
 * As NCCL's proxy (src/transport/net.cc, sendProxyProgress and
 * recvProxyProgress): sender and receiver are two processes; each
 * registers its NCCL_BUFFSIZE buffer once per connection with regMr and
 * deregisters it before close; a transfer of S bytes is cut into steps of
 * stepSize = NCCL_BUFFSIZE / NCCL_STEPS (the SIMPLE protocol with
 * sliceSteps = 1, as p2p operations post), each step an isend from its
 * slot (step % NCCL_STEPS) * stepSize, NCCL_STEPS (8) requests in flight;
 * the receiver keeps 8 irecvs of a whole stepSize posted and polls test.
 * Throughput is timed on the receiver after a first warm-up transfer. The
 * round trip is an 8-byte ping-pong over two connections (one per
 * direction, as NCCL has), the next irecv posted before the isend.
 *
 * Every measurement is a fresh pair of processes (the transports read
 * their variables once per load). Contenders run interleaved, the order
 * rotating each run; each line gives medians and the median and range of
 * the per-run ratios plugin/other, so a load spike hits both sides of a
 * pair. Not a test: it never fails on numbers. */
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
#define NCONT 3 /* pcie, nccl, nccl-tuned */

enum kind { THROUGHPUT, RTT };

struct link {
  const char *label;
  int in_ns;            /* 0: both ends in the bench's own namespace, over lo */
  const char *ifname[2]; /* receiver (a), sender (b) */
  int cap_mbit;
};

struct contender {
  const char *name;
  const char *path;
  int tuned;
};

struct job {
  const struct contender *c;
  const struct link *l;
  const struct nn *ns;
  enum kind kind;
  size_t size;  /* throughput: bytes per transfer */
  int count;    /* throughput: transfers after the warm-up one */
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

/* Step sizes of 1 + count transfers of size bytes. */
static size_t *plan(size_t size, int count, long *nsteps, long *warm)
{
  long per = (long)((size + stepsize - 1) / stepsize);
  *nsteps = per * (1 + count);
  *warm = per;
  size_t *len = malloc(sizeof(*len) * (size_t)*nsteps);
  if (!len)
    die("out of memory");
  for (long t = 0, i = 0; t <= count; t++)
    for (size_t left = size; left; left -= len[i - 1])
      len[i++] = left < stepsize ? left : stepsize;
  return len;
}

static void ep_throughput(const struct job *j, int side, int to_peer, int from_peer, int res_fd)
{
  struct ep e;
  void *sc, *rc, *mh;
  long nsteps, warm;
  double t_mark = 0, t_end;
  char *buf = malloc(buffsize);
  size_t *len = plan(j->size, j->count, &nsteps, &warm);
  if (!buf)
    die("out of memory");
  memset(buf, side, buffsize);
  ep_open(&e, j, side);
  ep_connect(&e, to_peer, from_peer, side == 1, side == 0, &sc, &rc);
  void *comm = side == 1 ? sc : rc;
  CHECK(e.net->regMr(comm, buf, buffsize, NCCL_PTR_HOST, &mh), "regMr");
  run_steps(&e, comm, side == 1, buf, mh, len, nsteps, warm, &t_mark);
  t_end = now_s();
  CHECK(e.net->deregMr(comm, mh), "deregMr");
  if (side == 0) {
    double gbps = (double)j->size * j->count / (t_end - t_mark) / 1e9;
    xwrite(res_fd, &gbps, sizeof(gbps));
    /* the sender closes once the receiver has everything */
    e.net->closeRecv(rc);
  } else {
    e.net->closeSend(sc);
  }
  e.net->finalize(e.ctx);
  free(len);
  free(buf);
}

static void ep_rtt(const struct job *j, int side, int to_peer, int from_peer, int res_fd)
{
  static double lat[RTT_ITERS];
  struct ep e;
  void *sc, *rc, *smh, *rmh, *sreq, *rreq;
  char *buf = calloc(1, buffsize);
  if (!buf)
    die("out of memory");
  ep_open(&e, j, side);
  ep_connect(&e, to_peer, from_peer, 1, 1, &sc, &rc);
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
      CHECK(e.net->isend(sc, buf, 8, tag, smh, NULL, &sreq), "isend");
    wait_req(e.net, sreq, NULL);
    if (side == 0)
      wait_req(e.net, rreq, NULL);
    if (i >= RTT_WARM)
      lat[i - RTT_WARM] = (now_s() - t0) * 1e6;
  }
  CHECK(e.net->deregMr(sc, smh), "deregMr");
  CHECK(e.net->deregMr(rc, rmh), "deregMr");
  if (side == 0) {
    double us = median(lat, RTT_ITERS);
    xwrite(res_fd, &us, sizeof(us));
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

/* Runs one measurement in two fresh processes; returns the figure. */
static double run_job(const struct job *j)
{
  int ab[2], ba[2], res[2];
  pid_t pid[2];
  if (pipe(ab) || pipe(ba) || pipe(res))
    die("pipe: %s", strerror(errno));
  for (int side = 0; side < 2; side++) {
    pid[side] = fork();
    if (pid[side] < 0)
      die("fork: %s", strerror(errno));
    if (pid[side] == 0) {
      alarm(120); /* a hung transport must not hang the bench */
      int to = side == 0 ? ab[1] : ba[1], from = side == 0 ? ba[0] : ab[0];
      if (j->kind == THROUGHPUT)
        ep_throughput(j, side, to, from, res[1]);
      else
        ep_rtt(j, side, to, from, res[1]);
      _exit(0);
    }
  }
  close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]), close(res[1]);
  double v = -1;
  if (read(res[0], &v, sizeof(v)) != (ssize_t)sizeof(v))
    v = -1;
  close(res[0]);
  int ok = 1;
  for (int side = 0; side < 2; side++) {
    int st;
    waitpid(pid[side], &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  if (!ok || v < 0)
    die("%s on %s failed (see above)", j->c->name, j->l->label);
  return v;
}

/* ---- driver */

static void label_size(char *buf, size_t len, size_t size)
{
  if (size >= (1u << 20))
    snprintf(buf, len, "%zu MiB", size >> 20);
  else if (size >= 1024)
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
  double v[NCONT][MAX_REPS], med[NCONT];
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < ncont; k++) {
      int who = (r + k) % ncont;
      struct job j = *proto;
      j.c = &c[who];
      v[who][r] = run_job(&j);
    }
  int rtt = proto->kind == RTT;
  printf("%-7s %-8s", proto->l->label, what);
  for (int k = 0; k < ncont; k++) {
    double tmp[MAX_REPS];
    memcpy(tmp, v[k], sizeof(tmp));
    med[k] = median(tmp, reps);
    printf("  %s %7.3f", c[k].name, med[k]);
  }
  printf(rtt ? " us" : " GB/s");
  if (ncont > 1)
    print_ratio("nccl", v, 1, reps);
  if (ncont > 2)
    print_ratio("tuned", v, 2, reps);
  printf("%s\n", rtt ? "  (lower is better)" : "");
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

int main(int argc, char **argv)
{
  static const size_t all_sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  static const size_t quick_sizes[] = {1 << 20, 16 << 20};
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
  const char *tuned = getenv("BENCH_NET_TUNED");
  if (tuned && (sscanf(tuned, "%d,%d", &tuned_threads, &tuned_socks) != 2 ||
                tuned_threads < 1 || tuned_socks < 1))
    die("bad BENCH_NET_TUNED='%s': expected THREADS,SOCKS", tuned);
  unsetenv("PCIE_NET_NSTREAMS"); /* the plugin picks its own stream count */
  signal(SIGPIPE, SIG_IGN);

  struct contender c[NCONT] = {{"pcie", so, 0}, {"nccl", anchor, 0}, {"tuned", anchor, 1}};
  int ncont = NCONT;
  if (!anchor || access(anchor, R_OK) != 0) {
    printf("bench/net: NCCL's socket transport skipped (%s); plugin figures only. Build it with "
           "nccl-socket/build.sh of the shared tools and pass --anchor.\n",
           anchor ? "the --anchor library is not readable" : "no --anchor given");
    ncont = 1;
  }

  struct nn ns;
  char why[256];
  struct nn_link nl[2] = {{.flow_cap_mbit = 0}, {.flow_cap_mbit = cap}};
  int have_ns = nn_create(&ns, nl, 2, why, sizeof(why)) == 0;
  struct link links[3] = {{"lo", 0, {"lo", "lo"}, 0}};
  int nlinks = 1;
  if (have_ns) {
    links[nlinks++] = (struct link){"veth", 1, {ns.links[0].name[0], ns.links[0].name[1]}, 0};
    links[nlinks++] = (struct link){"capped", 1, {ns.links[1].name[0], ns.links[1].name[1]}, cap};
  } else {
    printf("bench/net: veth links skipped: %s\n", why);
  }

  printf("bench/net: NCCL_BUFFSIZE %zu (steps of %zu, %d in flight), %d interleaved runs, "
         "medians; tuned = NCCL_SOCKET_NTHREADS=%d NCCL_NSOCKS_PERTHREAD=%d; capped = %d Mbit/s "
         "per TCP flow\n",
         buffsize, stepsize, NSTEPS, reps, tuned_threads, tuned_socks, cap);
  const size_t *sizes = quick ? quick_sizes : all_sizes;
  size_t nsizes = quick ? 2 : sizeof(all_sizes) / sizeof(all_sizes[0]);
  for (int li = 0; li < nlinks; li++) {
    const struct link *l = &links[li];
    /* bytes per measurement: ~0.3 s at NCCL's single-flow rate */
    double bytes = l->cap_mbit ? l->cap_mbit * 1e6 / 8 * 0.3 : 256e6;
    if (quick)
      bytes /= 4;
    for (size_t k = 0; k < nsizes; k++) {
      char label[32];
      int count = (int)(bytes / (double)sizes[k]);
      struct job j = {.l = l, .ns = &ns, .kind = THROUGHPUT, .size = sizes[k],
                      .count = count < 2 ? 2 : count};
      label_size(label, sizeof(label), sizes[k]);
      measure(&j, c, ncont, reps, label);
    }
    struct job j = {.l = l, .ns = &ns, .kind = RTT};
    measure(&j, c, ncont, reps, "8 B RTT");
  }
  if (have_ns)
    nn_destroy(&ns);
  return 0;
}
