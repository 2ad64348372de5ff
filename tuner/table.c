/*
 * Compiles a profile into the decision table and answers lookups from it.
 * Compilation (once per profile, at load) does all the floating-point work:
 * log-log interpolation, crossovers, ranking, rules. The lookup and apply
 * functions at the bottom are the hot path: no allocation, lock, log or
 * parsing, and a search with a fixed number of steps per table.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/core.h"
#include "pcie/table.h"
#include "table_hot.h"

#define LAT_FLOOR_US 1e-3 /* log(0) guard; far below any real collective */

/* ---- interpolation ---------------------------------------------------- */

static double ln_lat(double us) { return log(us < LAT_FLOOR_US ? LAT_FLOOR_US : us); }

static double lerp_loglog(uint64_t s0, double l0, uint64_t s1, double l1, double x) {
  double t = (log(x) - log((double)s0)) / (log((double)s1) - log((double)s0));
  return exp(ln_lat(l0) + t * (ln_lat(l1) - ln_lat(l0)));
}

double pt_interp_latency(const struct pt_series *s, const struct pt_point *pts, uint64_t nbytes) {
  size_t n = s->nsizes, i;
  if (!pts || n == 0) return -1;
  if (nbytes <= s->sizes[0]) return pts[0].state == PT_PT_OK ? pts[0].lat_us : -1;
  if (nbytes >= s->sizes[n - 1]) return pts[n - 1].state == PT_PT_OK ? pts[n - 1].lat_us : -1;
  for (i = 0; i + 1 < n && s->sizes[i + 1] < nbytes; i++) {
  }
  if (s->sizes[i + 1] == nbytes) return pts[i + 1].state == PT_PT_OK ? pts[i + 1].lat_us : -1;
  if (pts[i].state != PT_PT_OK || pts[i + 1].state != PT_PT_OK) return -1;
  return lerp_loglog(s->sizes[i], pts[i].lat_us, s->sizes[i + 1], pts[i + 1].lat_us,
                     (double)nbytes);
}

const struct pt_series *pt_profile_series(const struct pt_profile *p, int coll, int mode) {
  if (coll < 0 || coll >= PT_NCOLL || mode < 0 || mode >= PT_NMODES) return NULL;
  return p->series[coll][mode] ? p->series[coll][mode] : p->series[coll][!mode];
}

/* ---- building --------------------------------------------------------- */

static void pack(const struct pt_interval *iv, struct pt_hot *h);
static uint64_t key_lo(unsigned key);

/* A growable interval list used only while compiling. */
struct ivlist {
  struct pt_interval *iv;
  size_t n, cap;
};

static int push(struct ivlist *l, const struct pt_interval *v) {
  if (l->n == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 16;
    struct pt_interval *nv = realloc(l->iv, ncap * sizeof *nv);
    if (!nv) return PT_ENOMEM;
    l->iv = nv;
    l->cap = ncap;
  }
  l->iv[l->n++] = *v;
  return 0;
}

/* A candidate that was ever wrong, crashed or hung is never chosen. */
static int poisoned(const struct pt_candidate *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (c->points[i].state >= PT_PT_WRONG) return 1;
  return 0;
}

static int active_in(const struct pt_candidate *c, size_t a, size_t b) {
  return c->points[a].state == PT_PT_OK && c->points[b].state == PT_PT_OK;
}

/* What a segment [a, b] of one series is compiled with. */
struct seg {
  const struct pt_series *s;
  const unsigned char *ok; /* per candidate: never poisoned */
  double margin;           /* the profile's minimum relative gain */
  size_t a, b;
  unsigned char *nccl;     /* per candidate: NCCL's default ran it at a (bit 0) or b (bit 1) */
  double *ya, *yb;         /* those candidates' latency at a and b */
  int known;               /* NCCL's choice identified at both ends */
  const unsigned char *broken; /* per size: NCCL's own choice fails there (see nccl_fails) */
  int same;                    /* known, and one candidate matches it at both ends: no switch */
};

static double at(const struct seg *g, const struct pt_point *pts, double x) {
  if (g->a == g->b) return pts[g->a].lat_us;
  return lerp_loglog(g->s->sizes[g->a], pts[g->a].lat_us, g->s->sizes[g->b], pts[g->b].lat_us, x);
}

/* NCCL's default is compared on this segment only when measured at both ends. */
static int default_ok(const struct seg *g) {
  const struct pt_point *d = g->s->nccl_default;
  return d && d[g->a].state == PT_PT_OK && d[g->b].state == PT_PT_OK;
}

/* The gain a candidate must show over NCCL's default on the segment: the
 * profile's margin, or more where the measurements are noisy. A spread
 * describes single repetitions (IQR / median); the medians compared are
 * steadier (for 7 repetitions the difference of two medians has a standard
 * error of about half the summed spreads), so half the summed spreads is the
 * noise a gain must clear. */
static double needed_gain(const struct seg *g, const struct pt_candidate *c) {
  const struct pt_point *d = g->s->nccl_default;
  double sc = fmax(c->points[g->a].spread, c->points[g->b].spread);
  double sd = d ? fmax(d[g->a].spread, d[g->b].spread) : 0;
  return fmax(g->margin, 0.5 * (sc + sd));
}

/* Which candidates NCCL's default ran at the segment's ends: those measured
 * within their own spread (at least 0.1 %) of it. Between two measured sizes
 * NCCL runs one of them (it switches once, where its model says so), so its
 * latency there lies between their lines, not on the straight line from one
 * end to the other, which misses the switch. */
static int measured_at_both(const struct seg *g, const struct pt_candidate *c) {
  return c->points[g->a].state == PT_PT_OK && c->points[g->b].state == PT_PT_OK;
}

