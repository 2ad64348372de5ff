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
#include "measure/gpu_pattern.h"
#include "measure/gpu_prov.h"
#include "measure/isolate.h"
#include "support/pt_test.h"

#ifndef PT_GPU_EXPECTED
#define PT_GPU_EXPECTED 0 /* mk/gpu.mk not included: no GPU backend */
#endif

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
  ck_assert_int_eq(pt_nccl_parse_gpus("0-7", g, 64), 8);
  ck_assert_int_eq(g[7], 7);
  ck_assert_int_eq(pt_nccl_parse_gpus("3", g, 64), 1);
  ck_assert_int_eq(pt_nccl_parse_gpus("0,2-3,6", g, 64), 4);
  ck_assert_int_eq(g[3], 6);
  const char *bad[] = {"", "1-0", "0,0", "0-3,2", "a", "0,", ",0", "-1", "0-", "0-70", "2000", "1 ,2", NULL};
  for (size_t i = 0; bad[i]; i++) ck_assert_msg(pt_nccl_parse_gpus(bad[i], g, 64) < 0, "'%s' accepted", bad[i]);
  ck_assert_int_lt(pt_nccl_parse_gpus(NULL, g, 64), 0);
}
END_TEST

START_TEST(built_in_exactly_when_cuda_was_found) {
  char cmd[1024], *out = NULL, *err = NULL;
  ck_assert_int_eq(pt_backend_nccl_built(), PT_GPU_EXPECTED);
  snprintf(cmd, sizeof cmd, "%s worker --backend nccl --gpus 0 </dev/null", pt_test_cli());
  int rc = pt_test_run(cmd, &out, &err);
  if (!PT_GPU_EXPECTED) {
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "not built in") && strstr(err, "CUDA_HOME"), "%s", err);
  } else if (rc == 0) {
    /* This machine has a GPU: the worker came up and said HELLO. */
    uint32_t type;
    ck_assert(!strncmp(out, "PTW1", 4));
    memcpy(&type, out + 4, 4);
    ck_assert_uint_eq(type, 1);
  } else {
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(err, "no CUDA device"), "%s", err);
    ck_assert_msg(!strstr(err, "not built"), "%s", err);
  }
  free(out);
  free(err);
}
END_TEST

START_TEST(profiler_side_open_reports_the_workers_reason) {
  struct pt_nccl_opts o;
  struct pt_backend b;
  struct pt_error_rec e;
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  pt_nccl_opts_default(&o);
  o.exe = pt_test_cli();
  o.stderr_fd = devnull;
  o.gpus = "0";
  o.start_timeout_s = 20;
  int rc = pt_backend_nccl_open(&b, &o, &e);
  if (!PT_GPU_EXPECTED) {
    ck_assert_int_eq(rc, PT_ENOENT);
    ck_assert_msg(strstr(e.msg, "rebuild"), "%s", e.msg);
  } else if (rc == 0) {
    ck_assert_ptr_nonnull(strstr(pt_isolate_provenance(&b), "pci_bus_id"));
    b.close(b.self);
  } else {
    ck_assert_int_eq(rc, PT_EIO);
    ck_assert_msg(strstr(e.msg, "no CUDA device"), "%s", e.msg);
  }
  o.gpus = "0,0";
  ck_assert_int_eq(pt_backend_nccl_open(&b, &o, &e), PT_GPU_EXPECTED ? PT_EINVAL : PT_ENOENT);
  close(devnull);
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
  tcase_add_test(tc, built_in_exactly_when_cuda_was_found);
  tcase_add_test(tc, profiler_side_open_reports_the_workers_reason);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
