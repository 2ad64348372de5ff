/* pcie-tune doctor --workload-out (issue 27 §3), run as a user runs it over
 * test/data/ncclog/vllm-tp2-coll-capture-v2.28.log: NCCL's COLL lines of a
 * vLLM TP2 start (a 512-token profiling forward, then graph capture of batch
 * sizes 4, 2, 1) become one workload step per forward, with NCCL's nBytes,
 * and the file reads back through the workload reader simulate uses. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_json.h"
#include "support/pt_test.h"

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static int doctor(const char *dir, const char *args, char **out, char **err) {
  return pt_test_cli_run(dir, 30, out, err, "doctor %s '%s/test/data/ncclog/vllm-tp2-coll-capture-v2.28.log'",
                         args, pt_test_srcdir());
}

START_TEST(steps_of_a_capture) {
  char *dir = pt_test_tmpdir(), *out, *err;
  int rc = doctor(dir, "--workload-out wl.txt", &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "verdict: WORKING");
  free(out);
  free(err);
  char *path = pt_test_path(dir, "wl.txt");
  FILE *f = fopen(path, "r");
  ck_assert(f != NULL);
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  /* The profiling forward (512 tokens x 2048 x bf16 = 2 MiB; the all-gather
   * of 512 x 1000 bf16 times 2 ranks), then each captured batch size,
   * largest first; rank 0 speaks for the communicator. */
  has(text, "# communicator 2e6b1f0a9c4d7783\n"
            "2e6b1f0a9c4d7783.s1 allreduce 2097152 4\n"
            "2e6b1f0a9c4d7783.s1 allgather 2048000 1\n"
            "2e6b1f0a9c4d7783.s2 allreduce 16384 4\n"
            "2e6b1f0a9c4d7783.s2 allgather 16000 1\n"
            "2e6b1f0a9c4d7783.s3 allreduce 8192 4\n"
            "2e6b1f0a9c4d7783.s3 allgather 8000 1\n"
            "2e6b1f0a9c4d7783.s4 allreduce 4096 4\n"
            "2e6b1f0a9c4d7783.s4 allgather 4000 1\n");
  ck_assert_ptr_null(strstr(text, ".s5"));
  /* The file is a workload: simulate reads it (4 steps, 8 items). */
  rc = pt_test_cli_run(dir, 60, &out, &err,
                       "simulate '%s/profiles/example-8x-pcie.cfg' --box gen5-8x-dual-misdetect "
                       "--workload wl.txt",
                       pt_test_srcdir());
  ck_assert_msg(rc == 0, "simulate refused it (exit %d):\n%s", rc, err);
  has(out, "2e6b1f0a9c4d7783.s1  2097152x4");
  has(out, "2e6b1f0a9c4d7783.s4     4096x4");
  free(out);
  free(err);
  /* Not overwritten without --force; replaced with it. */
  rc = doctor(dir, "--workload-out wl.txt", &out, &err);
  ck_assert_int_eq(rc, 1);
  has(err, "--workload-out");
  free(out);
  free(err);
  rc = doctor(dir, "--workload-out wl.txt --force", &out, &err);
  ck_assert_int_eq(rc, 0);
  free(out);
  free(err);
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A 2-rank profile measured at some of the job's sizes: 4096 and 4000 B
 * exactly, 8192 and 16384/16000 B between measured sizes. */
static const char tp2_profile[] =
    "version = 1;\nname = \"tp2\";\nmatch = { nranks = 2; };\n"
    "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = "
    "\"2026-11-30\"; mode = \"graph\"; };\n"
    "communicator = { channels = 4; };\n"
    "allreduce = { graph = { sizes = [ 4096L, 16384L, 2097152L ]; nccl_default = ( 20.0, 30.0, 400.0 );\n"
    " candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 15.0, 900.0 ); },\n"
    "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 25.0, 35.0, 300.0 ); } ); }; };\n"
    "allgather = { graph = { sizes = [ 4000L, 2048000L ]; nccl_default = ( 20.0, 500.0 );\n"
    " candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 25.0, 450.0 ); } ); }; };\n";

/* --profile P: per step, the time by NCCL's default and by P's choice. */
START_TEST(per_step_times_with_a_profile) {
  char *dir = pt_test_tmpdir(), *out, *err;
  free(pt_test_write(dir, "tp2.cfg", tp2_profile));
  int rc = doctor(dir, "--profile tp2.cfg", &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  /* 4 x 20 + 20 by default; 4 x 10 (ring/LL) + 20 (all-gather left to NCCL). */
  has(out, "2e6b1f0a9c4d7783.s4      allreduce 4096 x4, allgather 4000 x1           100.0 us        60.0 us");
  /* 4 x 400 + 500; 4 x 300 (ring/Simple) + 500. */
  has(out, "allreduce 2097152 x4, allgather 2048000 x1      2100.0 us      1700.0 us");
  /* Between measured sizes: marked. */
  has(out, "2e6b1f0a9c4d7783.s3      allreduce 8192 x4, allgather 8000 x1          ~");
  has(out, "20 collectives (16 all-reduces): ~2.487 ms by NCCL's default, ~1.938 ms with this profile");
  free(out);
  free(err);
  rc = doctor(dir, "--profile missing.cfg", &out, &err);
  ck_assert_int_eq(rc, 1);
  has(err, "pcie-tune doctor: --profile: missing.cfg");
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* --json carries the same workload, read by a parser. */
START_TEST(workload_in_json) {
  char *dir = pt_test_tmpdir(), *out, *err, msg[128];
  int rc = doctor(dir, "--json", &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  struct pt_json *doc = pt_json_parse(out, msg, sizeof msg);
  ck_assert_msg(doc != NULL, "%s in:\n%s", msg, out);
  ck_assert_uint_eq(pt_json_at(doc, "workload")->n, 8);
  ck_assert_str_eq(pt_json_at(doc, "workload.0.step")->str, "2e6b1f0a9c4d7783.s1");
  ck_assert_str_eq(pt_json_at(doc, "workload.0.collective")->str, "allreduce");
  ck_assert_int_eq((long long)pt_json_at(doc, "workload.0.bytes")->num, 2097152);
  ck_assert_int_eq((int)pt_json_at(doc, "workload.0.count")->num, 4);
  ck_assert_int_eq((long long)pt_json_at(doc, "workload.7.bytes")->num, 4000);
  pt_json_free(doc);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(without_coll_lines) {
  char *dir = pt_test_tmpdir(), *out, *err;
  int rc = pt_test_cli_run(dir, 30, &out, &err,
                           "doctor --workload-out wl.txt '%s/test/data/ncclog/ranks-differ-v2.30.log'",
                           pt_test_srcdir());
  ck_assert_int_eq(rc, 1);
  has(err, "no collective in the log (run the job with NCCL_DEBUG_SUBSYS including COLL)");
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 30, &out, &err, "doctor --workload-out");
  ck_assert_int_eq(rc, 2);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor_workload");
  TCase *tc = tcase_create("doctor_workload");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, steps_of_a_capture);
  tcase_add_test(tc, without_coll_lines);
  tcase_add_test(tc, per_step_times_with_a_profile);
  tcase_add_test(tc, workload_in_json);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
