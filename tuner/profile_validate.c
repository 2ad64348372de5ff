/*
 * The profile format's rules that span several settings (ordering, lengths,
 * duplicates, overlaps) plus every range rule again, so that a profile built
 * in memory by a writer is held to exactly what the loader accepts.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/profile.h"
#include "pcie/table.h"
#include "profile_internal.h"

__attribute__((format(printf, 4, 5))) static int fail(struct pt_error_rec *e, const char *file,
                                                      int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(e, PT_EINVAL, file, line, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static int check_points(const struct pt_point *pts, size_t n, const char *what, const char *file,
                        int line, struct pt_error_rec *e) {
  for (size_t i = 0; i < n; i++) {
    if (pts[i].state < PT_PT_OK || pts[i].state > PT_PT_HANG)
      return fail(e, file, line, "%s[%zu] has an invalid state %d", what, i, pts[i].state);
    if (pts[i].state == PT_PT_OK && (!isfinite(pts[i].lat_us) || pts[i].lat_us < 0))
      return fail(e, file, line, "%s[%zu] must be a finite number >= 0, not %g", what, i,
                  pts[i].lat_us);
    if (!isfinite(pts[i].spread) || pts[i].spread < 0)
      return fail(e, file, line, "spread[%zu] must be a finite number >= 0, not %g", i,
                  pts[i].spread);
  }
  return 0;
}

static int check_choice(int algo, int proto, int channels, const char *file, int line,
                        struct pt_error_rec *e) {
  if (!pt_algo_name(algo)) return fail(e, file, line, "invalid algorithm index %d", algo);
  if (!pt_proto_name(proto)) return fail(e, file, line, "invalid protocol index %d", proto);
  /* 0: measured with NCCL's own count (the only kind the plugin uses where
   * NCCL does not clamp the tuner's count: all-gather, CollNet). */
  if (channels < 0 || channels > PT_MAX_CHANNELS)
    return fail(e, file, line, "channels must be in 0..%d (0 = NCCL's count), not %d",
                PT_MAX_CHANNELS, channels);
  return 0;
}

static int check_series(const struct pt_series *s, int coll, int mode, const char *file,
                        struct pt_error_rec *e) {
  int rc;
  if (s->nsizes < 1) return fail(e, file, s->line, "%s.%s: sizes must not be empty",
                                 pt_coll_name(coll), pt_mode_name(mode));
  for (size_t i = 0; i < s->nsizes; i++) {
    if (s->sizes[i] < 1) return fail(e, file, s->line, "sizes[%zu] must be at least 1 byte", i);
    if (i > 0 && s->sizes[i] <= s->sizes[i - 1])
      return fail(e, file, s->line,
                  "sizes must be strictly ascending (%llu after %llu at index %zu)",
                  (unsigned long long)s->sizes[i], (unsigned long long)s->sizes[i - 1], i);
  }
  if (s->nccl_default &&
      (rc = check_points(s->nccl_default, s->nsizes, "nccl_default", file, s->line, e)))
    return rc;
  if (s->ncand < 1) return fail(e, file, s->line, "%s.%s: no candidates", pt_coll_name(coll),
                                pt_mode_name(mode));
  for (size_t i = 0; i < s->ncand; i++) {
    const struct pt_candidate *c = &s->cand[i];
    if ((rc = check_choice(c->algo, c->proto, c->channels, file, c->line, e))) return rc;
    if (c->chunk > UINT32_MAX) return fail(e, file, c->line, "chunk %zu is too large", c->chunk);
    if ((rc = check_points(c->points, s->nsizes, "latency", file, c->line, e))) return rc;
    for (size_t j = 0; j < i; j++) {
      const struct pt_candidate *d = &s->cand[j];
      if (d->algo == c->algo && d->proto == c->proto && d->channels == c->channels &&
          d->chunk == c->chunk)
        return fail(e, file, c->line, "duplicate candidate %s/%s/%d (first at line %d)",
                    pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels, d->line);
    }
  }
  return 0;
}

static int modes_overlap(int a, int b) { return a < 0 || b < 0 || a == b; }

