/*
 * SVG chart of a profile series (cli/svg.h), drawn for this project's
 * question: what does the plugin choose for a verify step's all-reduces,
 * and how much faster than NCCL is it there?
 *
 *  - The x axis is log-scaled piecewise: 14 KiB..2 MiB (a verify step's
 *    messages, docs/design.md) gets most of the width and a shaded band.
 *  - A strip above the plot names the first choice of every interval
 *    (algo/proto/channels, "R" for a rule, "NCCL" where it decides).
 *  - Candidates are coloured by protocol, dashed for Tree, and drawn thicker
 *    the more channels they use; a line joins a candidate's measured points
 *    across sizes an adaptive sweep did not measure, and breaks only where a
 *    measurement failed; dots mark what was measured.
 *  - The speed-up of the chosen envelope over NCCL's default has a panel of
 *    its own, on a linear scale: dots (with their figure) at the measured
 *    sizes, a dashed line between them where it is interpolated.
 *  - The legend lists only what was drawn.
 * Plain text, no dependency; written to a temporary file and renamed, so a
 * reader never sees half a chart.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/files.h"
#include "svg.h"

#define W 1000
#define H 780
#define L 80  /* plot left */
#define R 770 /* plot right; the legend sits beyond */
#define T 78  /* latency panel */
#define B 470
#define T2 530 /* speed-up panel */
#define B2 710
#define SAMPLES 400

#define FOCUS_LO 14336.0             /* one token's all-reduce (hidden 7168, bf16) */
#define FOCUS_HI (2.0 * 1024 * 1024) /* 128 tokens is 1.75 MiB */

static const char *const proto_color[3] = {"#1f77b4", "#2ca02c", "#ff7f0e"};
static const char *const proto_label[3] = {"LL", "LL128", "Simple"};

/* The x axis: up to three log-scaled segments, the middle one (the focus
 * band) 70 % of the width when present. */
struct xaxis {
  int nseg;
  double lo[3], hi[3], w[3]; /* log(bytes) bounds, width fractions */
};

static void xaxis_init(struct xaxis *x, double lo, double hi) {
  const double bounds[4] = {lo, fmax(lo, fmin(FOCUS_LO, hi)), fmin(hi, fmax(FOCUS_HI, lo)), hi};
  const double weight[3] = {0.15, 0.70, 0.15};
  double total = 0;
  x->nseg = 0;
  for (int i = 0; i < 3; i++)
    if (bounds[i + 1] > bounds[i] * 1.0001) {
      x->lo[x->nseg] = log(bounds[i]);
      x->hi[x->nseg] = log(bounds[i + 1]);
      x->w[x->nseg] = weight[i];
      total += weight[i];
      x->nseg++;
    }
  if (!x->nseg) { /* one size: give it a decade */
    x->lo[0] = log(lo) - 1, x->hi[0] = log(lo) + 1, x->w[0] = 1, total = 1, x->nseg = 1;
  }
  for (int i = 0; i < x->nseg; i++) x->w[i] /= total;
}

static double px(const struct xaxis *x, double n) {
  double v = log(n < 1 ? 1 : n), at = 0;
  if (v <= x->lo[0]) return L;
  for (int i = 0; i < x->nseg; i++) {
    if (v <= x->hi[i] || i == x->nseg - 1) {
      double f = (fmin(v, x->hi[i]) - x->lo[i]) / (x->hi[i] - x->lo[i]);
      return L + (R - L) * (at + x->w[i] * f);
    }
    at += x->w[i];
  }
  return R;
}

/* The inverse, for sampling the envelope evenly across the drawn width. */
static double xbytes(const struct xaxis *x, double pix) {
  double f = (pix - L) / (R - L), at = 0;
  for (int i = 0; i < x->nseg; i++) {
    if (f <= at + x->w[i] || i == x->nseg - 1)
      return exp(x->lo[i] + (x->hi[i] - x->lo[i]) * fmin(1, fmax(0, (f - at) / x->w[i])));
    at += x->w[i];
  }
  return exp(x->hi[x->nseg - 1]);
}

