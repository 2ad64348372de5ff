/* make install / make uninstall into temporary directories, as a user runs
 * them: what lands where, when ldconfig runs (through a fake LDCONFIG that
 * records its calls), what the user is told, and that uninstall removes only
 * what install put there. */
#include <check.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/pt_test.h"

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static int exists(const char *dir, const char *rel) {
  char *p = NULL;
  struct stat st;
  ck_assert(asprintf(&p, "%s/%s", dir, rel) > 0);
  int ok = lstat(p, &st) == 0;
  free(p);
  return ok;
}

/* A fake ldconfig: "-v -N -X" lists `cached` as the loader's one directory;
 * any other call is appended to dir/ldconfig.calls. */
static char *fake_ldconfig(const char *dir, const char *cached) {
  char *text = NULL;
  ck_assert(asprintf(&text,
                     "#!/bin/sh\n"
                     "if [ \"$1\" = -v ]; then echo '%s: (from /etc/ld.so.conf.d/x.conf:1)';"
                     " echo '\tlibfoo.so.1 -> libfoo.so.1.0'; exit 0; fi\n"
                     "echo \"called $*\" >> '%s/ldconfig.calls'\n",
                     cached, dir) > 0);
  char *path = pt_test_write(dir, "ldconfig", text);
  free(text);
  ck_assert_int_eq(chmod(path, 0755), 0);
  return path;
}

/* Runs make TARGET in the source tree with the build directory of the
 * plugin under test, so nothing is rebuilt. */
