/* measure/sweepfile.c builds a profile from a sweep with several
 * allocations: each one failing in turn must give PT_ENOMEM and leave
 * nothing allocated once the caller releases the profile (it leaked the
 * provenance text and the repetition counts when the NCCL environment or
 * the box failed to allocate). The test binary is linked with
 * --wrap=malloc,calloc,realloc,free (test/module.mk): every allocation the
 * project's code makes goes through the wrappers below, which fail the Nth
 * one on request and keep the set of blocks still live. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/backends.h"
#include "measure/sweepfile.h"
#include "nccl/common.h"
#include "pcie/sim_box.h"
#include "support/pt_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

#define SLOTS (1u << 16)
static void *live[SLOTS]; /* open addressing; NULL empty, (void *)1 a tombstone */
static size_t nlive;
static long fail_in = -1; /* the allocation, counted from 0, that fails; -1 none */

static size_t slot(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 2654435761u) & (SLOTS - 1); }

static void track(void *p) {
  if (!p) return;
  size_t i = slot(p);
  while (live[i] && live[i] != (void *)1) i = (i + 1) & (SLOTS - 1);
  live[i] = p;
  nlive++;
}

static void untrack(void *p) {
  if (!p) return;
  for (size_t i = slot(p), n = 0; live[i] && n < SLOTS; i = (i + 1) & (SLOTS - 1), n++)
    if (live[i] == p) {
      live[i] = (void *)1;
      nlive--;
      return;
    }
}

static int failing(void) { return fail_in >= 0 && fail_in-- == 0; }

void *__wrap_malloc(size_t n) {
  void *p = failing() ? NULL : __real_malloc(n);
  track(p);
  return p;
}

void *__wrap_calloc(size_t n, size_t k) {
  void *p = failing() ? NULL : __real_calloc(n, k);
  track(p);
  return p;
}

void *__wrap_realloc(void *old, size_t n) {
  if (failing()) return NULL;
  void *p = __real_realloc(old, n);
  if (p) {
    untrack(old);
    track(p);
  }
  return p;
}

void __wrap_free(void *p) {
  untrack(p);
  __real_free(p);
}

START_TEST(sweepfile_build_frees_everything_when_out_of_memory) {
  static const int ch[] = {1, 2};
  static struct pt_cand_spec cands[16];
  struct pt_backend be;
  struct pt_backend_info bi;
  struct pt_sweep_opts o;
  struct pt_sweep sw = {0};
  struct pt_error_rec e;
  ck_assert_int_eq(pt_backend_sim_open(&be, pt_box_builtin("gen4-4x-shm"), 1), 0);
  be.info(be.self, &bi);
  pt_sweep_opts_default(&o);
  o.min_bytes = 4096;
  o.max_bytes = 16384;
  o.reps = 2;
  o.screen_reps = 1;
  o.full = 1;
  o.cands = cands;
  o.ncand = pt_sweep_cands(1u << NCCL_ALGO_RING, 1u << NCCL_PROTO_LL, ch, 2, 4, cands, 16);
  ck_assert_int_eq(pt_sweep_init(&sw, &o, &e), 0);
  ck_assert_int_eq(pt_sweep_run(&sw, &be, &e), 0);
  /* As the GPU backend: its NCCL environment is recorded too, and a box. */
  snprintf(bi.name, sizeof bi.name, "nccl");
  ck_assert_int_gt(bi.box.ngpus, 0);
  setenv("NCCL_TEST_OOM_VAR", "1", 1);
  int points = 0, rc = PT_ENOMEM;
  for (long k = 0; rc == PT_ENOMEM && k < 10000; k++) {
    struct pt_profile p;
    memset(&p, 0, sizeof p);
    size_t before = nlive;
    fail_in = k;
    rc = pt_sweepfile_build(&sw, &bi, "oom", "--backend nccl", 1, &p);
    fail_in = -1;
    ck_assert_msg(rc == 0 || rc == PT_ENOMEM, "allocation %ld failing: %d", k, rc);
    pt_profile_release(&p);
    ck_assert_msg(nlive == before, "allocation %ld failing: %zu blocks leaked", k, nlive - before);
    points += rc == PT_ENOMEM;
  }
  ck_assert_int_eq(rc, 0);
  /* The text, the repetition counts, the environment, the box and the
   * strings each failed once at least. */
  ck_assert_int_ge(points, 4);
  unsetenv("NCCL_TEST_OOM_VAR");
  pt_sweep_release(&sw);
  be.close(be.self);
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_oom");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, sweepfile_build_frees_everything_when_out_of_memory);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
