/* LL128 only from a screened profile, on every way into one (issue 28 §3):
 * an import of nccl-tests logs with an LL128 run and a hand-written
 * profile are left to NCCL where they would choose LL128, `check`, `show`
 * and `import` say so and what to run; `pcie-tune screen` through the
 * device double records a passing screen (the plugin, through dlopen,
 * then chooses LL128) or, with torn LL128 lines (PTDOUBLE_FAULTS tear), a
 * failing one (LL128 unusable, with the reason). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "pcie/profile.h"
#include "support/pt_test.h"

static char *dir;

static void setup(void) {
  pt_test_clear_double_env();
  dir = pt_test_tmpdir();
  pt_test_reset_tuner();
}
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* Hand-written, as a user copies times from nccl-tests: ring/ll128/2 is
 * the fastest at every size; nothing records a screen. */
static const char *hand =
    "version = 1;\nname = \"hand\";\nmatch = { nranks = 8; };\n"
    "provenance = { tool = \"hand\"; backend = \"nccl-tests\"; nccl_version = \"2.28.9\"; date = \"2026-12-05\"; "
    "mode = \"graph\"; };\n"
    "communicator = { channels = 8; };\n"
    "allreduce = { graph = { sizes = [ 32768L, 1048576L ]; nccl_default = ( 40.0, 100.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll128\"; channels = 2; latency = ( 20.0, 50.0 ); },\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 30.0, 90.0 ); } ); }; };\n";

/* Rules only: LL128 by hand. */
static const char *rules =
    "version = 1;\nname = \"rules\";\n"
    "provenance = { tool = \"hand\"; backend = \"none\"; nccl_version = \"any\"; date = \"2026-12-05\"; "
    "mode = \"both\"; };\n"
    "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 1048576L; algo = \"ring\"; "
    "proto = \"ll128\"; channels = 2; } );\n";

#define BOX "PTDOUBLE_BOX=gen5-8x-ll128"
#define TEAR "PTDOUBLE_FAULTS='tear:*/ll128/*@0-1073741824'"

/* pcie-tune screen as a user runs it, on the double's eight GPUs. */
static int screen(const char *env, const char *args, char **out, char **err) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s %s %s screen %s --gpus 0-7 --nccl-lib %s --ops 2 --warmup 0 "
           "--warmup-ms 0", dir, dir, env, pt_test_cli(), args, pt_test_double());
  return pt_test_run(cmd, out, err);
}

/* The plugin through dlopen, on the simulated NCCL host: its choice for an
 * 8-rank graph all-reduce of n bytes with LL128 enabled in NCCL's table. */
static void plugin_choice(const char *profile, size_t n, struct ph_choice *ch) {
  struct ph_plugin pl;
  struct ph_comm c;
  char err[512], *path = pt_test_path(dir, profile);
  float t[7][3];
  setenv("PCIE_TUNER_PROFILE", path, 1);
  free(path);
  ph_log_clear();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 7), ncclSuccess);
  pt_test_nccl_table(t, PT_ALLREDUCE, n, 8, 1);
  ph_decide(&c, PT_ALLREDUCE, n, 1, t, ch);
  ck_assert_int_eq(ch->rc, ncclSuccess);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
}

/* Unscreened: the plugin leaves LL128 to NCCL and says once why and what
 * to run; check warns (exit 0), show marks the rows. After a passing
 * screen written in place with --force, the plugin chooses ring/ll128. */