struct yaxis {
  double y0, y1; /* log10 us */
};

static double py(const struct yaxis *a, double us) {
  return B - (B - T) * (log10(us) - a->y0) / (a->y1 - a->y0);
}

static int failed(const struct pt_point *p) { return p->state >= PT_PT_UNSUPPORTED; }
static int usable(const struct pt_point *p) { return p->state == PT_PT_OK && p->lat_us > 0; }

double pt_series_interp(const struct pt_series *s, const struct pt_point *pts, double n) {
  if (!s || !pts || !s->nsizes) return -1;
  size_t below = SIZE_MAX, above = SIZE_MAX;
  for (size_t i = 0; i < s->nsizes; i++) {
    if ((double)s->sizes[i] <= n && (usable(&pts[i]) || failed(&pts[i]))) below = i;
    if ((double)s->sizes[i] >= n && (usable(&pts[i]) || failed(&pts[i]))) {
      above = i;
      break;
    }
  }
  if (below == SIZE_MAX || above == SIZE_MAX || !usable(&pts[below]) || !usable(&pts[above])) return -1;
  if (below == above) return pts[below].lat_us;
  double a = (double)s->sizes[below], b = (double)s->sizes[above];
  double f = log(n / a) / log(b / a);
  return exp(log(pts[below].lat_us) + f * (log(pts[above].lat_us) - log(pts[below].lat_us)));
}

static void size_label(char *buf, size_t len, double n) {
  static const char *const unit[] = {"B", "K", "M", "G"};
  int u = 0;
  while (n >= 1024 && u < 3) {
    n /= 1024;
    u++;
  }
  snprintf(buf, len, "%g%s", n, unit[u]);
}

static void escaped(FILE *f, const char *s) {
  for (; *s; s++)
    fputs(*s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, f);
}

/* One candidate: a polyline through its usable points, skipping sizes not
 * measured, broken at a failed one; a dot on each measured point. Returns
 * 1 when anything was drawn. */
static int curve(FILE *f, const struct xaxis *x, const struct yaxis *y, const struct pt_series *s,
                 const struct pt_point *pts, const char *style, const char *dot) {
  int open = 0, drawn = 0;
  for (size_t i = 0; i < s->nsizes; i++) {
    if (failed(&pts[i]) && open) {
      fputs("\"/>\n", f);
      open = 0;
    }
    if (!usable(&pts[i])) continue;
    if (!open) fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    fprintf(f, "%.1f,%.1f ", px(x, (double)s->sizes[i]), py(y, pts[i].lat_us));
    open = drawn = 1;
  }
  if (open) fputs("\"/>\n", f);
  for (size_t i = 0; dot && i < s->nsizes; i++)
    if (usable(&pts[i]))
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.6\" fill=\"%s\"/>\n", px(x, (double)s->sizes[i]),
              py(y, pts[i].lat_us), dot);
  return drawn;
}

static const struct pt_candidate *find(const struct pt_series *s, const struct pt_choice *c) {
  for (size_t i = 0; s && i < s->ncand; i++)
    if (s->cand[i].algo == c->algo && s->cand[i].proto == c->proto && s->cand[i].channels == c->channels)
      return &s->cand[i];
  return NULL;
}

static const struct pt_interval *interval_at(const struct pt_ivset *set, double n) {
  for (size_t i = 0; i < set->n; i++)
    if ((double)set->iv[i].hi >= floor(n)) return &set->iv[i];
  return NULL;
}

