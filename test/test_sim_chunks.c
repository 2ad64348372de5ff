/* NCCL's chunking in the simulator (sim/ring_chunks.c) and where a tuner's
 * chunk acts (tuner/chunk.c): the pieces and loops its device code runs,
 * checked against figures derived by hand from enqueue.cc
 * calcCollChunking, all_reduce.h runRing / runTreeSplit and prims_*.h, and
 * what NCCL_BUFFSIZE and a tuner's chunk change in the truth (nothing at
 * NCCL's defaults). */
#include <check.h>
#include <math.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/sim_box.h"

#define KiB ((uint64_t)1024)
#define MiB (KiB * 1024)

#define AR PT_ALLREDUCE
#define RING NCCL_ALGO_RING
#define TREE NCCL_ALGO_TREE
#define SIMPLE NCCL_PROTO_SIMPLE
#define LL NCCL_PROTO_LL
#define LL128 NCCL_PROTO_LL128

static unsigned long ring_simple(uint64_t buf, uint64_t chunk, uint64_t chan, unsigned long *loops) {
  return pt_chunk_pieces(AR, RING, SIMPLE, buf, chunk, 8, chan, loops);
}

/* 8 ranks, default 4 MiB buffer: a 2 MiB chunk, loops of 16 MiB per
 * channel; the slice floor is 32 KiB, so a step is one slice up to 32 KiB
 * per rank (256 KiB per channel). With 1 MiB the floor is 8 KiB (64 KiB
 * per channel) and a loop 4 MiB. */
