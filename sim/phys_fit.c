/*
 * Fitting the physical truth's global parameters (sim/phys.c) on published
 * tables: Levenberg-Marquardt on the log of every parameter, residuals
 * ln(model / published) with each table weighted equally, and a weak prior
 * towards the starting values so that a parameter no table constrains (the
 * socket interconnect when the dual-socket tables are left out) stays where
 * physics puts it instead of drifting. Used by the leave-one-out test
 * (test/test_sim_loo.c); deterministic, no global state.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "pcie/sim_box.h"

/* Weight of the prior, per parameter, in squared log units: a factor of e
 * away from the start costs what a 5.5 % error on every row of one table
 * does. */
#define PRIOR_W 0.003

struct problem {
  struct pt_box *boxes;
  size_t nboxes;
  long skip;
  unsigned long mask; /* bit i: parameter i is fitted */
  double x0[PT_PHYS_NPARAM];
  int nres;
};

static int fitted(const struct problem *pb, int i) { return (int)(pb->mask >> i & 1); }

static int count_res(const struct problem *pb) {
  int n = 0;
  for (size_t i = 0; i < pb->nboxes; i++)
    if ((long)i != pb->skip) n += (int)pb->boxes[i].nanchors;
  for (int k = 0; k < PT_PHYS_NPARAM; k++) n += fitted(pb, k);
  return n;
}

static void residuals(struct problem *pb, const double *x, double *r) {
  double v[PT_PHYS_NPARAM];
  struct pt_phys ph;
  int m = 0;
  for (int k = 0; k < PT_PHYS_NPARAM; k++) v[k] = exp(x[k]);
  pt_phys_from_vec(&ph, v);
  for (size_t i = 0; i < pb->nboxes; i++) {
    struct pt_box *b = &pb->boxes[i];
    if ((long)i == pb->skip || !b->nanchors) continue;
    pt_box_truth_from_hw(b, &ph);
    double w = sqrt(1.0 / (double)b->nanchors);
    for (size_t a = 0; a < b->nanchors; a++) {
      double us = pt_box_anchor_us(b, &b->anchors[a]);
      r[m++] = us > 0 ? w * log(us / b->anchors[a].lat_us) : 10 * w;
    }
  }
  for (int k = 0; k < PT_PHYS_NPARAM; k++)
    if (fitted(pb, k)) r[m++] = sqrt(PRIOR_W) * (x[k] - pb->x0[k]);
}

static double cost(const double *r, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += r[i] * r[i];
  return s;
}

/* Solves A d = g (n x n, A overwritten) by Gaussian elimination with partial
 * pivoting; returns -1 when singular. */
static int solve(double *A, double *g, int n) {
  for (int c = 0; c < n; c++) {
    int piv = c;
    for (int i = c + 1; i < n; i++)
      if (fabs(A[i * n + c]) > fabs(A[piv * n + c])) piv = i;
    if (fabs(A[piv * n + c]) < 1e-300) return -1;
    if (piv != c) {
      for (int j = 0; j < n; j++) {
        double t = A[c * n + j];
        A[c * n + j] = A[piv * n + j];
        A[piv * n + j] = t;
      }
      double t = g[c];
      g[c] = g[piv];
      g[piv] = t;
    }
    for (int i = c + 1; i < n; i++) {
      double f = A[i * n + c] / A[c * n + c];
      for (int j = c; j < n; j++) A[i * n + j] -= f * A[c * n + j];
      g[i] -= f * g[c];
    }
  }
  for (int c = n - 1; c >= 0; c--) {
    for (int j = c + 1; j < n; j++) g[c] -= A[c * n + j] * g[j];
    g[c] /= A[c * n + c];
  }
  return 0;
}

