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

static Suite *suite(void) {
  Suite *s = suite_create("cli-check");
  TCase *tc = tcase_create("cli");
  tcase_add_test(tc, valid_profile_is_ok);
  tcase_add_test(tc, invalid_profile_names_file_and_line);
  tcase_add_test(tc, bad_usage_exits_2);
  tcase_add_test(tc, missing_file_fails);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
