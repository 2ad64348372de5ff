/* pcie-tune profile --explore NCCL_BUFFSIZE=LIST as a user runs it (issue
 * 28 §1): on the simulated backend NCCL's default moves by what the
 * simulator's model of the buffer (sim/ring_chunks.c) says, and nowhere
 * else; through the device double the workers run with the value, written
 * as the plain number NCCL reads, and the profile records it; the plugin
 * warns when a job's value differs; bad values are refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/core.h"
#include "pcie/sim_box.h"
#include "support/pt_test.h"

static char *dir;
/* The verify step's sizes (tokens 1..128 x 14336 B): measured exactly
 * where they are judged. */
static const char sizes[] = "--sizes 14336,57344,114688,229376,458752,917504,1835008";

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* pcie-tune ARGS in dir (printf-style), a 300 s guard. */
#define run(out, err, ...) pt_test_cli_run(dir, 300, out, err, __VA_ARGS__)

/* NCCL's default on the verify step by the box's truth with buffsize. */
static double default_total(const char *name, uint64_t buffsize) {
  static const unsigned tokens[] = {1, 4, 8, 16, 32, 64, 128};
  struct pt_box b = *pt_box_builtin(name);
  double sum = 0;
  b.nccl_buffsize = buffsize;
  for (size_t i = 0; i < 7; i++) sum += pt_box_default_us(&b, PT_ALLREDUCE, PT_MODE_GRAPH, (uint64_t)tokens[i] * 14336);
  return sum;
}

/* The NCCL-default figure of the row that starts with key and ends in
 * tail. */
static double row(const char *out, const char *key, const char *tail) {
  const char *at = out;
  while ((at = strstr(at, key))) {
    const char *eol = strchr(at, '\n');
    const char *t = strstr(at, tail);
    if (t && (!eol || t < eol)) {
      double v;
      ck_assert_int_eq(sscanf(at + strlen(key), " %*d %lf", &v), 1);
      return v;
    }
    at++;
  }
  ck_abort_msg("no row '%s ... %s':\n%s", key, tail, out);
  return 0;
}

/* Done-when of issue 28: 1M and 4M on the misdetected box. 4M is NCCL's
 * default (skipped, said so); the 1 MiB row's NCCL default differs from
 * the unset row's by the model's ratio (noise: reps 5, a few per cent). */
START_TEST(sim_default_moves_by_the_model) {
  const char *box = "gen5-8x-dual-misdetect";
  double want = default_total(box, 0) / default_total(box, 1 << 20);
  ck_assert_msg(want > 1.02, "the model should reward 1 MiB here (%.3f)", want);
  char *out = NULL, *err = NULL;
  int rc = run(&out, &err, "profile --backend sim --box %s --out p.cfg --quiet --reps 5 %s "
               "--explore NCCL_BUFFSIZE=1M,4M", box, sizes);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "NCCL_BUFFSIZE=4194304 skipped: NCCL's default"), "%s", err);
  double unset = row(out, "  unset", "NCCL's default\n");
  double one = row(out, "  1048576", "NCCL's default with NCCL_BUFFSIZE=1048576, no plugin");
  ck_assert_msg(fabs(unset / one - want) < 0.04 * want, "measured %.3fx, model %.3fx:\n%s", unset / one, want, out);
  struct pt_profile *p = pt_test_load_profile(dir, "p.cfg");
  if (strstr(out, "export NCCL_BUFFSIZE=1048576\n")) {
    const char *v = pt_profile_env(p, "NCCL_BUFFSIZE");
    ck_assert_msg(v && !strcmp(v, "1048576"), "nccl_env lacks NCCL_BUFFSIZE=1048576");
    /* A job without it: a warning, never a refusal. */
    char msg[512];
    unsetenv("NCCL_BUFFSIZE");
    ck_assert_int_eq(pt_env_compare(p, msg, sizeof msg), PT_ENV_TIMING);
    ck_assert_msg(strstr(msg, "NCCL_BUFFSIZE is unset here but was '1048576'"), "%s", msg);
  } else {
    ck_assert_msg(strstr(out, "leave NCCL_BUFFSIZE unset"), "%s", out);
  }
  pt_test_free_profile(p);
  free(out);
  free(err);
}
END_TEST

/* Where the model leaves NCCL's own choice alone (gen5-8x-p2p runs LL,
 * then Simple on 4 channels outside the slice band at these sizes), the
 * NCCL-default rows agree and any gain is the plugin's: its Simple
 * candidates on fewer channels fall in the band. */