static void identify(struct seg *g) {
  const struct pt_series *s = g->s;
  int at_a = 0, at_b = 0, spans = 1, pinned = 0;
  size_t close[2] = {SIZE_MAX, SIZE_MAX - 1}; /* the closest match at each end */
  double off[2] = {INFINITY, INFINITY};
  g->known = 0;
  g->same = 0;
  if (!default_ok(g) || g->broken[g->a] || g->broken[g->b]) return;
  for (size_t k = 0; k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    g->nccl[k] = 0;
    /* NCCL never runs a tuner's chunk on its own: a chunk variant that
     * measures as NCCL's default is no evidence of what NCCL ran. */
    if (!g->ok[k] || c->chunk) continue;
    for (int e = 0; e < 2; e++) {
      size_t i = e ? g->b : g->a;
      double tol = fmax(1e-3, 0.5 * (c->points[i].spread + s->nccl_default[i].spread));
      double d = c->points[i].state == PT_PT_OK
                     ? fabs(c->points[i].lat_us / s->nccl_default[i].lat_us - 1)
                     : INFINITY;
      if (d > tol) continue;
      g->nccl[k] |= (unsigned char)(1u << e);
      if (d < off[e]) {
        off[e] = d;
        close[e] = k;
      }
    }
    pinned |= g->nccl[k] == 3 && measured_at_both(g, c);
  }
  for (size_t k = 0; k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    /* A candidate measured at both ends that matches NCCL at both pins
     * NCCL's choice; one that matches at one end only and was not measured
     * at the other (an adaptive sweep drops it there) is then no evidence of
     * a switch. Left in, it made the segment unidentified, and a candidate
     * 30 % faster at one end was refused for not beating NCCL at the other
     * (gen5-8x-dual-misdetect with NCCL_MIN_NCHANNELS=8, eager, 256 KiB). */
    if (pinned && g->nccl[k] != 3 && !measured_at_both(g, c)) g->nccl[k] = 0;
    if (!g->nccl[k]) continue;
    at_a |= g->nccl[k] & 1;
    at_b |= g->nccl[k] >> 1 & 1;
    /* NCCL's choice counts as known only where the candidates it ran were
     * measured at both ends. A line drawn across a gap of "-" can miss by
     * far where the gap spans the turn from latency- to bandwidth-bound (a
     * 4 KiB..64 KiB gap put ring/LL/2 13 % too high at 32 KiB, and the
     * plugin then preferred a slower ring/LL/1 over NCCL's choice). */
    spans &= measured_at_both(g, c);
    g->ya[k] = c->points[g->a].lat_us;
    g->yb[k] = c->points[g->b].lat_us;
  }
  g->known = at_a && at_b && spans;
  g->same = g->known && close[0] == close[1];
}

/* NCCL's default at x: the straight line between its measurements, or, when
 * identified, the range [lo, hi] spanned by the candidates it ran. */
static void default_at(const struct seg *g, double x, double *lo, double *hi) {
  /* When the candidate closest to the default is the same at both ends,
   * NCCL ran that one choice all along, and its own measured line is the
   * better estimate: a candidate's line that matched it only within the
   * noise would let that noise count as a gain. */
  if (!g->known || g->same) {
    *lo = *hi = at(g, g->s->nccl_default, x);
    return;
  }
  *lo = INFINITY;
  *hi = 0;
  for (size_t k = 0; k < g->s->ncand; k++) {
    if (!g->nccl[k]) continue;
    double v = g->a == g->b ? g->ya[k]
                            : lerp_loglog(g->s->sizes[g->a], g->ya[k], g->s->sizes[g->b], g->yb[k], x);
    *lo = fmin(*lo, v);
    *hi = fmax(*hi, v);
  }
}

static int beats_at_ends(const struct seg *g, const struct pt_candidate *c) {
  const struct pt_point *d = g->s->nccl_default;
  double m = 1 + needed_gain(g, c);
  return c->points[g->a].lat_us * m < d[g->a].lat_us && c->points[g->b].lat_us * m < d[g->b].lat_us;
}

/* Ranks the candidates active on the segment at size x (stable: ties keep
 * file order, so every rank compiles the same table). With NCCL's default in
 * the series, only candidates faster than it by the needed gain are ranked;
 * a tie goes to NCCL. */