START_TEST(plugin_chooses_ll128_only_after_a_passing_screen) {
  char *out = NULL, *err = NULL;
  struct ph_choice ch;
  free(pt_test_write(dir, "hand.cfg", hand));
  plugin_choice("hand.cfg", 262144, &ch);
  ck_assert_msg(ch.proto != NCCL_PROTO_LL128, "LL128 chosen from an unscreened profile");
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "1 LL128 choice without a passing LL128 correctness screen"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "pcie-tune screen "), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "; the profile still decides"), 1); /* doctor: no refusal */

  int rc = pt_test_cli_run(dir, 60, &out, &err, "check hand.cfg");
  ck_assert_msg(rc == 0 && strstr(err, "hand.cfg: warning: 1 LL128 choice left to NCCL") &&
                    strstr(err, "pcie-tune screen hand.cfg --gpus LIST --out FILE"),
                "exit %d: %s", rc, err);
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 60, &out, &err, "show hand.cfg");
  ck_assert_msg(rc == 0 && strstr(out, "[ll128 unscreened: ring/ll128/2]") &&
                    strstr(out, "excluded: ring/ll128/2: no passing LL128 correctness screen recorded"),
                "%s%s", out, err);
  free(out);
  free(err);

  /* Nothing overwritten without --force. */
  rc = screen(BOX, "hand.cfg --out hand.cfg", &out, &err);
  ck_assert_msg(rc == 1 && strstr(err, "exists"), "exit %d: %s", rc, err);
  free(out);
  free(err);
  rc = screen(BOX, "hand.cfg --out hand.cfg --force", &out, &err);
  ck_assert_msg(rc == 0 && strstr(err, "LL128 screened (allreduce: ring/ll128/2; 64 replays"), "exit %d: %s", rc,
                err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "hand.cfg");
  ck_assert_int_eq(p->ll128_screen, PT_LL128_SCREENED);
  ck_assert_msg(strstr(p->prov.extra, "result = \"pass\"") && strstr(p->prov.extra, "replays = 64") &&
                    strstr(p->prov.extra, "sizes = [ 61440L, 61444L ]"), /* those inside 32 KiB..1 MiB */
                "%s", p->prov.extra);
  pt_test_free_profile(p);
  plugin_choice("hand.cfg", 262144, &ch);
  ck_assert_msg(ch.algo == NCCL_ALGO_RING && ch.proto == NCCL_PROTO_LL128 && ch.nchannels == 2,
                "after the screen: %d/%d/%d", ch.algo, ch.proto, ch.nchannels);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "LL128"), 0);

  /* Screened again (in place): one record, replaced, not a second one. */
  rc = screen(BOX, "hand.cfg --out hand.cfg --force -q", &out, &err);
  ck_assert_msg(rc == 0 && !err[0], "exit %d: %s", rc, err);
  free(out);
  free(err);
  p = pt_test_load_profile(dir, "hand.cfg");
  ck_assert_ptr_eq(strstr(strstr(p->prov.extra, "ll128_screen") + 1, "ll128_screen"), NULL);
  pt_test_free_profile(p);
}
END_TEST

/* Torn lines: the screen fails, the profile records LL128 unusable with
 * the reason (exit 1, written to a new file, the input untouched), and
 * the plugin never runs LL128 from it, not even NCCL's own. */
START_TEST(a_failed_screen_records_ll128_unusable) {
  char *out = NULL, *err = NULL;
  struct ph_choice ch;
  free(pt_test_write(dir, "rules.cfg", rules));
  int rc = screen(BOX " " TEAR, "rules.cfg --out torn.cfg", &out, &err);
  ck_assert_msg(rc == 1 && strstr(err, "LL128 failed its correctness screen: allreduce ring/ll128/2 at 61440 B: "
                                       "LL128 screen replay 2:") && strstr(err, "recorded as unusable"),
                "exit %d: %s", rc, err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "torn.cfg");
  ck_assert_int_eq(p->ll128_screen, PT_LL128_UNUSABLE);
  ck_assert_msg(strstr(p->prov.extra, "result = \"fail\"") && strstr(p->prov.extra, "reason = \"allreduce ring"),
                "%s", p->prov.extra);
  pt_test_free_profile(p);
  p = pt_test_load_profile(dir, "rules.cfg");
  ck_assert_int_eq(p->ll128_screen, PT_LL128_UNSCREENED);
  pt_test_free_profile(p);
  plugin_choice("torn.cfg", 262144, &ch);
  ck_assert_msg(ch.proto != NCCL_PROTO_LL128, "LL128 run on a box where it tears: %d/%d", ch.algo, ch.proto);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "LL128 failed its correctness screen on this box"), 1);
  rc = pt_test_cli_run(dir, 60, &out, &err, "show torn.cfg");
  ck_assert_msg(rc == 0 && strstr(out, "ll128: unusable on this box"), "%s%s", out, err);
  free(out);
  free(err);

  /* Without a fault the same rules pass, and the rule decides. */
  rc = screen(BOX, "rules.cfg --out ok.cfg", &out, &err);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(out);
  free(err);
  plugin_choice("rules.cfg", 262144, &ch);
  ck_assert_int_ne(ch.proto, NCCL_PROTO_LL128);
  plugin_choice("ok.cfg", 262144, &ch);
  ck_assert_msg(ch.algo == NCCL_ALGO_RING && ch.proto == NCCL_PROTO_LL128, "%d/%d", ch.algo, ch.proto);
}
END_TEST

