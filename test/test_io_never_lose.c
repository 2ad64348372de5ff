/* Commands never lose a file and never hang (issue 19 §5), run as a user
 * runs pcie-tune: profile and box refuse to write over their own inputs
 * under any name; box writes through a symlink with --force and keeps a
 * replaced file's mode; a NUL byte in a workload or box file is named with
 * its line instead of looping or cutting the file short; box --from-topo
 * refuses a FIFO at once; a dump's path with a newline or a quote cannot
 * inject settings into the box file it writes. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pcie/sim_box.h"
#include "support/pt_test.h"

static char *dir, *out, *err;

static const char workload[] = "# step coll bytes count\ndecode allreduce 14336 2\nprefill allreduce 1M 1\n";

static void setup(void) {
  char *cmd = NULL;
  dir = pt_test_tmpdir();
  out = err = NULL;
  free(pt_test_write(dir, "w.txt", workload));
  ck_assert(asprintf(&cmd, "cp '%s/test/data/nccl-real/sm120-gen5-8x-direct-2socket.xml' '%s/topo.xml'",
                     pt_test_srcdir(), dir) > 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

/* pcie-tune ARGS in dir under a 20 s guard (124: it hung). */
#define run(...) pt_test_cli_rerun(dir, 20, &out, &err, __VA_ARGS__)

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

/* Writes len bytes (NULs included) to dir/name. */
static char *write_bytes(const char *name, const char *data, size_t len) {
  char *p = pt_test_path(dir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  return p;
}

START_TEST(profile_never_writes_over_its_workload) {
  static const char *const modes[] = {"", " --explore-channels 2,4"};
  char *sym = pt_test_path(dir, "w-link.txt");
  ck_assert_int_eq(symlink("w.txt", sym), 0);
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --workload w.txt --out w.txt --force%s",
                         modes[m]), 1);
    ck_assert_msg(strstr(err, "w.txt: is also an input (w.txt)"), "%s", err);
    ck_assert_int_eq(
        run("profile --backend sim --box gen5-8x-p2p --workload w.txt --out w-link.txt --force%s", modes[m]), 1);
    ck_assert_msg(strstr(err, "w-link.txt: is also an input (w.txt)"), "%s", err);
    char *after = slurp("w.txt");
    ck_assert_str_eq(after, workload);
    free(after);
  }
  ck_assert(S_ISLNK(lmode("w-link.txt")));
  free(sym);
}
END_TEST

START_TEST(box_never_writes_over_its_dump) {
  char *before = slurp("topo.xml"), *sym = pt_test_path(dir, "topo-link.xml");
  ck_assert_int_eq(symlink("topo.xml", sym), 0);
  ck_assert_int_eq(run("box --from-topo topo.xml --out topo.xml --force"), 1);
  ck_assert_msg(strstr(err, "topo.xml: is also an input (topo.xml)"), "%s", err);
  ck_assert_int_eq(run("box --from-topo topo.xml --out topo-link.xml --force"), 1);
  ck_assert_msg(strstr(err, "topo-link.xml: is also an input (topo.xml)"), "%s", err);
  ck_assert_int_eq(run("box --from-topo topo-link.xml --out topo.xml --force"), 1);
  ck_assert_msg(strstr(err, "topo.xml: is also an input (topo-link.xml)"), "%s", err);
  char *after = slurp("topo.xml");
  ck_assert_str_eq(before, after);
  free(before);
  free(after);
  free(sym);
}
END_TEST

/* docs/cli.md and docs/profile-format.md: a replaced file keeps its mode; a
 * symlink to a regular file is written through with --force. */