static void rank_at(const struct seg *g, double x, struct pt_interval *out) {
  const struct pt_series *s = g->s;
  double best[PT_MAX_RANKED], dlo = -1, dhi = -1;
  int active = 0;
  out->n = 0;
  out->kind = PT_IV_MEASURED;
  /* Where NCCL's own choice fails, nothing is left to it. */
  if (s->nccl_default && (g->broken[g->a] || g->broken[g->b])) {
    out->kind = PT_IV_NCCL_FAILS;
  } else if (!default_ok(g)) {
    /* NCCL's default not measured here (no default run imported, or a gap
     * in it): without it nothing shows a candidate is faster than what NCCL
     * runs, and a forced choice can be 2x slower (issue 26: a forced
     * ring/LL/4 log alone decided 1-4 MiB, where NCCL runs ring/Simple). */
    out->kind = PT_IV_NO_DEFAULT;
    return;
  } else {
    default_at(g, x, &dlo, &dhi);
  }
  for (size_t k = 0; k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    if (!g->ok[k] || !active_in(c, g->a, g->b)) continue;
    double v = at(g, c->points, x);
    active = 1;
    /* Faster than what NCCL may run here by the needed gain, and never
     * slower than the fastest thing it may run. */
    if (dhi >= 0 && !(v * (1 + needed_gain(g, c)) < dhi && v <= dlo)) continue;
    /* Unidentified, the straight line between NCCL's two measurements can
     * miss a switch of its choice by far over a wide gap: the candidate must
     * then beat NCCL where it was measured, at both ends. */
    if (dhi >= 0 && !g->known && !beats_at_ends(g, c)) continue;
    int pos = out->n;
    while (pos > 0 && best[pos - 1] > v) pos--;
    if (pos >= PT_MAX_RANKED) continue;
    int last = out->n < PT_MAX_RANKED ? out->n : PT_MAX_RANKED - 1;
    for (int j = last; j > pos; j--) {
      best[j] = best[j - 1];
      out->c[j] = out->c[j - 1];
    }
    best[pos] = v;
    out->c[pos] = (struct pt_choice){.algo = (int8_t)c->algo, .proto = (int8_t)c->proto,
                                     .channels = (uint8_t)c->channels, .chunk = (uint32_t)c->chunk,
                                     .lat_us = (float)v};
    if (out->n < PT_MAX_RANKED) out->n++;
  }
  if (!out->n) out->kind = active && out->kind != PT_IV_NCCL_FAILS ? PT_IV_NO_GAIN : PT_IV_NO_DATA;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Where two log-log lines (differences d0 at a, d1 at b) cross, if inside. */
static int crossing(const struct seg *g, double d0, double d1, double *cut) {
  if (!((d0 < 0 && d1 > 0) || (d0 > 0 && d1 < 0))) return 0;
  double x0 = log((double)g->s->sizes[g->a]), x1 = log((double)g->s->sizes[g->b]);
  *cut = ceil(exp(x0 + d0 / (d0 - d1) * (x1 - x0)));
  return 1;
}

/* Splits measured segment (s_a, s_b) at every crossover of two active
 * candidates' log-log lines and of a candidate with NCCL's default less the
 * needed gain, and ranks each piece at its log-midpoint: inside a piece no
 * order and no comparison with the default changes. */
static int build_segment(struct seg *g, struct ivlist *l, double *cuts) {
  const struct pt_series *s = g->s;
  size_t a = g->a, b = g->b, ncut = 0;
  int dok = default_ok(g);
  identify(g);
  for (size_t i = 0; i < s->ncand; i++) {
    const struct pt_candidate *ci = &s->cand[i];
    if (!g->ok[i] || !active_in(ci, a, b)) continue;
    for (size_t j = 0; g->known && j < s->ncand; j++) {
      if (!g->nccl[j] || j == i) continue;
      /* against NCCL's possible choices, with and without the needed gain */
      for (int withm = 0; withm < 2; withm++) {
        double m = withm ? log1p(needed_gain(g, ci)) : 0;
        double d0 = ln_lat(ci->points[a].lat_us) + m - ln_lat(g->ya[j]);
        double d1 = ln_lat(ci->points[b].lat_us) + m - ln_lat(g->yb[j]);
        ncut += (size_t)crossing(g, d0, d1, &cuts[ncut]);
      }
    }
    if (dok && (!g->known || g->same) && !g->broken[a] && !g->broken[b]) {
      double m = log1p(needed_gain(g, ci));
      double d0 = ln_lat(ci->points[a].lat_us) + m - ln_lat(s->nccl_default[a].lat_us);
      double d1 = ln_lat(ci->points[b].lat_us) + m - ln_lat(s->nccl_default[b].lat_us);
      ncut += (size_t)crossing(g, d0, d1, &cuts[ncut]);
    }
    for (size_t j = i + 1; j < s->ncand; j++) {
      const struct pt_candidate *cj = &s->cand[j];
      if (!g->ok[j] || !active_in(cj, a, b)) continue;
      double d0 = ln_lat(ci->points[a].lat_us) - ln_lat(cj->points[a].lat_us);
      double d1 = ln_lat(ci->points[b].lat_us) - ln_lat(cj->points[b].lat_us);
      ncut += (size_t)crossing(g, d0, d1, &cuts[ncut]);
    }
  }
  qsort(cuts, ncut, sizeof *cuts, cmp_double);
  /* The measured size a has its own interval (build_measured): the segment
   * covers the sizes strictly between the two measurements. */
  double lo = (double)s->sizes[a] + 1;
  if (lo >= (double)s->sizes[b]) return 0;
  for (size_t k = 0; k <= ncut; k++) {
    double hi = k < ncut ? cuts[k] : (double)s->sizes[b];
    if (k < ncut && (hi <= lo || hi >= (double)s->sizes[b])) continue;
    struct pt_interval iv = {.lo = (uint64_t)lo, .hi = (uint64_t)hi - 1};
    rank_at(g, exp(0.5 * (log(lo) + log(hi))), &iv);
    if (push(l, &iv)) return PT_ENOMEM;
    lo = hi;
  }
  return 0;
}

/* Where NCCL's own choice fails: its measurement says so (wrong, crash,
 * hang); or it measured the same as a candidate that fails at some size (it
 * runs that combination); or it is faster than every working candidate
 * there, beyond the noise, while a failing combination went unmeasured or
 * failed at that size (it runs something the sweep saw fail). A size whose
 * default matches a working candidate is never counted as failing. */
static void nccl_fails(const struct pt_series *s, unsigned char *broken) {
  for (size_t i = 0; i < s->nsizes; i++) {
    const struct pt_point *d = s->nccl_default ? &s->nccl_default[i] : NULL;
    int working = 0, failing = 0, unseen_failing = 0;
    double best = INFINITY;
    broken[i] = 0;
    if (!d) continue;
    if (d->state >= PT_PT_WRONG) {
      broken[i] = 1;
      continue;
    }
    if (d->state != PT_PT_OK) continue;
    for (size_t k = 0; k < s->ncand; k++) {
      const struct pt_point *c = &s->cand[k].points[i];
      int bad = poisoned(&s->cand[k], s->nsizes);
      if (c->state != PT_PT_OK) {
        unseen_failing |= bad;
        continue;
      }
      /* Any candidate that never failed counts as working evidence here,
       * also one left out of the ranking by the channel clamp. */
      double tol = fmax(1e-3, 0.5 * (c->spread + d->spread));
      if (!bad) best = fmin(best, c->lat_us / (1 + tol));
      if (fabs(c->lat_us / d->lat_us - 1) > tol) continue;
      if (bad) failing = 1;
      else working = 1;
    }
    broken[i] = !working && (failing || (unseen_failing && d->lat_us < best));
  }
}

/* Whether a candidate would run as it was measured. cap > 0: candidates
 * above it would run with fewer channels than they were measured with.
 * Where the plugin leaves the count to NCCL (unclamped), only a candidate
 * measured with NCCL's own count (channels = 0) runs as measured. */
static int runs_as_measured(int coll, const struct pt_candidate *c, int cap) {
  if (pt_channels_unclamped(coll, c->algo)) return c->channels == 0;
  return !cap || c->channels <= cap;
}

/* Intervals for one series: [sizes[0], sizes[n-1]] from the measurements, and
 * below and above it nothing (NCCL decides): a decision rests on data. */
static int build_measured(const struct pt_series *s, int coll, double margin, int cap, int ll128,
                          struct ivlist *l) {
  int rc = 0;
  size_t n = s->nsizes, pairs = s->ncand * (s->ncand + 1) / 2 + 2 * s->ncand * s->ncand + 1;
  unsigned char *ok = malloc(s->ncand + 1), *nccl = calloc(s->ncand + 1, 1), *broken = calloc(n, 1);
  double *cuts = malloc(pairs * sizeof *cuts), *ya = calloc(s->ncand + 1, sizeof *ya),
         *yb = calloc(s->ncand + 1, sizeof *yb);
  struct pt_interval below = {.lo = 0, .hi = s->sizes[0] - 1, .kind = PT_IV_OUTSIDE};
  struct pt_interval above = {.lo = s->sizes[n - 1] + 1, .hi = UINT64_MAX, .kind = PT_IV_OUTSIDE};
  if (!ok || !cuts || !nccl || !ya || !yb || !broken) {
    rc = PT_ENOMEM;
    goto out;
  }
  /* cap > 0: candidates above it would run with fewer channels than they
   * were measured with, so nothing measured supports them. */
  for (size_t k = 0; k < s->ncand; k++)
    ok[k] = !poisoned(&s->cand[k], n) && runs_as_measured(coll, &s->cand[k], cap) &&
            (ll128 || s->cand[k].proto != NCCL_PROTO_LL128);
  nccl_fails(s, broken);
  if (s->sizes[0] > 0 && (rc = push(l, &below))) goto out;
  /* Each measured size is decided by its own measurements alone: a candidate
   * that beats NCCL there covers that size, whatever happens at the next
   * one (which only decides the sizes between the two). */
  for (size_t a = 0; a < n && !rc; a++) {
    struct seg pt = {s, ok, margin, a, a, nccl, ya, yb, 0, broken, 0};
    struct pt_interval iv = {.lo = s->sizes[a], .hi = s->sizes[a]};
    identify(&pt);
    rank_at(&pt, (double)s->sizes[a], &iv);
    rc = push(l, &iv);
    if (rc || a + 1 == n) break;
    struct seg g = {s, ok, margin, a, a + 1, nccl, ya, yb, 0, broken, 0};
    rc = build_segment(&g, l, cuts);
  }
  if (!rc && s->sizes[n - 1] < UINT64_MAX) rc = push(l, &above);
out:
  free(ok);
  free(broken);
  free(nccl);
  free(ya);
  free(yb);
  free(cuts);
  return rc;
}

static int same_choice(const struct pt_choice *x, const struct pt_choice *y) {
  return x->algo == y->algo && x->proto == y->proto && x->channels == y->channels &&
         x->chunk == y->chunk && x->from_rule == y->from_rule && x->pipe_lo == y->pipe_lo &&
         x->pipe_hi == y->pipe_hi;
}

/* Splits the interval holding `at` so that one starts exactly at `at`. */
static int split_at(struct ivlist *l, uint64_t at) {
  for (size_t i = 0; i < l->n; i++) {
    if (l->iv[i].lo == at || at < l->iv[i].lo || at > l->iv[i].hi) continue;
    struct pt_interval right = l->iv[i];
    if (push(l, &right)) return PT_ENOMEM;
    memmove(&l->iv[i + 2], &l->iv[i + 1], (l->n - i - 2) * sizeof *l->iv);
    l->iv[i].hi = at - 1;
    l->iv[i + 1] = right;
    l->iv[i + 1].lo = at;
    return 0;
  }
  return 0;
}

static uint16_t pipe_bound(int v) { return v > 65535 ? 65535 : (uint16_t)v; }

/* Rules are ranked ahead of the measured ranking, in file order, inside their
 * range; the measured ranking stays behind them as the fallback for when NCCL
 * has a rule's choice disabled (or its numPipeOps condition does not hold).
 * Validation keeps at most PT_MAX_RANKED rules on any size. */
static int apply_rule(struct ivlist *l, const struct pt_rule *r) {
  int rc = split_at(l, r->min_bytes);
  if (!rc && r->max_bytes < UINT64_MAX) rc = split_at(l, r->max_bytes + 1);
  if (rc) return rc;
  int cond = r->min_pipe_ops || r->max_pipe_ops;
  struct pt_choice rc0 = {.algo = (int8_t)r->algo, .proto = (int8_t)r->proto,
                          .channels = (uint8_t)r->channels, .from_rule = 1,
                          .pipe_lo = pipe_bound(r->min_pipe_ops),
                          .pipe_hi = pipe_bound(r->max_pipe_ops), .chunk = (uint32_t)r->chunk};
  for (size_t i = 0; i < l->n; i++) {
    struct pt_interval *iv = &l->iv[i];
    if (iv->lo < r->min_bytes || iv->hi > r->max_bytes) continue;
    struct pt_choice keep[PT_MAX_RANKED];
    int n = 0, k = 0;
    for (; k < iv->n && iv->c[k].from_rule; k++) keep[n++] = iv->c[k];
    if (n == PT_MAX_RANKED) continue;
    keep[n++] = rc0;
    /* Behind an unconditional rule, the same (algo, proto) can never be
     * reached again: it is usable exactly when the rule's choice is. */
    for (; k < iv->n && n < PT_MAX_RANKED; k++)
      if (cond || !(iv->c[k].algo == r->algo && iv->c[k].proto == r->proto)) keep[n++] = iv->c[k];
    memcpy(iv->c, keep, sizeof keep);
    iv->n = (uint8_t)n;
  }
  return 0;
}

static void merge_equal(struct ivlist *l) {
  size_t w = 0;
  for (size_t i = 1; i < l->n; i++) {
    struct pt_interval *cur = &l->iv[w], *nx = &l->iv[i];
    int eq = cur->n == nx->n && cur->kind == nx->kind;
    for (int k = 0; eq && k < cur->n; k++) eq = same_choice(&cur->c[k], &nx->c[k]);
    if (eq) cur->hi = nx->hi;
    else l->iv[++w] = *nx;
  }
  l->n = l->n ? w + 1 : 0;
}

/* Expected latencies at each interval's reference size (the log-midpoint of
 * its part inside the measured range), for show and the trace. */
static void annotate(struct ivlist *l, const struct pt_series *s) {
  for (size_t i = 0; i < l->n; i++) {
    struct pt_interval *iv = &l->iv[i];
    iv->default_us = -1;
    if (!s) continue;
    double lo = fmax((double)iv->lo, (double)s->sizes[0]);
    double hi = fmin((double)iv->hi, (double)s->sizes[s->nsizes - 1]);
    if (hi < lo) lo = hi = iv->lo < s->sizes[0] ? (double)s->sizes[0] : (double)s->sizes[s->nsizes - 1];
    if (lo < 1) lo = 1;
    uint64_t ref = (uint64_t)llround(exp(0.5 * (log(lo) + log(hi))));
    double d = iv->kind == PT_IV_OUTSIDE ? -1 : pt_interp_latency(s, s->nccl_default, ref);
    iv->default_us = (float)d;
    for (int k = 0; k < iv->n; k++) {
      struct pt_choice *c = &iv->c[k];
      c->lat_us = 0;
      for (size_t j = 0; j < s->ncand && iv->kind != PT_IV_OUTSIDE; j++) {
        const struct pt_candidate *cd = &s->cand[j];
        if (cd->algo == c->algo && cd->proto == c->proto && cd->channels == c->channels) {
          double v = pt_interp_latency(s, cd->points, ref);
          c->lat_us = v < 0 ? 0 : (float)v;
          break;
        }
      }
    }
  }
}


/* start[k] = the interval holding key k's smallest size, start[PT_NKEYS] =
 * the last; top = the largest power of two not above the widest key range;
 * his[] mirrors iv[].hi (padded), hot[] the ranked lists. */
static int index_keys(struct pt_ivset *set) {
  size_t i = 0, widest = 1;
  for (unsigned k = 0; k < PT_NKEYS; k++) {
    uint64_t v = key_lo(k);
    while (set->iv[i].hi < v) i++;
    set->start[k] = (uint32_t)i;
  }
  set->start[PT_NKEYS] = (uint32_t)(set->n - 1);
  for (unsigned k = 0; k < PT_NKEYS; k++)
    if (set->start[k + 1] - set->start[k] + 1 > widest) widest = set->start[k + 1] - set->start[k] + 1;
  set->top = 1;
  while (set->top * 2 <= widest) set->top *= 2;
  set->his = malloc((set->n + 2 * set->top) * sizeof *set->his);
  set->hot = malloc(set->n * sizeof *set->hot);
  if (!set->his || !set->hot) return PT_ENOMEM;
  for (size_t j = 0; j < set->n + 2 * set->top; j++)
    set->his[j] = j < set->n ? set->iv[j].hi : UINT64_MAX;
  for (size_t j = 0; j < set->n; j++) pack(&set->iv[j], &set->hot[j]);
  return 0;
}

static int rule_fits(const struct pt_rule *r, int coll, int mode, size_t nranks, size_t nnodes) {
  return r->coll == coll && (r->mode < 0 || r->mode == mode) &&
         (!r->nranks || !nranks || (size_t)r->nranks == nranks) &&
         (!r->nnodes || !nnodes || (size_t)r->nnodes == nnodes);
}

/* What the plugin writes to *nChannels for a choice (docs/decisions.md,
 * "Channels"): nothing where NCCL does not clamp it; elsewhere never more
 * than the communicator's count when the profile recorded it, and, unknown,
 * at most the smallest count the profile measured. NCCL clamps those to
 * comm->nChannels itself (enqueue.cc, scheduleCollTasksToPlan). */
static uint8_t set_channels(const struct pt_table *t, int coll, int algo, int ch) {
  if (ch <= 0 || pt_channels_unclamped(coll, algo)) return 0;
  if (t->comm_channels) return (uint8_t)(ch < t->comm_channels ? ch : t->comm_channels);
  return (uint8_t)(t->chan_cap && ch > t->chan_cap ? t->chan_cap : ch);
}

/* One mode's intervals, from its own series or, lacking one, the other
 * mode's, so that a mode-specific rule never leaks into the other mode.
 * Empty (l->n = 0) when the mode has neither data nor rules. */
static int build_mode(const struct pt_table *t, const struct pt_profile *p, int coll, int mode,
                      size_t nranks, size_t nnodes, struct ivlist *l) {
  const struct pt_series *s = pt_profile_series(p, coll, mode);
  struct pt_interval all = {.lo = 0, .hi = UINT64_MAX, .kind = PT_IV_NO_DATA};
  int rc = 0, has_rule = 0;
  for (size_t i = 0; i < p->nrules; i++) has_rule |= rule_fits(&p->rules[i], coll, mode, nranks, nnodes);
  if (!s && !has_rule) return 0;
  /* With the communicator's count unknown, candidates above the clamp are
   * left out rather than run clamped. */
  int cap = !t->comm_channels ? t->chan_cap : 0;
  int ll128 = pt_profile_ll128_usable(p);
  rc = s ? build_measured(s, coll, pt_profile_margin(p), cap, ll128, l) : push(l, &all);
  /* A hand rule naming LL128 is no screen either (pt_profile_ll128_usable):
   * without one, NCCL decides where it would apply. */
  for (size_t i = 0; i < p->nrules && !rc; i++)
    if (rule_fits(&p->rules[i], coll, mode, nranks, nnodes) && (ll128 || p->rules[i].proto != NCCL_PROTO_LL128))
      rc = apply_rule(l, &p->rules[i]);
  if (rc) return rc;
  merge_equal(l);
  annotate(l, s);
  for (size_t i = 0; i < l->n; i++)
    for (int k = 0; k < l->iv[i].n; k++)
      l->iv[i].c[k].set_channels = set_channels(t, coll, l->iv[i].c[k].algo, l->iv[i].c[k].channels);
  return 0;
}

/* Two choices NCCL would run identically. */
static int runs_same(const struct pt_choice *x, const struct pt_choice *y) {
  return x->algo == y->algo && x->proto == y->proto && x->set_channels == y->set_channels &&
         x->chunk == y->chunk && x->pipe_lo == y->pipe_lo && x->pipe_hi == y->pipe_hi;
}

/* The interval with no data, for a mode that has none. */
static const struct pt_interval no_data = {.lo = 0, .hi = UINT64_MAX, .kind = PT_IV_NO_DATA,
                                           .default_us = -1};

/* The one list both modes decide from. regBuff, which picks the mode, is not
 * the same on every rank: NCCL sets it for an eager call whose buffers this
 * rank registered (enqueue.cc, ncclGetAlgoInfo; dev: ncclGetRegBuff), and
 * registration is per rank. So a size gets the graph and the eager ranking's
 * common prefix: where the two agree, that ranking; where they differ, only
 * the choices both would try first, in the same order (possibly none:
 * PT_IV_MODES_DIFFER, NCCL decides). Whatever regBuff says, every rank then
 * applies the same list to the same cost table. */
static int merge_modes(const struct ivlist *g, const struct ivlist *e, struct ivlist *out) {
  size_t i = 0, j = 0;
  uint64_t lo = 0;
  for (;;) {
    const struct pt_interval *x = g->n ? &g->iv[i] : &no_data, *y = e->n ? &e->iv[j] : &no_data;
    uint64_t hi = x->hi < y->hi ? x->hi : y->hi;
    struct pt_interval v = *x;
    int k = 0;
    while (k < x->n && k < y->n && runs_same(&x->c[k], &y->c[k])) k++;
    v.lo = lo;
    v.hi = hi;
    if (k < x->n || k < y->n) {
      v.n = (uint8_t)k;
      v.kind = PT_IV_MODES_DIFFER;
    }
    if (push(out, &v)) return PT_ENOMEM;
    if (hi == UINT64_MAX) return 0;
    lo = hi + 1;
    if (x->hi == hi && g->n) i++;
    if (y->hi == hi && e->n) j++;
  }
}

/* The value of a recorded NCCL_* variable, or NULL. */
static const char *env_value(const struct pt_profile *p, const char *name) {
  for (size_t i = 0; i < p->nenv; i++)
    if (!strcmp(p->env[i].name, name)) return p->env[i].value;
  return NULL;
}

/* Which Tree/Ring combinations (bit algo x 3 + proto) NCCL did not run for
 * coll when the profile was measured: a candidate recorded "unsupported"
 * with no usable measurement, or one never measured that the recorded
 * NCCL_ALGO/NCCL_PROTO (NCCL's defaults when nccl_env is absent) do not
 * enable for certain. NCCL's default for LL128 is "where NCCL judges it
 * safe" (graph/tuning.cc, ncclTopoTuneModel: only up to PXB/PXN and over
 * NVLink inside a node), never on a PCIe-only box, so an unmeasured LL128
 * counts as off unless NCCL_PROTO named it. A sweep drops a candidate that
 * was unsupported at every size (measure/sweep.c, row_kept), so "never
 * measured" is also what "always unsupported" looks like in a profile.
 * NCCL's cost table, the same on every rank, then tells at each call
 * whether NCCL runs one of them now (table_hot.h, pt_hot_apply). */
static uint8_t unseen_combos(const struct pt_profile *p, int coll) {
  struct pt_nccl_enable en;
  const char *algo = p->env_recorded ? env_value(p, "NCCL_ALGO") : NULL;
  const char *proto = p->env_recorded ? env_value(p, "NCCL_PROTO") : NULL;
  if (pt_nccl_enabled(algo, proto, &en)) pt_nccl_enabled(NULL, NULL, &en);
  uint8_t seen = 0, unsup = 0, any = 0;
  for (int md = 0; md < PT_NMODES; md++) {
    const struct pt_series *s = p->series[coll][md];
    if (!s) continue;
    any = 1;
    for (size_t k = 0; k < s->ncand; k++) {
      const struct pt_candidate *c = &s->cand[k];
      if (c->algo > NCCL_ALGO_RING || c->proto >= NCCL_NUM_PROTOCOLS) continue;
      uint8_t bit = (uint8_t)(1u << (c->algo * NCCL_NUM_PROTOCOLS + c->proto));
      for (size_t i = 0; i < s->nsizes; i++) {
        if (c->points[i].state == PT_PT_OK) seen |= bit;
        if (c->points[i].state == PT_PT_UNSUPPORTED) unsup |= bit;
      }
    }
  }
  if (!any) return 0; /* rules only: what the user wrote stands */
  uint8_t off = 0;
  for (int a = NCCL_ALGO_TREE; a <= NCCL_ALGO_RING; a++)
    for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++)
      if (en.algo[coll][a] != 1 || en.proto[coll][pr] != 1)
        off |= (uint8_t)(1u << (a * NCCL_NUM_PROTOCOLS + pr));
  return (uint8_t)((unsup | off) & ~seen);
}

