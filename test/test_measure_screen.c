/* The adaptive sweep's screening (measure/sweep.c): at each coarse size a
 * candidate gets one repetition first, and only those within a few margins
 * of the best there get the rest of the screening repetitions; a far
 * slower one keeps its single repetition in the profile (it is measured,
 * not missing). The backend is a stand-in with exact, noiseless latencies
 * (a test double for the sweep's backend interface, include/pcie/sweep.h),
 * counting the repetitions asked for each candidate. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/profile.h"
#include "pcie/sweep.h"
#include "support/pt_test.h"

static unsigned asked[4];

/* ring/LL, and 3 % (tree/LL), 2x (ring/Simple) and 12 % (tree/Simple)
 * slower than it everywhere; NCCL's default is ring/LL. */
static int row(int algo, int proto) {
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_LL) return 0;
  if (proto == NCCL_PROTO_LL) return 1;
  return algo == NCCL_ALGO_RING ? 2 : 3;
}

static int info(void *self, struct pt_backend_info *out) {
  (void)self;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "screen-double");
  out->nranks = 8;
  out->nnodes = 1;
  out->max_channels = out->comm_channels = 1;
  return 0;
}

static int measure(void *self, const struct pt_measure_req *req, double *samples, struct pt_measure_res *res,
                   struct pt_error_rec *err) {
  static const double factor[4] = {1.0, 1.03, 2.0, 1.12};
  (void)self;
  (void)err;
  int r = req->is_default ? 0 : row(req->algo, req->proto);
  if (!req->is_default) asked[r] += req->reps;
  res->state = PT_PT_OK;
  for (unsigned k = 0; k < req->reps; k++) samples[k] = factor[r] * (10 + (double)req->nbytes / 400);
  return 0;
}

START_TEST(far_candidates_get_one_screening_repetition) {
  static const struct pt_cand_spec cands[] = {
      {NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 0}, {NCCL_ALGO_TREE, NCCL_PROTO_LL, 1, 0},
      {NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 0}, {NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 1, 0}};
  struct pt_backend b = {NULL, info, measure, NULL};
  struct pt_sweep_opts o;
  struct pt_sweep s;
  struct pt_error_rec e;
  struct pt_profile p = {0};
  char *reps = NULL;
  pt_sweep_opts_default(&o);
  o.min_bytes = 512;
  o.max_bytes = 32768; /* grid 512 .. 32 KiB; coarse 512, 4 KiB, 32 KiB */
  o.cands = cands;
  o.ncand = 4;
  memset(asked, 0, sizeof asked);
  ck_assert_int_eq(pt_sweep_init(&s, &o, &e), 0);
  ck_assert_msg(pt_sweep_run(&s, &b, &e) == 0, "%s", e.msg);
  /* The 2x slower candidate: one repetition at each of the 3 coarse sizes. */
  ck_assert_uint_eq(asked[2], 3);
  /* The 3 % slower one is a contender: full repetitions at each. */
  ck_assert_uint_eq(asked[1], 3 * o.reps);
  /* 12 % slower is within 4 margins (24 %) of the best: it gets the
   * screening repetitions (issue 30 §5), and no more, being outside the
   * 6 % margin everywhere. */
  ck_assert_uint_gt(o.screen_reps, 1);
  ck_assert_uint_eq(asked[3], 3 * o.screen_reps);
  ck_assert_int_eq(pt_sweep_to_profile(&s, &p, &reps), 0);
  const struct pt_series *ps = p.series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(ps);
  ck_assert_uint_eq(ps->nsizes, 3);
  for (size_t k = 0; k < ps->nsizes; k++) {
    ck_assert_int_eq(ps->cand[2].points[k].state, PT_PT_OK);
    ck_assert_double_eq_tol(ps->cand[2].points[k].lat_us, 2 * (10 + (double)ps->sizes[k] / 400), 1e-9);
  }
  free(reps);
  pt_profile_release(&p);
  pt_sweep_release(&s);
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_screen");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, far_candidates_get_one_screening_repetition);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