START_TEST(box_force_keeps_mode_and_writes_through_a_symlink) {
  char *box = pt_test_path(dir, "b.cfg"), *sym = pt_test_path(dir, "link.cfg");
  ck_assert_int_eq(run("box --from-topo topo.xml --out b.cfg"), 0);
  ck_assert_int_eq(lmode("b.cfg") & 0777, 0644);
  ck_assert_int_eq(chmod(box, 0640), 0);
  ck_assert_int_eq(run("box --from-topo topo.xml --out b.cfg --force --no-p2p"), 0);
  ck_assert_int_eq(lmode("b.cfg") & 0777, 0640);
  ck_assert_int_eq(symlink("b.cfg", sym), 0);
  ck_assert_int_eq(run("box --from-topo topo.xml --out link.cfg"), 1);
  ck_assert_msg(strstr(err, "exists"), "%s", err);
  ck_assert_int_eq(run("box --from-topo topo.xml --out link.cfg --force --name via-link"), 0);
  ck_assert(S_ISLNK(lmode("link.cfg")));
  struct pt_box b;
  struct pt_error_rec e;
  ck_assert_msg(pt_box_load(&b, box, &e) == 0, "%s: %s", e.file, e.msg);
  ck_assert_str_eq(b.name, "via-link");
  ck_assert_int_eq(lmode("b.cfg") & 0777, 0640);
  free(box);
  free(sym);
}
END_TEST

START_TEST(nul_byte_in_a_workload_is_named_not_looped) {
  /* After a whole line: the line parsed, then the reader restarted at the
   * NUL forever. */
  static const char text[] = "decode allreduce 14336 2\nprefill allreduce 1M 1\0\n";
  free(write_bytes("nul.txt", text, sizeof text - 1));
  char *example = NULL;
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  double t0 = pt_test_now_s();
  ck_assert_int_eq(run("simulate '%s' --box gen5-8x-p2p --workload nul.txt", example), 1);
  ck_assert_msg(strstr(err, "nul.txt:2: NUL byte"), "%s", err);
  ck_assert_int_eq(run("profile --backend sim --box gen5-8x-p2p --workload nul.txt --out p.cfg"), 2);
  ck_assert_msg(strstr(err, "nul.txt:2: NUL byte"), "%s", err);
  ck_assert_msg(pt_test_now_s() - t0 < 5.0, "took %.1f s", pt_test_now_s() - t0);
  free(example);
}
END_TEST

START_TEST(nul_byte_in_a_box_file_is_refused) {
  /* Everything after the NUL would be lost: libconfig stops there and the
   * box loads without the noise it declares. */
  static const char tail[] = "noise = { sigma = 0.2; };\n";
  ck_assert_int_eq(run("box --from-topo topo.xml --out b.cfg"), 0);
  char *text = slurp("b.cfg");
  size_t n = strlen(text);
  char *buf = malloc(n + 1 + sizeof tail);
  ck_assert_ptr_nonnull(buf);
  memcpy(buf, text, n);
  buf[n] = '\0';
  memcpy(buf + n + 1, tail, sizeof tail);
  int line = 1;
  for (size_t i = 0; i < n; i++) line += text[i] == '\n';
  free(write_bytes("nul.cfg", buf, n + sizeof tail));
  ck_assert_int_eq(run("box nul.cfg"), 1);
  char want[64];
  snprintf(want, sizeof want, "nul.cfg:%d: ", line);
  ck_assert_msg(strstr(err, want) && strstr(err, "NUL byte"), "wanted %s...NUL byte in: %s", want, err);
  free(buf);
  free(text);
}
END_TEST

START_TEST(box_from_topo_refuses_a_fifo_at_once) {
  char *fifo = pt_test_path(dir, "dump.xml");
  ck_assert_int_eq(mkfifo(fifo, 0644), 0);
  double t0 = pt_test_now_s();
  ck_assert_int_eq(run("box --from-topo dump.xml --out b.cfg"), 1);
  ck_assert_msg(pt_test_now_s() - t0 < 2.0, "took %.1f s", pt_test_now_s() - t0);
  ck_assert_msg(strstr(err, "dump.xml: is a FIFO, not a regular file"), "%s", err);
  ck_assert_int_eq(run("box --from-topo /dev/zero --out b.cfg"), 1);
  ck_assert_msg(strstr(err, "/dev/zero: is a character device"), "%s", err);
  free(fifo);
}
END_TEST

