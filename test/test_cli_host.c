/* Issue 26 §2, as a user runs it: a profile imported from nccl-tests logs
 * records the box the logs give, and import, check and show end with one
 * line saying whether the plugin will use it on this host (the plugin's own
 * init checks: the host through PCIE_TUNER_SYSFS_ROOT, NCCL through the
 * loader's libnccl.so.2, here the version double); check --refused-is-error
 * and check DIR --nranks N act on it; import --box-here records this host. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/hostinfo.h"
#include "pcie/sim_box.h"
#include "pcie/sim_fp.h"
#include "support/pt_test.h"

static char *dir, *out, *err;
static char env[4096]; /* the environment prefix of every command */
static char double_so[4200]; /* the version double, as an engine's own NCCL */

/* GPUs at 0000:41:00.0 .. 0000:48:00.0, where the synthetic logs' device
 * lines put them (test/data/nccltests/synth): gen5-8x-dual-misdetect's
 * tree with its first four GPUs renamed. */
static void present(const char *root, int right) {
  struct pt_box_fp fp;
  char e[512];
  ck_assert_int_eq(pt_box_fingerprint(pt_box_builtin("gen5-8x-dual-misdetect"), &fp), 0);
  for (int i = 0; right && i < 4; i++) snprintf(fp.gpu[i].bus_id, PT_FP_ID_LEN, "0000:%02x:00.0", 0x45 + i);
  pt_fp_sort(&fp);
  ck_assert_int_eq(mkdir(root, 0755), 0);
  ck_assert_msg(pt_sysfs_write(&fp, root, e, sizeof e) == 0, "%s", e);
}

static void setup(void) {
  dir = pt_test_tmpdir();
  out = err = NULL;
  /* The loader's libnccl.so.2 is the version double, reporting 2.28.9
   * (the synthetic logs' NCCL). */
  char so[4096], *lib = pt_test_path(dir, "lib");
  snprintf(so, sizeof so, "%s", pt_test_so());
  *strrchr(so, '/') = 0;
  ck_assert_int_eq(mkdir(lib, 0755), 0);
  char *link = pt_test_path(lib, "libnccl.so.2"), target[4200];
  snprintf(target, sizeof target, "%s/test/ncclver_double/libnccl-double-version.so", so);
  ck_assert_int_eq(symlink(target, link), 0);
  snprintf(double_so, sizeof double_so, "%s", target);
  char *r = pt_test_path(dir, "right"), *o = pt_test_path(dir, "other"), *n = pt_test_path(dir, "none");
  present(r, 1);
  present(o, 0);
  /* A host whose PCI bus holds no NVIDIA GPU. */
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "mkdir -p '%s/sys/bus/pci/devices'", n) > 0);
  ck_assert_int_eq(system(cmd), 0);
  free(cmd);
  free(r), free(o), free(n);
  snprintf(env, sizeof env, "env -u PCIE_TUNER_ACCEPT_FOREIGN LD_LIBRARY_PATH='%s' PTDOUBLE_NCCL_VERSION=22809", lib);
  free(link);
  free(lib);
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