/* A collective's table: both modes compiled, then merged (merge_modes). */
static int build_set(struct pt_table *t, struct pt_ivset *set, const struct pt_profile *p, int coll,
                     size_t nranks, size_t nnodes) {
  struct ivlist m[PT_NMODES] = {{0}}, l = {0};
  int rc = 0;
  for (int md = 0; md < PT_NMODES && !rc; md++) rc = build_mode(t, p, coll, md, nranks, nnodes, &m[md]);
  if (!rc && (m[PT_MODE_GRAPH].n || m[PT_MODE_EAGER].n))
    rc = merge_modes(&m[PT_MODE_GRAPH], &m[PT_MODE_EAGER], &l);
  free(m[0].iv);
  free(m[1].iv);
  if (!rc) merge_equal(&l);
  set->iv = l.iv;
  set->n = l.n;
  rc = rc ? rc : l.n ? index_keys(set) : 0;
  /* A hand rule stands as written; measured rankings yield to NCCL where it
   * now runs a combination the profile never saw it run. */
  uint8_t unseen = rc ? 0 : unseen_combos(p, coll);
  for (size_t i = 0; unseen && i < set->n; i++) {
    int rule = 0;
    for (int k = 0; k < set->iv[i].n; k++) rule |= set->iv[i].c[k].from_rule;
    if (!rule) set->hot[i].unseen = unseen;
  }
  return rc;
}

