/* pcie-tune doctor, run as a user runs it, over NCCL debug logs written in
 * NCCL's own formats (test/data/ncclog/README.md says where each comes
 * from), and over the log lines `simulate` prints for the real plugin. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

struct result {
  int rc;
  char *out, *err;
};

/* Runs "pcie-tune doctor ARGS" in test/data/ncclog. */
static struct result doctor(const char *args) {
  struct result r;
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cd '%s/test/data/ncclog' && '%s' doctor %s", pt_test_srcdir(),
                     pt_test_cli(), args) > 0);
  r.rc = pt_test_run(cmd, &r.out, &r.err);
  free(cmd);
  return r;
}

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static void done(struct result *r) {
  free(r->out);
  free(r->err);
}

START_TEST(one_file_per_rank_working) {
  struct result r = doctor("v2.30-8rank/nccl.gpu-a.*");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL 2.30.7+cuda13.0, 8 processes on 1 host");
  has(r.out, "tuner plugin loaded: /opt/pcie-tuner/lib/libnccl-tuner-pcie.so (PcieTuner, ABI v6) "
             "in 8 of 8 processes");
  has(r.out, "communicator 7d3c19a2e4b05f61: nRanks 8 nNodes 1, 8 ranks in the log");
  has(r.out, "ranks 0-7: profile 'gen5-8x' hash 9f2c4e1a07b3d865");
  has(r.out, "verdict: WORKING");
  ck_assert_str_eq(r.err, "");
  done(&r);
}
END_TEST

