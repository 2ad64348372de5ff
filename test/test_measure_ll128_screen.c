/* The LL128 correctness screen (issue 28 §3, measure/screen.h) through the
 * device double: a torn-line fault (PTDOUBLE_FAULTS tear) that the ordinary
 * check cannot see, because the same inputs make the stale words right,
 * fails the screen; the profile records it, LL128 is never measured or
 * chosen on that box; without the fault the screen passes and is recorded,
 * and the plugin (driven by `pcie-tune simulate`) chooses LL128 only from
 * the screened profile. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/backend_nccl.h"
#include "measure/screen.h"
#include "nccl/common.h"
#include "support/pt_test.h"

static char *dir, dbl[1200];

static void setup(void) {
  pt_test_clear_double_env();
  dir = pt_test_tmpdir();
  snprintf(dbl, sizeof dbl, "%s", pt_test_double());
}
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* The misdetected box with LL128 opted in (its view enables it). */
#define BOX "PTDOUBLE_BOX=gen5-8x-ll128"
#define TEAR "PTDOUBLE_FAULTS='tear:*/ll128/*@0-1073741824'"
#define SWEEP "--gpus 0-7 --ops 2 --reps 1 --screen-reps 1 --algos ring --protos ll,ll128 --channels 2 " \
              "--sizes 4096,61440,1966080"

static int profile(char **out, char **err, const char *env, const char *outfile) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s %s %s profile --backend nccl --nccl-lib %s --warmup-ms 0 %s --out %s",
           dir, dir, env, pt_test_cli(), dbl, SWEEP, outfile);
  return pt_test_run(cmd, out, err);
}

static size_t ll128_cands(const struct pt_profile *p) {
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  size_t n = 0;
  ck_assert_ptr_nonnull(s);
  for (size_t k = 0; k < s->ncand; k++) n += s->cand[k].proto == NCCL_PROTO_LL128;
  return n;
}

/* The backend itself: the same torn candidate passes an ordinary
 * measurement (stale words equal the new ones) and fails the screen at
 * its second replay, the first with the other input set. */
START_TEST(screen_catches_what_the_ordinary_check_misses) {
  struct pt_backend be = {0};
  struct pt_nccl_opts no;
  struct pt_error_rec e;
  static double samples[PT_SCREEN_REPLAYS];
  setenv("PTDOUBLE_BOX", "gen5-8x-ll128", 1);
  setenv("PTDOUBLE_FAULTS", "tear:*/ll128/*@0-1073741824", 1);
  pt_nccl_opts_default(&no);
  const char *args[] = {"--gpus", "0-7", "--nccl-lib", dbl, "--ops", "2", "--warmup", "0", "--warmup-ms", "0", NULL};
  no.gpus = "0-7";
  no.args = args;
  no.exe = pt_test_cli();
  no.ops = 2;
  no.warmup = 0;
  no.warmup_ms = 0;
  int rc = pt_backend_nccl_open(&be, &no, &e);
  unsetenv("PTDOUBLE_FAULTS");
  unsetenv("PTDOUBLE_BOX");
  ck_assert_msg(rc == 0, "%s", e.msg);
  struct pt_measure_req req = {PT_ALLREDUCE, PT_MODE_GRAPH, 61444, 0, NCCL_ALGO_RING, NCCL_PROTO_LL128, 2, 0, 3, 0, 0};
  struct pt_measure_res res = {PT_PT_OK, ""};
  ck_assert_int_eq(be.measure(be.self, &req, samples, &res, &e), 0);
  ck_assert_msg(res.state == PT_PT_OK, "the ordinary check saw the tear (%d: %s)", res.state, res.detail);
  req.screen = 1;
  req.reps = PT_SCREEN_REPLAYS;
  ck_assert_int_eq(be.measure(be.self, &req, samples, &res, &e), 0);
  ck_assert_msg(res.state == PT_PT_WRONG, "the screen missed the tear (%d: %s)", res.state, res.detail);
  ck_assert_msg(strstr(res.detail, "LL128 screen replay 2:"), "%s", res.detail);
  /* Simple is not torn: the screen passes it. */
  req.proto = NCCL_PROTO_SIMPLE;
  ck_assert_int_eq(be.measure(be.self, &req, samples, &res, &e), 0);
  ck_assert_msg(res.state == PT_PT_OK, "%d: %s", res.state, res.detail);
  be.close(be.self);
}
END_TEST