int pt_profile_has_comm_rules(const struct pt_profile *p) {
  for (size_t i = 0; i < p->nrules; i++)
    if (p->rules[i].nranks || p->rules[i].nnodes) return 1;
  return 0;
}

/* The smallest channel count any usable candidate was measured with (0 =
 * none). A poisoned candidate is never ranked, so its count must not clamp
 * the good ones below what they were measured with. */
static int smallest_measured(const struct pt_profile *p) {
  int m = 0;
  for (int c = 0; c < PT_NCOLL; c++)
    for (int md = 0; md < PT_NMODES; md++) {
      const struct pt_series *s = p->series[c][md];
      for (size_t k = 0; s && k < s->ncand; k++)
        if (s->cand[k].channels && !poisoned(&s->cand[k], s->nsizes) &&
            (!m || s->cand[k].channels < m))
          m = s->cand[k].channels;
    }
  return m;
}

int pt_table_build_for(struct pt_table *t, const struct pt_profile *p, size_t nranks,
                       size_t nnodes) {
  memset(t, 0, sizeof *t);
  t->comm_channels = p->comm_channels;
  t->chan_cap = p->comm_channels ? p->comm_channels : smallest_measured(p);
  t->no_ll128 = p->ll128_screen == PT_LL128_UNUSABLE;
  t->nranks = nranks ? (int)nranks : p->match_nranks;
  for (int c = 0; c < PT_NCOLL; c++) {
    int rc = build_set(t, &t->storage[c], p, c, nranks, nnodes);
    if (rc) {
      pt_table_release(t);
      return rc;
    }
    t->ninterval += t->storage[c].n;
    t->nsets += t->storage[c].n > 0;
    t->set[c] = t->storage[c].n ? &t->storage[c] : NULL;
  }
  return 0;
}

