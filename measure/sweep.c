/*
 * The sweep engine (include/pcie/sweep.h): decides what to measure, through
 * whatever backend it is given, and keeps every measured point. Owns the
 * adaptive strategy and the per-point statistics; it never prints and never
 * writes files (cli/profile.c does).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/sweep.h"
#include "pcie/table.h"

struct spoint {
  double med, spread;
  int state;        /* PT_PT_MISSING until known */
  unsigned nreps;   /* repetitions behind med */
  double *samples;  /* NULL for points seeded from a file */
};

struct pt_sweep_series {
  int coll, mode;
  char label[48];
  /* The candidates of this collective: the swept ones, except that where
   * NCCL does not clamp the tuner's channel count (all-gather, CollNet) a
   * candidate is measured with NCCL's own count (channels 0), the only
   * kind the plugin ranks there (tuner/table.c, runs_as_measured). */
  struct pt_cand_spec *cands;
  size_t ncand;
  size_t ngrid;
  uint64_t *grid;
  size_t nrow;            /* candidates, then NCCL's default */
  struct spoint *pts;     /* [nrow][ngrid] */
  unsigned char *in_set;  /* grid index measured (coarse or refined) */
  size_t *dead_from;      /* per row: first grid index where it is dead (ngrid =
                             alive): 0 after wrong/crash, the size of a hang
                             (a slow size must not cost the small ones) */
  unsigned char *alive;   /* per row: survived screening */
  /* progress bookkeeping */
  const char *phase;
  double lo, hi;
  size_t done, planned;
};

#define PT(se, r, i) (&(se)->pts[(size_t)(r) * (se)->ngrid + (i)])
#define DEAD(se, r, i) ((size_t)(i) >= (se)->dead_from[r])
#define STOPPED 1

void pt_sweep_opts_default(struct pt_sweep_opts *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = 8;
  o->max_bytes = 256ull << 20;
  o->coll_mask = 1u << PT_ALLREDUCE;
  o->mode_mask = 1u << PT_MODE_GRAPH;
  o->reps = 7;
  o->screen_reps = 3;
  o->margin = 0.06;
  o->tol = 0.01;
  o->coarse_log2 = 3;
}

