/* The GPU backend's parts that run without a GPU: the input pattern and
 * the exact output check, the provenance text, the --gpus list, and that
 * the backend is built in exactly when mk/gpu.mk found CUDA and NCCL (then
 * it fails on a GPU-less machine with "no CUDA device", never "not built"). */
#include <check.h>
#include <fcntl.h>
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure/backend_nccl.h"
#include "measure/gpu_gap.h"
#include "measure/gpu_ncclog.h"
#include "measure/gpu_pattern.h"
#include "measure/gpu_prov.h"
#include "measure/isolate.h"
#include "support/pt_test.h"


#define COUNT 5000

START_TEST(pattern_sums_are_exact_in_any_order) {
  static float in[64][COUNT], out[COUNT];
  for (int n = 1; n <= 64; n *= 2) {
    for (int r = 0; r < n; r++) pt_pattern_fill(in[r], COUNT, r);
    /* Forward and backward summation orders give the same, exact result. */
    for (int dir = 0; dir < 2; dir++) {
      for (size_t i = 0; i < COUNT; i++) {
        float s = 0;
        for (int k = 0; k < n; k++) s += in[dir ? n - 1 - k : k][i];
        out[i] = s;
        ck_assert(s < 16777216.0f);
      }
      size_t bad;
      float got, want;
      ck_assert_msg(!pt_pattern_check(out, COUNT, n, &bad, &got, &want),
                    "%d ranks: element %zu is %g, want %g", n, bad, (double)got, (double)want);
    }
  }
}
END_TEST

START_TEST(check_finds_every_kind_of_damage) {
  static float in[8][COUNT], out[COUNT];
  size_t bad;
  float got, want;
  for (int r = 0; r < 8; r++) pt_pattern_fill(in[r], COUNT, r);
  for (size_t i = 0; i < COUNT; i++) out[i] = pt_pattern_sum(i, 8);
  ck_assert(!pt_pattern_check(out, COUNT, 8, &bad, &got, &want));
  /* One element off by one. */
  out[4321] += 1;
  ck_assert(pt_pattern_check(out, COUNT, 8, &bad, &got, &want));
  ck_assert_uint_eq(bad, 4321);
  ck_assert(got == want + 1);
  out[4321] -= 1;
  /* Never written: the NaN sentinel. */
  memset(out + 100, 0xff, 4);
  ck_assert(pt_pattern_check(out, COUNT, 8, &bad, &got, &want));
  ck_assert_uint_eq(bad, 100);
  ck_assert(isnan(got));
  /* One rank missing from the sum, and the right data at the wrong offset
   * (a whole 1 KiB or 4 KiB chunk displaced). */
  for (size_t i = 0; i < COUNT; i++) out[i] = pt_pattern_sum(i, 7);
  ck_assert(pt_pattern_check(out, COUNT, 8, &bad, &got, &want));
  for (size_t shift = 256; shift <= 1024; shift *= 4) {
    for (size_t i = 0; i < COUNT; i++) out[i] = pt_pattern_sum(i, 8);
    memcpy(out + 2 * shift, out + shift, shift * sizeof *out);
    ck_assert_msg(pt_pattern_check(out, COUNT, 8, &bad, &got, &want), "shift %zu missed", shift);
    ck_assert_uint_ge(bad, 2 * shift);
  }
}
END_TEST

START_TEST(provenance_env_is_sorted_quoted_libconfig) {
  char *text = NULL;
  size_t len = 0;
  const char *const env[] = {"PATH=/bin", "NCCL_PROTO=LL,\"LL128\"", "NCCL_ALGO=Ring", "XNCCL_NO=1", NULL};
  FILE *f = open_memstream(&text, &len);
  ck_assert_int_eq(pt_prov_nccl_env(f, env), 0);
  fclose(f);
  ck_assert_str_eq(text, "nccl_env = [ \"NCCL_ALGO=Ring\", \"NCCL_PROTO=LL,\\\"LL128\\\"\" ];");
  /* It is valid libconfig, and the values come back verbatim. */
  config_t cfg;
  char doc[512];
  snprintf(doc, sizeof doc, "extra = { %s };", text);
  config_init(&cfg);
  ck_assert_int_eq(config_read_string(&cfg, doc), CONFIG_TRUE);
  ck_assert_str_eq(config_setting_get_string_elem(config_lookup(&cfg, "extra.nccl_env"), 1),
                   "NCCL_PROTO=LL,\"LL128\"");
  config_destroy(&cfg);
  free(text);
  const char *const none[] = {"HOME=/root", NULL};
  f = open_memstream(&text, &len);
  ck_assert_int_eq(pt_prov_nccl_env(f, none), 0);
  fclose(f);
  ck_assert_str_eq(text, "nccl_env = [ ];");
  free(text);
}
END_TEST