int pt_table_build(struct pt_table *t, const struct pt_profile *p) {
  return pt_table_build_for(t, p, 0, 0);
}

void pt_table_release(struct pt_table *t) {
  for (int c = 0; c < PT_NCOLL; c++) {
    free(t->storage[c].iv);
    free(t->storage[c].his);
    free(t->storage[c].hot);
  }
  memset(t, 0, sizeof *t);
}

/* ---- hot path --------------------------------------------------------- */

static uint64_t key_lo(unsigned key) {
  if (key < 16) return key;
  int m = (int)(key / 16) + 3;
  return (uint64_t)1 << m | (uint64_t)(key % 16) << (m - 4);
}

const struct pt_interval *pt_table_lookup(const struct pt_table *t, int coll, int mode,
                                          uint64_t nbytes) {
  const struct pt_ivset *set = t && (unsigned)mode < PT_NMODES ? pt_hot_set(t, coll) : NULL;
  return set ? &set->iv[pt_hot_find(set, nbytes)] : NULL;
}

static void pack(const struct pt_interval *iv, struct pt_hot *h) {
  memset(h, 0, sizeof *h);
  h->n = iv->n;
  for (int k = 0; k < iv->n; k++) {
    h->algo[k] = iv->c[k].algo;
    h->proto[k] = iv->c[k].proto;
    h->channels[k] = iv->c[k].set_channels;
    h->pipe_lo[k] = iv->c[k].pipe_lo;
    h->pipe_hi[k] = iv->c[k].pipe_hi;
    if (iv->c[k].pipe_lo || iv->c[k].pipe_hi) h->cond |= (uint8_t)(1u << k);
  }
}

