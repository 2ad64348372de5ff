/*
 * The hot path of the decision table, inline: the lookup and the apply rule
 * that every getCollInfo runs. Included by table.c (pt_table_decide and the
 * apply functions) and by the ABI shim, whose getCollInfo runs it without a
 * call in between (docs/performance.md, "Tuner hot path"). No allocation,
 * lock, log or parsing; a fixed number of search steps per table.
 */
#ifndef PCIE_TABLE_HOT_H
#define PCIE_TABLE_HOT_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "nccl/common.h"
#include "pcie/table.h"

#define PT_HOT static inline __attribute__((always_inline))

/* Sizes map to PT_NKEYS keys: below 16 bytes the size itself, above it the
 * power of two and the next 4 bits, i.e. 16 keys per octave. */
PT_HOT unsigned pt_hot_key(uint64_t n) {
  if (n < 16) return (unsigned)n;
  int m = 63 - __builtin_clzll(n);
  return (unsigned)(m - 3) * 16 + (unsigned)((n >> (m - 4)) & 15);
}

/* The index of the first interval with hi >= nbytes. Starting at the
 * interval that holds the key's smallest size, a branch-free search takes
 * the same number of steps for every size of a set (set->top sets it), so
 * the loop exit is always predicted; his[] is padded with UINT64_MAX so the
 * steps never overrun. */
PT_HOT size_t pt_hot_find(const struct pt_ivset *set, uint64_t nbytes) {
  const uint64_t *b = set->his + set->start[pt_hot_key(nbytes)];
  for (size_t step = set->top; step > 0; step >>= 1) b = b[step - 1] < nbytes ? b + step : b;
  return (size_t)(b - set->his);
}

PT_HOT const struct pt_ivset *pt_hot_set(const struct pt_table *t, int coll) {
  return (unsigned)coll < PT_NCOLL ? t->set[coll] : NULL;
}

/* The smallest entry >= 0 of NCCL's 7x3 table (FLT_MAX when none; NaN never
 * counts): one pass with no data-dependent branch. With SSE2 (every x86-64)
 * an entry with its sign bit set is or'ed with its own sign spread over all
 * bits, which makes it a NaN, and minps(v, m) keeps m when v is a NaN: four
 * entries in four instructions, negatives and NaNs never chosen. */
PT_HOT float pt_hot_best(const float *cost) {
  float b = FLT_MAX;
  int i = 0;
#ifdef __SSE2__
  __m128 m = _mm_set1_ps(FLT_MAX);
  for (; i + 4 <= NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i += 4) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(cost + i));
    m = _mm_min_ps(_mm_castsi128_ps(_mm_or_si128(v, _mm_srai_epi32(v, 31))), m);
  }
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  b = _mm_cvtss_f32(m);
#endif
  for (; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++)
    b = cost[i] >= 0.0f && cost[i] < b ? cost[i] : b;
  return b;
}

/* Which entries hold for this numPipeOps: bit k set = entry k is skipped.
 * A grouped call (numPipeOps > 1, NCCL aggregated tasks into one decision,
 * enqueue.cc ncclPrepareTasks) is reached only by a rule with a numPipeOps
 * range; measured single calls say nothing about it. */
PT_HOT unsigned pt_hot_skip(const struct pt_hot *h, int num_pipe_ops) {
  unsigned skip = 0;
  for (int k = 0; k < h->n; k++) {
    int in = num_pipe_ops >= h->pipe_lo[k] && (!h->pipe_hi[k] || num_pipe_ops <= h->pipe_hi[k]);
    if ((h->cond >> k & 1) ? !in : num_pipe_ops > 1) skip |= 1u << k;
  }
  return skip;
}

/* Whether one of the unseen Tree/Ring combinations (struct pt_hot; bit
 * algo x 3 + proto) is >= 0 and not above best, NCCL's best entry, in a
 * num_algo x num_proto table (na, np: the part of it NCCL's indices reach).
 * On a tie any of them counts, so that the v2 shim's flat table (every
 * usable entry 1.0) yields wherever NCCL may run one. */
static __attribute__((noinline, cold, unused)) int pt_hot_unseen_best_any(const float *cost,
                                                                          unsigned unseen, int na,
                                                                          int np, int num_proto,
                                                                          float best) {
  for (int a = NCCL_ALGO_TREE; a <= NCCL_ALGO_RING && a < na; a++)
    for (int p = 0; p < np; p++) {
      float v = cost[a * num_proto + p];
      if (unseen >> (a * NCCL_NUM_PROTOCOLS + p) & 1 && v >= 0.0f && v <= best) return 1;
    }
  return 0;
}

/* The same for NCCL's 7x3 table, where bit i is cost[i]. With SSE2 the
 * first eight entries, negatives and NaNs made NaNs as in pt_hot_best, are
 * compared with best at once and the mask of lanes that hold is and'ed with
 * the bits: about a dozen instructions, whatever the mask. */
PT_HOT int pt_hot_unseen_best(const float *cost, unsigned unseen, float best) {
#ifdef __SSE2__
  __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)cost);
  __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(cost + 4));
  __m128 b = _mm_set1_ps(best);
  int le0 = _mm_movemask_ps(_mm_cmple_ps(_mm_castsi128_ps(_mm_or_si128(v0, _mm_srai_epi32(v0, 31))), b));
  int le1 = _mm_movemask_ps(_mm_cmple_ps(_mm_castsi128_ps(_mm_or_si128(v1, _mm_srai_epi32(v1, 31))), b));
  return ((unsigned)le0 | (unsigned)le1 << 4) & unseen;