static int check_rules(const struct pt_profile *p, const char *file, struct pt_error_rec *e) {
  for (size_t i = 0; i < p->nrules; i++) {
    const struct pt_rule *r = &p->rules[i];
    if (!pt_coll_name(r->coll)) return fail(e, file, r->line, "invalid collective %d", r->coll);
    if (r->mode < -1 || r->mode >= PT_NMODES) return fail(e, file, r->line, "invalid rule mode");
    if (!pt_algo_name(r->algo)) return fail(e, file, r->line, "invalid algorithm index %d", r->algo);
    if (!pt_proto_name(r->proto))
      return fail(e, file, r->line, "invalid protocol index %d", r->proto);
    if (r->channels < 0 || r->channels > PT_MAX_CHANNELS)
      return fail(e, file, r->line, "channels must be in 0..%d (0 = NCCL's count), not %d",
                  PT_MAX_CHANNELS, r->channels);
    if (r->min_bytes > r->max_bytes)
      return fail(e, file, r->line, "min_bytes %llu is above max_bytes %llu",
                  (unsigned long long)r->min_bytes, (unsigned long long)r->max_bytes);
    if (r->chunk > UINT32_MAX) return fail(e, file, r->line, "chunk %zu is too large", r->chunk);
    if (r->nranks < 0 || r->nnodes < 0 || r->min_pipe_ops < 0 || r->max_pipe_ops < 0)
      return fail(e, file, r->line, "nranks, nnodes and the pipe-op bounds must be >= 1");
    if (r->max_pipe_ops && r->min_pipe_ops > r->max_pipe_ops)
      return fail(e, file, r->line, "min_pipe_ops %d is above max_pipe_ops %d", r->min_pipe_ops,
                  r->max_pipe_ops);
    int stacked = 0;
    for (size_t j = 0; j < i; j++) {
      const struct pt_rule *q = &p->rules[j];
      /* Overlapping rules are tried in file order: the later one is the
       * fallback for when NCCL has the earlier one's choice disabled or its
       * conditions do not hold (NCCL's example tuner reads them so too). */
      int sizes = r->min_bytes <= q->max_bytes && q->min_bytes <= r->max_bytes;
      stacked += sizes && q->coll == r->coll && modes_overlap(q->mode, r->mode) &&
                 (!q->nranks || !r->nranks || q->nranks == r->nranks) &&
                 (!q->nnodes || !r->nnodes || q->nnodes == r->nnodes);
    }
    if (stacked >= PT_MAX_RANKED)
      return fail(e, file, r->line,
                  "more than %d %s rules can apply to the same size; the plugin keeps %d",
                  PT_MAX_RANKED, pt_coll_name(r->coll), PT_MAX_RANKED);
  }
  return 0;
}

int pt__validate(const struct pt_profile *p, const char *file, struct pt_error_rec *e) {
  int rc, any = p->nrules > 0;
  if (p->version != PT_PROFILE_VERSION)
    return fail(e, file, 0, "unsupported profile version %d (this reader understands %d)",
                p->version, PT_PROFILE_VERSION);
  if (!p->name || !p->name[0]) return fail(e, file, 0, "the profile needs a non-empty name");
  if (!p->prov.tool || !p->prov.backend || !p->prov.nccl_version || !p->prov.date || !p->prov.mode)
    return fail(e, file, 0, "provenance needs tool, backend, nccl_version, date and mode");
  if (p->prov.box && (rc = pt__check_box(p->prov.box, file, e))) return rc;
  if (p->prov.buffers && strcmp(p->prov.buffers, "cudaMalloc") && strcmp(p->prov.buffers, "ncclMemAlloc"))
    return fail(e, file, 0, "provenance.buffers must be \"cudaMalloc\" or \"ncclMemAlloc\"");
  if (p->prov.has_graph_register && p->prov.graph_register < 0)
    return fail(e, file, 0, "provenance.graph_register must be >= 0");
  if (p->match_nranks < 0 || p->match_nnodes < 0)
    return fail(e, file, 0, "match values must be >= 1");
  if (p->comm_channels < 0 || p->comm_channels > PT_MAX_CHANNELS)
    return fail(e, file, 0, "communicator.channels must be in 1..%d", PT_MAX_CHANNELS);
  if (!isfinite(p->margin) || p->margin < 0 || p->margin >= 1)
    return fail(e, file, 0, "margin must be in [0, 1), not %g", p->margin);
  for (size_t i = 0; i < p->nenv; i++)
    if (!p->env[i].name || strncmp(p->env[i].name, "NCCL_", 5) || !p->env[i].value)
      return fail(e, file, 0, "nccl_env entry %zu is not an NCCL_* variable with a value", i);
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++)
      if (p->series[c][m]) {
        any = 1;
        if ((rc = check_series(p->series[c][m], c, m, file, e))) return rc;
      }
  if (!any) return fail(e, file, 0, "the profile has no measurements and no rules");
  return check_rules(p, file, e);
}

int pt_profile_validate(const struct pt_profile *p, struct pt_error_rec *err) {
  memset(err, 0, sizeof *err);
  return pt__validate(p, p->path ? p->path : "<profile>", err);
}
