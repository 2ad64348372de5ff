/* The plugin loads wherever NCCL does (issue 19 §3), checked on the built
 * files: the plugin needs the C library and libm only (libconfig is linked
 * in) and exports the plugin structs only, nothing of libconfig; `make deb`
 * builds a package that lintian passes and that, unpacked into a scratch
 * root, puts the plugin where NCCL's by-name lookup (NCCL_TUNER_PLUGIN=pcie
 * -> dlopen("libnccl-tuner-pcie.so")) finds it through the loader's cache. */
#include <check.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/pt_test.h"

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

__attribute__((format(printf, 2, 3))) static int sh(char **out, const char *fmt, ...) {
  char *cmd = NULL, *err = NULL;
  va_list ap;
  va_start(ap, fmt);
  ck_assert(vasprintf(&cmd, fmt, ap) > 0);
  va_end(ap);
  int rc = pt_test_run(cmd, out, &err);
  if (rc) fprintf(stderr, "%s: exit %d\n%s", cmd, rc, err);
  free(err);
  free(cmd);
  return rc;
}

/* NEEDED entries allowed: the C library's parts, and the sanitizer runtimes
 * of `make asan` / `make tsan` builds (never in a release build). */
static int allowed_needed(const char *lib) {
  static const char *const ok[] = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (!strcmp(lib, ok[i])) return 1;
  return !strncmp(lib, "libasan.so", 10) || !strncmp(lib, "libubsan.so", 11) || !strncmp(lib, "libtsan.so", 10);
}

START_TEST(plugin_needs_only_the_c_library) {
  char *out = NULL;
  ck_assert_int_eq(sh(&out, "readelf -d '%s' | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p'", pt_test_so()), 0);
  int libc = 0;
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    ck_assert_msg(allowed_needed(l), "the plugin needs %s at run time", l);
    libc |= !strcmp(l, "libc.so.6");
  }
  ck_assert(libc);
  free(out);
  /* pcie-tune too: it is installed beside the plugin, in the same containers. */
  ck_assert_int_eq(sh(&out, "readelf -d '%s' | grep NEEDED", pt_test_cli()), 0);
  ck_assert_msg(!strstr(out, "libconfig"), "%s", out);
  free(out);
}
END_TEST

/* The dynamic symbol table: defined, only the plugin structs; nothing of
 * libconfig, defined or undefined (it would clash with, or bind to, another
 * libconfig in the process). */
START_TEST(dynamic_symbols_are_the_plugin_structs_only) {
  char *out = NULL;
  ck_assert_int_eq(sh(&out, "readelf -W --dyn-syms '%s' | awk '$1 ~ /^[0-9]+:$/ && $7 != \"UND\" && $5 != \"LOCAL\" && $8 != \"\" "
                            "{print $8}' | sed 's/@.*//' | LC_ALL=C sort -u",
                      pt_test_so()),
                   0);
  char *want = pt_test_exports(); /* mk/exports.txt */
  /* Sanitizer builds add their interceptors' hooks; a release build has none. */
  if (!strstr(pt_test_so(), "build-asan") && !strstr(pt_test_so(), "build-tsan")) ck_assert_str_eq(out, want);
  free(want);
  free(out);
  ck_assert_int_eq(sh(&out, "readelf -W --dyn-syms '%s'", pt_test_so()), 0);
  ck_assert_msg(!strstr(out, " config_") && !strstr(out, "libconfig_yy"), "libconfig in the dynamic table:\n%s", out);
  has(out, "ncclTunerPlugin_v7");
  free(out);
}
END_TEST

/* make deb with the build under test (nothing is rebuilt), then the package
 * unpacked into a scratch root as dpkg would, its ldconfig trigger run there,
 * and NCCL's by-name lookup answered from the cache it wrote. */
