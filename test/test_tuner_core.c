/* The tuner core linked directly (not through dlopen): profile sharing and
 * reference counting in the registry, reload of edited files, and the
 * NCCL_ALGO/NCCL_PROTO reading the v2 shim relies on. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "pcie/core.h"
#include "support/pt_test.h"

static const char *profile(const char *name) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "version = 1;\nname = \"%s\";\n"
           "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"x\"; date = \"d\"; mode = \"graph\"; };\n"
           "allreduce = { graph = { sizes = [ 1024L ]; candidates = ( { algo = \"ring\"; proto = \"ll\";"
           " channels = 3; latency = ( 5.0 ); } ); }; };\n",
           name);
  return buf;
}

START_TEST(one_table_per_profile_freed_at_last_finalize) {
  char *dir = pt_test_tmpdir();
  char *path = pt_test_write(dir, "p.cfg", profile("first"));
  struct pt_ctx *ctx[10];
  setenv("PCIE_TUNER_PROFILE", path, 1);
  ck_assert_uint_eq(pt_registry_count(), 0);
  for (int i = 0; i < 10; i++) {
    pt_core_init(&ctx[i], (uint64_t)i, 8, 1, NULL);
    ck_assert_ptr_nonnull(ctx[i]->loaded);
  }
  ck_assert_uint_eq(pt_registry_count(), 1);
  for (int i = 1; i < 10; i++) ck_assert_ptr_eq(ctx[i]->loaded, ctx[0]->loaded);
  /* An edited file is a new profile for the next communicator; the old
   * table lives on for the communicators that still use it. */
  struct timespec ts = {0, 0};
  clock_gettime(CLOCK_REALTIME, &ts);
  free(pt_test_write(dir, "p.cfg", profile("second")));
  struct timespec times[2] = {ts, {ts.tv_sec + 5, 0}};
  ck_assert_int_eq(utimensat(0, path, times, 0), 0);
  struct pt_ctx *fresh;
  pt_core_init(&fresh, 99, 8, 1, NULL);
  ck_assert_str_eq(fresh->loaded->prof.name, "second");
  ck_assert_str_eq(ctx[0]->loaded->prof.name, "first");
  ck_assert_uint_eq(pt_registry_count(), 2);
  for (int i = 0; i < 9; i++) pt_core_finalize(ctx[i]);
  ck_assert_uint_eq(pt_registry_count(), 2);
  pt_core_finalize(ctx[9]);
  ck_assert_uint_eq(pt_registry_count(), 1);
  pt_core_finalize(fresh);
  ck_assert_uint_eq(pt_registry_count(), 0);
  pt_core_finalize(NULL);
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(failed_loads_leave_nothing_cached) {
  char *dir = pt_test_tmpdir();
  char *path = pt_test_write(dir, "bad.cfg", "version = 3;\n");
  const struct pt_loaded *l = NULL;
  struct pt_error_rec e;
  ck_assert_int_eq(pt_registry_acquire(path, &l, &e), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "unsupported profile version 3"));
  ck_assert_uint_eq(pt_registry_count(), 0);
  char msg[512];
  ck_assert_int_eq(pt_select_profile(dir, 8, 1, &l, msg, sizeof msg), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "bad.cfg:1: unsupported profile version 3"));
  ck_assert_uint_eq(pt_registry_count(), 0);
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* NCCL_ALGO/NCCL_PROTO read as NCCL 2.24+ parseList reads them
 * (graph/tuning.cc): '^' lists, per-collective "func:list" entries that
 * reset that function's row, names in any case; a value NCCL refuses is -1. */
static int proto(const char *v, int coll, int p) {
  struct pt_nccl_enable e;
  return pt_nccl_enabled(NULL, v, &e) ? -1 : e.proto[coll][p];
}
static int algo(const char *v, int coll, int a) {
  struct pt_nccl_enable e;
  return pt_nccl_enabled(v, NULL, &e) ? -1 : e.algo[coll][a];
}

START_TEST(nccl_algo_proto_as_nccl_reads_them) {
  ck_assert_int_eq(proto(NULL, PT_ALLREDUCE, 1), 2); /* LL128 auto: off on PCIe */
  ck_assert_int_eq(proto(NULL, PT_ALLREDUCE, 0), 1);
  ck_assert_int_eq(proto("LL,Simple", PT_ALLREDUCE, 1), 0);
  ck_assert_int_eq(proto("LL128", PT_BROADCAST, 1), 1);
  ck_assert_int_eq(proto("LL128", PT_BROADCAST, 0), 0);
  ck_assert_int_eq(proto("ll,ll128", PT_REDUCE, 1), 1);
  ck_assert_int_eq(proto("^LL", PT_ALLREDUCE, 1), 1); /* NCCL's gotcha: forces LL128 on */
  ck_assert_int_eq(proto("^LL", PT_ALLREDUCE, 0), 0);
  ck_assert_int_eq(proto("^LL128", PT_ALLREDUCE, 1), 0);
  ck_assert_int_eq(proto("^LL,LL128", PT_ALLREDUCE, 2), 1);
  /* Per collective: only allreduce's row changes. */
  ck_assert_int_eq(proto("allreduce:LL128;broadcast:Simple", PT_ALLREDUCE, 1), 1);
  ck_assert_int_eq(proto("allreduce:LL128;broadcast:Simple", PT_ALLREDUCE, 2), 0);
  ck_assert_int_eq(proto("allreduce:LL128;broadcast:Simple", PT_BROADCAST, 0), 0);
  ck_assert_int_eq(proto("allreduce:LL128;broadcast:Simple", PT_ALLGATHER, 0), 1);
  ck_assert_int_eq(proto("LL,Simple;allreduce:^LL", PT_ALLREDUCE, 0), 0);
  ck_assert_int_eq(proto("LL,Simple;allreduce:^LL", PT_ALLREDUCE, 1), 1);
  ck_assert_int_eq(proto("LL,Simple;allreduce:^LL", PT_REDUCE, 1), 0);
  ck_assert_int_eq(algo("ring", PT_ALLREDUCE, 0), 0);
  ck_assert_int_eq(algo("^tree", PT_ALLREDUCE, 1), 1);
  ck_assert_int_eq(algo("ring,tree;allreduce:tree", PT_ALLREDUCE, 1), 0);
  ck_assert_int_eq(algo("ring,tree;allreduce:tree", PT_ALLGATHER, 1), 1);
  ck_assert_int_eq(algo("Ring;AllReduce:Tree", PT_ALLREDUCE, 0), 1);
  /* What NCCL refuses, nobody can tell: -1. */
  ck_assert_int_eq(proto("LL256", PT_ALLREDUCE, 0), -1);
  ck_assert_int_eq(proto("LL, Simple", PT_ALLREDUCE, 0), -1);
  ck_assert_int_eq(proto("LL;Simple", PT_ALLREDUCE, 0), -1); /* later entry without prefix */
  ck_assert_int_eq(algo("allgatherv:ring", PT_ALLREDUCE, 0), -1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("core");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, one_table_per_profile_freed_at_last_finalize);
  tcase_add_test(tc, failed_loads_leave_nothing_cached);
  tcase_add_test(tc, nccl_algo_proto_as_nccl_reads_them);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