/* A folder name holding a newline and a setting (which loads today: the
 * comment's tail and the desc string both swallow the rest), or quotes and
 * a backslash: the written box loads, its desc is exactly the path given,
 * and nothing in it came from the path. */
START_TEST(dump_path_cannot_inject_settings) {
  static const char *const folders[] = {"a\nnoise = { sigma = 0.5; outlier_prob = 0.5; };\n#",
                                        "it's \"quoted\" \\ here"};
  struct pt_box ref, b;
  struct pt_error_rec e;
  char *data = slurp("topo.xml"), *ref_path = pt_test_path(dir, "ref.cfg");
  ck_assert_int_eq(run("box --from-topo topo.xml --out ref.cfg --name n"), 0);
  ck_assert_msg(pt_box_load(&ref, ref_path, &e) == 0, "%s", e.msg);
  for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
    char *sub = pt_test_path(dir, folders[i]), *topo = NULL, *box = NULL, *desc = NULL;
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    ck_assert(asprintf(&topo, "%s/topo.xml", folders[i]) > 0);
    free(write_bytes(topo, data, strlen(data)));
    /* The odd path reaches pcie-tune through the environment, untouched. */
    ck_assert_int_eq(setenv("PT_ODD_TOPO", topo, 1), 0);
    ck_assert_int_eq(run("box --from-topo \"$PT_ODD_TOPO\" --out b.cfg --name n --force"), 0);
    box = pt_test_path(dir, "b.cfg");
    ck_assert_msg(pt_box_load(&b, box, &e) == 0, "%s:%d: %s", e.file, e.line, e.msg);
    ck_assert(asprintf(&desc, "from NCCL topology %s", topo) > 0);
    ck_assert_str_eq(b.desc, desc);
    ck_assert_str_eq(b.name, "n");
    ck_assert(b.noise_sigma == ref.noise_sigma && b.outlier_prob == ref.outlier_prob);
    ck_assert_int_eq(b.nfaults, ref.nfaults);
    ck_assert_int_eq(b.nranks, ref.nranks);
    free(desc), free(box), free(topo), free(sub);
  }
  unsetenv("PT_ODD_TOPO");
  /* A path longer than desc holds keeps its file name; a long file name is
   * cut to what a box name holds: the box still loads. */
  char longname[201];
  memset(longname, 'x', 200);
  longname[200] = 0;
  char *sub = pt_test_path(dir, longname), *topo = NULL, *box = pt_test_path(dir, "long.cfg");
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  ck_assert(asprintf(&topo, "%s/%s.xml", longname, longname) > 0);
  free(write_bytes(topo, data, strlen(data)));
  ck_assert_int_eq(run("box --from-topo %s --out long.cfg", topo), 0);
  ck_assert_msg(pt_box_load(&b, box, &e) == 0, "%s:%d: %s", e.file, e.line, e.msg);
  ck_assert_uint_eq(strlen(b.name), sizeof b.name - 1);
  ck_assert_ptr_nonnull(strstr(b.desc, "from NCCL topology .../xxx"));
  ck_assert_int_eq(run("box --from-topo topo.xml --out long2.cfg --name %s", longname), 2);
  ck_assert_msg(strstr(err, "--name is longer than 63 characters"), "%s", err);
  free(sub), free(topo), free(box);
  free(data);
  free(ref_path);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_never_lose");
  TCase *tc = tcase_create("files");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, profile_never_writes_over_its_workload);
  tcase_add_test(tc, box_never_writes_over_its_dump);
  tcase_add_test(tc, box_force_keeps_mode_and_writes_through_a_symlink);
  tcase_add_test(tc, nul_byte_in_a_workload_is_named_not_looped);
  tcase_add_test(tc, nul_byte_in_a_box_file_is_refused);
  tcase_add_test(tc, box_from_topo_refuses_a_fifo_at_once);
  tcase_add_test(tc, dump_path_cannot_inject_settings);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