/* The chosen latency and NCCL default's at n; -1 where unknown. */
static void at_size(const struct pt_series *s, const struct pt_ivset *set, double n, double *chosen,
                    double *nccl) {
  const struct pt_interval *iv = interval_at(set, n);
  *nccl = s && s->nccl_default ? pt_series_interp(s, s->nccl_default, n) : -1;
  *chosen = -1;
  if (!iv) return;
  if (!iv->n) {
    *chosen = *nccl; /* left to NCCL: its own time */
    return;
  }
  const struct pt_candidate *c = find(s, &iv->c[0]);
  if (c) *chosen = pt_series_interp(s, c->points, n);
}

/* Two stacked polylines sampled across the width: the envelope in the
 * latency panel, its speed-up over NCCL in the other. */
static void polyline_samples(FILE *f, const double *xs, const double *ys, const char *style) {
  int open = 0;
  for (int k = 0; k <= SAMPLES; k++) {
    if (ys[k] < 0 || !isfinite(ys[k])) {
      if (open) fputs("\"/>\n", f);
      open = 0;
      continue;
    }
    if (!open) fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    fprintf(f, "%.1f,%.1f ", xs[k], ys[k]);
    open = 1;
  }
  if (open) fputs("\"/>\n", f);
}

static void x_ticks(FILE *f, const struct xaxis *x, double lo, double hi, int top, int bottom) {
  double last = -1e9;
  char lab[32];
  for (double n = 1; n <= hi * 1.0001; n *= 2) {
    if (n < lo * 0.9999) continue;
    double xp = px(x, n);
    if (xp - last < 34) continue;
    last = xp;
    size_label(lab, sizeof lab, n);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", xp, top, xp, bottom);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", xp, bottom + 14, lab);
  }
}

static void focus_band(FILE *f, const struct xaxis *x, double lo, double hi, int top, int bottom, int label) {
  double a = px(x, fmax(lo, FOCUS_LO)), b = px(x, fmin(hi, FOCUS_HI));
  if (b - a < 2) return;
  fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f1f5ff\"/>\n", a, top, b - a,
          bottom - top);
  if (label)
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#557\" text-anchor=\"middle\">"
               "verify-step all-reduces: 14 KiB to 2 MiB (wider scale)</text>\n",
            (a + b) / 2, top + 13);
}

/* The first choice of every interval, merged where neighbours agree. */
static void decision_strip(FILE *f, const struct xaxis *x, const struct pt_ivset *set, double lo, double hi) {
  int y = T - 24;
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">choice</text>\n", L - 6, y + 13);
  for (size_t i = 0; i < set->n;) {
    const struct pt_interval *iv = &set->iv[i];
    size_t j = i;
    while (j + 1 < set->n && set->iv[j + 1].n == iv->n &&
           (!iv->n || (set->iv[j + 1].c[0].algo == iv->c[0].algo && set->iv[j + 1].c[0].proto == iv->c[0].proto &&
                       set->iv[j + 1].c[0].channels == iv->c[0].channels &&
                       set->iv[j + 1].c[0].from_rule == iv->c[0].from_rule)))
      j++;
    double a = fmax((double)iv->lo, lo), b = fmin((double)set->iv[j].hi, hi);
    i = j + 1;
    if (b < a) continue;
    double xa = px(x, a), xb = b >= hi ? R : px(x, b + 1);
    if (xb - xa < 0.5) continue;
    const char *fill = !iv->n ? "#bbb" : proto_color[iv->c[0].proto >= 0 && iv->c[0].proto < 3 ? iv->c[0].proto : 2];
    fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"%s\" fill-opacity=\"0.55\" "
               "stroke=\"#fff\" stroke-width=\"0.8\"/>\n",
            xa, y, xb - xa, fill);
    char lab[64];
    if (!iv->n) snprintf(lab, sizeof lab, "NCCL");
    else
      snprintf(lab, sizeof lab, "%s%s/%s/%d", iv->c[0].from_rule ? "R " : "", pt_algo_name(iv->c[0].algo),
               pt_proto_name(iv->c[0].proto), iv->c[0].channels);
    if (xb - xa < 5.8 * (double)strlen(lab) + 4) { /* too narrow: the channel count alone */
      if (!iv->n || xb - xa < 10) continue;
      snprintf(lab, sizeof lab, "%d", iv->c[0].channels);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", (xa + xb) / 2, y + 13,
            lab);
  }
}

