/* End-to-end data integrity: a ring all-reduce among 4 to 8 processes over
 * the plugin, host memory, as NCCL's ring would run it (reduce-scatter then
 * all-gather, each rank connecting to the next and accepting from the
 * previous on one thread). Every element of the result is checked. */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support/net_harness.h"

#define MAX_RANKS 8
#define COUNT ((1 << 20) + 3) /* int64 elements per rank: 8 MiB, uneven chunks */
#define SLICES 4              /* messages per ring step, so several are in flight */

struct shared {
  atomic_int ready[MAX_RANKS];
  char handle[MAX_RANKS][NCCL_NET_HANDLE_MAXSIZE];
};

static struct nh_net net;

static int64_t value(int rank, size_t i)
{
  return (int64_t)(i * 2654435761u % 1000003) * (rank + 1) - rank * 7;
}

static size_t chunk_off(int c, int n)
{
  return (size_t)COUNT * (size_t)c / (size_t)n;
}

/* Sends `scount` elements and receives `rcount` into rbuf, in SLICES
 * messages each, all posted at once; returns 0 when both sides finished. */
static int exchange(void *sc, void *rc, int64_t *sbuf, size_t scount, int64_t *rbuf,
                    size_t rcount, void *smh, void *rmh, int tag_s, int tag_r)
{
  void *sreq[SLICES], *rreq[SLICES];
  int sdone[SLICES] = {0}, rdone[SLICES] = {0}, left = 2 * SLICES;
  for (int k = 0; k < SLICES; k++) {
    size_t so = scount * k / SLICES, se = scount * (k + 1) / SLICES;
    size_t ro = rcount * k / SLICES, re = rcount * (k + 1) / SLICES;
    void *d = rbuf + ro;
    size_t cap = (re - ro) * sizeof(int64_t);
    sreq[k] = rreq[k] = NULL;
    while (!rreq[k])
      if (nh_irecv(&net, rc, 1, &d, &cap, &tag_r, &rmh, &rreq[k]) != ncclSuccess)
        return -1;
    while (!sreq[k])
      if (nh_isend(&net, sc, sbuf + so, (se - so) * sizeof(int64_t), tag_s, smh, &sreq[k]) !=
          ncclSuccess)
        return -1;
  }
  double end = nh_now_ms() + 30000;
  while (left && nh_now_ms() < end) {
    for (int k = 0; k < SLICES; k++) {
      int sizes[PT_NH_MAXN];
      if (!sdone[k] && nh_test(&net, sreq[k], &sdone[k], NULL) != ncclSuccess)
        return -1;
      if (!rdone[k] && nh_test(&net, rreq[k], &rdone[k], sizes) != ncclSuccess)
        return -1;
      left = 0;
      for (int j = 0; j < SLICES; j++)
        left += !sdone[j] + !rdone[j];
    }
  }
  return left ? -1 : 0;
}

static int rank_main(struct shared *sh, int rank, int n, int version)
{
  void *ctx, *lc, *sc = NULL, *rc = NULL, *smh, *rmh;
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  int64_t *data = malloc(COUNT * sizeof(int64_t)), *tmp = malloc(COUNT * sizeof(int64_t));
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  setenv("PCIE_NET_NSTREAMS", "2", 1);
  setenv("PCIE_NET_NTHREADS", "1", 1); /* 8 processes on a small box */
  if (!data || !tmp || nh_open(&net, version) || nh_init(&net, &ctx) ||
      nh_listen(&net, ctx, 0, sh->handle[rank], &lc))
    return 10;
  atomic_store(&sh->ready[rank], 1);
  double end = nh_now_ms() + 20000;
  while ((!sc || !rc) && nh_now_ms() < end) {
    if (!sc && atomic_load(&sh->ready[next]) &&
        nh_connect(&net, ctx, 0, sh->handle[next], &sc) != ncclSuccess)
      return 11;
    if (!rc && nh_accept(&net, lc, &rc) != ncclSuccess)
      return 12;
  }
  if (!sc || !rc || nh_close_listen(&net, lc))
    return 13;
  for (size_t i = 0; i < COUNT; i++)
    data[i] = value(rank, i);
  if (nh_reg(&net, sc, data, COUNT * sizeof(int64_t), NCCL_PTR_HOST, &smh) ||
      nh_reg(&net, rc, tmp, COUNT * sizeof(int64_t), NCCL_PTR_HOST, &rmh))
    return 14;
  /* reduce-scatter: after step s, chunk (rank - s - 1) holds s + 2 terms */
  for (int s = 0; s < n - 1; s++) {
    int cs = ((rank - s) % n + n) % n, cr = ((rank - s - 1) % n + n) % n;
    size_t so = chunk_off(cs, n), ro = chunk_off(cr, n);
    if (exchange(sc, rc, data + so, chunk_off(cs + 1, n) - so, tmp + ro,
                 chunk_off(cr + 1, n) - ro, smh, rmh, rank, prev))
      return 20 + s;
    for (size_t i = ro; i < chunk_off(cr + 1, n); i++)
      data[i] += tmp[i];
  }
  /* all-gather: the fully reduced chunk travels around the ring */
  void *dmh;
  if (nh_reg(&net, rc, data, COUNT * sizeof(int64_t), NCCL_PTR_HOST, &dmh))
    return 15;
  for (int s = 0; s < n - 1; s++) {
    int cs = ((rank + 1 - s) % n + n) % n, cr = ((rank - s) % n + n) % n;
    size_t so = chunk_off(cs, n), ro = chunk_off(cr, n);
    if (exchange(sc, rc, data + so, chunk_off(cs + 1, n) - so, data + ro,
                 chunk_off(cr + 1, n) - ro, smh, dmh, rank, prev))
      return 40 + s;
  }
  for (size_t i = 0; i < COUNT; i++) {
    int64_t want = 0;
    for (int r = 0; r < n; r++)
      want += value(r, i);
    if (data[i] != want)
      return 60;
  }
  nh_dereg(&net, sc, smh);
  nh_dereg(&net, rc, rmh);
  nh_dereg(&net, rc, dmh);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
  free(data);
  free(tmp);
  return 0;
}

static const int configs[][2] = {{4, 12}, {8, 11}, {5, 8}}; /* ranks, ABI version */

START_TEST(ring_allreduce)
{
  int n = configs[_i][0], version = configs[_i][1];
  pid_t pids[MAX_RANKS];
  struct shared *sh =
      mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert(sh != MAP_FAILED);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    ck_assert_int_ge(pids[r], 0);
    if (pids[r] == 0)
      _exit(rank_main(sh, r, n, version));
  }
  int failures = 0, first = 0, left = n;
  double end = nh_now_ms() + 90000;
  while (left && nh_now_ms() < end) {
    int status;
    pid_t p = waitpid(-1, &status, WNOHANG);
    if (p <= 0) {
      usleep(10000);
      continue;
    }
    left--;
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
      failures++;
      first = first ? first : WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    }
  }
  for (int r = 0; r < n && left; r++)
    kill(pids[r], SIGKILL);
  while (left && waitpid(-1, NULL, 0) > 0)
    left--;
  ck_assert_msg(!failures && !left, "%d ranks failed (first code %d), %d hung", failures, first,
                left);
  munmap(sh, sizeof(*sh));
}
END_TEST

static Suite *ring_suite(void)
{
  Suite *s = suite_create("net_ring");
  TCase *tc = tcase_create("ring");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, ring_allreduce, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(ring_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
