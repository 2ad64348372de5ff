/* All-gather is measured and tuned with NCCL's own channel count (issue 17
 * §3): NCCL does not clamp the tuner's count there (the AllGatherV path,
 * scheduler/allgatherv_sched.cc), so the plugin never writes one and ranks
 * only candidates measured with channels = 0. `pcie-tune profile --backend
 * sim` (in process and --isolate) sweeps all-gather so, the built plugin
 * through dlopen on the simulated host tunes all-gather from that profile
 * where it wins, and `show` prints the count as NCCL's. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "pcie/profile.h"
#include "pcie/sim_box.h"
#include "sim/simeval.h"
#include "support/pt_test.h"

#define BOX "gen5-8x-dual-misdetect"

static char *dir;

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static char *cli(const char *args) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err, "%s", args);
  ck_assert_msg(rc == 0, "'%s': exit %d: %s", args, rc, err);
  free(err);
  return out;
}

/* Sweeps BOX's all-reduce and all-gather into dir/name and checks the
 * channel keys: all-gather's candidates all at NCCL's count, all-reduce's
 * at the counts asked for. */
static void sweep(const char *name, const char *extra) {
  char args[512], path[1200];
  struct pt_error_rec e;
  struct pt_profile p = {0};
  snprintf(args, sizeof args, "profile --backend sim --box " BOX " --collectives allreduce,allgather --quiet %s --out %s",
           extra, name);
  free(cli(args));
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ck_assert_msg(pt_profile_load(&p, path, &e) == 0, "%s: %s", path, e.msg);
  const struct pt_series *ag = p.series[PT_ALLGATHER][PT_MODE_GRAPH], *ar = p.series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(ag);
  ck_assert_ptr_nonnull(ar);
  ck_assert_uint_gt(ag->ncand, 0);
  for (size_t k = 0; k < ag->ncand; k++)
    ck_assert_msg(ag->cand[k].channels == 0, "%s: all-gather %s/%s measured with %d channels", name,
                  pt_algo_name(ag->cand[k].algo), pt_proto_name(ag->cand[k].proto), ag->cand[k].channels);
  for (size_t k = 0; k < ar->ncand; k++) ck_assert_int_gt(ar->cand[k].channels, 0);
  pt_profile_release(&p);
}

/* Through the built plugin on the simulated host: every all-gather call
 * leaves *nChannels alone, is never slower than NCCL's default, and is
 * tuned (by at least 1.2x) where LL wins over NCCL's Simple. */
static void tuned_through_plugin(const char *name) {
  const struct pt_box *box = pt_box_builtin(BOX);
  struct ph_plugin pl;
  struct ph_comm comm;
  char path[1200], err[512], sysroot[4096];
  int tuned = 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert_msg(ph_box_present(box, sysroot, sizeof sysroot, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&comm, &pl, (size_t)box->nranks, 1, 1), 0);
  ph_box_withdraw(sysroot);
  for (uint64_t n = 1024; n <= (64u << 20); n *= 2) {
    float table[7][3];
    struct ph_choice ch;
    struct pt_sim_eval ev;
    pt_box_nccl_table(box, PT_ALLGATHER, n, table);
    ph_decide(&comm, PT_ALLGATHER, (size_t)n, 1, table, &ch);
    ck_assert_int_eq(ch.rc, 0);
    ck_assert_msg(ch.nchannels == 0, "%llu B: the plugin wrote %d channels for an all-gather",
                  (unsigned long long)n, ch.nchannels);
    pt_sim_eval(&comm, box, PT_ALLGATHER, PT_MODE_GRAPH, n, &ev);
    ck_assert_msg(ev.tuned.us <= ev.nccl.us * 1.0001, "%llu B: tuned %.2f us, NCCL %.2f us", (unsigned long long)n,
                  ev.tuned.us, ev.nccl.us);
    if (n == 4096 || n == 65536)
      ck_assert_msg(ev.nccl.us / ev.tuned.us >= 1.2, "%llu B: all-gather not tuned (%d/%d, %.2f us vs NCCL %.2f us)",
                    (unsigned long long)n, ev.tuned.algo, ev.tuned.proto, ev.tuned.us, ev.nccl.us);
    tuned += ev.tuned.algo != ev.nccl.algo || ev.tuned.proto != ev.nccl.proto;
  }
  ck_assert_int_gt(tuned, 0);
  ph_comm_finalize(&comm);
  ph_plugin_close(&pl);
  unsetenv("PCIE_TUNER_PROFILE");
}

START_TEST(allgather_is_swept_and_tuned_with_nccls_count) {
  sweep("p.cfg", "");
  tuned_through_plugin("p.cfg");
  /* show: the all-gather choice runs on NCCL's count. */
  char *out = cli("show p.cfg --collective allgather");
  ck_assert_msg(strstr(out, "ring/ll ") && strstr(out, "NCCL's"), "%s", out);
  ck_assert_msg(!strstr(out, "ring/ll/0"), "show names a channel count of 0: %s", out);
  free(out);
}
END_TEST

START_TEST(isolated_workers_measure_nccls_count_too) {
  sweep("iso.cfg", "--isolate");
  tuned_through_plugin("iso.cfg");
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_allgather");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, allgather_is_swept_and_tuned_with_nccls_count);
  tcase_add_test(tc, isolated_workers_measure_nccls_count_too);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
