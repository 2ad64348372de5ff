/* Issue 26 §3, as a user runs it: `pcie-tune profile --backend nccl`
 * measures the NCCL the engine loads. A Python environment with torch is
 * faked (a python3 on PATH whose sys.path holds torch/ and the
 * nvidia-nccl wheel's nvidia/nccl/lib/libnccl.so.2, here the device
 * double); VLLM_NCCL_SO_PATH names the NCCL-version double. Without
 * --nccl-lib the sweep runs on the engine's NCCL; another minor version
 * than the engine's is refused before anything is measured, unless
 * --force; the profile records the path and version measured. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/pt_test.h"

static char *dir, *out, *err;
static char dbl[1200], verdbl[1200];

static void setup(void) {
  char so[1024], *p;
  dir = pt_test_tmpdir();
  out = err = NULL;
  snprintf(so, sizeof so, "%s", pt_test_so());
  *strrchr(so, '/') = 0;
  snprintf(dbl, sizeof dbl, "%s", pt_test_double());
  snprintf(verdbl, sizeof verdbl, "%s/test/ncclver_double/libnccl-double-version.so", so);
  /* site/torch/__init__.py, site/nvidia/nccl/lib/libnccl.so.2 -> the double,
   * and bin/python3 printing site as its sys.path. */
  char *cmd = NULL;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && mkdir -p bin site/torch site/nvidia/nccl/lib && : > site/torch/__init__.py && "
                     "ln -s '%s' site/nvidia/nccl/lib/libnccl.so.2 && "
                     "printf '#!/bin/sh\\necho %s/site\\n' > bin/python3 && chmod +x bin/python3",
                     dir, dbl, dir) > 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
  (void)p;
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

static int profile(const char *env, const char *args) {
  char *cmd = NULL;
  free(out);
  free(err);
  ck_assert(asprintf(&cmd,
                     "cd '%s' && TMPDIR='%s' PATH='%s/bin':\"$PATH\" PCIE_TUNE_PYTHON=python3 PTDOUBLE_BOX=consumer-2x %s timeout 120 '%s' "
                     "profile --backend nccl --gpus 0-1 --ops 1 --warmup-ms 0 --sizes 4K:8K --algos ring "
                     "--protos simple --channels 1 --reps 2 %s",
                     dir, dir, dir, env, pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  free(cmd);
  return rc;
}

START_TEST(auto_measures_the_engines_nccl) {
  ck_assert_msg(profile("", "--out p.cfg") == 0, "%s", err);
  ck_assert_msg(strstr(err, "measuring NCCL 2.28.9 from ") && strstr(err, "/site/nvidia/nccl/lib/libnccl.so.2") &&
                    strstr(err, "the engine loads NCCL 2.28.9 from ") &&
                    strstr(err, "(torch's wheel, the nvidia-nccl wheel in "),
                "%s", err);
  char *cfg = NULL, *cmd = NULL, *e2 = NULL;
  ck_assert(asprintf(&cmd, "cat '%s/p.cfg'", dir) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &cfg, &e2), 0);
  /* The path measured (the double, resolved) and its version. */
  ck_assert_msg(strstr(cfg, "libnccl-double-cudart-nccl.so") && strstr(cfg, "nccl_version = \"2.28.9\""), "%s",
                cfg);
  /* --resume would use the same library: the resolved path is recorded. */
  ck_assert_msg(strstr(cfg, "--nccl-lib ") && strstr(cfg, "/site/nvidia/nccl/lib/libnccl.so.2"), "%s", cfg);
  free(cfg), free(cmd), free(e2);
}
END_TEST

START_TEST(another_minor_than_the_engines_is_refused_without_force) {
  char env[1400], args[1400];
  snprintf(env, sizeof env, "VLLM_NCCL_SO_PATH='%s' PTDOUBLE_NCCL_VERSION=22709", verdbl);
  snprintf(args, sizeof args, "--nccl-lib '%s' --out q.cfg", dbl);
  ck_assert_int_eq(profile(env, args), 1);
  ck_assert_msg(strstr(err, "would measure NCCL 2.28.9") && strstr(err, "but the engine loads NCCL 2.27.9") &&
                    strstr(err, "(VLLM_NCCL_SO_PATH)") &&
                    strstr(err, "the plugin refuses a profile of another minor version at the job's first init") &&
                    strstr(err, "or --force"),
                "%s", err);
  char *q = pt_test_path(dir, "q.cfg");
  ck_assert_int_ne(access(q, F_OK), 0);
  snprintf(args, sizeof args, "--nccl-lib '%s' --force --out q.cfg", dbl);
  ck_assert_msg(profile(env, args) == 0, "%s", err);
  ck_assert_int_eq(access(q, F_OK), 0);
  free(q);
  /* The same minor (a patch apart) is no reason to refuse. */
  snprintf(env, sizeof env, "VLLM_NCCL_SO_PATH='%s' PTDOUBLE_NCCL_VERSION=22807", verdbl);
  snprintf(args, sizeof args, "--nccl-lib '%s' --out r.cfg", dbl);
  ck_assert_msg(profile(env, args) == 0, "%s", err);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli-nccl-pick");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, auto_measures_the_engines_nccl);
  tcase_add_test(tc, another_minor_than_the_engines_is_refused_without_force);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
