/* pcie-tune check, run as a user runs it: output, file:line errors and exit
 * statuses. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static int run(const char *args, char **out, char **err) {
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "'%s' %s", pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  return rc;
}

START_TEST(valid_profile_is_ok) {
  char *out, *err, *args = NULL;
  ck_assert(asprintf(&args, "check %s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "example-8x-pcie.cfg: ok (name 'example-8x-pcie', hash "));
  ck_assert_ptr_nonnull(strstr(out, "decision intervals in 3 collectives)\n"));
  /* It measured no LL128: where NCCL runs it, the call is NCCL's. */
  ck_assert_ptr_nonnull(strstr(out, "\n  not run by NCCL when measured: tree/ll128, ring/ll128 (where "
                                    "NCCL's cost table makes one of them its best, the call is left to "
                                    "NCCL)\n"));
  ck_assert_str_eq(err, "");
  free(out);
  free(err);
  free(args);
}
END_TEST

START_TEST(invalid_profile_names_file_and_line) {
  char *dir = pt_test_tmpdir(), *out, *err, *args = NULL;
  char *bad = pt_test_write(dir, "bad.cfg",
                            "version = 1;\nname = \"x\";\nprovenance = { tool = \"t\"; backend = \"b\";"
                            " nccl_version = \"v\"; date = \"d\"; mode = \"graph\"; };\n"
                            "allreduce = { graph = { sizes = [ 8L, 4L ];\n"
                            " candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); } ); }; };\n");
  ck_assert(asprintf(&args, "check %s %s/profiles/example-8x-pcie.cfg", bad, pt_test_srcdir()) > 0);
  ck_assert_int_eq(run(args, &out, &err), 1);
  char *want = NULL;
  ck_assert(asprintf(&want, "%s:4: sizes must be strictly ascending (4 after 8 at index 1)\n", bad) > 0);
  ck_assert_str_eq(err, want);
  ck_assert_ptr_nonnull(strstr(out, "example-8x-pcie.cfg: ok"));
  free(out);
  free(err);
  free(args);
  free(want);
  free(bad);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(bad_usage_exits_2) {
  char *out, *err;
  ck_assert_int_eq(run("check", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "no profile given"));
  free(out);
  free(err);
  ck_assert_int_eq(run("check --frobnicate x.cfg", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "unknown option '--frobnicate'"));
  free(out);
  free(err);
  ck_assert_int_eq(run("check --help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "usage: pcie-tune check"));
  free(out);
  free(err);
  ck_assert_int_eq(run("frobnicate", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "unknown command 'frobnicate'"));
  free(out);
  free(err);
  ck_assert_int_eq(run("--help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "check"));
  free(out);
  free(err);
}
END_TEST

START_TEST(missing_file_fails) {
  char *out, *err;
  ck_assert_int_eq(run("check -q /nonexistent/p.cfg", &out, &err), 1);
  ck_assert_str_eq(err, "/nonexistent/p.cfg: cannot open: No such file or directory\n");
  free(out);
  free(err);
}
END_TEST

#define PHEAD(extra)                                                                     \
  "version = 1;\nname = \"x\";\nprovenance = { tool = \"t\"; backend = \"b\"; nccl_version = " \
  "\"v\"; date = \"d\"; mode = \"graph\"; " extra " };\n"

/* A partial sweep is reported with how much is measured, and fails; so
 * does a profile without nccl_default (it decides nothing). */
START_TEST(partial_and_defaultless_profiles) {
  char *dir = pt_test_tmpdir(), *out, *err, *args = NULL;
  char *part = pt_test_write(
      dir, "part.cfg",
      PHEAD("extra = { sweep = { state = \"partial\"; }; };")
      "allreduce = { graph = { sizes = [ 8L, 16L ]; nccl_default = ( 2.0, \"-\" );\n"
      " candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, \"-\" ); } ); }; };\n");
  char *nodef = pt_test_write(
      dir, "nodef.cfg",
      PHEAD("") "allreduce = { graph = { sizes = [ 8L, 16L ];\n"
      " candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); } ); }; };\n");
  ck_assert(asprintf(&args, "check %s", part) > 0);
  ck_assert_int_eq(run(args, &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "part.cfg: partial sweep (sweep.state \"partial\"): 1 of 2 candidate points "
                                    "and NCCL's default at 1 of 2 sizes measured; finish it with pcie-tune "
                                    "profile --resume"));
  free(out), free(err), free(args);
  /* Issue 26 §1: it decides nothing (the plugin leaves it to NCCL), so it fails. */
  ck_assert(asprintf(&args, "check %s", nodef) > 0);
  ck_assert_int_eq(run(args, &out, &err), 1);
  ck_assert_msg(strstr(err, "nodef.cfg: NCCL's default was not measured for allreduce graph: a "
                            "candidate is chosen only where NCCL's own choice was measured too, so "
                            "the plugin leaves those sizes to NCCL. Measure NCCL's default"),
                "%s", err);
  ck_assert_ptr_null(strstr(out, "nodef.cfg: ok"));
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "check --json %s %s", part, nodef) > 0);
  ck_assert_int_eq(run(args, &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(out, "\"status\": \"partial\""));
  ck_assert_ptr_nonnull(strstr(out, "\"status\": \"no_default\""));
  ck_assert_ptr_nonnull(strstr(out, "\"nccl_default\": false"));
  free(out), free(err), free(args);
  free(part);
  free(nodef);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* show on the reproducer (a default log and a forced ring/LL/4 log):
 * ranges left to NCCL say why, boundaries are exact, no speed-up below 1x,
 * graph calls are said to use the eager data, and check, show and the
 * interval counts agree. */
/* import --from-nccl-example turns a line conditioned on regBuff into a
 * mode-specific rule; since regBuff differs between ranks it decides only
 * where the other mode decides the same, and check says so (text and JSON).
 * A rule paired with the same rule for the other mode is not warned about. */
START_TEST(mode_specific_rules_are_warned_about) {
  char *dir = pt_test_tmpdir(), *out, *err, *args = NULL;
  char *conf = pt_test_write(dir, "ex.conf",
                             "allreduce,0,65536,ring,ll,-1,-1,-1,-1,1\n"
                             "allreduce,65537,1048576,ring,simple,-1,-1,-1\n"
                             "allreduce,1048577,4194304,tree,simple,-1,-1,-1,-1,0\n"
                             "allreduce,1048577,4194304,tree,simple,-1,-1,-1,-1,1\n");
  ck_assert(asprintf(&args, "import --out %s/ex.cfg --from-nccl-example %s", dir, conf) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "check %s/ex.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "ex.cfg: ok (name 'ex', hash "));
  ck_assert_ptr_nonnull(strstr(out, "4 decision intervals in 1 collective)"));
  char *want = NULL;
  ck_assert(asprintf(&want,
                     "%s/ex.cfg:13: warning: the allreduce rule for graph mode only (ring/ll, 0..65536 B) "
                     "decides only where eager mode decides the same: regBuff, which names the mode, "
                     "differs between ranks, so both modes decide from one list; here it decides 0 of "
                     "the 1 decision intervals in its range (the rest: eager mode's choice, or NCCL's). "
                     "Drop 'mode' to apply it in both modes\n",
                     dir) > 0);
  ck_assert_str_eq(err, want); /* one warning: lines 15 and 16 pair up */
  free(out), free(err), free(args), free(want);
  ck_assert(asprintf(&args, "check --json %s/ex.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"rule_warnings\": [\""));
  ck_assert_ptr_nonnull(strstr(out, "ex.cfg:13: warning: the allreduce rule for graph mode only"));
  ck_assert_str_eq(err, "");
  free(out), free(err), free(args), free(conf);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(show_reads_like_the_decisions) {
  char *dir = pt_test_tmpdir(), *out, *err, *args = NULL;
  const char *src = pt_test_srcdir();
  ck_assert(asprintf(&args, "import --out %s/box.cfg %s/test/data/nccltests/synth/ar8-eager-default.txt "
                            "%s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt", dir, src, src) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "show %s/box.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "graph calls (regBuff=1) use the eager data"));
  ck_assert_ptr_nonnull(strstr(out, "NCCL: outside the measured sizes"));
  /* What happened at 128 KiB (issue 18 §5): ring/LL/4 is faster there,
   * but not at 256 KiB, so the segment is left to NCCL. */
  ck_assert_ptr_nonnull(strstr(out, "NCCL: ring/ll/4 is 1.28x faster at 128 KiB but nothing is at 256 KiB"));
  ck_assert_ptr_nonnull(strstr(out, "ring/ll/4"));
  ck_assert_ptr_nonnull(strstr(out, "         1 KiB")); /* exact: the first measured size */
  ck_assert_ptr_nonnull(strstr(out, "4194305 B            max"));
  /* No speed-up below 1x anywhere. */
  for (char *x = strchr(out, 'x'); x; x = strchr(x + 1, 'x')) {
    char *p = x;
    while (p > out && (p[-1] == '.' || (p[-1] >= '0' && p[-1] <= '9'))) p--;
    if (p < x && x[1] == ' ') ck_assert_msg(strtod(p, NULL) >= 1.0, "speed-up %.*s", (int)(x - p), p);
  }
  size_t in_profile = 0;
  char *counts = strstr(out, "decision intervals in this table, ");
  ck_assert_ptr_nonnull(counts);
  ck_assert_int_eq(sscanf(counts, "decision intervals in this table, %zu in the profile", &in_profile), 1);
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "check %s/box.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  char want[64];
  snprintf(want, sizeof want, ", %zu decision intervals in ", in_profile);
  ck_assert_ptr_nonnull(strstr(out, want));
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "show --bytes --eager --json %s/box.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"decision\": \"nccl_no_gain\""));
  ck_assert_ptr_nonnull(strstr(out, "\"decision\": \"nccl_outside_range\""));
  ck_assert_ptr_nonnull(strstr(out, "\"nccl_channels\": 4"));
  free(out), free(err), free(args);
  ck_assert(asprintf(&args, "show --bytes --eager %s/box.cfg", dir) > 0);
  ck_assert_int_eq(run(args, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "      1024 B"));
  ck_assert_ptr_null(strstr(out, "KiB"));
  free(out), free(err), free(args);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli-check");
  TCase *tc = tcase_create("cli");
  tcase_add_test(tc, valid_profile_is_ok);
  tcase_add_test(tc, invalid_profile_names_file_and_line);
  tcase_add_test(tc, bad_usage_exits_2);
  tcase_add_test(tc, missing_file_fails);
  tcase_add_test(tc, partial_and_defaultless_profiles);
  tcase_add_test(tc, show_reads_like_the_decisions);
  tcase_add_test(tc, mode_specific_rules_are_warned_about);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
