/*
 * SVG chart of a profile series (cli/svg.h). Plain text output, no
 * dependency; written to a temporary file and renamed so a reader never sees
 * half a chart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl/common.h"
#include "svg.h"

#define W 960
#define H 600
#define L 80  /* plot area left */
#define R 740 /* plot area right; the legend sits beyond */
#define T 50
#define B 540

static const char *const proto_color[3] = {"#1f77b4", "#2ca02c", "#ff7f0e"};

double pt_series_interp(const struct pt_series *s, const struct pt_point *pts, double n) {
  for (size_t i = 0; i + 1 < s->nsizes; i++) {
    double a = (double)s->sizes[i], b = (double)s->sizes[i + 1];
    if (n < a || n > b) continue;
    if (pts[i].state != PT_PT_OK || pts[i + 1].state != PT_PT_OK) return -1;
    double f = log(n / a) / log(b / a);
    return exp(log(pts[i].lat_us) + f * (log(pts[i + 1].lat_us) - log(pts[i].lat_us)));
  }
  if (s->nsizes && n == (double)s->sizes[s->nsizes - 1] && pts[s->nsizes - 1].state == PT_PT_OK)
    return pts[s->nsizes - 1].lat_us;
  return -1;
}

struct axes {
  double x0, x1, y0, y1; /* log10 ranges */
};

static double px(const struct axes *a, double n) { return L + (R - L) * (log10(n) - a->x0) / (a->x1 - a->x0); }
static double py(const struct axes *a, double us) { return B - (B - T) * (log10(us) - a->y0) / (a->y1 - a->y0); }

static void size_label(char *buf, size_t len, double n) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (n >= 1024 && u < 3) {
    n /= 1024;
    u++;
  }
  snprintf(buf, len, "%g %s", n, unit[u]);
}

/* One polyline through the usable points of pts, broken where a point is not. */
static void curve(FILE *f, const struct axes *a, const struct pt_series *s, const struct pt_point *pts,
                  const char *style) {
  int open = 0;
  for (size_t i = 0; i < s->nsizes; i++) {
    if (pts[i].state != PT_PT_OK || pts[i].lat_us <= 0) {
      if (open) fputs("\"/>\n", f);
      open = 0;
      continue;
    }
    if (!open) fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    fprintf(f, "%.1f,%.1f ", px(a, (double)s->sizes[i]), py(a, pts[i].lat_us));
    open = 1;
  }
  if (open) fputs("\"/>\n", f);
}

static const struct pt_candidate *find(const struct pt_series *s, const struct pt_choice *c) {
  for (size_t i = 0; i < s->ncand; i++)
    if (s->cand[i].algo == c->algo && s->cand[i].proto == c->proto && s->cand[i].channels == c->channels)
      return &s->cand[i];
  return NULL;
}

static void envelope(FILE *f, const struct axes *a, const struct pt_series *s, const struct pt_ivset *set) {
  double lo = (double)s->sizes[0], hi = (double)s->sizes[s->nsizes - 1];
  int open = 0;
  for (int k = 0; k <= 400; k++) {
    double n = exp(log(lo) + (log(hi) - log(lo)) * k / 400.0), us = -1;
    for (size_t i = 0; i < set->n; i++) {
      const struct pt_interval *iv = &set->iv[i];
      if ((double)iv->lo > n || (double)iv->hi < floor(n) || !iv->n) continue;
      const struct pt_candidate *c = find(s, &iv->c[0]);
      if (c) us = pt_series_interp(s, c->points, n);
      break;
    }
    if (us <= 0) {
      if (open) fputs("\"/>\n", f);
      open = 0;
      continue;
    }
    if (!open) fputs("<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"3\" points=\"", f);
    fprintf(f, "%.1f,%.1f ", px(a, n), py(a, us));
    open = 1;
  }
  if (open) fputs("\"/>\n", f);
}

