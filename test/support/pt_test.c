/* Helpers shared by the Check suites (see pt_test.h). */
#include "pt_test.h"

#include <check.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pcie/host.h"
#include "pcie/nccl_model.h"
#include "pcie/profile.h"

static const char *env_or_abort(const char *name) {
  const char *v = getenv(name);
  ck_assert_msg(v && v[0], "%s is not set: run the suites through `make test`", name);
  return v;
}

const char *pt_test_so(void) { return env_or_abort("PCIE_TUNER_SO"); }
const char *pt_test_cli(void) { return env_or_abort("PCIE_TUNE"); }

const char *pt_test_double(void) {
  static char path[PATH_MAX];
  const char *so = pt_test_so(), *slash = strrchr(so, '/');
  snprintf(path, sizeof path, "%.*s/test/double/libnccl-double-cudart-nccl.so", slash ? (int)(slash - so) : 1,
           slash ? so : ".");
  return path;
}
const char *pt_test_srcdir(void) { return env_or_abort("PT_SRCDIR"); }

char *pt_test_exports(void) {
  char *cmd = NULL, *out = NULL;
  ck_assert(asprintf(&cmd, "grep -v '^#' '%s/mk/exports.txt' | grep . | LC_ALL=C sort", pt_test_srcdir()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, NULL), 0);
  ck_assert_msg(strstr(out, "ncclTunerPlugin_v"), "mk/exports.txt lists no tuner: %s", out);
  free(cmd);
  return out;
}

char *pt_test_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/pt-test-XXXXXX", base && base[0] ? base : "/tmp") > 0);
  ck_assert_ptr_nonnull(mkdtemp(p));
  return p;
}

char *pt_test_write(const char *dir, const char *name, const char *text) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  ck_assert_int_eq(fclose(f), 0);
  return p;
}

void pt_test_rmtree(const char *dir) {
  char *cmd = NULL;
  if (!dir) return;
  ck_assert(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
}

void pt_test_use_example_profile(void) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  setenv("PCIE_TUNER_PROFILE", p, 1);
  free(p);
}

void pt_test_use_profile(const char *dir, const char *name, const char *text) {
  char *p = pt_test_write(dir, name, text);
  setenv("PCIE_TUNER_PROFILE", p, 1);
  free(p);
}

void pt_test_reset_tuner(void) {
  static const char *const vars[] = {"PCIE_TUNER_PROFILE", "PCIE_TUNER_TRACE", "NCCL_PROTO", "NCCL_ALGO",
                                     "NCCL_MAX_NCHANNELS"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
  ph_log_clear();
}

struct pt_profile *pt_test_load_profile(const char *dir, const char *name) {
  char *path = pt_test_path(dir, name);
  struct pt_error_rec e;
  struct pt_profile *p = calloc(1, sizeof *p);
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(pt_profile_load(p, path, &e) == 0, "%s: %s", path, e.msg);
  free(path);
  return p;
}

void pt_test_free_profile(struct pt_profile *p) {
  pt_profile_release(p);
  free(p);
}

void pt_test_nccl_table(float t[7][3], int coll, size_t nbytes, int nranks, int ll128) {
  struct pt_nccl_params p;
  pt_nccl_params_default(&p, nranks);
  p.ll128_enabled = ll128;
  pt_nccl_cost_table(&p, coll, nbytes, 1, t);
}

static char *slurp(FILE *f) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  ck_assert_ptr_nonnull(m);
  rewind(f);
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, m);
  fclose(m);
  return buf;
}

int pt_test_run(const char *cmd, char **out, char **err) {
  FILE *fo = tmpfile(), *fe = tmpfile();
  ck_assert(fo && fe);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  char *o = slurp(fo), *e = slurp(fe);
  fclose(fo);
  fclose(fe);
  if (out) *out = o;
  else free(o);
  if (err) *err = e;
  else free(e);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int accept_foreign;

void pt_test_accept_foreign(void) { accept_foreign = 1; }

int pt_test_main(Suite *s) {
  if (accept_foreign) setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  else unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  /* profile --nccl-lib auto asks this machine's Python for torch's NCCL and
   * refuses another minor version than the double's: the suites measure
   * the doubles, so no engine NCCL is looked up unless a test asks for one
   * (test_cli_nccl_pick). */
  setenv("PCIE_TUNE_PYTHON", "", 1);
  unsetenv("VLLM_NCCL_SO_PATH");
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

int pt_test_cli_run(const char *dir, unsigned guard_s, char **out, char **err, const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  ck_assert(vasprintf(&args, fmt, ap) > 0);
  va_end(ap);
  ck_assert(asprintf(&cmd, "cd '%s' && TMPDIR='%s' PCIE_TUNER_SO='%s' timeout %u '%s' %s", dir, dir,
                     pt_test_so(), guard_s, pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  free(args);
  return rc;
}

int pt_test_cli_rerun(const char *dir, unsigned guard_s, char **out, char **err, const char *fmt, ...) {
  char *args = NULL;
  va_list ap;
  va_start(ap, fmt);
  ck_assert(vasprintf(&args, fmt, ap) > 0);
  va_end(ap);
  free(*out);
  free(*err);
  *out = *err = NULL;
  int rc = pt_test_cli_run(dir, guard_s, out, err, "%s </dev/null", args);
  free(args);
  return rc;
}

char *pt_test_path(const char *dir, const char *name) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

double pt_test_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void pt_test_interrupt(pid_t pid) {
  double t0 = pt_test_now_s();
  ck_assert_int_eq(kill(pid, SIGINT), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  double took = pt_test_now_s() - t0;
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x", status);
  ck_assert_msg(took < 5, "took %.1f s to stop", took);
}

void pt_test_clear_double_env(void) {
  extern char **environ;
  char names[32][64];
  size_t n = 0;
  for (char **e = environ; *e && n < 32; e++)
    if (!strncmp(*e, "PTDOUBLE_", 9)) snprintf(names[n++], sizeof names[0], "%.*s", (int)strcspn(*e, "="), *e);
  for (size_t i = 0; i < n; i++) unsetenv(names[i]);
}