size_t pt_sweep_cands(unsigned algo_mask, unsigned proto_mask, const int *channels, size_t nch,
                      int max_channels, struct pt_cand_spec *out, size_t max) {
  size_t n = 0;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++)
      for (size_t k = 0; k < nch; k++) {
        if (!(algo_mask & (1u << a)) || !(proto_mask & (1u << p)) || channels[k] > max_channels) continue;
        if (n < max) out[n] = (struct pt_cand_spec){a, p, channels[k], 0};
        n += n < max;
      }
  return n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double pt_median(double *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Linear interpolation between order statistics (type 7, as numpy). */
static double quantile(const double *sorted, size_t n, double q) {
  double pos = q * (double)(n - 1);
  size_t k = (size_t)pos;
  if (k + 1 >= n) return sorted[n - 1];
  return sorted[k] + (pos - (double)k) * (sorted[k + 1] - sorted[k]);
}

double pt_rel_iqr(double *v, size_t n) {
  if (n < 2) return 0;
  double med = pt_median(v, n);
  return med > 0 ? (quantile(v, n, 0.75) - quantile(v, n, 0.25)) / med : 0;
}

/* The row of candidate c in se (NCCL's default for NULL); se->ncand when
 * c is not one of its candidates. */
static int row_of(const struct pt_sweep_series *se, const struct pt_cand_spec *c) {
  size_t r = 0;
  if (!c) return (int)se->ncand;
  while (r < se->ncand &&
         (se->cands[r].algo != c->algo || se->cands[r].proto != c->proto || se->cands[r].channels != c->channels ||
          se->cands[r].chunk != c->chunk))
    r++;
  return (int)r;
}

int pt_sweep_init(struct pt_sweep *s, const struct pt_sweep_opts *o, struct pt_error_rec *err) {
  memset(s, 0, sizeof *s);
  memset(err, 0, sizeof *err);
  if (o->reps < 1 || o->reps > PT_SWEEP_MAX_REPS || o->screen_reps < 1 || o->screen_reps > o->reps) {
    snprintf(err->msg, sizeof err->msg, "repetitions must satisfy 1 <= screen (%u) <= reps (%u) <= %d",
             o->screen_reps, o->reps, PT_SWEEP_MAX_REPS);
    return PT_EINVAL;
  }
  for (size_t i = 0; i < o->nsizes; i++)
    if (!o->sizes[i] || (i && o->sizes[i] <= o->sizes[i - 1]) || o->nsizes > PT_SWEEP_MAX_SIZES) {
      snprintf(err->msg, sizeof err->msg, "sizes must be ascending, distinct, > 0 and at most %d",
               PT_SWEEP_MAX_SIZES);
      return PT_EINVAL;
    }
  if (!o->nsizes && (o->min_bytes < 1 || o->max_bytes < o->min_bytes)) {
    snprintf(err->msg, sizeof err->msg, "size range %llu..%llu is empty",
             (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
    return PT_EINVAL;
  }
  if (!o->ncand || !(o->coll_mask & ((1u << PT_NCOLL) - 1)) || !(o->mode_mask & 3u)) {
    snprintf(err->msg, sizeof err->msg, "nothing to sweep (no candidate, collective or mode)");
    return PT_EINVAL;
  }
  s->opts = *o;
  s->opts.sizes = NULL; /* copied into every series' grid below */
  struct pt_cand_spec *cands = malloc(o->ncand * sizeof *cands);
  size_t ngrid = 0;
  for (uint64_t n = o->min_bytes; !o->nsizes && n <= o->max_bytes && n; n *= 2) ngrid++;
  if (o->nsizes) ngrid = o->nsizes;
  s->series = calloc(PT_NCOLL * PT_NMODES, sizeof *s->series);
  if (!cands || !s->series) {
    free(cands);
    return PT_ENOMEM;
  }
  memcpy(cands, o->cands, o->ncand * sizeof *cands);
  s->opts.cands = cands;
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = PT_NMODES - 1; m >= 0; m--) {
      if (!(o->coll_mask & (1u << c)) || !(o->mode_mask & (1u << m))) continue;
      struct pt_sweep_series *se = &s->series[s->nseries++];
      se->coll = c;
      se->mode = m;
      snprintf(se->label, sizeof se->label, "%s/%s", pt_coll_name(c), pt_mode_name(m));
      se->ngrid = ngrid;
      se->cands = malloc(o->ncand * sizeof *se->cands);
      for (size_t r = 0; se->cands && r < o->ncand; r++) {
        struct pt_cand_spec spec = o->cands[r];
        if (pt_channels_unclamped(se->coll, spec.algo)) spec.channels = 0;
        if (row_of(se, &spec) == (int)se->ncand) se->cands[se->ncand++] = spec;
      }
      se->nrow = se->ncand + 1;
      se->grid = malloc(ngrid * sizeof *se->grid);
      se->pts = calloc(se->nrow * ngrid, sizeof *se->pts);
      se->in_set = calloc(ngrid, 1);
      se->dead_from = calloc(se->nrow, sizeof *se->dead_from);
      se->alive = calloc(se->nrow, 1);
      if (!se->cands || !se->grid || !se->pts || !se->in_set || !se->dead_from || !se->alive) {
        pt_sweep_release(s);
        return PT_ENOMEM;
      }
      uint64_t n = o->min_bytes;
      for (size_t i = 0; i < ngrid; i++, n *= 2) se->grid[i] = o->nsizes ? o->sizes[i] : n;
      for (size_t k = 0; k < se->nrow * ngrid; k++) se->pts[k].state = PT_PT_MISSING;
      for (size_t r = 0; r < se->nrow; r++) se->dead_from[r] = ngrid;
    }
  return 0;
}

void pt_sweep_release(struct pt_sweep *s) {
  for (size_t k = 0; s->series && k < s->nseries; k++) {
    struct pt_sweep_series *se = &s->series[k];
    for (size_t i = 0; se->pts && i < se->nrow * se->ngrid; i++) free(se->pts[i].samples);
    free(se->cands);
    free(se->grid);
    free(se->pts);
    free(se->in_set);
    free(se->dead_from);
    free(se->alive);
  }
  free(s->series);
  free((void *)s->opts.cands);
  memset(s, 0, sizeof *s);
}

static int fatal(int state) {
  return state == PT_PT_WRONG || state == PT_PT_CRASH || state == PT_PT_HANG;
}

/* A hang (already retried once by an isolated backend) kills the row from
 * this size up; a wrong result or a crash kills it everywhere. */
static void kill_row(struct pt_sweep_series *se, size_t row, size_t i, int state) {
  size_t from = state == PT_PT_HANG ? i : 0;
  if (from < se->dead_from[row]) se->dead_from[row] = from;
}

int pt_sweep_seed_point(struct pt_sweep *s, int coll, int mode, const struct pt_cand_spec *c,
                        uint64_t nbytes, const struct pt_point *pt, unsigned nreps) {
  if (pt->state == PT_PT_MISSING || (pt->state == PT_PT_OK && !nreps)) return 0;
  for (size_t k = 0; k < s->nseries; k++) {
    struct pt_sweep_series *se = &s->series[k];
    int row = row_of(se, c);
    if (se->coll != coll || se->mode != mode || (c && row == (int)se->ncand)) continue;
    for (size_t i = 0; i < se->ngrid; i++) {
      if (se->grid[i] != nbytes) continue;
      struct spoint *p = PT(se, row, i);
      p->state = pt->state;
      p->med = pt->lat_us;
      p->spread = pt->spread;
      p->nreps = pt->state == PT_PT_OK ? nreps : 0;
      if (fatal(pt->state)) kill_row(se, (size_t)row, i, pt->state);
      return 1;
    }
  }
  return 0;
}

static void report(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx) {
  if (!s->opts.progress) return;
  double within = se->planned ? (double)se->done / (double)se->planned : 0;
  if (within > 1) within = 1;
  struct pt_sweep_progress p = {
      ((double)idx + se->lo + (se->hi - se->lo) * within) / (double)s->nseries, se->label, se->phase,
      s->samples};
  s->opts.progress(s->opts.progress_arg, &p);
}

static void phase(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const char *name,
                  double lo, double hi, size_t planned) {
  se->phase = name;
  se->lo = lo;
  se->hi = hi;
  se->done = 0;
  se->planned = planned;
  report(s, se, idx);
}

/* Brings point (row, i) to n repetitions. Returns 0, STOPPED, or the
 * backend's negative code. */
static int measure(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx,
                   const struct pt_backend *b, size_t row, size_t i, unsigned n,
                   struct pt_error_rec *err) {
  struct spoint *p = PT(se, row, i);
  if (DEAD(se, row, i) || (p->state != PT_PT_MISSING && p->state != PT_PT_OK)) return 0;
  if (row < se->ncand && s->opts.measures &&
      !s->opts.measures(s->opts.measures_arg, se->coll, &se->cands[row], se->grid[i]))
    return 0;
  if (p->state == PT_PT_OK && p->nreps >= n) return 0;
  if ((s->opts.stop && *s->opts.stop) || (s->opts.budget && s->samples >= s->opts.budget)) {
    s->stopped = 1;
    return STOPPED;
  }
  /* Top up from memory when we have the earlier samples; a point seeded
   * from a file is measured again from repetition 0. */
  unsigned first = p->state == PT_PT_OK && p->samples ? p->nreps : 0;
  double *buf = realloc(p->samples, n * sizeof *buf);
  if (!buf) return PT_ENOMEM;
  p->samples = buf;
  struct pt_measure_req req = {se->coll, se->mode, se->grid[i], row == se->ncand, 0, 0, 0,
                               first, n - first, 0, 0};
  if (row < se->ncand) {
    req.algo = se->cands[row].algo;
    req.proto = se->cands[row].proto;
    req.channels = se->cands[row].channels;
    req.chunk = se->cands[row].chunk;
  }
  struct pt_measure_res res = {PT_PT_OK, ""};
  int rc = b->measure(b->self, &req, buf + first, &res, err);
  s->calls++;
  if (rc < 0) return rc;
  se->done++;
  if (res.state == PT_PT_OK) {
    double tmp[PT_SWEEP_MAX_REPS];
    s->samples += req.reps;
    p->state = PT_PT_OK;
    p->nreps = n;
    memcpy(tmp, buf, n * sizeof *tmp);
    p->med = pt_median(tmp, n);
    p->spread = pt_rel_iqr(tmp, n);
  } else {
    /* Nothing ran for an unsupported point, nor for one abandoned on
     * interruption (it stays missing and is measured on --resume). */
    if (res.state != PT_PT_UNSUPPORTED && res.state != PT_PT_MISSING) s->samples += req.reps;
    p->state = res.state;
    p->nreps = 0;
    if (fatal(res.state)) kill_row(se, row, i, res.state);
  }
  report(s, se, idx);
  return 0;
}

/* The fastest usable median at grid index i among candidate rows (alive
 * ones only when alive_only), counting only points with at least min_reps. */
static int winner(const struct pt_sweep_series *se, size_t i, int alive_only, unsigned min_reps,
                  double *best) {
  int w = -1;
  *best = INFINITY;
  for (size_t r = 0; r < se->ncand; r++) {
    const struct spoint *p = PT(se, r, i);
    if (DEAD(se, r, i) || (alive_only && !se->alive[r]) || p->state != PT_PT_OK || p->nreps < min_reps)
      continue;
    if (p->med < *best) {
      *best = p->med;
      w = (int)r;
    }
  }
  return w;
}

static int contender(const struct pt_sweep *s, const struct pt_sweep_series *se, size_t r,
                     size_t i, double best) {
  const struct spoint *p = PT(se, r, i);
  return !DEAD(se, r, i) && p->state == PT_PT_OK && p->med <= (1 + s->opts.margin) * best;
}

/* Whether the decision inside (i, j) is still uncertain: the two ends have
 * different winners and running either one across costs more than tol at
 * the other end (or is unknown there). */
static int needs_refine(const struct pt_sweep *s, const struct pt_sweep_series *se, size_t i,
                        size_t j) {
  double bi, bj;
  int wi = winner(se, i, 1, s->opts.reps, &bi), wj = winner(se, j, 1, s->opts.reps, &bj);
  if (wi < 0 || wj < 0 || wi == wj) return 0;
  const struct spoint *a = PT(se, wi, j), *c = PT(se, wj, i);
  if (a->state != PT_PT_OK || a->med > (1 + s->opts.tol) * bj) return 1;
  if (c->state != PT_PT_OK || c->med > (1 + s->opts.tol) * bi) return 1;
  return 0;
}

static size_t count_coarse(const struct pt_sweep_series *se, size_t step) {
  return (se->ngrid - 1) / step + 1 + ((se->ngrid - 1) % step != 0);
}

static int run_full(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx,
                    const struct pt_backend *b, struct pt_error_rec *err) {
  int rc = 0;
  phase(s, se, idx, "full", 0, 1, se->ngrid * se->nrow);
  for (size_t i = 0; i < se->ngrid && !rc; i++) {
    se->in_set[i] = 1;
    for (size_t r = 0; r < se->nrow && !rc; r++) rc = measure(s, se, idx, b, r, i, s->opts.reps, err);
  }
  return rc;
}

/* Screening: how many margins above the best a first repetition may be
 * and still get the rest of its screening repetitions. */
#define SCREEN_FAR 4

/* Screen every candidate on the coarse grid with few repetitions: one
 * repetition first; only a candidate within SCREEN_FAR margins of the best
 * there is brought to screen_reps. A slower one cannot be a contender (a
 * repetition's noise is far below that), and most candidates are: Simple
 * at small sizes, LL at large ones. */
static int screen(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const struct pt_backend *b,
                  struct pt_error_rec *err) {
  double best;
  int rc = 0;
  for (size_t i = 0; i < se->ngrid && !rc; i++) {
    for (size_t r = 0; se->in_set[i] && r < se->ncand && !rc; r++) rc = measure(s, se, idx, b, r, i, 1, err);
    if (rc || !se->in_set[i] || winner(se, i, 0, 1, &best) < 0) continue;
    for (size_t r = 0; r < se->ncand && !rc; r++)
      if (PT(se, r, i)->state == PT_PT_OK && PT(se, r, i)->med <= (1 + SCREEN_FAR * s->opts.margin) * best)
        rc = measure(s, se, idx, b, r, i, s->opts.screen_reps, err);
  }
  return rc;
}

/* Keeps a candidate only if it is within the margin somewhere; returns how
 * many are kept. */
static size_t keep_contenders(const struct pt_sweep *s, struct pt_sweep_series *se) {
  double best;
  size_t nalive = 0;
  for (size_t r = 0; r < se->ncand; r++) se->alive[r] = 0;
  for (size_t i = 0; i < se->ngrid; i++) {
    if (!se->in_set[i] || winner(se, i, 0, 1, &best) < 0) continue;
    for (size_t r = 0; r < se->ncand; r++)
      if (contender(s, se, r, i, best)) se->alive[r] = 1;
  }
  for (size_t r = 0; r < se->ncand; r++) nalive += se->alive[r];
  return nalive;
}

/* Confirms the contenders of each coarse size with full repetitions. */
static int confirm(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const struct pt_backend *b,
                   struct pt_error_rec *err) {
  double best;
  int rc = 0;
  for (size_t i = 0; i < se->ngrid && !rc; i++) {
    if (!se->in_set[i] || winner(se, i, 1, 1, &best) < 0) continue;
    for (size_t r = 0; r < se->ncand && !rc; r++)
      if (se->alive[r] && contender(s, se, r, i, best)) rc = measure(s, se, idx, b, r, i, s->opts.reps, err);
  }
  return rc;
}

/* Bisects the interval (i, j) when its decision is still uncertain,
 * measuring at its middle only the contenders of either end. Returns 1
 * when it did (or the measurement's code through *rc). */
static int bisect(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const struct pt_backend *b,
                  size_t i, size_t j, int *rc, struct pt_error_rec *err) {
  if (j >= se->ngrid || j == i + 1 || !needs_refine(s, se, i, j)) return 0;
  size_t m = (i + j) / 2;
  double bi, bj;
  winner(se, i, 1, s->opts.reps, &bi);
  winner(se, j, 1, s->opts.reps, &bj);
  se->in_set[m] = 1;
  for (size_t r = 0; r < se->ncand && !*rc; r++)
    if (se->alive[r] && (contender(s, se, r, i, bi) || contender(s, se, r, j, bj)))
      *rc = measure(s, se, idx, b, r, m, s->opts.reps, err);
  return 1;
}

static int refine(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const struct pt_backend *b,
                  struct pt_error_rec *err) {
  int rc = 0;
  for (int changed = 1; changed && !rc;) {
    changed = 0;
    for (size_t i = 0; i < se->ngrid && !rc; i++) {
      if (!se->in_set[i]) continue;
      size_t j = i + 1;
      while (j < se->ngrid && !se->in_set[j]) j++;
      changed |= bisect(s, se, idx, b, i, j, &rc, err);
    }
  }
  return rc;
}

/* NCCL's default at every measured size. The compiler recognises what
 * NCCL ran at a size by the candidates measured as fast as NCCL's default
 * there (tuner/table.c, identify): only a point with full repetitions is
 * steady enough to match, so those are brought to full repetitions. */
static int measure_default(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx, const struct pt_backend *b,
                           struct pt_error_rec *err) {
  int rc = 0;
  for (size_t i = 0; i < se->ngrid && !rc; i++) {
    if (!se->in_set[i]) continue;
    rc = measure(s, se, idx, b, se->ncand, i, s->opts.reps, err);
    const struct spoint *d = PT(se, se->ncand, i);
    for (size_t r = 0; r < se->ncand && !rc && d->state == PT_PT_OK; r++) {
      const struct spoint *p = PT(se, r, i);
      if (p->state == PT_PT_OK && fabs(p->med / d->med - 1) <= s->opts.margin)
        rc = measure(s, se, idx, b, r, i, s->opts.reps, err);
    }
  }
  return rc;
}

static int run_adaptive(struct pt_sweep *s, struct pt_sweep_series *se, size_t idx,
                        const struct pt_backend *b, struct pt_error_rec *err) {
  const struct pt_sweep_opts *o = &s->opts;
  /* Sizes the user listed (--sizes LIST, --workload) are each measured:
   * NCCL's default and every contender there, so the compiler knows both
   * ends of every segment. Only a generated grid is screened coarsely. */
  size_t step = o->coarse_log2 && !o->nsizes ? o->coarse_log2 : 1, ncoarse = count_coarse(se, step), nset = 0;
  for (size_t i = 0; i < se->ngrid; i += step) se->in_set[i] = 1;
  se->in_set[se->ngrid - 1] = 1;
  phase(s, se, idx, "screen", 0, 0.55, ncoarse * se->ncand);
  int rc = screen(s, se, idx, b, err);
  if (rc) return rc;
  size_t nalive = keep_contenders(s, se);
  phase(s, se, idx, "confirm", 0.55, 0.7, ncoarse * (nalive < 4 ? nalive : 4));
  if ((rc = confirm(s, se, idx, b, err))) return rc;
  phase(s, se, idx, "refine", 0.7, 0.9, 2 * ncoarse * nalive);
  if ((rc = refine(s, se, idx, b, err))) return rc;
  for (size_t i = 0; i < se->ngrid; i++) nset += se->in_set[i];
  phase(s, se, idx, "default", 0.9, 1, nset);
  return measure_default(s, se, idx, b, err);
}

int pt_sweep_run(struct pt_sweep *s, const struct pt_backend *b, struct pt_error_rec *err) {
  memset(err, 0, sizeof *err);
  s->stopped = 0;
  for (size_t k = 0; k < s->nseries; k++) {
    struct pt_sweep_series *se = &s->series[k];
    memset(se->in_set, 0, se->ngrid);
    int rc = s->opts.full ? run_full(s, se, k, b, err) : run_adaptive(s, se, k, b, err);
    if (rc == STOPPED) return 0;
    if (rc) return rc;
  }
  return 0;
}

/* A row is worth writing when it has a point that is not missing/unsupported. */
static int row_kept(const struct pt_sweep_series *se, size_t r, size_t ncand) {
  if (r == ncand) return 1;
  for (size_t i = 0; i < se->ngrid; i++) {
    int st = PT(se, r, i)->state;
    if (st != PT_PT_MISSING && st != PT_PT_UNSUPPORTED) return 1;
  }
  return 0;
}

static int col_kept(const struct pt_sweep_series *se, size_t i) {
  for (size_t r = 0; r < se->nrow; r++)
    if (PT(se, r, i)->state != PT_PT_MISSING) return 1;
  return 0;
}

static void copy_point(struct pt_point *dst, const struct spoint *p) {
  dst->state = p->state;
  dst->lat_us = p->state == PT_PT_OK ? p->med : 0;
  dst->spread = p->state == PT_PT_OK ? p->spread : 0;
}

/* Appends printf output to a growing string; returns -1 on ENOMEM. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if (*buf && *len + (size_t)n < *cap) {
      *len += (size_t)n;
      return 0;
    }
    size_t ncap = (*cap + (size_t)n + 1) * 2;
    char *nb = realloc(*buf, ncap);
    if (!nb) return -1;
    *buf = nb;
    *cap = ncap;
  }
}

static int series_to_profile(const struct pt_sweep_series *se,
                             struct pt_profile *p, char **txt, size_t *len, size_t *cap) {
  size_t nsz = 0, ncand = se->ncand;
  uint64_t sizes[64];
  size_t cols[64];
  for (size_t i = 0; i < se->ngrid && nsz < 64; i++)
    if (col_kept(se, i)) {
      cols[nsz] = i;
      sizes[nsz++] = se->grid[i];
    }
  size_t kept = 0;
  for (size_t r = 0; r < ncand; r++) kept += (size_t)row_kept(se, r, ncand);
  if (!nsz || !kept) return 0; /* nothing but unsupported: the collective is not written */
  struct pt_series *ps = pt_series_new(sizes, nsz);
  if (!ps) return PT_ENOMEM;
  struct pt_point *def = pt_series_default(ps);
  if (!def) goto nomem;
  if (append(txt, len, cap, "%s{ collective = \"%s\"; mode = \"%s\"; nreps = [", *len > 2 ? ", " : "",
             pt_coll_name(se->coll), pt_mode_name(se->mode)))
    goto nomem;
  const char *sep = "";
  for (size_t r = 0; r < se->nrow; r++) {
    if (!row_kept(se, r, ncand)) continue;
    struct pt_point *dst = def;
    if (r < ncand) {
      struct pt_candidate *c = pt_series_add_candidate(ps, se->cands[r].algo, se->cands[r].proto,
                                                       se->cands[r].channels, se->cands[r].chunk);
      if (!c) goto nomem;
      dst = c->points;
    }
    for (size_t k = 0; k < nsz; k++) {
      const struct spoint *sp = PT(se, r, cols[k]);
      copy_point(&dst[k], sp);
      if (append(txt, len, cap, "%s%u", sep, sp->nreps)) goto nomem;
      sep = ",";
    }
  }
  if (append(txt, len, cap, "]; }")) goto nomem;
  pt_series_free(p->series[se->coll][se->mode]);
  p->series[se->coll][se->mode] = ps;
  return 0;
nomem:
  pt_series_free(ps);
  return PT_ENOMEM;
}

int pt_sweep_to_profile(const struct pt_sweep *s, struct pt_profile *p, char **reps_text) {
  char *txt = NULL;
  size_t len = 0, cap = 0;
  int rc = append(&txt, &len, &cap, "( ") ? PT_ENOMEM : 0;
  for (size_t k = 0; k < s->nseries && !rc; k++) rc = series_to_profile(&s->series[k], p, &txt, &len, &cap);
  if (!rc && append(&txt, &len, &cap, " )")) rc = PT_ENOMEM;
  if (rc) {
    free(txt);
    return rc;
  }
  *reps_text = txt;
  return 0;
}