START_TEST(interleaved_stdout_with_trace) {
  struct result r = doctor("vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "(PcieTuner, ABI v5) in 2 of 2 processes");
  has(r.out, "ranks 0-1: profile 'rtx4090-2x' hash 3b91d0c2aa7e5410");
  has(r.out, "allreduce      graph        65536  ring/ll 2 ch                  2  rank 1");
  has(r.out, "allgather      eager            8  NCCL's own                    2  no usable candidate");
  has(r.out, "2 of 6 traced calls left to NCCL");
  done(&r);
  /* The same log on stdin, as a launch script pipes it. */
  r = doctor("- < vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "2 of 6 traced calls left to NCCL");
  done(&r);
  r = doctor("-q vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  ck_assert_str_eq(r.out, "verdict: WORKING\n");
  done(&r);
}
END_TEST

START_TEST(old_nccl_abi_is_inferred) {
  struct result r = doctor("loaded-v2.24.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL_TUNER_PLUGIN=/usr/local/lib/libnccl-tuner-pcie.so (PcieTuner, ABI v4)");
  done(&r);
}
END_TEST

START_TEST(not_loaded_says_why) {
  struct result r = doctor("not-found-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "not found: NCCL tried pcie libnccl-tuner-pcie.so");
  has(r.out, "absolute path");
  has(r.out, "verdict: NOT LOADED");
  done(&r);
  r = doctor("wrong-abi-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "found no tuner ABI it supports (wrong ABI: this NCCL tries up to v6");
  done(&r);
  r = doctor("wrong-abi-v2.24.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "exports no tuner ABI this NCCL knows (wrong ABI)");
  done(&r);
  r = doctor("dlopen-error-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "the library failed to load: /opt/pt/libnccl-tuner-pcie.so: libconfig.so.11: cannot open");
  done(&r);
}
END_TEST

START_TEST(refusals_leave_it_idle) {
  struct result r = doctor("no-profile-fits-v2.30.log");
  ck_assert_int_eq(r.rc, 4);
  has(r.out, "[not fitting] no profile in /etc/pcie-tuner");
  done(&r);
  r = doctor("no-profile-fits-v2.30.log ambiguous-v2.30.log");
  ck_assert_int_eq(r.rc, 4);
  has(r.out, "[not fitting] no profile in /etc/pcie-tuner matches nRanks=4 nNodes=1");
  has(r.out, "[ambiguous] profiles /etc/pt/a.cfg and /etc/pt/b.cfg both match");
  has(r.out, "verdict: LOADED BUT IDLE");
  done(&r);
}
END_TEST

START_TEST(ranks_that_differ_are_an_error) {
  struct result r = doctor("ranks-differ-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "rank 0: profile 'p' hash 0d6e1f2a3b4c5d6e");
  has(r.out, "rank 1: left to NCCL, invalid (WARN): /home/u/p.cfg:7: unknown proto 'll64'");
  has(r.err, "ERROR: the ranks of communicator 44aa0c9b1e2d3f50 (nRanks 2) disagree");
  done(&r);
  /* A Ray worker that did not get the variable. */
  r = doctor("ray-worker-without-env-v2.28.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "tuner plugin NOT loaded in 1 of 2 processes");
  has(r.out, "node7:61877: NCCL_TUNER_PLUGIN is not set in this process");
  has(r.out, "rank 1: plugin not loaded in this process");
  has(r.err, "ERROR");
  done(&r);
  /* Wordings the plugin may grow into: an init line with more fields, a
   * WARN without "leaving"; NCCL's 0x-commId matches the plugin's padded one. */
  r = doctor("reworded-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "communicator c1: nRanks 2 nNodes 1, 2 ranks in the log");
  has(r.out, "rank 0: profile 'a' hash 00000000000000aa (/p/a.cfg, 7 intervals)");
  has(r.out, "rank 1: left to NCCL, partial (WARN): /p/a.cfg: sweep is partial");
  done(&r);
}
END_TEST

START_TEST(bad_input_and_usage) {
  struct result r = doctor("README.md");
  ck_assert_int_eq(r.rc, 1);
  has(r.err, "no NCCL log lines");
  has(r.err, "NCCL_DEBUG=INFO");
  done(&r);
  r = doctor("/nonexistent/log");
  ck_assert_int_eq(r.rc, 1);
  has(r.err, "/nonexistent/log: No such file or directory");
  done(&r);
  r = doctor("");
  ck_assert_int_eq(r.rc, 2);
  has(r.err, "no log given");
  done(&r);
  r = doctor("--frob x.log");
  ck_assert_int_eq(r.rc, 2);
  has(r.err, "unknown option '--frob'");
  has(r.err, "(see 'pcie-tune doctor --help')");
  done(&r);
  r = doctor("--help");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "Exit status: 0 working");
  done(&r);
}
END_TEST

/* The real plugin's lines, as `simulate` prints them with NCCL_DEBUG=INFO. */
START_TEST(reads_what_simulate_prints) {
  char *dir = pt_test_tmpdir(), *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && NCCL_DEBUG=INFO PCIE_TUNER_TRACE=1 PCIE_TUNER_SO='%s' '%s' simulate "
                     "'%s/profiles/example-8x-pcie.cfg' --box gen5-8x-p2p --tokens 1,64 > sim.log && "
                     "'%s' doctor sim.log",
                     dir, pt_test_so(), pt_test_cli(), pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  has(out, "(PcieTuner, ABI v6) in 1 of 1 processes");
  has(out, "rank 0: profile 'example-8x-pcie' hash ");
  has(out, "allreduce      graph        14336  ");
  has(out, "verdict: WORKING");
  free(cmd);
  free(out);
  free(err);
  /* An 8-rank profile on a 4-rank box: simulate says so, doctor calls it idle. */
  ck_assert(asprintf(&cmd,
                     "cd '%s' && NCCL_DEBUG=INFO PCIE_TUNER_SO='%s' '%s' simulate "
                     "'%s/profiles/example-8x-pcie.cfg' --box gen4-4x-shm --tokens 1 > sim4.log; "
                     "'%s' doctor sim4.log",
                     dir, pt_test_so(), pt_test_cli(), pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 4);
  has(err, "pcie-tune simulate: warning: the plugin tunes nothing on this 4-rank box");
  has(out, "[not fitting] profile ");
  free(cmd);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor");
  TCase *tc = tcase_create("doctor");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, one_file_per_rank_working);
  tcase_add_test(tc, interleaved_stdout_with_trace);
  tcase_add_test(tc, old_nccl_abi_is_inferred);
  tcase_add_test(tc, not_loaded_says_why);
  tcase_add_test(tc, refusals_leave_it_idle);
  tcase_add_test(tc, ranks_that_differ_are_an_error);
  tcase_add_test(tc, bad_input_and_usage);
  tcase_add_test(tc, reads_what_simulate_prints);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
