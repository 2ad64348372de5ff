/* NCCL's ring chunking in the simulator (sim/ring_chunks.c): the slices and
 * loops its device code runs, checked against the figures derived by hand
 * from all_reduce.h runRing and prims_simple.h, and what NCCL_BUFFSIZE and
 * a tuner's chunk change in the truth (nothing at NCCL's defaults). */
#include <check.h>
#include <math.h>

#include "nccl/common.h"
#include "pcie/sim_box.h"

#define KiB ((uint64_t)1024)
#define MiB (KiB * 1024)

/* 8 ranks, default 4 MiB buffer: a 2 MiB chunk, loops of 16 MiB per
 * channel; the slice floor is 32 KiB, so a step is one slice up to 32 KiB
 * per rank (256 KiB per channel). With 1 MiB the floor is 8 KiB (64 KiB
 * per channel) and a loop 4 MiB. */
START_TEST(slices_and_loops_follow_the_device_code) {
  unsigned long loops;
  ck_assert_uint_eq(pt_ring_simple_chunk(0), 2 * MiB);
  ck_assert_uint_eq(pt_ring_simple_chunk(1 * MiB), 512 * KiB);
  ck_assert_uint_eq(pt_ring_simple_slices(0, 0, 8, 256 * KiB, &loops), 1);
  ck_assert_uint_eq(loops, 1);
  ck_assert_uint_eq(pt_ring_simple_slices(0, 0, 8, 256 * KiB + 8, NULL), 2);
  ck_assert_uint_eq(pt_ring_simple_slices(0, 0, 8, 16 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
  /* One byte past the loop: a second loop whose chunk is recomputed from
   * one byte (one slice). */
  ck_assert_uint_eq(pt_ring_simple_slices(0, 0, 8, 16 * MiB + 1, &loops), 3);
  ck_assert_uint_eq(loops, 2);
  ck_assert_uint_eq(pt_ring_simple_slices(1 * MiB, 0, 8, 64 * KiB, NULL), 1);
  ck_assert_uint_eq(pt_ring_simple_slices(1 * MiB, 0, 8, 128 * KiB, NULL), 2);
  ck_assert_uint_eq(pt_ring_simple_slices(1 * MiB, 0, 8, 4 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
  ck_assert_uint_eq(pt_ring_simple_slices(1 * MiB, 0, 8, 8 * MiB, &loops), 4);
  ck_assert_uint_eq(loops, 2);
  /* A tuner's chunk: 64 KiB at 8 ranks loops every 512 KiB per channel;
   * above NCCL's ceiling it is NCCL's own. */
  ck_assert_uint_eq(pt_ring_simple_slices(0, 64 * KiB, 8, 1 * MiB, &loops), 4);
  ck_assert_uint_eq(loops, 2);
  ck_assert_uint_eq(pt_ring_simple_slices(0, 64 * MiB, 8, 1 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
}
END_TEST

/* One slice is the truth's additive form; more slices overlap the
 * steps' waits, never below the link's own time (all of X, plus a hop). */
START_TEST(pipeline_of_slices) {
  ck_assert_double_eq_tol(pt_ring_pipe_us(14, 1, 2.0, 30.0), 14 * 2.0 + 30.0, 1e-12);
  /* Latency-bound: 14 x 2 + 2 + 13 x 2 / 2. */
  ck_assert_double_eq_tol(pt_ring_pipe_us(14, 2, 2.0, 28.0), 28 + 2 + 13, 1e-12);
  /* Link-bound: 280 + 2 whatever the slices. */
  ck_assert_double_eq_tol(pt_ring_pipe_us(14, 64, 2.0, 280.0), 282, 1e-12);
  ck_assert(pt_ring_pipe_us(14, 2, 0.5, 100) < pt_ring_pipe_us(14, 1, 0.5, 100));
  for (unsigned long n = 1; n < 64; n++)
    ck_assert(pt_ring_pipe_us(14, n + 1, 3.0, 50) <= pt_ring_pipe_us(14, n, 3.0, 50));
}
END_TEST

/* NCCL's default buffer, set or unset, changes nothing; 1 MiB changes
 * Simple ring all-reduce exactly where the device code runs another slice
 * count (64-256 KiB per channel at 8 ranks) and nothing else. */
START_TEST(buffsize_moves_only_simple_ring_where_slices_differ) {
  const struct pt_box *base = pt_box_builtin("gen5-8x-dual-misdetect");
  ck_assert_ptr_nonnull(base);
  struct pt_box four = *base, one = *base;
  four.nccl_buffsize = 4 * MiB;
  one.nccl_buffsize = 1 * MiB;
  int moved = 0;
  for (uint64_t bytes = 32 * KiB; bytes <= 8 * MiB; bytes *= 2)
    for (int a = 0; a < 2; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
        for (int ch = 1; ch <= 8; ch++) {
          double d = pt_box_true_us(base, PT_ALLREDUCE, PT_MODE_GRAPH, a, p, ch, bytes);
          ck_assert(d == pt_box_true_us(&four, PT_ALLREDUCE, PT_MODE_GRAPH, a, p, ch, bytes));
          double o = pt_box_true_us(&one, PT_ALLREDUCE, PT_MODE_GRAPH, a, p, ch, bytes);
          int run = pt_box_running_channels(base, PT_ALLREDUCE, p, ch, bytes);
          uint64_t chan = bytes / (uint64_t)run;
          /* Past 4 MiB per channel 1 MiB buffers also run a second loop:
           * more slices, never slower (the link may bound both). */
          int simple_ring = a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE;
          if (simple_ring && chan > 64 * KiB && chan <= 256 * KiB) {
            ck_assert_msg(o < d, "%llu B ch %d: 1 MiB buffers gain nothing", (unsigned long long)bytes, ch);
            moved++;
          } else if (simple_ring && chan > 4 * MiB) {
            ck_assert_msg(o <= d, "%llu B ch %d: 1 MiB buffers slower", (unsigned long long)bytes, ch);
          } else {
            ck_assert_msg(o == d, "%llu B %d/%d/%d: %g vs %g", (unsigned long long)bytes, a, p, ch, o, d);
          }
          ck_assert(pt_box_true_us(&one, PT_ALLGATHER, PT_MODE_GRAPH, NCCL_ALGO_RING, p, ch, bytes) ==
                    pt_box_true_us(base, PT_ALLGATHER, PT_MODE_GRAPH, NCCL_ALGO_RING, p, ch, bytes));
        }
  ck_assert_int_gt(moved, 4);
}
END_TEST

/* A tuner's chunk matters only where a channel runs more than one loop
 * with it; at one loop the device code recomputes it. */
START_TEST(chunk_matters_only_past_one_loop) {
  const struct pt_box *b = pt_box_builtin("gen5-8x-dual-misdetect");
  int ring = NCCL_ALGO_RING, simple = NCCL_PROTO_SIMPLE;
  double own = pt_box_true_us(b, PT_ALLREDUCE, PT_MODE_GRAPH, ring, simple, 1, 256 * KiB);
  /* 256 KiB on one channel, chunk 32 KiB x 8 ranks = 256 KiB: one loop,
   * the chunk recomputed: NCCL's own time. */
  ck_assert(pt_box_true_chunk_us(b, PT_ALLREDUCE, PT_MODE_GRAPH, ring, simple, 1, 256 * KiB, 32 * KiB) == own);
  /* 16 KiB: two loops of one slice where NCCL runs one: faster. */
  ck_assert(pt_box_true_chunk_us(b, PT_ALLREDUCE, PT_MODE_GRAPH, ring, simple, 1, 256 * KiB, 16 * KiB) < own);
  ck_assert(pt_box_true_chunk_us(b, PT_ALLREDUCE, PT_MODE_GRAPH, ring, NCCL_PROTO_LL, 1, 256 * KiB, 16 * KiB) ==
            pt_box_true_us(b, PT_ALLREDUCE, PT_MODE_GRAPH, ring, NCCL_PROTO_LL, 1, 256 * KiB));
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim_chunks");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, slices_and_loops_follow_the_device_code);
  tcase_add_test(tc, pipeline_of_slices);
  tcase_add_test(tc, buffsize_moves_only_simple_ring_where_slices_differ);
  tcase_add_test(tc, chunk_matters_only_past_one_loop);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
