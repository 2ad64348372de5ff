/* Threads: 16 threads calling getCollInfo on 8 communicators at once must
 * get exactly the single-threaded answers, and communicators created and
 * destroyed concurrently share the compiled table safely (run under TSan by
 * `make tsan`). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "support/pt_test.h"

#define NCOMM 8
#define NTHREAD 16
#define NCALL 20000

static struct ph_plugin pl;
static struct ph_comm comms[NCOMM];

struct expect {
  size_t n;
  int coll, reg;
  int algo, proto, nch;
};
static struct expect expected[512];

static void decide(struct ph_comm *c, const struct expect *e, struct ph_choice *ch) {
  float t[7][3];
  pt_test_nccl_table(t, e->coll, e->n, 8, 0);
  ph_decide(c, e->coll, e->n, e->reg, t, ch);
}

static void *hammer(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  for (int k = 0; k < NCALL; k++) {
    const struct expect *e = &expected[rand_r(&seed) % 512];
    struct ph_choice ch;
    decide(&comms[rand_r(&seed) % NCOMM], e, &ch);
    if (ch.rc || ch.algo != e->algo || ch.proto != e->proto || ch.nchannels != e->nch)
      return (void *)1;
  }
  return NULL;
}

START_TEST(sixteen_threads_eight_comms) {
  char err[256];
  pt_test_use_example_profile();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  for (int i = 0; i < NCOMM; i++) ck_assert_int_eq(ph_comm_init(&comms[i], &pl, 8, 1, (uint64_t)i), 0);
  unsigned seed = 99;
  for (int i = 0; i < 512; i++) {
    struct expect *e = &expected[i];
    e->n = ((size_t)rand_r(&seed) << 8) >> (rand_r(&seed) % 38);
    e->coll = rand_r(&seed) % 5;
    e->reg = rand_r(&seed) % 2;
    struct ph_choice ch;
    decide(&comms[0], e, &ch);
    e->algo = ch.algo;
    e->proto = ch.proto;
    e->nch = ch.nchannels;
  }
  pthread_t th[NTHREAD];
  for (int i = 0; i < NTHREAD; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)(i + 1)), 0);
  int bad = 0;
  for (int i = 0; i < NTHREAD; i++) {
    void *r;
    pthread_join(th[i], &r);
    bad += r != NULL;
  }
  ck_assert_msg(bad == 0, "%d threads saw a decision differ from the single-threaded one", bad);
  for (int i = 0; i < NCOMM; i++) ck_assert_int_eq(ph_comm_finalize(&comms[i]), 0);
  ph_plugin_close(&pl);
}
END_TEST

static void *churn(void *arg) {
  (void)arg;
  for (int k = 0; k < 200; k++) {
    struct ph_comm c;
    struct ph_choice ch;
    struct expect e = {.n = 65536, .coll = ncclFuncAllReduce, .reg = 1};
    if (ph_comm_init(&c, &pl, 8, 1, (uint64_t)k)) return (void *)1;
    decide(&c, &e, &ch);
    if (ch.nchannels == 0 || ph_comm_finalize(&c)) return (void *)1;
  }
  return NULL;
}

START_TEST(concurrent_init_and_finalize) {
  char err[256];
  pt_test_use_example_profile();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  pthread_t th[8];
  for (int i = 0; i < 8; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, churn, NULL), 0);
  int bad = 0;
  for (int i = 0; i < 8; i++) {
    void *r;
    pthread_join(th[i], &r);
    bad += r != NULL;
  }
  ck_assert_int_eq(bad, 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "example-8x-pcie"), 8 * 200);
  ph_plugin_close(&pl);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("concurrency");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, sixteen_threads_eight_comms);
  tcase_add_test(tc, concurrent_init_and_finalize);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
