/* Teardown the way NCCL 2.30 does it (src/transport/net.cc,
 * recvProxyFree/sendProxyFree): deregMr, free the buffers, then
 * closeRecv/closeSend, also with requests still in flight (an abort) and
 * right after the peer died. The plugin must not touch a region once its
 * deregMr returned, nor a request's buffer once test reported a failure:
 * each round fills the region with a canary (or unmaps it with mprotect)
 * at that moment, keeps the traffic going, and checks the canary. Rounds
 * repeat for a time budget (PT_TEST_TEARDOWN_MS per version, default 500)
 * so that a rare race shows; raise it for a stress run. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support/net_harness.h"
#include "support/pt_test.h"

#define MSG (256 << 10) /* 4 chunks over 3 streams */
#define NREQ 8
#define REGION ((size_t)MSG * NREQ)
#define CANARY 0x5a

static struct nh_net net;
static void *ctx;

static void open_version(int i)
{
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  setenv("PCIE_NET_NSTREAMS", "3", 1);
  setenv("PCIE_NET_NTHREADS", "2", 0); /* helpers whatever the box (2 cores: none by default) */
  ck_assert_msg(nh_open(&net, nh_versions[i]) == 0, "dlopen/dlsym of v%d", nh_versions[i]);
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
}

static double budget_ms(void)
{
  const char *e = getenv("PT_TEST_TEARDOWN_MS");
  return e ? atof(e) : 500.0;
}

/* ---- the sending side, a thread of this process */

struct sender {
  void *sc;
  atomic_int stop; /* orderly: deregMr, then closeSend */
  atomic_int die;  /* abrupt: torn down with requests in flight, the peer unaware */
  atomic_int gone; /* its sockets are closed */
};

static void *sender_main(void *arg)
{
  struct sender *s = arg;
  char *buf = malloc(MSG);
  void *mh = NULL, *req[NREQ] = {0};
  int done;
  memset(buf, 0x11, MSG);
  if (nh_reg(&net, s->sc, buf, MSG, NCCL_PTR_HOST, &mh) != ncclSuccess)
    goto out;
  while (!atomic_load(&s->stop) && !atomic_load(&s->die)) {
    int failed = 0;
    for (int k = 0; k < NREQ && !failed; k++) {
      if (!req[k])
        failed = nh_isend(&net, s->sc, buf, MSG, 1, mh, &req[k]) != ncclSuccess;
      else if (nh_test(&net, req[k], &done, NULL) != ncclSuccess)
        failed = 1;
      else if (done)
        req[k] = NULL;
    }
    if (failed) /* the receiver tore down first; wait for the word */
      while (!atomic_load(&s->stop) && !atomic_load(&s->die))
        usleep(100);
  }
  /* NCCL's order; with requests in flight the receiver sees what a dead
   * peer looks like on the wire (streams cut mid-chunk). */
  nh_dereg(&net, s->sc, mh);
  nh_close_send(&net, s->sc);
out:
  atomic_store(&s->gone, 1);
  free(buf);
  return NULL;
}

/* ---- the receiving side */

enum mode {
  DEREG_CANARY,    /* abort mid-traffic: deregMr, canary, traffic goes on */
  DEREG_PROTECT,   /* same, the region made inaccessible instead */
  DEATH_CANARY,    /* peer dies; test reports it; canary at once */
  DEATH_DEREG,     /* peer dies; deregMr before test noticed; region inaccessible */
  NMODES
};
static const char *const mode_name[NMODES] = {"deregMr mid-traffic + canary",
                                               "deregMr mid-traffic + PROT_NONE",
                                               "peer death, test fails, canary",
                                               "peer death, deregMr, PROT_NONE"};

static long first_not_canary(const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != CANARY)
      return (long)i;
  return -1;
}

/* Keeps NREQ receives posted and tested until ms elapsed; returns the
 * first failure of test (or irecv), ncclSuccess if none. */
static ncclResult_t traffic(void *rc, char *region, void *mh, void **req, double ms)
{
  size_t cap = MSG;
  int tag = 1, done;
  double end = nh_now_ms() + ms;
  ncclResult_t r = ncclSuccess;
  do {
    for (int k = 0; k < NREQ && r == ncclSuccess; k++) {
      void *data = region + (size_t)k * MSG;
      if (!req[k])
        r = nh_irecv(&net, rc, 1, &data, &cap, &tag, &mh, &req[k]);
      else if ((r = nh_test(&net, req[k], &done, NULL)) == ncclSuccess && done)
        req[k] = NULL;
    }
  } while (r == ncclSuccess && nh_now_ms() < end);
  return r;
}