START_TEST(gpu_lists) {
  int g[64];
  ck_assert_int_eq(pt_nccl_parse_gpus("0-7", g, 64, 0), 8);
  ck_assert_int_eq(g[7], 7);
  ck_assert_int_eq(pt_nccl_parse_gpus("3", g, 64, 0), 1);
  ck_assert_int_eq(pt_nccl_parse_gpus("0,2-3,6", g, 64, 0), 4);
  ck_assert_int_eq(g[3], 6);
  const char *bad[] = {"", "1-0", "0,0", "0-3,2", "a", "0,", ",0", "-1", "0-", "0-70", "2000", "1 ,2", NULL};
  for (size_t i = 0; bad[i]; i++) ck_assert_msg(pt_nccl_parse_gpus(bad[i], g, 64, 0) < 0, "'%s' accepted", bad[i]);
  ck_assert_int_lt(pt_nccl_parse_gpus(NULL, g, 64, 0), 0);
}
END_TEST


/* Defect 10: no CUDA at build time; at run time the error says which
 * library is missing, or which driver and runtime do not fit. */
START_TEST(always_built_and_says_why_it_cannot_measure) {
  char cmd[2048], *out = NULL, *err = NULL;
  ck_assert_int_eq(pt_backend_nccl_built(), 1);
  snprintf(cmd, sizeof cmd, "%s worker --backend nccl --gpus 0 --nccl-lib /nonexistent/libnccl.so.2 </dev/null",
           pt_test_cli());
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 1);
  ck_assert_msg(strstr(err, "cannot load NCCL") && strstr(err, "--nccl-lib"), "%s", err);
  free(out), free(err);
  snprintf(cmd, sizeof cmd, "PTDOUBLE_FAIL=nodevice %s worker --backend nccl --gpus 0 --nccl-lib %s </dev/null",
           pt_test_cli(), pt_test_double());
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 1);
  ck_assert_msg(strstr(err, "no CUDA device"), "%s", err);
  free(out), free(err);
  snprintf(cmd, sizeof cmd, "PTDOUBLE_DRIVER=12080 %s worker --backend nccl --gpus 0 --nccl-lib %s </dev/null",
           pt_test_cli(), pt_test_double());
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 1);
  ck_assert_msg(strstr(err, "driver supports CUDA 12.8") && strstr(err, "13.0") &&
                    strstr(err, "older than the runtime"), "%s", err);
  free(out), free(err);
  /* The machine's own NCCL and CUDA runtime, if any: every symbol resolves
   * (a worker that comes up says HELLO), or the reason is one of these. */
  snprintf(cmd, sizeof cmd, "%s worker --backend nccl --gpus 0 </dev/null", pt_test_cli());
  int rc = pt_test_run(cmd, &out, &err);
  if (rc == 0) {
    uint32_t type;
    ck_assert(!strncmp(out, "PTW1", 4));
    memcpy(&type, out + 4, 4);
    ck_assert_uint_eq(type, 1);
  } else {
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "no CUDA device") || strstr(err, "cannot load NCCL") ||
                      strstr(err, "cannot find the CUDA runtime"), "%s", err);
    ck_assert_msg(!strstr(err, " lacks "), "a symbol is missing: %s", err);
  }
  free(out), free(err);
}
END_TEST

/* Defect 6: NCCL's initialisation failing is the environment's failure,
 * reported as such before any candidate runs. */
START_TEST(profiler_side_open_reports_the_workers_reason) {
  struct pt_nccl_opts o;
  struct pt_backend b;
  struct pt_error_rec e;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  pt_nccl_opts_default(&o);
  o.exe = pt_test_cli();
  o.stderr_fd = devnull;
  o.gpus = "0-1";
  const char *args[] = {"--gpus", "0-1", "--nccl-lib", pt_test_double(), NULL};
  o.args = args;
  o.start_timeout_s = 20;
  setenv("PTDOUBLE_FAIL", "init", 1);
  ck_assert_int_eq(pt_backend_nccl_open(&b, &o, &e), PT_EIO);
  ck_assert_msg(strstr(e.msg, "ncclCommInitRank failed") && strstr(e.msg, "bootstrap"), "%s", e.msg);
  unsetenv("PTDOUBLE_FAIL");
  ck_assert_int_eq(pt_backend_nccl_open(&b, &o, &e), 0);
  ck_assert_ptr_nonnull(strstr(pt_isolate_provenance(&b), "pci_bus_id"));
  ck_assert_ptr_nonnull(strstr(pt_isolate_provenance(&b), "process_model = \"process-per-gpu\""));
  b.close(b.self);
  o.gpus = "0,0";
  ck_assert_int_eq(pt_backend_nccl_open(&b, &o, &e), PT_EINVAL);
  close(devnull);
}
END_TEST