/* import ends by saying what to run; a profile without LL128 has nothing
 * to screen (exit 0, nothing written); NCCL without LL128 (the double's
 * misdetected box, no NCCL_PROTO) screens nothing and writes nothing. */
START_TEST(import_says_what_to_run_and_nothing_to_screen) {
  char *out = NULL, *err = NULL, args[2048], *data = pt_test_path(pt_test_srcdir(), "test/data/nccltests");
  snprintf(args, sizeof args,
           "import --out imp.cfg %s/synth/ar8-eager-default.txt %s/synth/ar8-eager-ring-ll-4.txt "
           "--setting proto=ll128,algo=ring,channels=4 %s/synth/ar8-eager-two-runs.txt", data, data, data);
  free(data);
  int rc = pt_test_cli_run(dir, 60, &out, &err, "%s", args);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  const char *last = out + strlen(out) - 1;
  while (last > out && last[-1] != '\n') last--;
  ck_assert_msg(strstr(last, "imp.cfg: 1 LL128 choice left to NCCL") &&
                    strstr(last, "pcie-tune screen imp.cfg --gpus LIST --out FILE"),
                "the last line: %s", last);
  free(out);
  free(err);

  free(pt_test_write(dir, "plain.cfg", "version = 1;\nname = \"plain\";\nprovenance = { tool = \"hand\"; "
                                       "backend = \"none\"; nccl_version = \"any\"; date = \"2026-12-05\"; "
                                       "mode = \"both\"; };\nrules = ( { collective = \"allreduce\"; "
                                       "min_bytes = 0L; max_bytes = 4096L; algo = \"ring\"; proto = \"ll\"; } );\n"));
  rc = screen(BOX, "plain.cfg --out plain2.cfg", &out, &err);
  ck_assert_msg(rc == 0 && strstr(err, "holds no LL128 choice: nothing to screen, nothing written"), "exit %d: %s",
                rc, err);
  free(out);
  free(err);
  free(pt_test_write(dir, "rules.cfg", rules));
  rc = screen("PTDOUBLE_BOX=gen5-8x-dual-misdetect", "rules.cfg --out r2.cfg", &out, &err);
  ck_assert_msg(rc == 1 && strstr(err, "nothing screened, nothing written") && strstr(err, "NCCL_PROTO"),
                "exit %d: %s", rc, err);
  free(out);
  free(err);
  char *gone = pt_test_path(dir, "r2.cfg");
  FILE *f = fopen(gone, "r");
  ck_assert_ptr_null(f);
  free(gone);
}
END_TEST

int main(void) {
  pt_test_accept_foreign(); /* its hand-written profiles record no box */
  Suite *s = suite_create("cli_screen");
  TCase *t = tcase_create("screen");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 480); /* eight double ranks per screen, on a shared machine */
  tcase_add_test(t, plugin_chooses_ll128_only_after_a_passing_screen);
  tcase_add_test(t, a_failed_screen_records_ll128_unusable);
  tcase_add_test(t, import_says_what_to_run_and_nothing_to_screen);
  suite_add_tcase(s, t);
  return pt_test_main(s);
}