static void one_round(enum mode mode, unsigned *seed)
{
  void *sc, *rc, *mh, *req[NREQ] = {0};
  pthread_t t;
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &sc, &rc, NULL), 0);
  char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(region, MAP_FAILED);
  ck_assert_int_eq(nh_reg(&net, rc, region, REGION, NCCL_PTR_HOST, &mh), ncclSuccess);
  struct sender s = {.sc = sc};
  ck_assert_int_eq(pthread_create(&t, NULL, sender_main, &s), 0);

  /* Tear down at a random point: before anything arrived up to mid-stream. */
  double ms = (double)(rand_r(seed) % 1000) / 1000.0;
  ncclResult_t r = traffic(rc, region, mh, req, ms);
  ck_assert_msg(r == ncclSuccess, "%s: traffic failed before teardown: %d (%s)",
                mode_name[mode], r, nh_last_warn());
  int dereged = 0;
  if (mode == DEATH_CANARY || mode == DEATH_DEREG) {
    atomic_store(&s.die, 1);
    while (!atomic_load(&s.gone))
      sched_yield();
    if (mode == DEATH_CANARY) {
      /* Poll until the death is reported: the moment NCCL frees. */
      r = traffic(rc, region, mh, req, 10000);
      ck_assert_msg(r != ncclSuccess, "%s: no error 10 s after the peer died", mode_name[mode]);
    }
  }
  if (mode != DEATH_CANARY) {
    ck_assert_int_eq(nh_dereg(&net, rc, mh), ncclSuccess);
    dereged = 1;
  }
  int canary = mode == DEREG_CANARY || mode == DEATH_CANARY;
  if (canary)
    memset(region, CANARY, REGION);
  else
    ck_assert_int_eq(mprotect(region, REGION, PROT_NONE), 0);
  /* The sender keeps sending (or its last bytes sit in our sockets) while
   * the plugin's helpers run: old code copied them into the region here. */
  usleep(500);
  if (canary) {
    long at = first_not_canary((unsigned char *)region, REGION);
    ck_assert_msg(at < 0, "%s: byte %ld of the region written after %s", mode_name[mode], at,
                  dereged ? "deregMr returned" : "test reported the failure");
  }
  if (!dereged)
    ck_assert_int_eq(nh_dereg(&net, rc, mh), ncclSuccess);
  ck_assert_int_eq(munmap(region, REGION), 0);
  ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
  atomic_store(&s.stop, 1);
  pthread_join(t, NULL);
}

START_TEST(teardown_in_nccl_order_never_touches_freed_memory)
{
  unsigned seed = 0x5eed + (unsigned)_i;
  int rounds = 0;
  void *keep_sc, *keep_rc;
  open_version(_i);
  /* An idle pair keeps the helper threads alive across rounds, as a job's
   * other connections do: rounds then cost milliseconds, not thread
   * start-ups, and the budget buys hundreds of teardowns. */
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &keep_sc, &keep_rc, NULL), 0);
  double end = nh_now_ms() + budget_ms();
  while (rounds < 2 * NMODES || nh_now_ms() < end) {
    one_round((enum mode)(rounds % NMODES), &seed);
    rounds++;
  }
  nh_close_send(&net, keep_sc);
  nh_close_recv(&net, keep_rc);
  nh_finalize(&net, ctx);
}
END_TEST

/* ---- a real death: the sender is a process killed by SIGKILL */