/* Defect 8: the channel count and transports come from NCCL's INFO lines. */
/* The gap kernel through the driver entry points as the backend resolves
 * them (here the double's, which refuses what CUDA's driver would): its
 * PTX loads and its entry is found; another image, another entry, or a
 * launch CUDA would reject fail with the driver's codes and texts. */
START_TEST(gap_kernel_loads_and_bad_launches_fail) {
  struct pt_gpu_api a;
  struct pt_gap g;
  char why[512];
  const char *what = NULL;
  pt_cu_module m = NULL;
  pt_cu_function f = NULL;
  pt_cu_stream st = NULL;
  ck_assert_msg(pt_gpu_api_load(&a, pt_test_double(), NULL, why, sizeof why) == 0, "%s", why);
  ck_assert_ptr_nonnull(a.LaunchKernel);
  ck_assert_int_eq(a.SetDevice(0), 0);
  ck_assert_int_eq(a.StreamCreateWithFlags(&st, PT_CU_STREAM_NON_BLOCKING), 0);
  ck_assert_int_eq(pt_gap_open(&g, &a, 0, 0, why, sizeof why), 0);
  ck_assert_ptr_null(g.fn); /* --gap 0: nothing loaded */
  ck_assert_msg(pt_gap_open(&g, &a, 0, 50, why, sizeof why) == 0, "%s", why);
  ck_assert_ptr_nonnull(g.fn);
  ck_assert_uint_eq(g.ns, 50000);
  ck_assert_uint_ge(g.blocks, 1);
  ck_assert_int_eq(pt_gap_launch(&g, &a, st, &what), 0);
  ck_assert_int_eq(a.ModuleLoadData(&m, "not ptx"), 200); /* CUDA_ERROR_INVALID_IMAGE */
  ck_assert_int_eq(a.ModuleGetFunction(&f, g.mod, "pt_gap_other"), 500); /* CUDA_ERROR_NOT_FOUND */
  ck_assert_int_eq(a.DrvErrorString(500, &what), 0);
  ck_assert_str_eq(what, "named symbol not found");
  unsigned long long ns = 1000;
  void *params[] = {&ns};
  ck_assert_int_eq(a.LaunchKernel(g.fn, 1, 1, 1, 2048, 1, 1, 0, st, params, NULL), 1); /* > 1024 threads */
  ck_assert_int_eq(a.LaunchKernel(g.fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL), 1);     /* no parameters */
  ck_assert_int_eq(a.LaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, st, params, NULL), 400);
  pt_gap_close(&g, &a);
  ck_assert_ptr_null(g.fn);
  a.StreamDestroy(st);
  pt_gpu_api_unload(&a);
}
END_TEST

START_TEST(nccl_log_gives_channels_and_transports) {
  const char *text =
      "h:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
      "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC\n"
      "h:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct\n"
      "h:1:1 [0] NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per peer\n"
      "h:2:2 [1] NCCL INFO 3 coll channels, 3 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per peer\n";
  struct pt_ncclog l;
  memset(&l, 0, sizeof l);
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  pt_ncclog_scan(f, &l);
  fclose(f);
  ck_assert_int_eq(l.comm_channels, 2);
  ck_assert_uint_eq(l.nlinks, 2);
  ck_assert_str_eq(l.links[0].via, "P2P/IPC");
  ck_assert_int_eq(l.links[1].from, 1);
  ck_assert_str_eq(l.links[1].via, "SHM/direct/direct");
  ck_assert_uint_ge(l.nexcerpt, 4);
}
END_TEST

/* Defect 7: consecutive ops of a launch carry different inputs. */
START_TEST(ops_of_a_launch_differ) {
  float a[64], b[64];
  size_t bad;
  float got, want;
  pt_pattern_fill_op(a, 64, 1, 0);
  pt_pattern_fill_op(b, 64, 1, 1);
  for (size_t i = 0; i < 64; i++) ck_assert(a[i] != b[i]);
  float out[64];
  for (size_t i = 0; i < 64; i++) out[i] = pt_pattern_sum_op(i, 4, 0);
  ck_assert_int_eq(pt_pattern_check_op(out, 64, 4, 0, &bad, &got, &want), 0);
  ck_assert_int_eq(pt_pattern_check_op(out, 64, 4, 1, &bad, &got, &want), 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gpu");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, pattern_sums_are_exact_in_any_order);
  tcase_add_test(tc, check_finds_every_kind_of_damage);
  tcase_add_test(tc, provenance_env_is_sorted_quoted_libconfig);
  tcase_add_test(tc, gpu_lists);
  tcase_add_test(tc, always_built_and_says_why_it_cannot_measure);
  tcase_add_test(tc, nccl_log_gives_channels_and_transports);
  tcase_add_test(tc, ops_of_a_launch_differ);
  tcase_add_test(tc, gap_kernel_loads_and_bad_launches_fail);
  tcase_add_test(tc, profiler_side_open_reports_the_workers_reason);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