static int make(const char *target, const char *vars, const char *ldconfig, char **out, char **err) {
  char *so = strdup(pt_test_so()), *cmd = NULL;
  const char *build = basename(dirname(so));
  ck_assert(asprintf(&cmd,
                     "cd '%s' && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL LDCONFIG='%s' "
                     "make --no-print-directory BUILD=%s %s %s",
                     pt_test_srcdir(), ldconfig, build, target, vars) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  free(so);
  return rc;
}

START_TEST(staged_install_never_runs_ldconfig) {
  char *dir = pt_test_tmpdir(), *out, *err, *vars = NULL;
  char *fake = fake_ldconfig(dir, "/usr/local/lib");
  ck_assert(asprintf(&vars, "DESTDIR='%s/stage' PREFIX=/usr/local", dir) > 0);
  ck_assert_int_eq(make("install", vars, fake, &out, &err), 0);
  ck_assert(exists(dir, "stage/usr/local/lib/libnccl-tuner-pcie.so"));
  ck_assert(exists(dir, "stage/usr/local/lib/libnccl-net-pcie.so"));
  ck_assert(exists(dir, "stage/usr/local/bin/pcie-tune"));
  ck_assert(exists(dir, "stage/usr/local/share/nccl-pcie-tuner/examples/example-8x-pcie.cfg"));
  /* An example is never in the directory the plugin scans. */
  ck_assert(!exists(dir, "stage/usr/local/share/nccl-pcie-tuner/profiles/example-8x-pcie.cfg"));
  ck_assert(!exists(dir, "ldconfig.calls"));
  ck_assert_ptr_null(strstr(out, "ldconfig"));
  free(out);
  free(err);
  ck_assert_int_eq(make("uninstall", vars, fake, &out, &err), 0);
  ck_assert(!exists(dir, "stage/usr/local/lib/libnccl-tuner-pcie.so"));
  ck_assert(!exists(dir, "stage/usr/local/lib/libnccl-net-pcie.so"));
  ck_assert(!exists(dir, "stage/usr/local/bin/pcie-tune"));
  ck_assert(!exists(dir, "stage/usr/local/share/nccl-pcie-tuner"));
  ck_assert(!exists(dir, "ldconfig.calls"));
  free(out);
  free(err);
  free(vars);
  free(fake);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(cached_directory_gets_ldconfig_as_root) {
  char *dir = pt_test_tmpdir(), *out, *err, *vars = NULL, *libdir = NULL;
  ck_assert(asprintf(&libdir, "%s/usr/lib", dir) > 0);
  char *fake = fake_ldconfig(dir, libdir);
  ck_assert(asprintf(&vars, "PREFIX='%s/usr'", dir) > 0);
  ck_assert_int_eq(make("install", vars, fake, &out, &err), 0);
  ck_assert(exists(dir, "usr/lib/libnccl-tuner-pcie.so"));
  if (geteuid() == 0) {
    has(out, "ran ldconfig: NCCL_TUNER_PLUGIN=pcie now finds ");
    ck_assert(exists(dir, "ldconfig.calls"));
  } else {
    has(out, "run 'sudo ldconfig'");
    ck_assert(!exists(dir, "ldconfig.calls"));
  }
  has(out, "export NCCL_TUNER_PLUGIN=");
  free(out);
  free(err);
  /* The installed pair works: pcie-tune finds the plugin in ../lib. */
  char *cmd = NULL;
  ck_assert(asprintf(&cmd,
                     "env -u PCIE_TUNER_SO '%s/usr/bin/pcie-tune' simulate "
                     "'%s/usr/share/nccl-pcie-tuner/examples/example-8x-pcie.cfg' --box gen5-8x-p2p "
                     "--tokens 1",
                     dir, dir) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  has(out, "/usr/bin/../lib/libnccl-tuner-pcie.so (tuner v6)");
  free(out);
  free(err);
  free(cmd);
  /* A profile the user added stays through uninstall. */
  free(pt_test_write(dir, "usr/share/nccl-pcie-tuner/profiles/mine.cfg", "version = 1;\n"));
  ck_assert_int_eq(make("uninstall", vars, fake, &out, &err), 0);
  ck_assert(!exists(dir, "usr/lib/libnccl-tuner-pcie.so"));
  ck_assert(!exists(dir, "usr/bin/pcie-tune"));
  ck_assert(exists(dir, "usr/share/nccl-pcie-tuner/profiles/mine.cfg"));
  free(out);
  free(err);
  free(vars);
  free(libdir);
  free(fake);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(uncached_directory_says_what_to_do) {
  char *dir = pt_test_tmpdir(), *out, *err, *vars = NULL;
  char *fake = fake_ldconfig(dir, "/somewhere/else");
  ck_assert(asprintf(&vars, "PREFIX='%s/opt'", dir) > 0);
  ck_assert_int_eq(make("install", vars, fake, &out, &err), 0);
  has(out, "export NCCL_TUNER_PLUGIN=");
  has(out, "/opt/lib/libnccl-tuner-pcie.so");
  has(out, "/etc/ld.so.conf.d/");
  ck_assert(!exists(dir, "ldconfig.calls"));
  free(out);
  free(err);
  ck_assert_int_eq(make("uninstall", vars, fake, &out, &err), 0);
  ck_assert(!exists(dir, "opt/lib/libnccl-tuner-pcie.so"));
  free(out);
  free(err);
  free(vars);
  free(fake);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* `man pcie-tune` after make install, the page generated from docs/cli.md:
 * every command's section and every option the manual names are in it. */
START_TEST(man_page_after_install) {
  char *dir = pt_test_tmpdir(), *out, *err, *vars = NULL, *cmd = NULL, *want = NULL;
  char *fake = fake_ldconfig(dir, "/usr/local/lib");
  ck_assert(asprintf(&vars, "DESTDIR='%s/stage' PREFIX=/usr/local", dir) > 0);
  ck_assert_int_eq(make("install", vars, fake, &out, &err), 0);
  free(out);
  free(err);
  ck_assert(exists(dir, "stage/usr/local/share/man/man1/pcie-tune.1"));
  ck_assert(asprintf(&cmd, "LC_ALL=C MANWIDTH=100 MANPATH='%s/stage/usr/local/share/man' man pcie-tune", dir) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  ck_assert_msg(rc == 0, "man: %d: %s", rc, err);
  has(out, "PCIE-TUNE(1)");
  has(out, "pcie-tune - measure, import, show and check NCCL tuner profiles");
  /* What the manual has, the page has: its sections and its options. */
  free(cmd);
  ck_assert(asprintf(&cmd,
                     "cd '%s' && { sed -n 's/^## \\(.*\\)/\\1/p' docs/cli.md | tr a-z A-Z; "
                     "grep -o '`--[a-z0-9-]*' docs/cli.md | tr -d '`'; } | sort -u",
                     pt_test_srcdir()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &want, NULL), 0);
  int n = 0;
  for (char *save = NULL, *l = strtok_r(want, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++)
    has(out, l);
  ck_assert_int_gt(n, 40);
  free(out);
  free(err);
  ck_assert_int_eq(make("uninstall", vars, fake, &out, &err), 0);
  ck_assert(!exists(dir, "stage/usr/local/share/man/man1/pcie-tune.1"));
  free(out);
  free(err);
  free(want);
  free(cmd);
  free(vars);
  free(fake);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_install");
  TCase *tc = tcase_create("install");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, staged_install_never_runs_ldconfig);
  tcase_add_test(tc, cached_directory_gets_ldconfig_as_root);
  tcase_add_test(tc, uncached_directory_says_what_to_do);
  tcase_add_test(tc, man_page_after_install);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