static void child_sender(int version_index, int rfd)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *sc = NULL, *req[NREQ] = {0};
  char *buf = malloc(MSG);
  int done;
  if (read(rfd, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
    _exit(2);
  open_version(version_index);
  while (!sc)
    if (nh_connect(&net, ctx, 0, handle, &sc) != ncclSuccess)
      _exit(3);
  for (;;)
    for (int k = 0; k < NREQ; k++) {
      done = 0;
      if (!req[k] && nh_isend(&net, sc, buf, MSG, 1, NULL, &req[k]) != ncclSuccess)
        _exit(4);
      if (req[k] && nh_test(&net, req[k], &done, NULL) != ncclSuccess)
        _exit(5);
      if (done)
        req[k] = NULL;
    }
}

START_TEST(killed_peer_then_nccl_teardown)
{
  unsigned seed = 0xdead + (unsigned)_i;
  open_version(_i);
  for (int round = 0; round < 3; round++) {
    int p[2];
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *lc, *rc = NULL, *mh, *req[NREQ] = {0};
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
    pid_t pid = fork();
    if (pid == 0)
      child_sender(_i, p[0]);
    ck_assert_int_eq(write(p[1], handle, sizeof(handle)), (ssize_t)sizeof(handle));
    double end = nh_now_ms() + 10000;
    while (!rc && nh_now_ms() < end)
      ck_assert_int_eq(nh_accept(&net, lc, &rc), ncclSuccess);
    ck_assert_ptr_nonnull(rc);
    char *region = malloc(REGION);
    ck_assert_int_eq(nh_reg(&net, rc, region, REGION, NCCL_PTR_HOST, &mh), ncclSuccess);
    ck_assert_int_eq(traffic(rc, region, mh, req, 20 + rand_r(&seed) % 30), ncclSuccess);
    kill(pid, SIGKILL);
    ncclResult_t r = traffic(rc, region, mh, req, 10000);
    ck_assert_msg(r != ncclSuccess, "no error 10 s after the peer was killed");
    memset(region, CANARY, REGION);
    usleep(2000);
    long at = first_not_canary((unsigned char *)region, REGION);
    ck_assert_msg(at < 0, "byte %ld written after test reported the peer's death", at);
    ck_assert_int_eq(nh_dereg(&net, rc, mh), ncclSuccess);
    free(region);
    ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
    ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
    waitpid(pid, NULL, 0);
    close(p[0]);
    close(p[1]);
  }
  nh_finalize(&net, ctx);
}
END_TEST

/* deregMr of a region no request uses is not a teardown: the comm goes on. */
START_TEST(dereg_of_idle_region_keeps_comm)
{
  void *sc, *rc, *smh, *rmh;
  char *sb = malloc(MSG), *rb = malloc(MSG);
  int got = 0;
  open_version(_i);
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &sc, &rc, NULL), 0);
  for (int round = 0; round < 3; round++) {
    void *sreq = NULL, *rreq = NULL;
    size_t cap = MSG;
    int tag = 3;
    nh_fill(sb, MSG, (uint64_t)round);
    ck_assert_int_eq(nh_reg(&net, sc, sb, MSG, NCCL_PTR_HOST, &smh), ncclSuccess);
    ck_assert_int_eq(nh_reg(&net, rc, rb, MSG, NCCL_PTR_HOST, &rmh), ncclSuccess);
    while (!rreq)
      ck_assert_int_eq(nh_irecv(&net, rc, 1, (void **)&rb, &cap, &tag, &rmh, &rreq), ncclSuccess);
    while (!sreq)
      ck_assert_int_eq(nh_isend(&net, sc, sb, MSG, tag, smh, &sreq), ncclSuccess);
    int sizes[PT_NH_MAXN];
    ck_assert_int_eq(nh_wait(&net, rreq, sizes, 10000, NULL), ncclSuccess);
    ck_assert_int_eq(nh_wait(&net, sreq, NULL, 10000, NULL), ncclSuccess);
    ck_assert_int_eq(sizes[0], MSG);
    ck_assert_int_eq(nh_check(rb, MSG, (uint64_t)round), -1);
    ck_assert_int_eq(nh_dereg(&net, sc, smh), ncclSuccess);
    ck_assert_int_eq(nh_dereg(&net, rc, rmh), ncclSuccess);
    got++;
  }
  ck_assert_int_eq(got, 3);
  /* A handle is bound to the comm it was made on (regIsGlobal = 0). */
  ck_assert_int_eq(nh_reg(&net, rc, rb, MSG, NCCL_PTR_HOST, &rmh), ncclSuccess);
  ck_assert_int_ne(nh_dereg(&net, sc, rmh), ncclSuccess);
  void *sreq = NULL;
  ck_assert_int_ne(nh_isend(&net, sc, rb, MSG, 1, rmh, &sreq), ncclSuccess);
  ck_assert_int_eq(nh_dereg(&net, rc, rmh), ncclSuccess);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
  free(sb);
  free(rb);
}
END_TEST

/* Helper threads leave fault signals unblocked, so a bad access crashes
 * at once with their stack (a blocked SIGSEGV hides the culprit). */
/* Checks the helpers' signal masks; returns how many were found (a helper
 * names itself once it runs, so early on there may be none yet). */
static int check_helper_masks(void)
{
  DIR *d = opendir("/proc/self/task");
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int helpers = 0;
  while ((e = readdir(d))) {
    char path[300], line[256];
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    int ours = fgets(line, sizeof(line), f) && strncmp(line, "pcie-net", 8) == 0;
    fclose(f);
    if (!ours)
      continue;
    helpers++;
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    unsigned long long blk = ~0ULL;
    while (fgets(line, sizeof(line), f))
      if (sscanf(line, "SigBlk: %llx", &blk) == 1)
        break;
    fclose(f);
    ck_assert_msg(!(blk & (1ULL << (SIGSEGV - 1))) && !(blk & (1ULL << (SIGBUS - 1))),
                  "helper %s blocks SIGSEGV/SIGBUS (SigBlk %llx)", e->d_name, blk);
    ck_assert_msg(blk & (1ULL << (SIGINT - 1)), "helper %s takes SIGINT (SigBlk %llx)",
                  e->d_name, blk);
  }
  closedir(d);
  return helpers;
}

/* Helper threads leave fault signals unblocked, so a bad access crashes
 * at once with their stack (a blocked SIGSEGV hides the culprit). */
START_TEST(helpers_do_not_block_fault_signals)
{
  void *sc, *rc;
  open_version(4);
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &sc, &rc, NULL), 0);
  int helpers = 0;
  for (double end = nh_now_ms() + 5000; !helpers && nh_now_ms() < end; usleep(1000))
    helpers = check_helper_masks();
  ck_assert_msg(helpers > 0, "no thread named pcie-net while comms are open");
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

static Suite *teardown_suite(void)
{
  Suite *s = suite_create("net_teardown");
  TCase *tc = tcase_create("teardown");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, teardown_in_nccl_order_never_touches_freed_memory, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, killed_peer_then_nccl_teardown, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, dereg_of_idle_region_keeps_comm, 0, NH_NVERSIONS);
  tcase_add_test(tc, helpers_do_not_block_fault_signals);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  return pt_test_main(teardown_suite());
}