START_TEST(slices_and_loops_follow_the_device_code) {
  unsigned long loops;
  ck_assert_uint_eq(pt_chunk_run(AR, RING, SIMPLE, 0, 0, 8, 1), 2 * MiB);
  ck_assert_uint_eq(pt_chunk_run(AR, RING, SIMPLE, 1 * MiB, 0, 8, 1), 512 * KiB);
  ck_assert_uint_eq(ring_simple(0, 0, 256 * KiB, &loops), 1);
  ck_assert_uint_eq(loops, 1);
  ck_assert_uint_eq(ring_simple(0, 0, 256 * KiB + 8, NULL), 2);
  ck_assert_uint_eq(ring_simple(0, 0, 16 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
  /* One byte past the loop: a second loop whose chunk is recomputed from
   * one byte (one slice). */
  ck_assert_uint_eq(ring_simple(0, 0, 16 * MiB + 1, &loops), 3);
  ck_assert_uint_eq(loops, 2);
  ck_assert_uint_eq(ring_simple(1 * MiB, 0, 64 * KiB, NULL), 1);
  ck_assert_uint_eq(ring_simple(1 * MiB, 0, 128 * KiB, NULL), 2);
  ck_assert_uint_eq(ring_simple(1 * MiB, 0, 4 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
  ck_assert_uint_eq(ring_simple(1 * MiB, 0, 8 * MiB, &loops), 4);
  ck_assert_uint_eq(loops, 2);
  /* A tuner's chunk: 64 KiB at 8 ranks loops every 512 KiB per channel;
   * above NCCL's ceiling it is NCCL's own. */
  ck_assert_uint_eq(ring_simple(0, 64 * KiB, 1 * MiB, &loops), 4);
  ck_assert_uint_eq(loops, 2);
  ck_assert_uint_eq(ring_simple(0, 64 * MiB, 1 * MiB, &loops), 2);
  ck_assert_uint_eq(loops, 1);
}
END_TEST

/* LL, LL128 and Tree (tuner/chunk.c, sim/ring_chunks.c): NCCL's ceilings
 * from its buffers, one piece a step, a ring's loop of nranks chunks, a
 * tree's piece of one chunk; tree LL128's own chunk shrinks with the part
 * (enqueue.cc calcCollChunking); paths not offered run one piece. */
START_TEST(ll_ll128_and_tree_follow_the_device_code) {
  unsigned long loops;
  ck_assert_uint_eq(pt_chunk_ceiling(AR, RING, LL, 0), 32768);
  ck_assert_uint_eq(pt_chunk_ceiling(AR, RING, LL128, 0), 576000);
  ck_assert_uint_eq(pt_chunk_ceiling(AR, TREE, SIMPLE, 4 * MiB), 512 * KiB);
  ck_assert_uint_eq(pt_chunk_ceiling(PT_ALLGATHER, TREE, SIMPLE, 4 * MiB), 0);
  ck_assert_uint_eq(pt_chunk_ceiling(AR, NCCL_ALGO_COLLNET_DIRECT, SIMPLE, 4 * MiB), 0);
  /* Ring LL: loops of 8 x 32 KiB; 8 KiB: loops of 64 KiB, one piece a step. */
  ck_assert_uint_eq(pt_chunk_pieces(AR, RING, LL, 0, 0, 8, 256 * KiB, &loops), 1);
  ck_assert_uint_eq(pt_chunk_pieces(AR, RING, LL, 0, 8 * KiB, 8, 256 * KiB, &loops), 4);
  ck_assert_uint_eq(loops, 4);
  ck_assert_uint_eq(pt_chunk_pieces(AR, RING, LL, 0, 8 * KiB, 8, 64 * KiB, &loops), 1);
  /* LL128: 8 KiB rounds down to 7680 B (grain 1920): loops of 61440 B. */
  ck_assert_uint_eq(pt_chunk_run(AR, RING, LL128, 0, 8 * KiB, 8, 1 * MiB), 7680);
  ck_assert_uint_eq(pt_chunk_pieces(AR, RING, LL128, 0, 8 * KiB, 8, 61440, NULL), 1);
  ck_assert_uint_eq(pt_chunk_pieces(AR, RING, LL128, 0, 8 * KiB, 8, 61441, NULL), 2);
  /* Tree Simple: pieces of 512 KiB, never recomputed; 64 KiB: 1 MiB in 16. */
  ck_assert_uint_eq(pt_chunk_pieces(AR, TREE, SIMPLE, 0, 0, 8, 1 * MiB, &loops), 2);
  ck_assert_uint_eq(pt_chunk_pieces(AR, TREE, SIMPLE, 0, 64 * KiB, 8, 1 * MiB, &loops), 16);
  ck_assert_uint_eq(pt_chunk_pieces(AR, TREE, SIMPLE, 0, 64 * KiB, 8, 64 * KiB, &loops), 1);
  /* Tree LL128, 8 ranks on a node: nsteps 1.8, so halve while the part
   * holds < 14.4 chunks (down to 128 KiB), then < 3.6 (down to 32 KiB).
   * 1 MiB: 576000 -> 288000 -> 144000 -> 72000 (14 chunks >= 3.6), on the
   * grain 71040. 64 KiB: ... 72000 -> 36000 -> 18000, 17280. */
  ck_assert_uint_eq(pt_chunk_run(AR, TREE, LL128, 0, 0, 8, 1 * MiB), 71040);
  ck_assert_uint_eq(pt_chunk_run(AR, TREE, LL128, 0, 0, 8, 64 * KiB), 17280);
  /* A tuner's chunk replaces it, clamped to the buffers' ceiling only. */
  ck_assert_uint_eq(pt_chunk_run(AR, TREE, LL128, 0, 8 * MiB, 8, 64 * KiB), 576000);
  ck_assert_uint_eq(pt_chunk_pieces(PT_ALLGATHER, TREE, LL, 0, 8 * KiB, 8, 1 * MiB, &loops), 1);
  /* Where the plugin's chunk acts (tuner/chunk.c). */
  ck_assert_uint_eq(pt_chunk_reach(AR, RING, 8, 8192), 65536);
  ck_assert_uint_eq(pt_chunk_reach(PT_REDUCESCATTER, RING, 8, 8192), 65536);
  ck_assert_uint_eq(pt_chunk_reach(AR, TREE, 8, 8192), 8192);
  ck_assert_uint_eq(pt_chunk_reach(PT_ALLGATHER, TREE, 8, 8192), 0);
  ck_assert_uint_eq(pt_chunk_reach(AR, NCCL_ALGO_NVLS, 8, 8192), 0);
  ck_assert(!pt_chunk_asked("2.28.9") && !pt_chunk_asked("2.29.7") && pt_chunk_asked("2.30.7") &&
            pt_chunk_asked("2.31.0") && pt_chunk_asked("2.30 (sim, derived view)") && !pt_chunk_asked(NULL));
}
END_TEST

/* One piece is the truth's additive form; more pieces overlap the steps'
 * waits, never below the link's own time (all of X, plus a hop), and the
 * FIFO window makes too many pieces cost round trips. */
START_TEST(pipeline_of_pieces) {
  ck_assert_double_eq_tol(pt_chunk_pipe_us(14, 1, 4, 2.0, 30.0), 14 * 2.0 + 30.0, 1e-12);
  /* Latency-bound: 14 x 2 + 2 + 13 x 2 / 2. */
  ck_assert_double_eq_tol(pt_chunk_pipe_us(14, 2, 4, 2.0, 28.0), 28 + 2 + 13, 1e-12);
  /* Link-bound with a window that never binds: 280 + 2 whatever the pieces. */
  ck_assert_double_eq_tol(pt_chunk_pipe_us(14, 64, 100000, 2.0, 280.0), 282, 1e-12);
  /* Window-bound: 14 x 64 pieces, 4 per round trip of two hops. */
  ck_assert_double_eq_tol(pt_chunk_pipe_us(14, 64, 4, 2.0, 280.0), (2 * 2.0 * 14 * 64 + 280) / 4 + 2, 1e-9);
  /* The trade: some piece count beats one piece, and too many lose again. */
  double one = pt_chunk_pipe_us(14, 1, 8, 0.5, 100), best = one;
  for (unsigned long n = 2; n <= 256; n++) best = fmin(best, pt_chunk_pipe_us(14, n, 8, 0.5, 100));
  ck_assert(best < one);
  ck_assert(pt_chunk_pipe_us(14, 256, 8, 0.5, 100) > best);
  ck_assert_uint_eq(pt_chunk_window(RING, SIMPLE), 4);
  ck_assert_uint_eq(pt_chunk_window(TREE, SIMPLE), 8);
  ck_assert_uint_eq(pt_chunk_window(RING, LL128), 8);
}
END_TEST

/* NCCL's default buffer, set or unset, changes nothing; 1 MiB changes
 * Simple exactly where the device code runs another piece count: a ring
 * (all-reduce and all-gather alike) at 64-256 KiB per channel at 8 ranks,
 * past 4 MiB (a second loop); a tree past 128 KiB (its chunk is a step,
 * 1 MiB / 8). LL and LL128 have buffers of their own. */
START_TEST(buffsize_moves_only_simple_where_pieces_differ) {
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
          double d = pt_box_true_us(base, AR, PT_MODE_GRAPH, a, p, ch, bytes);
          ck_assert(d == pt_box_true_us(&four, AR, PT_MODE_GRAPH, a, p, ch, bytes));
          double o = pt_box_true_us(&one, AR, PT_MODE_GRAPH, a, p, ch, bytes);
          int run = pt_box_running_channels(base, AR, p, ch, bytes);
          uint64_t chan = bytes / (uint64_t)run;
          int ring = a == RING && p == SIMPLE, tree = a == TREE && p == SIMPLE;
          if (ring && chan > 64 * KiB && chan <= 256 * KiB) {
            ck_assert_msg(o < d, "%llu B ch %d: 1 MiB buffers gain nothing", (unsigned long long)bytes, ch);
            moved++;
          } else if ((ring && chan > 4 * MiB) || (tree && chan > 128 * KiB)) {
            /* Other pieces (the link may bound both: the time may not move). */
            ck_assert(pt_chunk_pieces(AR, a, p, 1 * MiB, 0, 8, chan, NULL) !=
                      pt_chunk_pieces(AR, a, p, 0, 0, 8, chan, NULL));
          } else {
            ck_assert_msg(o == d, "%llu B %d/%d/%d: %g vs %g", (unsigned long long)bytes, a, p, ch, o, d);
          }
          /* All-gather's ring walks its part in the same loops. */
          double gd = pt_box_true_us(base, PT_ALLGATHER, PT_MODE_GRAPH, RING, p, ch, bytes);
          double go = pt_box_true_us(&one, PT_ALLGATHER, PT_MODE_GRAPH, RING, p, ch, bytes);
          uint64_t gchan = bytes / (uint64_t)pt_box_running_channels(base, PT_ALLGATHER, p, ch, bytes);
          if (p == SIMPLE && gchan > 64 * KiB && gchan <= 256 * KiB) ck_assert(go < gd);
          else if (p != SIMPLE || gchan <= 64 * KiB) ck_assert(go == gd);
        }
  ck_assert_int_gt(moved, 4);
}
END_TEST

/* A tuner's chunk matters only where a channel runs more than one loop
 * (ring) or piece (tree) with it; at one the device code recomputes it or
 * never uses it. Every protocol of both. */
START_TEST(chunk_matters_only_past_one_loop) {
  const struct pt_box *b = pt_box_builtin("gen5-8x-dual-misdetect");
  double own = pt_box_true_us(b, AR, PT_MODE_GRAPH, RING, SIMPLE, 1, 256 * KiB);
  /* 256 KiB on one channel, chunk 32 KiB x 8 ranks = 256 KiB: one loop,
   * the chunk recomputed: NCCL's own time. */
  ck_assert(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, RING, SIMPLE, 1, 256 * KiB, 32 * KiB) == own);
  /* 16 KiB: two loops of one slice where NCCL runs one: faster. */
  ck_assert(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, RING, SIMPLE, 1, 256 * KiB, 16 * KiB) < own);
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
    /* One loop of 8 chunks as run (LL128's 16 KiB is 15360 B on its grain). */
    uint64_t c = pt_chunk_run(AR, RING, p, 0, 16 * KiB, 8, 1), loop = 8 * c;
    double ring = pt_box_true_us(b, AR, PT_MODE_GRAPH, RING, p, 1, loop);
    double tree = pt_box_true_us(b, AR, PT_MODE_GRAPH, TREE, p, 1, c);
    ck_assert_msg(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, RING, p, 1, loop, 16 * KiB) == ring, "proto %d", p);
    ck_assert_msg(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, RING, p, 1, loop, 4 * KiB) != ring, "proto %d", p);
    ck_assert_msg(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, TREE, p, 1, c, 16 * KiB) == tree, "proto %d", p);
    ck_assert_msg(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, TREE, p, 1, c, 4 * KiB) != tree, "proto %d", p);
  }
  /* At or above NCCL's ceiling (LL: 32 KiB) the chunk is NCCL's own. */
  ck_assert(pt_box_true_chunk_us(b, AR, PT_MODE_GRAPH, RING, LL, 1, 1 * MiB, 64 * KiB) ==
            pt_box_true_us(b, AR, PT_MODE_GRAPH, RING, LL, 1, 1 * MiB));
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim_chunks");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, slices_and_loops_follow_the_device_code);
  tcase_add_test(tc, ll_ll128_and_tree_follow_the_device_code);
  tcase_add_test(tc, pipeline_of_pieces);
  tcase_add_test(tc, buffsize_moves_only_simple_where_pieces_differ);
  tcase_add_test(tc, chunk_matters_only_past_one_loop);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
