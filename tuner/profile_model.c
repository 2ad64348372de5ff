/*
 * struct pt_profile in memory: builders for writers, release, hashing and
 * error formatting. Parsing lives in profile_load.c, rendering in
 * profile_write.c, the format's rules in profile_validate.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/profile.h"

char *pt_strdup(const char *s) { return s ? strdup(s) : NULL; }

uint64_t pt_hash_bytes(const void *data, size_t len) {
  /* FNV-1a 64: stable across hosts, so ranks can compare the logged hash. */
  const unsigned char *b = data;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

int pt_error_vset(struct pt_error_rec *e, int code, const char *file, int line, const char *fmt,
                  va_list ap) {
  snprintf(e->file, sizeof e->file, "%s", file);
  e->line = line;
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  return code;
}

int pt_error_set(struct pt_error_rec *e, int code, const char *file, int line, const char *fmt,
                 ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(e, code, file, line, fmt, ap);
  va_end(ap);
  return code;
}

void pt_error_format(const struct pt_error_rec *e, char *buf, size_t len) {
  if (e->line > 0)
    snprintf(buf, len, "%s:%d: %s", e->file, e->line, e->msg);
  else
    snprintf(buf, len, "%s: %s", e->file, e->msg);
}

static struct pt_point *missing_points(size_t n) {
  struct pt_point *pts = calloc(n ? n : 1, sizeof *pts);
  for (size_t i = 0; pts && i < n; i++) pts[i].state = PT_PT_MISSING;
  return pts;
}

struct pt_series *pt_series_new(const uint64_t *sizes, size_t nsizes) {
  struct pt_series *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->sizes = malloc((nsizes ? nsizes : 1) * sizeof *s->sizes);
  if (!s->sizes) {
    free(s);
    return NULL;
  }
  if (nsizes) memcpy(s->sizes, sizes, nsizes * sizeof *sizes);
  s->nsizes = nsizes;
  return s;
}

struct pt_candidate *pt_series_add_candidate(struct pt_series *s, int algo, int proto,
                                             int channels, size_t chunk) {
  struct pt_candidate *c = realloc(s->cand, (s->ncand + 1) * sizeof *c);
  if (!c) return NULL;
  s->cand = c;
  c = &s->cand[s->ncand];
  memset(c, 0, sizeof *c);
  c->points = missing_points(s->nsizes);
  if (!c->points) return NULL;
  c->algo = algo;
  c->proto = proto;
  c->channels = channels;
  c->chunk = chunk;
  s->ncand++;
  return c;
}

struct pt_point *pt_series_default(struct pt_series *s) {
  if (!s->nccl_default) s->nccl_default = missing_points(s->nsizes);
  return s->nccl_default;
}

void pt_series_free(struct pt_series *s) {
  if (!s) return;
  for (size_t i = 0; i < s->ncand; i++) free(s->cand[i].points);
  free(s->cand);
  free(s->nccl_default);
  free(s->sizes);
  free(s);
}

void pt_profile_release(struct pt_profile *p) {
  free(p->name);
  free(p->prov.tool);
  free(p->prov.backend);
  free(p->prov.nccl_version);
  free(p->prov.date);
  free(p->prov.mode);
  free(p->prov.note);
  free(p->prov.extra);
  free(p->prov.box);
  free(p->prov.buffers);
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++) pt_series_free(p->series[c][m]);
  free(p->rules);
  for (size_t i = 0; i < p->nenv; i++) {
    free(p->env[i].name);
    free(p->env[i].value);
  }
  free(p->env);
  free(p->sweep_state);
  free(p->path);
  memset(p, 0, sizeof *p);
}

double pt_profile_margin(const struct pt_profile *p) {
  return p->margin > 0 ? p->margin : PT_DEFAULT_MARGIN;
}

int pt_profile_ll128_usable(const struct pt_profile *p) {
  return p->ll128_screen == PT_LL128_SCREENED;
}

size_t pt_profile_ll128_choices(const struct pt_profile *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->nrules; i++) n += p->rules[i].proto == NCCL_PROTO_LL128;
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++) {
      const struct pt_series *s = p->series[c][m];
      for (size_t k = 0; s && k < s->ncand; k++) {
        int ok = 0;
        for (size_t i = 0; i < s->nsizes && !ok; i++) ok = s->cand[k].points[i].state == PT_PT_OK;
        n += ok && s->cand[k].proto == NCCL_PROTO_LL128;
      }
    }
  return n;
}

int pt_profile_partial(const struct pt_profile *p, char *msg, size_t len) {
  size_t measured = 0, total = 0, points = 0, npoints = 0;
  int missing_default = 0;
  if (!p->sweep_state) return 0; /* not a sweep: nothing to finish */
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++) {
      const struct pt_series *s = p->series[c][m];
      if (!s) continue;
      for (size_t k = 0; k < s->ncand; k++)
        for (size_t i = 0; i < s->nsizes; i++) {
          npoints++;
          points += s->cand[k].points[i].state != PT_PT_MISSING;
        }
      for (size_t i = 0; i < s->nsizes; i++) {
        total++;
        if (s->nccl_default && s->nccl_default[i].state != PT_PT_MISSING) measured++;
        else missing_default = 1;
      }
    }
  if (!strcmp(p->sweep_state, "complete") && !missing_default) return 0;
  if (msg && len)
    snprintf(msg, len,
             "partial sweep (sweep.state \"%s\"): %zu of %zu candidate points and NCCL's default "
             "at %zu of %zu sizes measured; finish it with pcie-tune profile --resume",
             p->sweep_state, points, npoints, measured, total);
  return 1;
}

int pt_series_lacks_default(const struct pt_series *s) {
  if (!s || !s->ncand) return 0;
  for (size_t i = 0; s->nccl_default && i < s->nsizes; i++)
    if (s->nccl_default[i].state == PT_PT_OK) return 0;
  return 1;
}

int pt_profile_lacks_default(const struct pt_profile *p) {
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++)
      if (pt_series_lacks_default(p->series[c][m])) return 1;
  return 0;
}

const char *pt_profile_env(const struct pt_profile *p, const char *name) {
  for (size_t i = 0; i < p->nenv; i++)
    if (!strcmp(p->env[i].name, name)) return p->env[i].value;
  return NULL;
}

int pt_profile_measured(const struct pt_profile *p) {
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++)
      if (p->series[c][m]) return 1;
  return 0;
}
