/* The command-line convention every command shares (cli/args.c): --opt=value
 * and --opt value, -q/--quiet, one bad-usage form, K/M/G sizes, valid names
 * in "unknown" errors; and simulate's --json and --quiet. Run as a user runs
 * pcie-tune. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static char *dir;

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static int run(char **out, char **err, const char *args) {
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cd '%s' && PCIE_TUNER_SO='%s' '%s' %s", dir, pt_test_so(), pt_test_cli(),
                     args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  return rc;
}

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

START_TEST(bad_flag_reads_the_same_everywhere) {
  static const char *const cmds[] = {"profile", "import", "show", "check", "simulate", "doctor"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char *args = NULL, *want = NULL, *out, *err;
    ck_assert(asprintf(&args, "%s --frobnicate x", cmds[i]) > 0);
    ck_assert(asprintf(&want, "pcie-tune %s: unknown option '--frobnicate'\n(see 'pcie-tune %s --help')\n",
                       cmds[i], cmds[i]) > 0);
    ck_assert_int_eq(run(&out, &err, args), 2);
    ck_assert_str_eq(err, want);
    free(out);
    free(err);
    free(args);
    free(want);
  }
}
END_TEST

START_TEST(equals_form_and_short_quiet) {
  char *out, *err, *a, *b, *args = NULL;
  const char *prof = "profiles/example-8x-pcie.cfg";
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-dual-misdetect --tokens 1,4 --calls 10",
                     pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&a, &err, args), 0);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box=gen5-8x-dual-misdetect --tokens=1,4 --calls=10",
                     pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&b, &err, args), 0);
  ck_assert_str_eq(a, b);
  free(err);
  free(args);
  free(b);
  /* -q: only the total row. */
  ck_assert(asprintf(&args, "simulate %s/%s --box=gen5-8x-dual-misdetect --tokens=1,4 --calls=10 -q",
                     pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 0);
  ck_assert(!strncmp(out, "total ", 6));
  ck_assert_ptr_nonnull(strchr(out, '\n'));
  ck_assert_str_eq(strchr(out, '\n'), "\n"); /* one line */
  ck_assert_ptr_nonnull(strstr(a, out));        /* the same total row as the full table */
  has(out, " \u00b5s");
  free(out);
  free(err);
  free(args);
  free(a);
  ck_assert(asprintf(&args, "check -q %s/%s", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 0);
  ck_assert_str_eq(out, "");
  free(out);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "show -q %s/%s --svg=q.svg", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 0);
  ck_assert_str_eq(out, "");
  free(out);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "import -q --out=i.cfg %s/test/data/nccltests/synth/ar8-eager-default.txt "
                     "%s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt", pt_test_srcdir(), pt_test_srcdir()) > 0);
  ck_assert_int_eq(run(&out, &err, args), 0);
  ck_assert_str_eq(out, "");
  free(out);
  free(err);
  free(args);
  ck_assert_int_eq(run(&out, &err, "import --setting algo=ringg --out x.cfg y.log"), 2);
  has(err, "unknown algorithm 'ringg' (expected tree, ring, ");
  free(out);
  free(err);
  ck_assert(asprintf(&args, "show %s/%s --collective=allreduce --graph", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 0);
  has(out, "allreduce");
  has(out, " \u00b5s"); /* times in µs, as in every table */
  free(out);
  free(err);
  free(args);
}
END_TEST

START_TEST(sizes_take_suffixes_and_names_are_listed) {
  char *out, *err, *args = NULL, *a, *b;
  const char *prof = "profiles/example-8x-pcie.cfg";
  free(pt_test_write(dir, "k.txt", "s allreduce 56K 3\ns allgather 1KiB 1\n"));
  free(pt_test_write(dir, "n.txt", "s allreduce 57344 3\ns allgather 1024 1\n"));
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --workload k.txt", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&a, &err, args), 0);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --workload n.txt", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&b, &err, args), 0);
  /* Same numbers; only the header's file name differs. */
  ck_assert_str_eq(strstr(a, "\nstep"), strstr(b, "\nstep"));
  free(a);
  free(b);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --tokens 1 --bytes-per-token 14K -q",
                     pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&a, &err, args), 0);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --tokens 1 -q", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&b, &err, args), 0);
  ck_assert_str_eq(a, b);
  free(a);
  free(b);
  free(err);
  free(args);
  free(pt_test_write(dir, "bad.txt", "s allsum 8 1\n"));
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --workload bad.txt", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 1);
  has(err, "bad.txt:1: unknown collective 'allsum' (broadcast, reduce, allgather, reducescatter, allreduce)");
  free(out);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p3p", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 2);
  has(err, "unknown box 'gen5-8x-p3p' (built-in: gen5-8x-p2p ");
  free(out);
  free(err);
  free(args);
  ck_assert(asprintf(&args, "simulate %s/%s --box gen5-8x-p2p --bytes-per-token 2X", pt_test_srcdir(), prof) > 0);
  ck_assert_int_eq(run(&out, &err, args), 2);
  has(err, "bad --bytes-per-token '2X'");
  free(out);
  free(err);
  free(args);
}
END_TEST