/* What the legend may list; each flag set only when something was drawn. */
struct drawn {
  int envelope, speedup, nccl, proto[3], tree, channels[17], band, measured;
};

static void legend(FILE *f, const struct drawn *d) {
  int y = T + 4;
#define ITEM(style, text)                                                                                     \
  do {                                                                                                        \
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" %s/>\n", R + 15, y, R + 45, y, style);           \
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n", R + 52, y + 4, text);                   \
    y += 20;                                                                                                  \
  } while (0)
  if (d->envelope) ITEM("stroke=\"#000\" stroke-width=\"3\"", "chosen (plugin)");
  if (d->nccl) ITEM("stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"8 4\"", "NCCL default");
  for (int p = 0; p < 3; p++)
    if (d->proto[p]) {
      char style[96], text[48];
      snprintf(style, sizeof style, "stroke=\"%s\" stroke-width=\"1.6\"", proto_color[p]);
      snprintf(text, sizeof text, "%s candidates", proto_label[p]);
      ITEM(style, text);
    }
  if (d->tree) ITEM("stroke=\"#777\" stroke-dasharray=\"3 3\"", "Tree (dashed)");
  for (int c = 1; c <= 16; c++)
    if (d->channels[c]) {
      char style[96], text[48];
      snprintf(style, sizeof style, "stroke=\"#555\" stroke-width=\"%.2f\"", 0.6 + 0.45 * log2(c));
      snprintf(text, sizeof text, "%d channel%s", c, c == 1 ? "" : "s");
      ITEM(style, text);
    }
  if (d->band) {
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"30\" height=\"12\" fill=\"#f1f5ff\" stroke=\"#ccd\"/>\n", R + 15, y - 6);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">14 KiB-2 MiB</text>\n", R + 52, y + 4);
    y += 20;
  }
  if (d->speedup) {
    y = T2 + 4;
    ITEM("stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"", "NCCL / chosen, interpolated");
    if (d->measured) {
      fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"#000\"/>\n", R + 30, y);
      fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">at a measured size</text>\n", R + 52, y + 4);
    }
  }
#undef ITEM
}

/* A speed-up label ("1.42×" at font-size 9): about 28 px wide, 10 px high. */
#define LABEL_W 30.0
#define LABEL_H 11.0

/* The latency axis: every usable latency of the series, in decades. */
static void y_range(const struct pt_series *s, struct yaxis *y) {
  for (size_t c = 0; s && c <= s->ncand; c++) {
    const struct pt_point *pts = c < s->ncand ? s->cand[c].points : s->nccl_default;
    for (size_t i = 0; pts && i < s->nsizes; i++)
      if (usable(&pts[i])) {
        y->y0 = fmin(y->y0, log10(pts[i].lat_us));
        y->y1 = fmax(y->y1, log10(pts[i].lat_us));
      }
  }
  if (y->y1 < y->y0) y->y0 = 0, y->y1 = 1;
  y->y0 = floor(y->y0 * 10) / 10 - 0.05;
  y->y1 = ceil(y->y1 * 10) / 10 + 0.05;
}

