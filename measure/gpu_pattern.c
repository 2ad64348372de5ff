/* Input pattern and output check of the GPU backend (measure/gpu_pattern.h). */
#include "gpu_pattern.h"

#define PERIOD 1021u

/* Op v shifts the pattern by 7v: consecutive ops of one launch differ at
 * every element, so an op that reads a neighbour's input or leaves the
 * previous op's output in place is caught. */
static unsigned value(size_t i, int rank, unsigned op) {
  return (unsigned)((i * (2u * (size_t)rank + 1u) + 3u * (size_t)rank + 7u * (size_t)op) % PERIOD) + 1u;
}

void pt_pattern_fill_op(float *buf, size_t count, int rank, unsigned op) {
  for (size_t i = 0; i < count; i++) buf[i] = (float)value(i, rank, op);
}

void pt_pattern_fill(float *buf, size_t count, int rank) { pt_pattern_fill_op(buf, count, rank, 0); }

float pt_pattern_sum_op(size_t i, int nranks, unsigned op) {
  unsigned s = 0;
  for (int r = 0; r < nranks; r++) s += value(i, r, op);
  return (float)s;
}

float pt_pattern_sum(size_t i, int nranks) { return pt_pattern_sum_op(i, nranks, 0); }

int pt_pattern_check(const float *buf, size_t count, int nranks, size_t *bad, float *got,
                     float *want) {
  return pt_pattern_check_op(buf, count, nranks, 0, bad, got, want);
}

int pt_pattern_check_op(const float *buf, size_t count, int nranks, unsigned op, size_t *bad,
                        float *got, float *want) {
  /* Every rank's value depends on i mod PERIOD only, so the sums do too:
   * one table keeps the check a compare per element at any size. */
  float table[PERIOD];
  for (size_t k = 0; k < PERIOD; k++) table[k] = pt_pattern_sum_op(k, nranks, op);
  for (size_t i = 0; i < count; i++) {
    float w = table[i % PERIOD];
    /* != is exact here: both sides are small integers; a NaN sentinel
     * (never written) compares unequal too. */
    if (buf[i] != w) {
      *bad = i;
      *got = buf[i];
      *want = w;
      return 1;
    }
  }
  return 0;
}
