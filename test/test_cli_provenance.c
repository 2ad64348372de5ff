/* Issue 17 §1 and issue 19 §6 as a user meets them: `pcie-tune simulate`
 * with a profile from another box, with a profile the plugin only warns
 * about, and with one slower than NCCL; `check` and `show` saying where a
 * profile was measured. Runs the built pcie-tune. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static char *dir, *out, *err;

static void setup(void) {
  dir = pt_test_tmpdir();
  out = err = NULL;
  /* As a user runs it: the suites' acceptance of foreign profiles off. */
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  unsetenv("NCCL_DEBUG");
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

#define RUN(...) (free(out), free(err), out = err = NULL, pt_test_cli_run(dir, 120, &out, &err, __VA_ARGS__))

static double total_speedup(const char *text) {
  const char *t = strstr(text, "\ntotal ");
  ck_assert_msg(t != NULL, "no total in:\n%s", text);
  const char *x = strstr(t, "x ");
  while (x > t && x[-1] != ' ') x--;
  return atof(x);
}

/* The reproducer: `make demo`'s profile of the dual-socket box,
 * simulated on the switched box. */
START_TEST(simulate_refuses_a_profile_from_another_box) {
  ck_assert_int_eq(RUN("profile --backend sim --box gen5-8x-dual-misdetect --out p.cfg --quiet"), 0);
  setenv("NCCL_DEBUG", "WARN", 1);
  ck_assert_int_eq(RUN("simulate p.cfg --box gen5-8x-p2p"), 0);
  unsetenv("NCCL_DEBUG");
  ck_assert_msg(strstr(err, "the plugin tunes nothing on this 8-rank box") &&
                    strstr(err, "measured on another box"),
                "stderr:\n%s", err);
  ck_assert_double_eq_tol(total_speedup(out), 1.0, 1e-9);
  /* Whatever NCCL_DEBUG is. */
  ck_assert_int_eq(RUN("simulate p.cfg --box gen5-8x-p2p"), 0);
  ck_assert_ptr_nonnull(strstr(err, "measured on another box"));
  /* On its own box it tunes, silently. */
  ck_assert_int_eq(RUN("simulate p.cfg --box gen5-8x-dual-misdetect"), 0);
  ck_assert_msg(!strstr(err, "warning"), "stderr:\n%s", err);
  ck_assert_double_gt(total_speedup(out), 1.1);
  /* Accepted on purpose, it runs on the other box (and is judged there). */
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  setenv("NCCL_DEBUG", "INFO", 1);
  ck_assert_int_eq(RUN("simulate p.cfg --box gen5-8x-p2p"), 0);
  unsetenv("NCCL_DEBUG");
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  ck_assert_ptr_nonnull(strstr(out, "foreign profile accepted (PCIE_TUNER_ACCEPT_FOREIGN=1)"));
}
END_TEST

/* Issue 19 §6: a difference the plugin only warns about reaches stderr
 * without NCCL_DEBUG. */
START_TEST(simulate_says_what_the_plugin_warns) {
  ck_assert_int_eq(RUN("profile --backend sim --box gen5-8x-p2p --out p.cfg --quiet"), 0);
  /* The profile as measured under NCCL_MAX_NCHANNELS=2. */
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/p.cfg", dir) > 0);
  FILE *f = fopen(p, "a");
  ck_assert_ptr_nonnull(f);
  fputs("nccl_env = { NCCL_MAX_NCHANNELS = \"2\"; };\n", f);
  ck_assert_int_eq(fclose(f), 0);
  free(p);
  ck_assert_int_eq(RUN("simulate p.cfg --box gen5-8x-p2p"), 0);
  ck_assert_msg(strstr(err, "pcie-tune simulate: the plugin warns: ") &&
                    strstr(err, "NCCL_MAX_NCHANNELS is unset here but was '2'"),
                "stderr:\n%s", err);
  ck_assert_ptr_null(strstr(err, "tunes nothing"));
}
END_TEST

START_TEST(simulate_warns_when_the_profile_is_slower) {
  char *example = NULL;
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  /* A dual-socket box's profile forced onto the single-switch box (the
   * issue's copied-profile case): slower there under the physical truth. */
  ck_assert_int_eq(RUN("profile --backend sim --box gen5-8x-dual-misdetect --out d.cfg --quiet"),
                   0);
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  ck_assert_int_eq(RUN("simulate d.cfg --box gen5-8x-p2p"), 0);
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  ck_assert_double_lt(total_speedup(out), 0.995);
  ck_assert_msg(strstr(err, "slower than NCCL's own choice on this workload"), "stderr:\n%s", err);
  /* Without the variable a job, and simulate, refuse it: it records no box. */
  ck_assert_int_eq(RUN("simulate '%s' --box gen5-8x-p2p", example), 0);
  ck_assert_ptr_nonnull(strstr(err, "records no provenance.box"));
  ck_assert_ptr_null(strstr(err, "slower than NCCL"));
  free(example);
}
END_TEST