START_TEST(deb_puts_the_plugin_where_nccl_finds_it) {
  char *so = strdup(pt_test_so()), *dir = pt_test_tmpdir(), *out = NULL;
  const char *build = basename(dirname(so));
  ck_assert_int_eq(sh(&out,
                      "cd '%s' && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD=%s deb "
                      "2>&1 && ls %s/nccl-pcie-tuner_*.deb",
                      pt_test_srcdir(), build, build),
                   0);
  has(out, "lintian: no errors in ");
  char *last = NULL; /* the ls line: the package's path */
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) last = l;
  ck_assert_ptr_nonnull(last);
  char *pkg = NULL;
  ck_assert(asprintf(&pkg, "%s/%s", pt_test_srcdir(), last) > 0);
  free(out);
  /* The files, the trigger that refreshes the loader's cache, the depends. */
  ck_assert_int_eq(sh(&out, "dpkg-deb -c '%s' | awk '{print $6}'", pkg), 0);
  has(out, "./usr/lib/libnccl-tuner-pcie.so\n");
  has(out, "./usr/lib/libnccl-net-pcie.so\n");
  has(out, "./usr/bin/pcie-tune\n");
  has(out, "./usr/share/nccl-pcie-tuner/profiles/\n");
  has(out, "./usr/share/nccl-pcie-tuner/examples/example-8x-pcie.cfg\n");
  has(out, "./usr/share/doc/nccl-pcie-tuner/README.md\n");
  has(out, "./usr/share/doc/nccl-pcie-tuner/copyright\n");
  has(out, "./usr/share/man/man1/pcie-tune.1.gz\n");
  has(out, "./usr/share/lintian/overrides/nccl-pcie-tuner\n");
  free(out);
  ck_assert_int_eq(sh(&out, "dpkg-deb -I '%s' triggers control", pkg), 0);
  has(out, "activate-noawait ldconfig");
  has(out, "Depends: libc6 (>= ");
  ck_assert_msg(!strstr(out, "libconfig"), "%s", out);
  free(out);
  /* Unpacked and cached: as root, ldconfig -r ROOT is exactly what the
   * trigger runs, inside ROOT; otherwise the same scan with an explicit
   * cache file (paths then carry ROOT). */
  int root = geteuid() == 0;
  if (root)
    ck_assert_int_eq(sh(&out, "dpkg-deb -x '%s' '%s/root' && mkdir -p '%s/root/etc' && ldconfig -r '%s/root' && "
                              "ldconfig -C '%s/root/etc/ld.so.cache' -p",
                        pkg, dir, dir, dir, dir),
                     0);
  else
    ck_assert_int_eq(sh(&out, "dpkg-deb -x '%s' '%s/root' && ldconfig -C '%s/cache' -f /dev/null '%s/root/usr/lib' && "
                              "ldconfig -C '%s/cache' -p",
                        pkg, dir, dir, dir, dir),
                     0);
  char want[1200];
  snprintf(want, sizeof want, ") => %s%s/usr/lib/libnccl-tuner-pcie.so\n", root ? "" : dir, root ? "" : "/root");
  has(out, "\tlibnccl-tuner-pcie.so (libc6");
  has(out, want);
  has(out, "\tlibnccl-net-pcie.so (libc6");
  free(out);
  /* The plugin in ROOT/usr/lib finds ROOT/usr/share/nccl-pcie-tuner/profiles
   * (LIBDIR/../share, tuner/select.c): the package puts it there. */
  ck_assert_int_eq(sh(&out, "test -d '%s/root/usr/lib/../share/nccl-pcie-tuner/profiles' && echo ok", dir), 0);
  has(out, "ok");
  free(out);
  free(pkg);
  free(so);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_package");
  TCase *tc = tcase_create("package");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, plugin_needs_only_the_c_library);
  tcase_add_test(tc, dynamic_symbols_are_the_plugin_structs_only);
  tcase_add_test(tc, deb_puts_the_plugin_where_nccl_finds_it);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