int pt_table_apply(const struct pt_interval *iv, float *cost, int num_algo, int num_proto,
                   int num_pipe_ops, int *nchannels) {
  struct pt_hot h;
  if (!iv) return -1;
  pack(iv, &h);
  return pt_hot_apply(&h, cost, num_algo, num_proto, num_pipe_ops, nchannels);
}

int pt_table_apply_packed(const struct pt_hot *h, float *cost, int num_algo, int num_proto,
                          int num_pipe_ops, int *nchannels) {
  return pt_hot_apply(h, cost, num_algo, num_proto, num_pipe_ops, nchannels);
}

int pt_table_decide(const struct pt_table *t, int coll, uint64_t nbytes, float *cost,
                    int num_algo, int num_proto, int num_pipe_ops, int *nchannels,
                    const struct pt_interval **iv) {
  size_t i;
  *iv = NULL;
  if (!t) return -1;
  int k = pt_hot_decide(t, coll, nbytes, cost, num_algo, num_proto, num_pipe_ops, nchannels, &i);
  if (i != SIZE_MAX) *iv = &t->set[coll]->iv[i];
  return k;
}

/* The chunk an interval's decision runs (algo, proto) with: the first ranked
 * entry with that pair is the one applied (every entry before it was
 * unusable); behind a numPipeOps-conditioned entry, the ones that can follow
 * must agree. 0 when it names none or NCCL chose (algo, proto) itself, -1
 * when they disagree; *ch gets the entry's channel count (0 = NCCL's). */
