/*
 * Reproducible measurement noise for simulated boxes. Every sample is a pure
 * function of (seed, point key, repetition), so a resumed or reordered sweep
 * draws exactly the samples an uninterrupted one would; no global RNG state.
 */
#include <math.h>

#include "pcie/sim_box.h"

/* splitmix64 (Steele, Lea, Flood 2014): a strong 64-bit mixer, enough for
 * noise and cheap enough to call per sample. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Uniform in (0, 1), never 0 so log() is safe. */
static double unit(uint64_t x) { return ((double)(x >> 11) + 0.5) / 9007199254740992.0; }

uint64_t pt_noise_key(int coll, int mode, int algo, int proto, int channels, uint64_t nbytes) {
  uint64_t k = mix((uint64_t)(unsigned)coll + 1);
  k = mix(k ^ ((uint64_t)(unsigned)mode + 7));
  k = mix(k ^ ((uint64_t)(unsigned)(algo + 2) << 8 | (uint64_t)(unsigned)(proto + 2)));
  k = mix(k ^ ((uint64_t)(unsigned)(channels + 1) << 16));
  return mix(k ^ nbytes);
}

double pt_noise_factor(const struct pt_box *b, uint64_t seed, uint64_t key, unsigned rep) {
  uint64_t h = mix(mix(seed ^ 0x5bd1e995ULL) ^ key);
  h = mix(h ^ rep);
  /* Box-Muller from two independent uniforms. */
  double u1 = unit(h), u2 = unit(mix(h ^ 1)), u3 = unit(mix(h ^ 2)), u4 = unit(mix(h ^ 3));
  double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  double f = exp(b->noise_sigma * z);
  if (u3 < b->outlier_prob) f *= 1.0 + u4 * b->outlier_scale;
  return f;
}