START_TEST(simulate_json) {
  char *out, *err, *args = NULL;
  ck_assert(asprintf(&args,
                     "simulate %s/profiles/example-8x-pcie.cfg --box gen5-8x-dual-misdetect --tokens 4 --json",
                     pt_test_srcdir()) > 0);
  /* The example records no box: forced onto the box, as README shows it. */
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  ck_assert_int_eq(run(&out, &err, args), 0);
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  ck_assert(out[0] == '{');
  has(out, "\"box\": \"gen5-8x-dual-misdetect\"");
  has(out, "\"tuner_abi\": 6");
  has(out, "\"warning\": null");
  has(out, "\"steps\": [");
  has(out, "\"step\": \"tokens=4\"");
  has(out, "\"bytes\": 57344, \"count\": 123, \"nccl\": {\"algo\": \"ring\", \"proto\": \"simple\"");
  has(out, "\"total\": {\"default_us\": ");
  has(out, "PcieTuner: profile ");
  free(out);
  free(err);
  free(args);
  /* JSON stays JSON under NCCL_DEBUG=INFO; the refusal is in "warning". */
  ck_assert(asprintf(&args,
                     "simulate %s/profiles/example-8x-pcie.cfg --box gen4-4x-shm --tokens 4 --json",
                     pt_test_srcdir()) > 0);
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cd '%s' && NCCL_DEBUG=INFO PCIE_TUNER_SO='%s' '%s' %s", dir, pt_test_so(),
                     pt_test_cli(), args) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  ck_assert(out[0] == '{');
  ck_assert_ptr_null(strstr(out, "NCCL INFO"));
  has(out, "\"warning\": \"the plugin tunes nothing on this 4-rank box: profile ");
  has(err, "warning: the plugin tunes nothing");
  free(out);
  free(err);
  free(args);
  free(cmd);
}
END_TEST

/* simulate's table keeps its columns at every size of the verify step: at
 * tokens=128 the bytes cell is "1835008x123" (11 characters), which used
 * to push that row's columns one place right. */
START_TEST(simulate_table_columns_line_up) {
  char *args = NULL, *out, *err;
  ck_assert(asprintf(&args, "simulate %s/profiles/example-8x-pcie.cfg --box gen5-8x-dual-misdetect",
                     pt_test_srcdir()) > 0);
  ck_assert_msg(run(&out, &err, args) == 0, "%s", err);
  const char *head = strstr(out, "\nstep");
  ck_assert_msg(head != NULL, "%s", out);
  head++;
  has(out, "1835008x123");
  size_t col = (size_t)(strstr(head, "NCCL default") - head), rows = 0;
  for (const char *l = strchr(head, '\n') + 1; strncmp(l, "total", 5); l = strchr(l, '\n') + 1, rows++) {
    const char *end = strchr(l, '\n');
    ck_assert_msg(end && (size_t)(end - l) > col, "short row in:\n%s", out);
    ck_assert_msg(l[col - 1] == ' ' && l[col - 2] == ' ' && (!strncmp(l + col, "ring/", 5) ||
                                                             !strncmp(l + col, "tree/", 5)),
                  "row %zu out of line with the header:\n%s", rows, out);
  }
  ck_assert_int_eq(rows, 7);
  free(out);
  free(err);
  free(args);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_args");
  TCase *tc = tcase_create("args");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, bad_flag_reads_the_same_everywhere);
  tcase_add_test(tc, equals_form_and_short_quiet);
  tcase_add_test(tc, sizes_take_suffixes_and_names_are_listed);
  tcase_add_test(tc, simulate_json);
  tcase_add_test(tc, simulate_table_columns_line_up);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