static void frame(FILE *f, const struct axes *a, const char *title) {
  char lab[32];
  fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
  fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">", L);
  for (const char *c = title; *c; c++) /* the title comes from the profile: escape it */
    fputs(*c == '<' ? "&lt;" : *c == '>' ? "&gt;" : *c == '&' ? "&amp;" : (char[2]){*c, 0}, f);
  fputs("</text>\n", f);
  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n", L, T, R - L, B - T);
  /* x ticks every power of 4 bytes, y ticks at 1-2-5 per decade */
  for (int e = (int)ceil(a->x0 / log10(4)); e <= (int)floor(a->x1 / log10(4)); e++) {
    double n = pow(4, e), x = px(a, n);
    size_label(lab, sizeof lab, n);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x, T, x, B);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n", x, B + 16, lab);
  }
  for (int d = (int)floor(a->y0); d <= (int)ceil(a->y1); d++)
    for (int m = 0; m < 3; m++) {
      double us = pow(10, d) * (m == 0 ? 1 : m == 1 ? 2 : 5);
      if (log10(us) < a->y0 || log10(us) > a->y1) continue;
      double y = py(a, us);
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, y, R, y);
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4, us);
    }
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">message size (bytes, log scale)</text>\n",
          (L + R) / 2, B + 40);
  fprintf(f, "<text x=\"20\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 20 %d)\">"
             "latency (us, log scale)</text>\n", (T + B) / 2, (T + B) / 2);
}

static void legend(FILE *f) {
  static const char *const items[][2] = {
      {"stroke=\"#000\" stroke-width=\"3\"", "chosen (plugin table)"},
      {"stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"8 4\"", "NCCL default"},
      {"stroke=\"#1f77b4\" stroke-opacity=\"0.5\"", "LL candidates"},
      {"stroke=\"#2ca02c\" stroke-opacity=\"0.5\"", "LL128 candidates"},
      {"stroke=\"#ff7f0e\" stroke-opacity=\"0.5\"", "Simple candidates"},
      {"stroke=\"#777\" stroke-dasharray=\"3 3\"", "Tree (dashed)"},
  };
  for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
    int y = T + 14 + 22 * (int)i;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" %s/>\n", R + 15, y, R + 45, y, items[i][0]);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n", R + 52, y + 4, items[i][1]);
  }
}

int pt_svg_write(const char *path, const char *title, const struct pt_series *s,
                 const struct pt_ivset *set, int force) {
  if (!s || !s->nsizes) return errno = EINVAL, -1; /* a rules-only profile: nothing measured to draw */
  struct axes a = {log10((double)s->sizes[0]), log10((double)s->sizes[s->nsizes - 1]), 1e9, -1e9};
  char tmp[4200];
  if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
  for (size_t c = 0; c <= s->ncand; c++) {
    const struct pt_point *pts = c < s->ncand ? s->cand[c].points : s->nccl_default;
    for (size_t i = 0; pts && i < s->nsizes; i++)
      if (pts[i].state == PT_PT_OK && pts[i].lat_us > 0) {
        a.y0 = fmin(a.y0, log10(pts[i].lat_us));
        a.y1 = fmax(a.y1, log10(pts[i].lat_us));
      }
  }
  if (a.y1 < a.y0) a.y0 = 0, a.y1 = 1;
  a.y0 = floor(a.y0 * 10) / 10 - 0.05;
  a.y1 = ceil(a.y1 * 10) / 10 + 0.05;
  /* A fresh temporary beside path (mkstemp: never an existing file or a
   * planted symlink), renamed or linked into place below. */
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  if (snprintf(tmp, sizeof tmp, "%.*s.%s.XXXXXX", dirlen, path, path + dirlen) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  FILE *f = fchmod(fd, 0644) == 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    int saved = errno;
    close(fd);
    unlink(tmp);
    errno = saved;
    return -1;
  }
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", W, H);
  frame(f, &a, title);
  for (size_t c = 0; c < s->ncand; c++) {
    char style[160];
    const struct pt_candidate *cd = &s->cand[c];
    snprintf(style, sizeof style, "stroke=\"%s\" stroke-opacity=\"0.35\" stroke-width=\"1\"%s",
             proto_color[cd->proto >= 0 && cd->proto < 3 ? cd->proto : 2],
             cd->algo == NCCL_ALGO_TREE ? " stroke-dasharray=\"3 3\"" : "");
    curve(f, &a, s, cd->points, style);
  }
  if (s->nccl_default)
    curve(f, &a, s, s->nccl_default, "stroke=\"#d62728\" stroke-width=\"2.5\" stroke-dasharray=\"8 4\"");
  envelope(f, &a, s, set);
  legend(f);
  fputs("</svg>\n", f);
  int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  /* Without force, link() fails with EEXIST if path appeared meanwhile:
   * nothing is clobbered. With force, rename() replaces atomically. */
  if (!bad) bad = force ? rename(tmp, path) : link(tmp, path);
  int saved = errno;
  unlink(tmp); /* after rename it is gone; after link it is the spare name */
  errno = saved;
  return bad ? -1 : 0;
}
