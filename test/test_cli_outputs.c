/* Outputs never destroy anything (docs/profile-format.md, "Files the tools
 * read and write"), run as a user runs pcie-tune: an output that is one of
 * the inputs is refused under any name; a FIFO or device node is never
 * replaced by a regular file; a symlink is written through only with
 * --force; '-' is standard output for every output; a bad --out is reported
 * before measuring; show --svg on a rules-only profile does not crash. */
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "support/pt_test.h"

static char *dir, *out, *err;

static void setup(void) {
  char *cmd = NULL;
  dir = pt_test_tmpdir();
  out = err = NULL;
  ck_assert(asprintf(&cmd, "cp '%s/profiles/example-8x-pcie.cfg' '%s/p.cfg' && cd '%s' && cp "
                           "test/data/nccltests/synth/ar8-eager-default.txt '%s/log.txt' && cp "
                           "test/data/nccltests/synth/ar8-eager-ring-ll-4.txt '%s/ll.txt'",
                     pt_test_srcdir(), dir, pt_test_srcdir(), dir, dir) > 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

/* Runs pcie-tune in dir with printf-style args under a 10 s guard; returns
 * the exit status and keeps stdout/stderr in out/err. */
#define run(...) pt_test_cli_rerun(dir, 10, &out, &err, __VA_ARGS__)

static char *slurp(const char *name) {
  char *p = pt_test_path(dir, name), *cmd = NULL, *text = NULL;
  ck_assert(asprintf(&cmd, "cat '%s'", p) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &text, NULL), 0);
  free(cmd);
  free(p);
  return text;
}

static mode_t lmode(const char *name) {
  struct stat st;
  char *p = pt_test_path(dir, name);
  ck_assert_int_eq(lstat(p, &st), 0);
  free(p);
  return st.st_mode;
}

/* nccl-tests logs the importer accepts together: NCCL's default, and a
 * forced ring/LL/4 (test/data/nccltests/synth). */
static const char *a_log(void) { return "log.txt ll.txt"; }

/* Whether name exists in dir (not following a symlink). */
static int exists(const char *name) {
  struct stat st;
  char *p = pt_test_path(dir, name);
  int rc = lstat(p, &st) == 0;
  free(p);
  return rc;
}

START_TEST(show_never_writes_over_its_profile) {
  char *before = slurp("p.cfg");
  ck_assert_int_eq(run("show p.cfg --svg p.cfg --force"), 1);
  ck_assert_msg(strstr(err, "p.cfg: is also an input"), "%s", err);
  /* Under another name: a symlink and a hard link to the profile. */
  char *sym = pt_test_path(dir, "sym.svg"), *hard = pt_test_path(dir, "hard.svg"), *p = pt_test_path(dir, "p.cfg");
  ck_assert_int_eq(symlink("p.cfg", sym), 0);
  ck_assert_int_eq(link(p, hard), 0);
  ck_assert_int_eq(run("show p.cfg --svg sym.svg --force"), 1);
  ck_assert_msg(strstr(err, "sym.svg: is also an input (p.cfg)"), "%s", err);
  ck_assert_int_eq(run("show p.cfg --svg hard.svg --force"), 1);
  ck_assert_msg(strstr(err, "hard.svg: is also an input (p.cfg)"), "%s", err);
  char *after = slurp("p.cfg");
  ck_assert_str_eq(before, after);
  ck_assert(S_ISLNK(lmode("sym.svg")));
  free(before);
  free(after);
  free(sym);
  free(hard);
  free(p);
}
END_TEST

START_TEST(import_never_writes_over_a_log) {
  const char *log = a_log();
  char *before = slurp("log.txt");
  ck_assert_int_eq(run("import --out log.txt --force %s", log), 1);
  ck_assert_msg(strstr(err, "is also an input"), "%s", err);
  char *after = slurp("log.txt");
  ck_assert_str_eq(before, after);
  free(before);
  free(after);
}
END_TEST

START_TEST(fifo_and_device_targets_are_never_replaced) {
  const char *log = a_log();
  char *fifo = pt_test_path(dir, "out.fifo");
  ck_assert_int_eq(mkfifo(fifo, 0644), 0);
  double t0 = pt_test_now_s();
  ck_assert_int_eq(run("import --out out.fifo --force %s", log), 1);
  ck_assert_msg(strstr(err, "out.fifo: is a FIFO, not a regular file"), "%s", err);
  ck_assert_int_eq(run("show p.cfg --svg out.fifo --force"), 1);
  ck_assert_msg(strstr(err, "out.fifo: is a FIFO, not a regular file"), "%s", err);
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --sizes 4K:64K --quiet --out out.fifo --force"), 1);
  ck_assert_msg(strstr(err, "out.fifo: is a FIFO, not a regular file"), "%s", err);
  ck_assert_msg(pt_test_now_s() - t0 < 3.0, "three refusals took %.2f s", pt_test_now_s() - t0);
  ck_assert(S_ISFIFO(lmode("out.fifo")));
  /* A device node like /dev/full (as root the rename used to replace it);
   * a private one, so a regression cannot harm the machine. */
  char *dev = pt_test_path(dir, "full");
  if (mknod(dev, S_IFCHR | 0666, makedev(1, 7)) == 0) {
    ck_assert_int_eq(run("import --out full --force %s", log), 1);
    ck_assert_msg(strstr(err, "full: is a character device, not a regular file"), "%s", err);
    ck_assert(S_ISCHR(lmode("full")));
  }
  free(dev);
  free(fifo);
}
END_TEST

START_TEST(symlink_is_written_through_only_with_force) {
  char *real = pt_test_path(dir, "real.svg"), *link_ = pt_test_path(dir, "link.svg");
  free(pt_test_write(dir, "real.svg", "mine\n"));
  ck_assert_int_eq(symlink("real.svg", link_), 0);
  ck_assert_int_eq(run("show p.cfg --svg link.svg"), 1);
  ck_assert_msg(strstr(err, "link.svg: already exists"), "%s", err);
  char *kept = slurp("real.svg");
  ck_assert_str_eq(kept, "mine\n");
  ck_assert_int_eq(run("show p.cfg --svg link.svg --force"), 0);
  ck_assert(S_ISLNK(lmode("link.svg"))); /* the link stays a link... */
  char *chart = slurp("real.svg");        /* ...and the file it names is the chart */
  ck_assert_ptr_nonnull(strstr(chart, "<svg"));
  /* A link to nowhere is refused, even with --force. */
  char *dangling = pt_test_path(dir, "dangling.svg");
  ck_assert_int_eq(symlink("missing/x.svg", dangling), 0);
  free(dangling);
  ck_assert_int_eq(run("show p.cfg --svg dangling.svg --force"), 1);
  ck_assert_msg(strstr(err, "dangling.svg: is a symbolic link to a missing file"), "%s", err);
  free(kept);
  free(chart);
  free(real);
  free(link_);
}
END_TEST

START_TEST(replaced_file_keeps_its_permissions) {
  char *p = pt_test_write(dir, "out.cfg", "old\n");
  ck_assert_int_eq(chmod(p, 0600), 0);
  ck_assert_int_eq(run("import --out out.cfg --force %s", a_log()), 0);
  ck_assert_int_eq(lmode("out.cfg") & 0777, 0600);
  char *text = slurp("out.cfg");
  ck_assert_ptr_nonnull(strstr(text, "# nccl-pcie-tuner profile"));
  free(text);
  free(p);
}
END_TEST

START_TEST(dash_is_standard_output_everywhere) {
  const char *log = a_log();
  ck_assert_int_eq(run("import --out - %s", log), 0);
  ck_assert_msg(!strncmp(out, "# nccl-pcie-tuner profile", 25), "%s", out);
  ck_assert_int_eq(run("show p.cfg --svg -"), 0);
  ck_assert_msg(!strncmp(out, "<svg", 4) && strstr(out, "</svg>"), "%.200s", out);
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --sizes 4K:64K --quiet --out -"), 0);
  ck_assert_msg(!strncmp(out, "# nccl-pcie-tuner profile", 25), "%.200s", out);
  /* Without --quiet the summary on stderr names standard output, not a
   * file called '-'; stdout still holds the profile alone. */
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --sizes 4K:64K --out -"), 0);
  ck_assert_msg(strstr(err, "wrote the profile to standard output (") && !strstr(err, "wrote -"), "%s", err);
  ck_assert_msg(!strncmp(out, "# nccl-pcie-tuner profile", 25) && !strstr(out, "pcie-tune profile:"), "%.200s", out);
  /* What went to stdout is a valid profile. */
  free(pt_test_write(dir, "from-stdout.cfg", out));
  ck_assert_int_eq(run("check from-stdout.cfg"), 0);
  ck_assert(!exists("-")); /* no file named '-' */
}
END_TEST

START_TEST(bad_out_is_reported_before_measuring) {
  double t0 = pt_test_now_s();
  /* The full default sweep would take far longer than a second. */
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --out no-such-dir/p.cfg"), 1);
  ck_assert_msg(pt_test_now_s() - t0 < 1.0, "took %.2f s: it measured first", pt_test_now_s() - t0);
  ck_assert_msg(strstr(err, "no-such-dir/p.cfg: directory no-such-dir does not exist"), "%s", err);
  /* --out naming the --box file it measures. */
  free(pt_test_write(dir, "box.cfg", "based_on = \"gen5-8x-p2p\";\nname = \"b\";\n"));
  ck_assert_int_eq(run("profile --backend sim --box box.cfg --out box.cfg --force"), 1);
  ck_assert_msg(strstr(err, "box.cfg: is also an input"), "%s", err);
  /* --resume of a file in a directory that cannot take the new file. */
  ck_assert_int_eq(run("profile --resume --out no-such-dir/p.cfg"), 1);
  ck_assert_msg(strstr(err, "no-such-dir does not exist"), "%s", err);
}
END_TEST

START_TEST(svg_of_a_rules_only_profile_does_not_crash) {
  free(pt_test_write(dir, "r.cfg",
                     "version = 1;\nname = \"r\";\n"
                     "provenance = { tool = \"t\"; backend = \"rules\"; nccl_version = \"x\"; "
                     "date = \"d\"; mode = \"both\"; };\n"
                     "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 1048576L; "
                     "algo = \"ring\"; proto = \"ll\"; channels = 2; } );\n"));
  ck_assert_int_eq(run("check r.cfg"), 0);
  /* It used to crash (-1 / 139); the chart draws the rule (test_cli_svg). */
  ck_assert_int_eq(run("show r.cfg --svg r.svg"), 0);
  ck_assert_ptr_nonnull(strstr(out, "ring/ll/2 (rule)"));
  ck_assert(exists("r.svg"));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli_outputs");
  TCase *tc = tcase_create("outputs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, show_never_writes_over_its_profile);
  tcase_add_test(tc, import_never_writes_over_a_log);
  tcase_add_test(tc, fifo_and_device_targets_are_never_replaced);
  tcase_add_test(tc, symlink_is_written_through_only_with_force);
  tcase_add_test(tc, replaced_file_keeps_its_permissions);
  tcase_add_test(tc, dash_is_standard_output_everywhere);
  tcase_add_test(tc, bad_out_is_reported_before_measuring);
  tcase_add_test(tc, svg_of_a_rules_only_profile_does_not_crash);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