double pt_phys_fit(struct pt_box *boxes, size_t nboxes, long skip, unsigned long mask,
                   const struct pt_phys *start, struct pt_phys *out) {
  enum { P = PT_PHYS_NPARAM };
  struct problem pb = {boxes, nboxes, skip, mask, {0}, 0};
  double v[P], x[P], xt[P], JtJ[P * P], A[P * P], g[P], d[P];
  double mu = 1e-2, c;
  *out = *start; /* what the caller gets if the fit cannot run */
  pt_phys_to_vec(start, v);
  for (int k = 0; k < P; k++) pb.x0[k] = x[k] = log(v[k]);
  pb.nres = count_res(&pb);
  int n = pb.nres;
  double *r = malloc(sizeof *r * (size_t)n), *rt = malloc(sizeof *rt * (size_t)n),
         *J = malloc(sizeof *J * (size_t)n * P);
  if (!r || !rt || !J) {
    c = -1;
    goto out;
  }
  residuals(&pb, x, r);
  c = cost(r, n);
  for (int it = 0; it < 300; it++) {
    /* Forward-difference Jacobian in log space. */
    for (int k = 0; k < P; k++) {
      memcpy(xt, x, sizeof xt);
      if (fitted(&pb, k)) xt[k] += 1e-5;
      residuals(&pb, xt, rt);
      for (int i = 0; i < n; i++) J[i * P + k] = fitted(&pb, k) ? (rt[i] - r[i]) / 1e-5 : 0;
    }
    for (int a = 0; a < P; a++) {
      g[a] = 0;
      for (int i = 0; i < n; i++) g[a] -= J[i * P + a] * r[i];
      for (int b2 = 0; b2 < P; b2++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += J[i * P + a] * J[i * P + b2];
        JtJ[a * P + b2] = s;
      }
    }
    int improved = 0;
    for (int tries = 0; tries < 12 && !improved; tries++) {
      memcpy(A, JtJ, sizeof A);
      memcpy(d, g, sizeof d);
      for (int a = 0; a < P; a++) A[a * P + a] += mu * (JtJ[a * P + a] > 0 ? JtJ[a * P + a] : 1) + 1e-12;
      if (solve(A, d, P)) {
        mu *= 4;
        continue;
      }
      for (int k = 0; k < P; k++) {
        double step = d[k] > 1 ? 1 : d[k] < -1 ? -1 : d[k];
        xt[k] = x[k] + step;
        if (xt[k] < log(1e-3)) xt[k] = log(1e-3);
        if (xt[k] > log(1e4)) xt[k] = log(1e4);
      }
      residuals(&pb, xt, rt);
      double ct = cost(rt, n);
      if (ct < c) {
        improved = 1;
        double gain = c - ct;
        memcpy(x, xt, sizeof x);
        memcpy(r, rt, sizeof *r * (size_t)n);
        c = ct;
        mu = fmax(mu / 3, 1e-9);
        if (gain < 1e-10 * (1 + c)) it = 1 << 20;
      } else {
        mu *= 4;
      }
    }
    if (!improved) break;
  }
  for (int k = 0; k < P; k++) v[k] = exp(x[k]);
  pt_phys_from_vec(out, v);
  /* Leave every box's truth computed from the result. */
  for (size_t i = 0; i < nboxes; i++)
    if (boxes[i].has_hw) pt_box_truth_from_hw(&boxes[i], out);
out:
  free(r);
  free(rt);
  free(J);
  return c;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

size_t pt_box_curve_errors(const struct pt_box *b, uint64_t lo, uint64_t hi, struct pt_curve_err *out,
                           size_t max) {
  size_t nc = 0;
  for (size_t i = 0; i < b->nanchors; i++) {
    const struct pt_box_anchor *a = &b->anchors[i];
    size_t k = 0;
    if (a->nbytes < lo || a->nbytes > hi) continue;
    while (k < nc && strcmp(out[k].curve, a->curve)) k++;
    if (k == nc) {
      if (nc == max) continue;
      memset(&out[nc], 0, sizeof out[nc]);
      snprintf(out[nc].curve, sizeof out[nc].curve, "%s", a->curve);
      nc++;
    }
  }
  for (size_t k = 0; k < nc; k++) {
    double e[PT_BOX_MAX_ANCHORS];
    int n = 0;
    for (size_t i = 0; i < b->nanchors; i++) {
      const struct pt_box_anchor *a = &b->anchors[i];
      if (a->nbytes < lo || a->nbytes > hi || strcmp(out[k].curve, a->curve)) continue;
      double us = pt_box_anchor_us(b, a);
      e[n++] = us > 0 ? fabs(log(us / a->lat_us)) : INFINITY;
    }
    qsort(e, (size_t)n, sizeof *e, cmp_double);
    out[k].n = n;
    out[k].median = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    out[k].p90 = e[(int)ceil(0.9 * n) - 1];
  }
  return nc;
}
