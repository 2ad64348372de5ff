/* Input pattern and output check of the GPU backend (measure/gpu_pattern.h). */
#include "gpu_pattern.h"

#define PERIOD 1021u

static unsigned value(size_t i, int rank) {
  return (unsigned)((i * (2u * (size_t)rank + 1u) + 3u * (size_t)rank) % PERIOD) + 1u;
}

void pt_pattern_fill(float *buf, size_t count, int rank) {
  for (size_t i = 0; i < count; i++) buf[i] = (float)value(i, rank);
}

float pt_pattern_sum(size_t i, int nranks) {
  unsigned s = 0;
  for (int r = 0; r < nranks; r++) s += value(i, r);
  return (float)s;
}

int pt_pattern_check(const float *buf, size_t count, int nranks, size_t *bad, float *got,
                     float *want) {
  /* Every rank's value depends on i mod PERIOD only, so the sums do too:
   * one table keeps the check a compare per element at any size. */
  float table[PERIOD];
  for (size_t k = 0; k < PERIOD; k++) table[k] = pt_pattern_sum(k, nranks);
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