static long long chunk_of(const struct pt_interval *iv, int algo, int proto, int *ch) {
  long long found = -2;
  *ch = 0;
  for (int k = 0; k < iv->n; k++) {
    const struct pt_choice *c = &iv->c[k];
    if (c->algo != algo || c->proto != proto) continue;
    long long v = c->chunk ? (long long)pt_chunk_round(c->chunk, proto) : 0;
    if (found != -2 && (found != v || *ch != c->set_channels)) return -1;
    found = v;
    *ch = c->set_channels;
    if (!c->pipe_lo && !c->pipe_hi) break; /* unconditional: nothing behind it is reached */
  }
  return found == -2 ? 0 : found;
}

/* NCCL asks for the chunk of one channel's part of a task (enqueue.cc,
 * scheduleCollTasksToPlan -> calcCollChunking, 2.30 and dev): nbytes is that
 * part's bytes and nChannels 1, except for CollNet, whose call has the
 * task's bytes and channels. A part of p bytes comes from a call of B bytes
 * with p <= B <= p x (the channels it ran on), so every decision in that
 * window that can run (algo, proto) must agree on the chunk; NCCL's own
 * choice there (no such entry) counts as NCCL's chunk. */
long long pt_table_chunk(const struct pt_table *t, int coll, uint64_t nbytes, int algo,
                         int proto) {
  const struct pt_ivset *set = t ? pt_hot_set(t, coll) : NULL;
  if (!set || proto < 0 || proto >= NCCL_NUM_PROTOCOLS || !nbytes) return -1;
  int whole = algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN;
  uint64_t most = t->comm_channels ? (uint64_t)t->comm_channels : PT_MAX_CHANNELS;
  uint64_t top = whole ? nbytes : nbytes > UINT64_MAX / most ? UINT64_MAX : nbytes * most;
  long long agreed = -2;
  for (size_t i = pt_hot_find(set, nbytes); i < set->n && set->iv[i].lo <= top; i++) {
    int ch;
    long long v = chunk_of(&set->iv[i], algo, proto, &ch);
    uint64_t reach = whole || !ch ? top : nbytes > UINT64_MAX / (uint64_t)ch ? UINT64_MAX
                                                                           : nbytes * (uint64_t)ch;
    if (set->iv[i].lo > reach) continue; /* its calls of this size run on fewer channels */
    if (v < 0 || (agreed != -2 && agreed != v)) return -1;
    agreed = v;
  }
  /* Where the part is one loop of a ring or one piece of a tree, the device
   * code recomputes or never uses the chunk (tuner/chunk.c): NCCL's own. */
  uint64_t reach = agreed > 0 ? pt_chunk_reach(coll, algo, t->nranks, (uint64_t)agreed) : 0;
  if (reach && nbytes <= reach) return 0;
  return agreed < 0 ? -1 : agreed;
}

int pt_nccl_caps_channels(const char *v) {
  int major = 0, minor = 0;
  if (!v || sscanf(v, "%d.%d", &major, &minor) != 2) return 0;
  return major > 2 || (major == 2 && minor >= 31);
}

int pt_nccl_channels_run(int ch, int nranks, int algo, int proto, uint64_t nbytes) {
  if (ch <= 0 || algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN ||
      algo == NCCL_ALGO_NVLS || algo == NCCL_ALGO_NVLS_TREE)
    return ch;
  uint64_t nt = proto == NCCL_PROTO_LL128 ? 640 : 512;
  uint64_t thr = proto == NCCL_PROTO_SIMPLE ? 64 : 8;
  if (proto == NCCL_PROTO_LL && algo == NCCL_ALGO_RING) thr *= (uint64_t)(nranks > 0 ? nranks : 1);
  int nc = ch;
  while (nc >= 2 && nbytes < (uint64_t)nc * nt * thr) nc--;
  return nc;
}