/* The title, the bands, both panels' x ticks and the latency grid. */
static void frame(FILE *f, const char *title, const struct xaxis *x, const struct yaxis *y, double lo, double hi,
                  struct drawn *d) {
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", W, H);
  fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
  fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"16\" font-weight=\"bold\">", L);
  escaped(f, title);
  fputs("</text>\n", f);
  focus_band(f, x, lo, hi, T, B, 1);
  focus_band(f, x, lo, hi, T2, B2, 0);
  d->band = px(x, fmin(hi, FOCUS_HI)) - px(x, fmax(lo, FOCUS_LO)) >= 2;
  x_ticks(f, x, lo, hi, T, B);
  x_ticks(f, x, lo, hi, T2, B2);
  for (int dd = (int)floor(y->y0); dd <= (int)ceil(y->y1); dd++)
    for (int m = 0; m < 3; m++) {
      double us = pow(10, dd) * (m == 0 ? 1 : m == 1 ? 2 : 5);
      if (log10(us) < y->y0 || log10(us) > y->y1) continue;
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, py(y, us), R, py(y, us));
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n", L - 6, py(y, us) + 4, us);
    }
  fprintf(f, "<text x=\"18\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 18 %d)\">"
             "latency (\u00b5s, log scale)</text>\n", (T + B) / 2, (T + B) / 2);
}

/* Every candidate's curve and NCCL's default. */
static void curves(FILE *f, const struct xaxis *x, const struct yaxis *y, const struct pt_series *s,
                   struct drawn *d) {
  if (!s || !s->nsizes) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">no measurements in this series: "
               "the choices above come from rules</text>\n", (L + R) / 2, (T + B) / 2);
  }
  for (size_t c = 0; s && c < s->ncand; c++) {
    const struct pt_candidate *cd = &s->cand[c];
    int p = cd->proto >= 0 && cd->proto < 3 ? cd->proto : 2, ch = cd->channels >= 1 && cd->channels <= 16 ? cd->channels : 1;
    char style[200];
    snprintf(style, sizeof style, "stroke=\"%s\" stroke-opacity=\"0.5\" stroke-width=\"%.2f\"%s", proto_color[p],
             0.6 + 0.45 * log2(ch), cd->algo == NCCL_ALGO_TREE ? " stroke-dasharray=\"3 3\"" : "");
    if (curve(f, x, y, s, cd->points, style, proto_color[p])) {
      d->proto[p] = 1;
      d->channels[ch] = 1;
      d->tree |= cd->algo == NCCL_ALGO_TREE;
    }
  }
  if (s && s->nccl_default)
    d->nccl = curve(f, x, y, s, s->nccl_default, "stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"8 4\"",
                    NULL);
}

/* The chosen envelope and its speed-up, sampled evenly across the width. */
struct samples {
  double xs[SAMPLES + 1], ych[SAMPLES + 1], ysp[SAMPLES + 1], sp[SAMPLES + 1];
  double smin, smax;
};

static void envelope(FILE *f, const struct xaxis *x, const struct yaxis *y, const struct pt_series *s,
                     const struct pt_ivset *set, struct samples *sm, struct drawn *d) {
  sm->smin = sm->smax = 1;
  for (int k = 0; k <= SAMPLES; k++) {
    double n, chosen, nccl;
    sm->xs[k] = L + (R - L) * (double)k / SAMPLES;
    n = xbytes(x, sm->xs[k]);
    at_size(s, set, n, &chosen, &nccl);
    sm->ych[k] = chosen > 0 ? py(y, chosen) : -1;
    sm->sp[k] = chosen > 0 && nccl > 0 ? nccl / chosen : -1;
    if (sm->sp[k] > 0) sm->smin = fmin(sm->smin, sm->sp[k]), sm->smax = fmax(sm->smax, sm->sp[k]);
    d->envelope |= chosen > 0;
    d->speedup |= sm->sp[k] > 0;
  }
  polyline_samples(f, sm->xs, sm->ych, "stroke=\"#000\" stroke-width=\"3\"");
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T, R - L, B - T);
}

