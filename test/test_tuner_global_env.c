/* A global NCCL_PROTO or NCCL_ALGO through the plugin as NCCL loads it
 * (dlopen of the built .so): one WARN per process naming the variable and
 * the size ranges where the profile's choice is switched off (issue 27 §4),
 * none when the variable leaves the profile's choices on, and the profile
 * still decides. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "support/pt_test.h"

/* ring/LL wins below ~100 KB, ring/Simple above; both beat NCCL's measured
 * default, without which the plugin leaves every size to NCCL. */
static const char *profile =
    "version = 1;\nname = \"p\";\nmatch = { nranks = 8; };\n"
    "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = "
    "\"2026-11-30\"; mode = \"both\"; };\n"
    "communicator = { channels = 8; };\n"
    "allreduce = {\n"
    " graph = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 20.0, 200.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 1000.0 ); },\n"
    "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 30.0, 100.0 ); } ); };\n"
    " eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 20.0, 200.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 1000.0 ); },\n"
    "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 30.0, 100.0 ); } ); };\n"
    "};\n";

static const char needle[] = "is set for the whole job";

/* Opens the plugin, inits two communicators, returns the WARNs naming the
 * global setting. */
static size_t warns_with(const char *dir, const char *proto, const char *algo) {
  char err[512];
  struct ph_plugin pl;
  struct ph_comm c1, c2;
  pt_test_reset_tuner();
  pt_test_use_profile(dir, "p.cfg", profile);
  if (proto) setenv("NCCL_PROTO", proto, 1);
  if (algo) setenv("NCCL_ALGO", algo, 1);
  ph_log_clear();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&c1, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_int_eq(ph_comm_init(&c2, &pl, 8, 1, 2), ncclSuccess);
  size_t n = ph_log_find(NCCL_LOG_WARN, needle);
  /* The profile is in use all the same. */
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "profile "), 2);
  ph_comm_finalize(&c2);
  ph_comm_finalize(&c1);
  ph_plugin_close(&pl);
  unsetenv("NCCL_PROTO");
  unsetenv("NCCL_ALGO");
  return n;
}

static void the_warn_says(const char *what) {
  for (size_t i = 0; i < ph_log_count(); i++) {
    struct ph_log_entry e;
    ck_assert_int_eq(ph_log_get(i, &e), 0);
    if (!strstr(e.msg, needle)) continue;
    if (!strstr(e.msg, what)) ck_abort_msg("'%s' not in: %s", what, e.msg);
    return;
  }
  ck_abort_msg("no WARN");
}

START_TEST(global_proto_warns_once_with_the_ranges) {
  char *dir = pt_test_tmpdir();
  ck_assert_uint_eq(warns_with(dir, NULL, NULL), 0);
  ck_assert_uint_eq(warns_with(dir, "LL,Simple", NULL), 0);         /* both choices on */
  ck_assert_uint_eq(warns_with(dir, "AllGather:Simple", NULL), 0); /* not all-reduce */
  ck_assert_uint_eq(warns_with(dir, "Simple", NULL), 1);           /* once for two comms */
  the_warn_says("NCCL_PROTO=Simple is set for the whole job: NCCL will not run the profile's "
                "choice for AllReduce 1 KiB-");
  the_warn_says("(ring/ll)");
  the_warn_says("the profile still decides elsewhere");
  ck_assert_uint_eq(warns_with(dir, NULL, "Tree"), 1);
  the_warn_says("NCCL_ALGO=Tree is set for the whole job");
  the_warn_says("(ring/simple)");
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  Suite *s = suite_create("tuner_global_env");
  TCase *tc = tcase_create("global_env");
  tcase_add_test(tc, global_proto_warns_once_with_the_ranges);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