/* A profile faster in total can still lose at a step the job pays as it
 * comes: the shipped illustration on gen5-8x-dual-misdetect (1.14x in total
 * under the physical truth, 0.94x at tokens=32). On gen5-8x-p2p it is slower
 * in total, and simulate says that instead. */
START_TEST(simulate_warns_when_a_step_is_slower) {
  char *example = NULL;
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  ck_assert_int_eq(RUN("simulate '%s' --box gen5-8x-dual-misdetect", example), 0);
  ck_assert_double_ge(total_speedup(out), 1.005);
  ck_assert_msg(strstr(err, "slower than NCCL's own choice at step tokens=") &&
                    strstr(err, "though faster in total"),
                "stderr:\n%s", err);
  ck_assert_int_eq(RUN("simulate '%s' --box gen5-8x-p2p", example), 0);
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  ck_assert_double_lt(total_speedup(out), 0.995);
  ck_assert_msg(strstr(err, "slower than NCCL's own choice on this workload"), "stderr:\n%s", err);
  free(example);
}
END_TEST

START_TEST(check_and_show_print_the_provenance) {
  ck_assert_int_eq(RUN("profile --backend sim --box gen5-8x-dual-misdetect --out p.cfg --quiet"), 0);
  ck_assert_int_eq(RUN("check p.cfg"), 0);
  ck_assert_msg(strstr(out, "measured on: 8 GPUs 10de:f078") && strstr(out, "NUMA nodes 0, 1") &&
                    strstr(out, "NCCL 2.30 (sim, derived view), backend sim"),
                "%s", out);
  ck_assert_int_eq(RUN("check --json p.cfg"), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"box_gpus\": 8"));
  ck_assert_int_eq(RUN("show p.cfg"), 0);
  ck_assert_ptr_nonnull(strstr(out, "measured on: 8 GPUs 10de:f078"));
  char *example = NULL;
  ck_assert(asprintf(&example, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir()) > 0);
  ck_assert_int_eq(RUN("check '%s'", example), 0);
  ck_assert_ptr_nonnull(strstr(out, "no box recorded"));
  free(example);
}
END_TEST

/* Import records the GPUs the logs name: the communicator's, not all of
 * the host's. */
START_TEST(import_records_the_bus_ids_nccl_names) {
  char *src = NULL, *text = NULL;
  ck_assert(asprintf(&src, "%s/test/data/nccltests/synth/ar8-eager-default.txt", pt_test_srcdir()) > 0);
  FILE *f = fopen(src, "r");
  ck_assert_ptr_nonnull(f);
  char line[1024];
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  while (fgets(line, sizeof line, f)) {
    fputs(line, m);
    if (strstr(line, "NCCL INFO NCCL version"))
      for (int r = 0; r < 2; r++) /* two ranks' lines, each printed twice (START, COMPLETE) */
        for (int k = 0; k < 2; k++)
          fprintf(m,
                  "pcie8:4242:4259 [%d] NCCL INFO ncclCommInitAll comm 0x55d0 rank %d nranks 8 "
                  "cudaDev %d nvmlDev %d busId %x commId 0x8d2f - Init %s\n",
                  r, r, r, r, 0x41000 + r * 0x1000, k ? "COMPLETE" : "START");
  }
  fclose(f);
  fclose(m);
  free(pt_test_write(dir, "default.txt", text));
  ck_assert_int_eq(RUN("import --out p.cfg default.txt '%s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt'",
                       pt_test_srcdir()),
                   0);
  free(out);
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cat '%s/p.cfg'", dir) > 0);
  free(err);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  /* Issue 26 §2: the device lines give every rank's GPU ("[0000:43:00]
   * NVIDIA RTX PRO 6000 ...", host pcie8); NCCL's full ids replace the
   * partial ones they match. */
  ck_assert_msg(strstr(out, "host_gpus = false;") && strstr(out, "bus_id = \"0000:41:00.0\"") &&
                    strstr(out, "bus_id = \"0000:42:00.0\"") && !strstr(out, "\"0000:41:00\"") &&
                    strstr(out, "{ bus_id = \"0000:48:00\"; name = \"NVIDIA RTX PRO 6000 Blackwell Server "
                                "Edition\"; host = \"pcie8\"; }"),
                "%s", out);
  ck_assert_int_eq(RUN("check p.cfg"), 0);
  ck_assert_msg(strstr(out, "measured on: 8 GPUs of the communicator NVIDIA RTX PRO 6000 Blackwell Server "
                            "Edition (bus ids as nccl-tests gave them); NCCL 2.28.9"),
                "%s", out);
  free(cmd);
  free(text);
  free(src);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli-provenance");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, simulate_refuses_a_profile_from_another_box);
  tcase_add_test(tc, simulate_says_what_the_plugin_warns);
  tcase_add_test(tc, simulate_warns_when_the_profile_is_slower);
  tcase_add_test(tc, simulate_warns_when_a_step_is_slower);
  tcase_add_test(tc, check_and_show_print_the_provenance);
  tcase_add_test(tc, import_records_the_bus_ids_nccl_names);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