/* Speed-up panel: linear, 1.0 marked. */
static void speedup_panel(FILE *f, const struct xaxis *x, const struct pt_series *s, const struct pt_ivset *set,
                          struct samples *sm, struct drawn *d) {
  double s0 = floor(fmin(sm->smin, 0.95) * 10) / 10, s1 = ceil(fmax(sm->smax, 1.05) * 10) / 10;
  double step = s1 - s0 > 2 ? 0.5 : s1 - s0 > 0.8 ? 0.2 : 0.1;
  /* Grid from 1.0 both ways, so the 1.0 line (NCCL's own speed) is always one. */
  for (int dir = -1; dir <= 1; dir += 2)
    for (double v = dir < 0 ? 1 : 1 + step; v >= s0 - 1e-9 && v <= s1 + 1e-9; v += dir * step) {
      double yy = B2 - (B2 - T2) * (v - s0) / (s1 - s0);
      int one = fabs(v - 1) < 1e-9;
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"%s/>\n", L, yy, R, yy,
              one ? "#d62728" : "#eee", one ? " stroke-width=\"1.5\" stroke-dasharray=\"8 4\"" : "");
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.1f\u00d7</text>\n", L - 6,
              yy + 4, v);
    }
  for (int k = 0; k <= SAMPLES; k++) sm->ysp[k] = sm->sp[k] > 0 ? B2 - (B2 - T2) * (sm->sp[k] - s0) / (s1 - s0) : -1;
  /* Only the measured sizes carry a measured speed-up: a dot each, with
   * its figure; the dashed line between them is interpolated (the truth
   * there can differ by far: simulate --box tells). */
  polyline_samples(f, sm->xs, sm->ysp, "stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
  /* A figure is written only clear of the last one written: outside the
   * widened band the measured sizes lie a few pixels apart and their
   * labels ran into one another. The dot is always drawn. */
  double last_x = -1e9, last_y = -1e9;
  for (size_t i = 0; s && i < s->nsizes; i++) {
    double chosen, nccl, n = (double)s->sizes[i];
    at_size(s, set, n, &chosen, &nccl);
    if (chosen <= 0 || nccl <= 0) continue;
    double v = nccl / chosen, yy = B2 - (B2 - T2) * (v - s0) / (s1 - s0);
    fprintf(f, "<circle class=\"measured-speedup\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#000\"/>\n", px(x, n), yy);
    if (v >= 1.005 && (px(x, n) - last_x >= LABEL_W || fabs(yy - last_y) >= LABEL_H)) {
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\">%.2f\u00d7</text>\n", px(x, n),
              yy - 6, v);
      last_x = px(x, n);
      last_y = yy;
    }
    d->measured = 1;
  }
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T2, R - L,
          B2 - T2);
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">speedup over NCCL's default (above the red line: "
             "faster)</text>\n", L, T2 - 8);
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">message size (bytes; log scale, "
             "14 KiB-2 MiB widened)</text>\n", (L + R) / 2, B2 + 34);
}

static void write_chart(FILE *f, const char *title, const struct pt_series *s, const struct pt_ivset *set) {
  double lo = s && s->nsizes ? (double)s->sizes[0] : 8, hi = s && s->nsizes ? (double)s->sizes[s->nsizes - 1] : 256 << 20;
  static struct samples sm;
  struct xaxis x;
  struct yaxis y = {1e9, -1e9};
  struct drawn d;
  memset(&d, 0, sizeof d);
  xaxis_init(&x, lo, hi);
  y_range(s, &y);
  frame(f, title, &x, &y, lo, hi, &d);
  decision_strip(f, &x, set, lo, hi);
  curves(f, &x, &y, s, &d);
  envelope(f, &x, &y, s, set, &sm, &d);
  speedup_panel(f, &x, s, set, &sm, &d);
  legend(f, &d);
  fputs("</svg>\n", f);
}

int pt_svg_write(const char *path, const char *title, const struct pt_series *s,
                 const struct pt_ivset *set, int force, struct pt_error_rec *err) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc;
  memset(err, 0, sizeof *err);
  if (!f) return pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
  write_chart(f, title, s, set);
  int bad = ferror(f);
  if (fclose(f) || bad) rc = pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
  else rc = pt_output_write(path, text, len, force ? PT_OUT_FORCE : 0, err);
  free(text);
  return rc;
}