START_TEST(sim_credits_the_plugin_where_nccl_default_does_not_move) {
  ck_assert_double_eq_tol(default_total("gen5-8x-p2p", 0), default_total("gen5-8x-p2p", 1 << 20), 1e-9);
  char *out = NULL, *err = NULL;
  int rc = run(&out, &err, "profile --backend sim --box gen5-8x-p2p --out p.cfg --quiet --reps 5 %s "
               "--explore NCCL_BUFFSIZE=1M", sizes);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  double unset = row(out, "  unset", "NCCL's default\n");
  double one = row(out, "  1048576", "NCCL's default with NCCL_BUFFSIZE=1048576, no plugin");
  ck_assert_msg(fabs(unset / one - 1) < 0.02, "NCCL's default moved:\n%s", out);
  ck_assert_msg(strstr(out, "NCCL_BUFFSIZE=1048576 alone gives 1.0") || strstr(out, "leave NCCL_BUFFSIZE unset"),
                "%s", out);
  free(out);
  free(err);
}
END_TEST

/* The GPU backend through the double: the workers get the plain number
 * (the double, like NCCL, would read "1M" as 1 byte), the profile records
 * it, and the double's truth runs it. */
START_TEST(nccl_backend_runs_and_records_the_value) {
  char *out = NULL, *err = NULL;
  const char *dbl = pt_test_double();
  char wpath[1200];
  snprintf(wpath, sizeof wpath, "%s/w.txt", dir);
  FILE *f = fopen(wpath, "w");
  ck_assert_ptr_nonnull(f);
  fputs("verify allreduce 458752 1\nverify allreduce 917504 1\n", f);
  fclose(f);
  setenv("PTDOUBLE_BOX", "gen5-8x-dual-misdetect", 1);
  int rc = run(&out, &err, "profile --backend nccl --nccl-lib %s --quiet --warmup-ms 0 --gpus 0-7 --ops 2 --reps 1 "
               "--screen-reps 1 --algos ring --protos simple --channels 2 --out p.cfg --workload w.txt "
               "--explore NCCL_BUFFSIZE=1M", dbl);
  unsetenv("PTDOUBLE_BOX");
  ck_assert_msg(rc == 0, "exit %d: %s\n%s", rc, err, out);
  double unset = row(out, "  unset", "NCCL's default\n");
  double one = row(out, "  1048576", "NCCL's default with NCCL_BUFFSIZE=1048576, no plugin");
  ck_assert_msg(one < unset * 0.97, "1 MiB buffers should run faster on the double's truth:\n%s", out);
  ck_assert_msg(strstr(out, "\nexport NCCL_BUFFSIZE=1048576\n"), "no export line:\n%s", out);
  struct pt_profile *p = pt_test_load_profile(dir, "p.cfg");
  const char *v = pt_profile_env(p, "NCCL_BUFFSIZE");
  ck_assert_msg(v && !strcmp(v, "1048576"), "nccl_env lacks NCCL_BUFFSIZE=1048576 (%s)", v ? v : "unset");
  pt_test_free_profile(p);
  free(out);
  free(err);
}
END_TEST

START_TEST(bad_values_are_refused) {
  static const char *const bad[][2] = {
      {"NCCL_BUFFSIZE=1X", "bad --explore 'NCCL_BUFFSIZE=1X' (comma list of byte counts 65536..1073741824, K/M/G "
                           "allowed (1M = 1048576))"},
      {"NCCL_BUFFSIZE=1K", "bad --explore 'NCCL_BUFFSIZE=1K' (comma list of byte counts"},
      {"NCCL_BUFFSIZE=-1M", "bad --explore 'NCCL_BUFFSIZE=-1M' (comma list of byte counts"},
      {"NCCL_BUFSIZE=1M", "(VAR=LIST with VAR one of NCCL_MIN_NCHANNELS, NCCL_MIN_CTAS, NCCL_BUFFSIZE)"},
      {"NCCL_BUFFSIZE", "(VAR=LIST with VAR one of NCCL_MIN_NCHANNELS, NCCL_MIN_CTAS, NCCL_BUFFSIZE)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "profile --backend sim --box gen5-8x-p2p --out p.cfg --explore %s", bad[i][0]), 2);
    ck_assert_msg(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
    free(out);
    free(err);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_explore_buffsize");
  TCase *t = tcase_create("explore");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, sim_default_moves_by_the_model);
  tcase_add_test(t, sim_credits_the_plugin_where_nccl_default_does_not_move);
  tcase_add_test(t, nccl_backend_runs_and_records_the_value);
  tcase_add_test(t, bad_values_are_refused);
  suite_add_tcase(s, t);
  return pt_test_main(s);
}