/* pcie-tune ARGS in dir with the host at sysfs root ROOT (a subdirectory). */
static int on_with(const char *more, const char *root, const char *args) {
  char *cmd = NULL;
  free(out);
  free(err);
  ck_assert(asprintf(&cmd, "cd '%s' && %s %s PCIE_TUNER_SYSFS_ROOT='%s/%s' timeout 60 '%s' %s", dir, env,
                     more, dir, root, pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  free(cmd);
  return rc;
}

static int on(const char *root, const char *args) { return on_with("", root, args); }

/* import --out p.cfg of NCCL's default and ring/LL/4 from test/data/nccltests/SET. */
static void import_set(const char *set) {
  char args[4096];
  snprintf(args, sizeof args, "import --out p.cfg '%s/test/data/nccltests/%s/ar8-eager-default.txt' "
                              "'%s/test/data/nccltests/%s/ar8-eager-ring-ll-4.txt'",
           pt_test_srcdir(), set, pt_test_srcdir(), set);
  ck_assert_msg(on("right", args) == 0, "%s", err);
}

START_TEST(import_check_show_say_whether_the_plugin_uses_it) {
  import_set("synth");
  ck_assert_msg(strstr(out, "p.cfg: on this host, with NCCL 2.28.9 from ") &&
                    strstr(out, "libnccl.so.2: the plugin uses this profile (NCCL 2.28.9, box compared on: "
                                "bus ids (as nccl-tests gave them: domain:bus:device)"),
                "%s", out);
  ck_assert_int_eq(on("right", "check p.cfg"), 0);
  const char *last = strstr(out, "  on this host");
  ck_assert_msg(last && strstr(last, "the plugin uses this profile") && !strchr(last + 1, '\n')[1],
                "not the last line:\n%s", out);
  ck_assert_int_eq(on("right", "show p.cfg"), 0);
  ck_assert_msg(strstr(out, "\non this host, with NCCL 2.28.9") && strstr(out, "uses this profile"), "%s", out);
  /* Another box, a host without GPUs, another NCCL: refused, why, what to do. */
  ck_assert_int_eq(on("other", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "the plugin refuses this profile: measured on another box: 4 measured GPUs are "
                            "not on this host (0000:45:00, 0000:46:00, 0000:47:00, ...)") &&
                    strstr(out, "measure this box with pcie-tune profile, or, if the logs came from this "
                                "box, import them here with --box-here"),
                "%s", out);
  ck_assert_int_eq(on("other", "check --refused-is-error p.cfg"), 1);
  ck_assert_int_eq(on("right", "check --refused-is-error p.cfg"), 0);
  ck_assert_int_eq(on("none", "show p.cfg"), 0);
  ck_assert_msg(strstr(out, "refuses this profile: measured on another box: 8 measured GPUs are not on this host"),
                "%s", out);
  ck_assert_int_eq(on_with("PTDOUBLE_NCCL_VERSION=23007", "right", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "with NCCL 2.30.7 from") &&
                    strstr(out, "refuses this profile: measured with NCCL 2.28, this process runs NCCL 2.30.7; "
                                "measure with the NCCL the job loads"),
                "%s", out);
}
END_TEST

/* check DIR --nranks N: the profile the selection picks, then the host
 * check; refused there, no profile (it named one the plugin refuses). */
START_TEST(check_dir_nranks_applies_the_host_check) {
  import_set("synth");
  char *d = pt_test_path(dir, "profiles"), *from = pt_test_path(dir, "p.cfg"), *to = pt_test_path(d, "p.cfg");
  ck_assert_int_eq(mkdir(d, 0755), 0);
  ck_assert_int_eq(rename(from, to), 0);
  free(d), free(from), free(to);
  ck_assert_int_eq(on("right", "check profiles --nranks 8"), 0);
  ck_assert_msg(strstr(out, "result: profiles/p.cfg") && strstr(out, "the plugin uses this profile") &&
                    !strstr(out, "result on this host"),
                "%s", out);
  ck_assert_int_eq(on("none", "check profiles --nranks 8"), 1);
  ck_assert_msg(strstr(out, "result: profiles/p.cfg") &&
                    strstr(out, "refuses this profile: measured on another box: 8 measured GPUs") &&
                    strstr(out, "result on this host: no profile; the plugin logs a WARN and leaves this "
                                "communicator to NCCL"),
                "%s", out);
}
END_TEST

/* import --box-here records this host's box (the plugin's reader: model,
 * link, NUMA node, tree, every GPU), checked against the logs' GPUs;
 * refused on a host without NVIDIA GPUs and on one without the logs' GPUs. */
START_TEST(import_box_here) {
  char args[4096];
  snprintf(args, sizeof args, "import --box-here --out h.cfg '%s/test/data/nccltests/synth/ar8-eager-default.txt' "
                              "'%s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt'",
           pt_test_srcdir(), pt_test_srcdir());
  ck_assert_msg(on("right", args) == 0, "%s", err);
  ck_assert_msg(strstr(out, "the plugin uses this profile") && !strstr(out, "box compared on"), "%s", out);
  ck_assert_int_eq(on("right", "check h.cfg"), 0);
  ck_assert_msg(strstr(out, "measured on: 8 GPUs 10de:f078") && strstr(out, "NUMA nodes 1, 0"), "%s", out);
  char *h = pt_test_path(dir, "h.cfg");
  ck_assert_int_eq(unlink(h), 0);
  free(h);
  ck_assert_int_eq(on("none", args), 1);
  ck_assert_msg(strstr(err, "--box-here: this host has no NVIDIA GPU") && !strstr(out, "h.cfg"), "%s", err);
  ck_assert_int_eq(on("other", args), 1);
  ck_assert_msg(strstr(err, "--box-here: the logs did not run on this host's GPUs (4 measured GPUs are not on "
                            "this host (0000:45:00, 0000:46:00, 0000:47:00, ...)"),
                "%s", err);
}
END_TEST

/* The NCCL the engine loads, not the loader's: vLLM loads VLLM_NCCL_SO_PATH
 * (else torch's wheel), often another version than the libnccl.so.2 a
 * program linked against NCCL gets. check judges the engine's and says so;
 * a VLLM_NCCL_SO_PATH that cannot be loaded is named. The loader's NCCL is
 * kept out of the way (LD_LIBRARY_PATH empty), so only the engine's can
 * give 2.30.7 here. */
START_TEST(check_judges_the_nccl_the_engine_loads) {
  char more[4400];
  import_set("synth");
  snprintf(more, sizeof more, "LD_LIBRARY_PATH= PTDOUBLE_NCCL_VERSION=23007 VLLM_NCCL_SO_PATH='%s'", double_so);
  ck_assert_int_eq(on_with(more, "right", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "on this host, with NCCL 2.30.7 from ") &&
                    strstr(out, "(the engine's NCCL: VLLM_NCCL_SO_PATH): the plugin refuses this profile: "
                                "measured with NCCL 2.28, this process runs NCCL 2.30.7; measure with the NCCL "
                                "the job loads"),
                "%s", out);
  ck_assert_int_eq(on_with(more, "right", "check --refused-is-error p.cfg"), 1);
  ck_assert_int_eq(on_with("VLLM_NCCL_SO_PATH=/nonexistent/libnccl.so.2", "right", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "(VLLM_NCCL_SO_PATH=/nonexistent/libnccl.so.2 cannot be loaded: vLLM will not "
                            "start with it; this is the loader's)"),
                "%s", out);
}
END_TEST

/* The settings the engine sets: logs of nccl-tests run without vLLM's and
 * SGLang's NCCL_CUMEM_ENABLE=0 (their nccl_env records the job's NCCL_*
 * variables) are used, and check says that in those engines' jobs the
 * plugin warns, and how to measure for them; a shell that sets the
 * variable itself (the engines keep it) hears nothing about it. */
START_TEST(check_names_the_settings_engines_set) {
  import_set("info");
  ck_assert_int_eq(on("right", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "the plugin uses this profile") &&
                    strstr(out, "; engines set what this measurement did not have (vLLM NCCL_CUMEM_ENABLE=0, "
                                "SGLang NCCL_CUMEM_ENABLE=0 NCCL_NVLS_ENABLE=0): in their jobs the plugin warns "
                                "that it differs and still decides; for such a job, measure under the same "
                                "(pcie-tune profile --engine"),
                "%s", out);
  ck_assert_int_eq(on_with("NCCL_CUMEM_ENABLE=0", "right", "check p.cfg"), 0);
  ck_assert_msg(strstr(out, "(SGLang NCCL_NVLS_ENABLE=0)") && !strstr(out, "vLLM NCCL_CUMEM"), "%s", out);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli-host");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, import_check_show_say_whether_the_plugin_uses_it);
  tcase_add_test(tc, check_dir_nranks_applies_the_host_check);
  tcase_add_test(tc, import_box_here);
  tcase_add_test(tc, check_judges_the_nccl_the_engine_loads);
  tcase_add_test(tc, check_names_the_settings_engines_set);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
