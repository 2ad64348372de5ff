/* pcie-tune doctor's findings from the logs beyond the plugin's outcome
 * (issue 27 §4), run as a user runs it over the 8-rank fixture
 * (test/data/ncclog/v2.30-8rank) with lines added as NCCL, the plugin and
 * vLLM print them: a global NCCL_PROTO and the plugin's WARN about it, an
 * NCCL version with a known defect, expandable segments with custom
 * all-reduce. Each verdict stays what the plugin's outcome says. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

/* The fixture's files through a sed script into one log, then doctor. */
static int doctor_with(const char *sed, const char *extra, char **out, char **err) {
  char *dir = pt_test_tmpdir(), *cmd = NULL;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && cat '%s'/test/data/ncclog/v2.30-8rank/* | sed %s > job.log && "
                     "printf '%%s' '%s' >> job.log && '%s' doctor job.log",
                     dir, pt_test_srcdir(), sed, extra, pt_test_cli()) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  pt_test_rmtree(dir);
  free(dir);
  return rc;
}

START_TEST(global_nccl_proto_is_named_with_the_plugins_ranges) {
  char *out, *err;
  int rc = doctor_with(
      "-e '/NCCL_TUNER_PLUGIN set by/a\\' "
      "-e 'gpu-a:31000:31000 [0] NCCL INFO NCCL_PROTO set by environment to Simple'",
      "gpu-a:31000:31057 [0] tuner/core.c:101 (warn_global_env) NCCL WARN PcieTuner: "
      "NCCL_PROTO=Simple is set for the whole job: NCCL will not run the profile choice for "
      "AllReduce 1 KiB-64 KiB (ring/ll); the profile still decides elsewhere (set it per "
      "collective, or unset it where the profile was measured without it) (commId "
      "7d3c19a2e4b05f61)\n",
      &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "ranks 0-7: profile 'gen5-8x'");
  has(out, "findings:\n  [WARN] NCCL_PROTO=Simple: set for the whole job");
  has(out, "\"NCCL_PROTO set by environment to Simple\"; the plugin: PcieTuner: NCCL_PROTO=Simple");
  has(out, "AllReduce 1 KiB-64 KiB (ring/ll)");
  has(out, "fix: unset it, or restrict it to a collective");
  has(out, "verdict: WORKING");
  ck_assert_ptr_null(strstr(out, "refusals"));
  free(out);
  free(err);
  /* Without the setting: no such finding. */
  rc = doctor_with("-e p -e d", "", &out, &err);
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_null(strstr(out, "global"));
  ck_assert_ptr_null(strstr(out, "findings:"));
  free(out);
  free(err);
}
END_TEST

START_TEST(known_defect_of_the_nccl_version) {
  char *out, *err;
  int rc = doctor_with("-e 's/NCCL version 2.30.7+cuda13.0/NCCL version 2.26.2+cuda12.8/'", "",
                       &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "[WARN] NCCL 2.26.2+cuda12.8: a known defect of this NCCL on 2x RTX PRO 6000 "
           "Workstation (Blackwell): an illegal memory access in collectives of 512 KiB and more");
  has(out, "source: NVIDIA/nccl#2418");
  has(out, "check that yours are 2x RTX PRO 6000");
  free(out);
  free(err);
  rc = doctor_with("-e 's/NCCL version 2.30.7+cuda13.0/NCCL version 2.26.3+cuda12.8/'", "", &out,
                   &err);
  ck_assert_ptr_null(strstr(out, "nccl#2418"));
  free(out);
  free(err);
}
END_TEST

START_TEST(expandable_segments_with_custom_all_reduce) {
  static const char both[] =
      "(VllmWorker rank=0 pid=31000) INFO 12-01 10:00:00 [envs.py:100] PYTORCH_CUDA_ALLOC_CONF="
      "expandable_segments:True\n"
      "(VllmWorker rank=0 pid=31000) Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 "
      "'invalid argument'\n";
  char *out, *err;
  int rc = doctor_with("-e p -e d", both, &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "[WARN] the engine: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True with vLLM's custom "
           "all-reduce");
  has(out, "vllm-project/vllm#42609");
  has(out, "--disable-custom-all-reduce");
  free(out);
  free(err);
  /* One of the two alone is no finding. */
  rc = doctor_with("-e p -e d",
                   "(VllmWorker rank=0 pid=31000) INFO PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n",
                   &out, &err);
  ck_assert_ptr_null(strstr(out, "vllm#42609"));
  free(out);
  free(err);
}
END_TEST

/* Two jobs in the input (vLLM's 8-rank job with both engine lines before
 * its NCCL lines, a later 1-process job without them): the finding is told
 * once, under the job whose output holds the lines, not under every job. */
START_TEST(engine_finding_told_once_under_its_job) {
  char *dir = pt_test_tmpdir(), *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && printf '%%s\\n' "
                     "'(VllmWorker rank=0 pid=31000) INFO PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True' "
                     "'(VllmWorker rank=0 pid=31000) INFO custom_all_reduce.py: custom allreduce enabled' "
                     "> vllm.log && cat '%s'/test/data/ncclog/v2.30-8rank/* >> vllm.log && "
                     "cp '%s'/test/data/ncclog/loaded-v2.24.log later.log && "
                     "touch -d '2026-01-01 10:00' vllm.log && touch -d '2026-01-01 11:00' later.log && "
                     "'%s' doctor later.log vllm.log",
                     dir, pt_test_srcdir(), pt_test_srcdir(), pt_test_cli()) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  const char *first = strstr(out, "=== job 1 of 2: 8 processes on gpu-a");
  const char *second = strstr(out, "=== job 2 of 2 (the most recent): 1 process on box3");
  const char *finding = strstr(out, "[WARN] the engine: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  ck_assert_msg(first && second && finding, "%s", out);
  ck_assert_msg(first < finding && finding < second, "not under job 1:\n%s", out);
  ck_assert_msg(!strstr(finding + 1, "[WARN] the engine:"), "told twice:\n%s", out);
  free(out);
  free(err);
  free(cmd);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor_findings");
  TCase *tc = tcase_create("doctor_findings");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, global_nccl_proto_is_named_with_the_plugins_ranges);
  tcase_add_test(tc, known_defect_of_the_nccl_version);
  tcase_add_test(tc, expandable_segments_with_custom_all_reduce);
  tcase_add_test(tc, engine_finding_told_once_under_its_job);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
