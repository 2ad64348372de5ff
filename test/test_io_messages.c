/* What a user reads (issue 19 §6), run as a user runs pcie-tune: one
 * "pcie-tune profile:" per line; the worker's failure printed once, not by
 * the worker and again by profile; a wrong --nccl-lib path named, not
 * answered with "give --nccl-lib PATH"; an unknown box answered with the
 * built-in boxes; show on a partial profile says the plugin refuses it;
 * "speedup" spelt one way in what the commands print and in docs/cli.md. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/sim_box.h"
#include "support/pt_test.h"

static char *dir, *out, *err, dbl[1200];

static void setup(void) {
  snprintf(dbl, sizeof dbl, "%s", pt_test_double());
  dir = pt_test_tmpdir();
  out = err = NULL;
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

#define run(...) pt_test_cli_rerun(dir, 60, &out, &err, __VA_ARGS__)

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

START_TEST(profile_prefix_once) {
  ck_assert_int_eq(run("profile --backend nccl --gpus x --out p.cfg"), 2);
  ck_assert_msg(strstr(err, "pcie-tune profile: nccl backend: bad --gpus 'x'"), "%s", err);
  ck_assert_msg(count(err, "pcie-tune profile:") == 1, "%s", err);
}
END_TEST

/* Two GPUs, two workers, no CUDA device (the device double's 'nodevice'):
 * the reason reaches the user once. */
START_TEST(no_gpu_error_printed_once) {
  ck_assert_int_eq(setenv("PTDOUBLE_FAIL", "nodevice", 1), 0);
  int rc = run("profile --backend nccl --gpus 0-1 --nccl-lib '%s' --out p.cfg", dbl);
  unsetenv("PTDOUBLE_FAIL");
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(count(err, "no CUDA device") == 1, "%s", err);
  ck_assert_msg(!strstr(err, "pcie-tune worker:"), "%s", err);
  ck_assert_msg(strstr(err, "pcie-tune profile: "), "%s", err);
}
END_TEST

START_TEST(wrong_nccl_lib_is_named) {
  ck_assert_int_eq(run("profile --backend nccl --gpus 0 --nccl-lib /nope/x --out p.cfg"), 1);
  ck_assert_msg(strstr(err, "cannot load NCCL from --nccl-lib /nope/x"), "%s", err);
  ck_assert_msg(strstr(err, "check the path"), "%s", err);
  ck_assert_msg(!strstr(err, "give --nccl-lib PATH"), "%s", err);
  ck_assert_msg(count(err, "/nope/x: cannot open shared object file") == 1, "%s", err);
}
END_TEST

/* box answers an unknown name with the built-in boxes, as simulate --box
 * and profile --box already do. */
START_TEST(unknown_box_lists_the_built_in_ones) {
  ck_assert_int_eq(run("box nope"), 1);
  ck_assert_msg(strstr(err, "nope: no built-in box of that name and no such file; the built-in boxes are "), "%s", err);
  for (size_t i = 0; i < pt_box_builtin_count(); i++)
    ck_assert_msg(strstr(err, pt_box_builtin_at(i)->name), "lacks %s: %s", pt_box_builtin_at(i)->name, err);
  /* A path is still a path. */
  ck_assert_int_eq(run("box ./nope"), 1);
  ck_assert_msg(strstr(err, "./nope: cannot read box file: cannot open"), "%s", err);
}
END_TEST

START_TEST(show_says_a_profile_is_partial) {
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-ll128 --sizes 8:64M --seed 3 --out p.cfg --budget 150"),
                   1);
  ck_assert_int_eq(run("show p.cfg --eager"), 0);
  ck_assert_msg(strstr(err, "pcie-tune show: p.cfg: partial sweep") &&
                    strstr(err, "the plugin refuses it and leaves every decision to NCCL until then"),
                "%s", err);
  /* A complete one: no such line. */
  ck_assert_int_eq(run("profile --resume --out p.cfg --quiet"), 0);
  ck_assert_int_eq(run("show p.cfg --eager"), 0);
  ck_assert_msg(!strstr(err, "partial"), "%s", err);
}
END_TEST

START_TEST(speedup_one_spelling) {
  char *example = NULL, *cmd = NULL, *o = NULL;
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  ck_assert_int_eq(run("show '%s' --eager", example), 0);
  ck_assert_msg(strstr(out, "speedup") && !strstr(out, "speed-up"), "%s", out);
  ck_assert_int_eq(run("show --help"), 0);
  ck_assert_msg(!strstr(out, "speed-up"), "%s", out);
  ck_assert_int_eq(run("show '%s' --eager --svg c.svg --quiet && cat c.svg", example), 0);
  ck_assert_msg(strstr(out, "speedup over NCCL") && !strstr(out, "speed-up"), "svg");
  ck_assert(asprintf(&cmd, "grep -c -i 'speed-up' '%s/docs/cli.md' '%s/README.md'", pt_test_srcdir(),
                     pt_test_srcdir()) > 0);
  pt_test_run(cmd, &o, NULL);
  ck_assert_msg(strstr(o, "cli.md:0") && strstr(o, "README.md:0"), "%s", o);
  free(o), free(cmd), free(example);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_messages");
  TCase *tc = tcase_create("messages");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, profile_prefix_once);
  tcase_add_test(tc, no_gpu_error_printed_once);
  tcase_add_test(tc, wrong_nccl_lib_is_named);
  tcase_add_test(tc, unknown_box_lists_the_built_in_ones);
  tcase_add_test(tc, show_says_a_profile_is_partial);
  tcase_add_test(tc, speedup_one_spelling);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
