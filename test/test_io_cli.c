/* Every command's inputs, run as a user runs pcie-tune: a FIFO, /dev/zero, a
 * directory or a 1 GB sparse file given as a profile, a --box file, a
 * --workload file, a --resume profile or an nccl-tests log is refused within
 * a second with a message naming it; @include is refused with file:line
 * (docs/profile-format.md, "Files the tools read and write"). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/pt_test.h"

static char *dir, *fifo, *sparse, *subdir, *example;

static void setup(void) {
  dir = pt_test_tmpdir();
  ck_assert(asprintf(&fifo, "%s/pipe.cfg", dir) > 0);
  ck_assert(asprintf(&sparse, "%s/big.cfg", dir) > 0);
  ck_assert(asprintf(&subdir, "%s/sub.cfg", dir) > 0);
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  ck_assert_int_eq(mkfifo(fifo, 0644), 0);
  ck_assert_int_eq(mkdir(subdir, 0755), 0);
  int fd = open(sparse, O_WRONLY | O_CREAT | O_EXCL, 0644);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)1 << 30), 0);
  close(fd);
}

static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
  free(fifo);
  free(sparse);
  free(subdir);
  free(example);
}

/* Runs pcie-tune with args (printf-style, one %s for the odd input) under
 * a 10 s guard, and expects exit status 1 within a second with want on
 * stderr. */
static void refused(const char *fmt, const char *input, const char *want) {
  char *args = NULL, *cmd = NULL, *out, *err;
  ck_assert(asprintf(&args, fmt, input) > 0);
  ck_assert(asprintf(&cmd, "cd '%s' && timeout 10 '%s' %s </dev/null", dir, pt_test_cli(), args) > 0);
  double t0 = pt_test_now_s();
  int rc = pt_test_run(cmd, &out, &err);
  double took = pt_test_now_s() - t0;
  ck_assert_msg(rc == 1, "pcie-tune %s: exit %d (124: blocked), stderr: %s", args, rc, err);
  ck_assert_msg(took < 1.0, "pcie-tune %s took %.2f s", args, took);
  ck_assert_msg(strstr(err, input) && strstr(err, want), "pcie-tune %s: wanted '%s: ...%s' in: %s",
                args, input, want, err);
  free(out);
  free(err);
  free(cmd);
  free(args);
}

/* The four odd inputs for one command line. dir_too: a directory is an
 * error for it (check accepts one, import reads its logs). */
static void all_refused(const char *fmt, int dir_too) {
  refused(fmt, fifo, "is a FIFO, not a regular file");
  refused(fmt, "/dev/zero", "is a character device, not a regular file");
  refused(fmt, sparse, "is 1073741824 bytes, larger than the");
  if (dir_too) refused(fmt, subdir, "is a directory, not a regular file");
}

START_TEST(check_show_simulate_profile) {
  all_refused("check %s", 0);
  all_refused("show %s", 1);
  all_refused("simulate %s --box gen5-8x-p2p", 1);
}
END_TEST

START_TEST(simulate_box_and_workload) {
  char *fmt = NULL;
  ck_assert(asprintf(&fmt, "simulate '%s' --box %%s", example) > 0);
  all_refused(fmt, 1);
  free(fmt);
  ck_assert(asprintf(&fmt, "simulate '%s' --box gen5-8x-p2p --workload %%s", example) > 0);
  all_refused(fmt, 1);
  free(fmt);
}
END_TEST

START_TEST(import_logs_resume_and_profile_box) {
  all_refused("import --out out.cfg %s", 0);
  refused("import --out out.cfg %s", subdir, "no log in this directory");
  all_refused("profile --resume --out %s", 1);
  all_refused("profile --backend sim --box %s --out out.cfg", 1);
}
END_TEST

START_TEST(include_is_refused_with_its_line_everywhere) {
  char *text = NULL, *fmt = NULL;
  /* A directory: libconfig 1.5 ends the process with "input in flex
   * scanner failed" (exit 2, indistinguishable from a usage error). */
  ck_assert(asprintf(&text, "# a profile\n@include \"%s\"\nversion = 1;\n", subdir) > 0);
  char *p = pt_test_write(dir, "inc.cfg", text);
  refused("check %s", p, ":2: @include is not allowed");
  refused("show %s", p, ":2: @include is not allowed");
  refused("simulate %s --box gen5-8x-p2p", p, ":2: @include is not allowed");
  refused("profile --resume --out %s", p, ":2: @include is not allowed");
  ck_assert(asprintf(&fmt, "simulate '%s' --box %%s", example) > 0);
  char *box = pt_test_write(dir, "box.cfg", text);
  refused(fmt, box, ":2: @include is not allowed");
  free(box);
  free(fmt);
  free(p);
  free(text);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_cli");
  TCase *tc = tcase_create("inputs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, check_show_simulate_profile);
  tcase_add_test(tc, simulate_box_and_workload);
  tcase_add_test(tc, import_logs_resume_and_profile_box);
  tcase_add_test(tc, include_is_refused_with_its_line_everywhere);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