/* profile as a user runs it: with torn lines the screen fails, the profile
 * says why, and no LL128 candidate is measured; show says LL128 is
 * unusable. Without: the screen passes and is recorded. */
START_TEST(profile_records_the_screen) {
  char *out = NULL, *err = NULL;
  int rc = profile(&out, &err, BOX " " TEAR, "torn.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "LL128 failed its correctness screen: ring/ll128/2 at 61440 B: LL128 screen replay 2:"),
                "%s", err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "torn.cfg");
  ck_assert_int_eq(p->ll128_screen, PT_LL128_UNUSABLE);
  ck_assert_uint_eq(ll128_cands(p), 0);
  ck_assert_msg(strstr(p->prov.extra, "result = \"fail\"") && strstr(p->prov.extra, "replays = 64") &&
                    strstr(p->prov.extra, "sizes = [ 61440L, 61444L, 1966080L ]"),
                "%s", p->prov.extra);
  pt_test_free_profile(p);
  rc = pt_test_cli_run(dir, 60, &out, &err, "show torn.cfg");
  ck_assert_msg(rc == 0 && strstr(out, "ll128: unusable on this box"), "%s%s", out, err);
  free(out);
  free(err);

  rc = profile(&out, &err, BOX, "ok.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(out);
  free(err);
  p = pt_test_load_profile(dir, "ok.cfg");
  ck_assert_int_eq(p->ll128_screen, PT_LL128_SCREENED);
  ck_assert_uint_gt(ll128_cands(p), 0);
  ck_assert_msg(strstr(p->prov.extra, "result = \"pass\"") && strstr(p->prov.extra, "candidates = \"ring/ll128/2\""),
                "%s", p->prov.extra);
  pt_test_free_profile(p);
}
END_TEST

/* The plugin, driven over the box by simulate: from the screened profile
 * it runs LL128 where it measured fastest; the same profile without its
 * screen record (a sweep from before screening) never gets LL128. */
START_TEST(plugin_chooses_ll128_only_from_a_screened_profile) {
  char *out = NULL, *err = NULL;
  ck_assert_int_eq(profile(&out, &err, BOX, "ok.cfg"), 0);
  free(out);
  free(err);
  char path[1200], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/ok.cfg", dir);
  FILE *f = fopen(path, "r"), *m = open_memstream(&text, &len);
  char line[8192];
  while (fgets(line, sizeof line, f))
    if (!strstr(line, "ll128_screen")) fputs(line, m);
  fclose(f);
  fclose(m);
  free(pt_test_write(dir, "unscreened.cfg", text));
  free(text);
  static const char sim[] = "simulate %s --box gen5-8x-ll128 --graph --bytes-per-token 15360 --tokens 4,128 --calls 1";
  int rc = pt_test_cli_run(dir, 60, &out, &err, sim, "ok.cfg");
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_msg(strstr(out, "ring/ll128/2"), "the screened profile never runs LL128:\n%s", out);
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 60, &out, &err, sim, "unscreened.cfg");
  ck_assert_msg(rc == 0, "%s", err);
  /* The tuned column: only NCCL's own default may still be LL128 there. */
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
    char a[64] = "", b[64] = "";
    if (sscanf(l, "%*s %*s %63s %63s", a, b) == 2 || sscanf(l, "%*s %63s %63s", a, b) == 2)
      ck_assert_msg(!strstr(b, "ll128"), "unscreened profile ran LL128: %s", l);
  }
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_ll128_screen");
  TCase *t = tcase_create("screen");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 240);
  tcase_add_test(t, screen_catches_what_the_ordinary_check_misses);
  tcase_add_test(t, profile_records_the_screen);
  tcase_add_test(t, plugin_chooses_ll128_only_from_a_screened_profile);
  suite_add_tcase(s, t);
  return pt_test_main(s);
}