#else
  return pt_hot_unseen_best_any(cost, unseen, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS,
                                NCCL_NUM_PROTOCOLS, best);
#endif
}

/* The one apply rule, over a packed ranked list (docs/decisions.md, "Every
 * getCollInfo call"). Returns the applied rank, or -1 with nothing changed. */
PT_HOT int pt_hot_apply(const struct pt_hot *h, float *cost, int num_algo, int num_proto,
                        int num_pipe_ops, int *nchannels) {
  if (!h->n || !cost || !nchannels) return -1;
  /* Without conditions, every entry holds for a single call and none for a
   * grouped one. */
  unsigned skip = 0;
  if (h->cond) skip = pt_hot_skip(h, num_pipe_ops);
  else if (num_pipe_ops > 1) return -1;
  /* NCCL's own best entry. An entry far above it is NCCL steering away from
   * that choice for a reason the tuner is not told (fp8 reductions beyond 8
   * ranks multiply every Ring entry by 1024, enqueue.cc updateCollCostTable);
   * no real cost ratio between usable choices comes near PT_STEER_AWAY_RATIO. */
  int na = NCCL_NUM_ALGORITHMS, np = NCCL_NUM_PROTOCOLS;
  float best = FLT_MAX;
  int unseen = 0;
  if (__builtin_expect(num_algo == NCCL_NUM_ALGORITHMS && num_proto == NCCL_NUM_PROTOCOLS, 1)) {
    best = pt_hot_best(cost);
    if (h->unseen) unseen = pt_hot_unseen_best(cost, h->unseen, best);
  } else {
    if (num_algo <= 0 || num_proto <= 0) return -1;
    na = num_algo < na ? num_algo : na;
    np = num_proto < np ? num_proto : np;
    for (int a = 0; a < na; a++)
      for (int p = 0; p < np; p++) {
        float v = cost[a * num_proto + p];
        best = v >= 0.0f && v < best ? v : best;
      }
    if (h->unseen) unseen = pt_hot_unseen_best_any(cost, h->unseen, na, np, num_proto, best);
  }
  /* NCCL's best entry is a combination it did not run when the profile was
   * measured (LL128 opted in since, say): the measured default is not what
   * NCCL runs now, so no candidate is known to beat it. */
  if (unseen) return -1;
  float limit = best > 0.0f ? best * (float)PT_STEER_AWAY_RATIO : FLT_MAX;
  for (int k = 0; k < h->n; k++) {
    if (skip >> k & 1 || h->algo[k] >= na || h->proto[k] >= np) continue;
    int idx = h->algo[k] * num_proto + h->proto[k];
    /* Negative or NaN: NCCL disabled it (2.31: NCCL_TUNING_IGNORE, -1). */
    if (!(cost[idx] >= 0.0f) || cost[idx] > limit) continue;
    /* NCCL takes the smallest entry >= 0 and breaks ties to the lower index:
     * a zero at a lower index is raised a hair so it cannot steal the tie
     * (there is a zero only when NCCL's best is 0). */
    for (int i = 0; best == 0.0f && i < idx; i++)
      if (cost[i] == 0.0f) cost[i] = FLT_MIN;
    cost[idx] = 0.0f;
    if (h->channels[k]) *nchannels = h->channels[k];
    return k;
  }
  return -1;
}

/* LL128 gave wrong results on this box (its screen failed): NCCL must
 * not run it anywhere, also where the plugin leaves the choice to NCCL.
 * Its usable entries become the largest time a float holds, never the
 * cheapest while another entry is usable (and only then). Not -1: NCCL
 * 2.28-2.30 skip a negative entry, but 2.31 selects the smallest value the
 * tuner wrote, negative included (dev tuning.cc ncclTuningSelectBestTuning). */
static __attribute__((noinline, cold, unused)) void pt_hot_drop_ll128(float *cost, int num_algo, int num_proto) {
  int other = 0;
  if (!cost || num_proto <= NCCL_PROTO_LL128) return;
  for (int a = 0; a < num_algo; a++)
    for (int p = 0; p < num_proto; p++)
      if (p != NCCL_PROTO_LL128 && cost[a * num_proto + p] >= 0.0f) other = 1;
  if (!other) return;
  for (int a = 0; a < num_algo; a++)
    if (cost[a * num_proto + NCCL_PROTO_LL128] >= 0.0f) cost[a * num_proto + NCCL_PROTO_LL128] = FLT_MAX;
}

/* Lookup and apply; *i gets the interval's index (SIZE_MAX for none). */
PT_HOT int pt_hot_decide(const struct pt_table *t, int coll, uint64_t nbytes, float *cost,
                         int num_algo, int num_proto, int num_pipe_ops, int *nchannels,
                         size_t *i) {
  if (__builtin_expect(t->no_ll128, 0)) pt_hot_drop_ll128(cost, num_algo, num_proto);
  const struct pt_ivset *set = pt_hot_set(t, coll);
  *i = SIZE_MAX;
  if (!set) return -1;
  *i = pt_hot_find(set, nbytes);
  return pt_hot_apply(&set->hot[*i], cost, num_algo, num_proto, num_pipe_ops, nchannels);
}

#endif
