/*
 * Compiles a profile into the decision table and answers lookups from it.
 * Compilation (once per profile, at load) does all the floating-point work:
 * log-log interpolation, crossovers, ranking, rules. The lookup and apply
 * functions at the bottom are the hot path: no allocation, lock, log or
 * parsing, and a search with a fixed number of steps per table.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/table.h"

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

/* Ranks the candidates active on segment [a, b] at size x (stable: ties keep
 * file order, so every rank compiles the same table). */
static void rank_at(const struct pt_series *s, const unsigned char *ok, size_t a, size_t b, double x,
                    struct pt_interval *out) {
  double best[PT_MAX_RANKED];
  out->n = 0;
  for (size_t k = 0; k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    if (!ok[k] || !active_in(c, a, b)) continue;
    double v = a == b ? c->points[a].lat_us
                      : lerp_loglog(s->sizes[a], c->points[a].lat_us, s->sizes[b],
                                    c->points[b].lat_us, x);
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
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Splits measured segment [s_a, s_b) at every crossover of two active
 * candidates' log-log lines and ranks each piece at its log-midpoint. */
static int build_segment(const struct pt_series *s, const unsigned char *ok, size_t a,
                         struct ivlist *l, double *cuts) {
  size_t b = a + 1, ncut = 0;
  double x0 = log((double)s->sizes[a]), x1 = log((double)s->sizes[b]);
  for (size_t i = 0; i < s->ncand; i++) {
    const struct pt_candidate *ci = &s->cand[i];
    if (!ok[i] || !active_in(ci, a, b)) continue;
    for (size_t j = i + 1; j < s->ncand; j++) {
      const struct pt_candidate *cj = &s->cand[j];
      if (!ok[j] || !active_in(cj, a, b)) continue;
      double d0 = ln_lat(ci->points[a].lat_us) - ln_lat(cj->points[a].lat_us);
      double d1 = ln_lat(ci->points[b].lat_us) - ln_lat(cj->points[b].lat_us);
      if ((d0 < 0 && d1 > 0) || (d0 > 0 && d1 < 0)) {
        double t = d0 / (d0 - d1);
        cuts[ncut++] = ceil(exp(x0 + t * (x1 - x0)));
      }
    }
  }
  qsort(cuts, ncut, sizeof *cuts, cmp_double);
  double lo = (double)s->sizes[a];
  for (size_t k = 0; k <= ncut; k++) {
    double hi = k < ncut ? cuts[k] : (double)s->sizes[b];
    if (k < ncut && (hi <= lo || hi >= (double)s->sizes[b])) continue;
    struct pt_interval iv = {.lo = (uint64_t)lo, .hi = (uint64_t)hi - 1};
    rank_at(s, ok, a, b, exp(0.5 * (log(lo) + log(hi))), &iv);
    if (push(l, &iv)) return PT_ENOMEM;
    lo = hi;
  }
  return 0;
}

static int build_measured(const struct pt_series *s, struct ivlist *l) {
  int rc = 0;
  size_t pairs = s->ncand * s->ncand / 2 + 1;
  unsigned char *ok = malloc(s->ncand + 1);
  double *cuts = malloc(pairs * sizeof *cuts);
  if (!ok || !cuts) {
    rc = PT_ENOMEM;
    goto out;
  }
  for (size_t k = 0; k < s->ncand; k++) ok[k] = !poisoned(&s->cand[k], s->nsizes);
  if (s->nsizes == 1) {
    struct pt_interval iv = {.lo = 0, .hi = UINT64_MAX};
    rank_at(s, ok, 0, 0, (double)s->sizes[0], &iv);
    rc = push(l, &iv);
    goto out;
  }
  for (size_t a = 0; a + 1 < s->nsizes && !rc; a++) rc = build_segment(s, ok, a, l, cuts);
  if (!rc) {
    /* Beyond the measured range the nearest interval extends. */
    l->iv[0].lo = 0;
    l->iv[l->n - 1].hi = UINT64_MAX;
  }
out:
  free(ok);
  free(cuts);
  return rc;
}

static int same_choice(const struct pt_choice *x, const struct pt_choice *y) {
  return x->algo == y->algo && x->proto == y->proto && x->channels == y->channels &&
         x->chunk == y->chunk && x->from_rule == y->from_rule;
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

/* A rule ranks its choice first inside its range; the measured ranking stays
 * behind it as the fallback for when NCCL has the rule's choice disabled. */
static int apply_rule(struct ivlist *l, const struct pt_rule *r) {
  int rc = split_at(l, r->min_bytes);
  if (!rc && r->max_bytes < UINT64_MAX) rc = split_at(l, r->max_bytes + 1);
  if (rc) return rc;
  struct pt_choice rc0 = {.algo = (int8_t)r->algo, .proto = (int8_t)r->proto,
                          .channels = (uint8_t)r->channels, .from_rule = 1,
                          .chunk = (uint32_t)r->chunk};
  for (size_t i = 0; i < l->n; i++) {
    struct pt_interval *iv = &l->iv[i];
    if (iv->lo < r->min_bytes || iv->hi > r->max_bytes) continue;
    struct pt_choice keep[PT_MAX_RANKED];
    int n = 0;
    keep[n++] = rc0;
    for (int k = 0; k < iv->n && n < PT_MAX_RANKED; k++)
      if (!(iv->c[k].algo == r->algo && iv->c[k].proto == r->proto &&
            iv->c[k].channels == r->channels))
        keep[n++] = iv->c[k];
    memcpy(iv->c, keep, sizeof keep);
    iv->n = (uint8_t)n;
  }
  return 0;
}

static void merge_equal(struct ivlist *l) {
  size_t w = 0;
  for (size_t i = 1; i < l->n; i++) {
    struct pt_interval *cur = &l->iv[w], *nx = &l->iv[i];
    int eq = cur->n == nx->n;
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
    uint64_t ref = (uint64_t)llround(exp(0.5 * (log(lo) + log(hi))));
    double d = pt_interp_latency(s, s->nccl_default, ref);
    iv->default_us = (float)d;
    for (int k = 0; k < iv->n; k++) {
      struct pt_choice *c = &iv->c[k];
      c->lat_us = 0;
      for (size_t j = 0; j < s->ncand; j++) {
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

static int msb(uint64_t x) { return x ? 63 - __builtin_clzll(x) : 0; }

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

/* Each mode is compiled from its own series or, lacking one, the other
 * mode's, so that a mode-specific rule never leaks into the other mode. */
static int build_set(struct pt_ivset *set, const struct pt_profile *p, int coll, int mode) {
  const struct pt_series *s = pt_profile_series(p, coll, mode);
  struct pt_interval all = {.lo = 0, .hi = UINT64_MAX};
  struct ivlist l = {0};
  int rc = 0, has_rule = 0;
  for (size_t i = 0; i < p->nrules; i++)
    has_rule |= p->rules[i].coll == coll && (p->rules[i].mode < 0 || p->rules[i].mode == mode);
  if (!s && !has_rule) return 0;
  rc = s ? build_measured(s, &l) : push(&l, &all);
  for (size_t i = 0; i < p->nrules && !rc; i++)
    if (p->rules[i].coll == coll && (p->rules[i].mode < 0 || p->rules[i].mode == mode))
      rc = apply_rule(&l, &p->rules[i]);
  if (rc) {
    free(l.iv);
    return rc;
  }
  merge_equal(&l);
  annotate(&l, s);
  set->iv = l.iv;
  set->n = l.n;
  return index_keys(set);
}

int pt_table_build(struct pt_table *t, const struct pt_profile *p) {
  memset(t, 0, sizeof *t);
  for (int c = 0; c < PT_NCOLL; c++) {
    for (int m = 0; m < PT_NMODES; m++) {
      int rc = build_set(&t->storage[c][m], p, c, m);
      if (rc) {
        pt_table_release(t);
        return rc;
      }
      t->ninterval += t->storage[c][m].n;
    }
    for (int m = 0; m < PT_NMODES; m++)
      t->set[c][m] = t->storage[c][m].n ? &t->storage[c][m] : NULL;
  }
  return 0;
}

void pt_table_release(struct pt_table *t) {
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++) {
      free(t->storage[c][m].iv);
      free(t->storage[c][m].his);
      free(t->storage[c][m].hot);
    }
  memset(t, 0, sizeof *t);
}

/* ---- hot path --------------------------------------------------------- */

/* Sizes map to PT_NKEYS keys: below 16 bytes the size itself, above it the
 * power of two and the next 4 bits, i.e. 16 keys per octave. */
static unsigned key_of(uint64_t n) {
  if (n < 16) return (unsigned)n;
  int m = msb(n);
  return (unsigned)(m - 3) * 16 + (unsigned)((n >> (m - 4)) & 15);
}

static uint64_t key_lo(unsigned key) {
  if (key < 16) return key;
  int m = (int)(key / 16) + 3;
  return (uint64_t)1 << m | (uint64_t)(key % 16) << (m - 4);
}

/* The index of the first interval with hi >= nbytes. Starting at the
 * interval that holds the key's smallest size, a branch-free search takes
 * the same number of steps for every size of a set (set->top sets it), so
 * the loop exit is always predicted; his[] is padded with UINT64_MAX so the
 * steps never overrun. */
static inline __attribute__((always_inline)) size_t find(const struct pt_ivset *set,
                                                        uint64_t nbytes) {
  const uint64_t *b = set->his + set->start[key_of(nbytes)];
  for (size_t step = set->top; step > 0; step >>= 1) b = b[step - 1] < nbytes ? b + step : b;
  return (size_t)(b - set->his);
}

static const struct pt_ivset *set_of(const struct pt_table *t, int coll, int mode) {
  if (!t || (unsigned)coll >= PT_NCOLL || (unsigned)mode >= PT_NMODES) return NULL;
  return t->set[coll][mode];
}

const struct pt_interval *pt_table_lookup(const struct pt_table *t, int coll, int mode,
                                          uint64_t nbytes) {
  const struct pt_ivset *set = set_of(t, coll, mode);
  return set ? &set->iv[find(set, nbytes)] : NULL;
}

/* The one apply rule, over a packed ranked list. */
static inline __attribute__((always_inline)) int apply_hot(const struct pt_hot *h, float *cost,
                                                          int num_algo, int num_proto,
                                                          int *nchannels) {
  if (!cost || !nchannels || num_algo <= 0 || num_proto <= 0) return -1;
  for (int k = 0; k < h->n; k++) {
    if (h->algo[k] >= num_algo || h->proto[k] >= num_proto) continue;
    int idx = h->algo[k] * num_proto + h->proto[k];
    if (!(cost[idx] >= 0.0f)) continue; /* negative or NaN: NCCL disabled it */
    /* NCCL takes the smallest entry >= 0 and breaks ties to the lower index:
     * a zero at a lower index is raised a hair so it cannot steal the tie. */
    for (int i = 0; i < idx; i++)
      if (cost[i] == 0.0f) cost[i] = FLT_MIN;
    cost[idx] = 0.0f;
    *nchannels = h->channels[k];
    return k;
  }
  return -1;
}

static void pack(const struct pt_interval *iv, struct pt_hot *h) {
  memset(h, 0, sizeof *h);
  h->n = iv->n;
  for (int k = 0; k < iv->n; k++) {
    h->algo[k] = iv->c[k].algo;
    h->proto[k] = iv->c[k].proto;
    h->channels[k] = iv->c[k].channels;
  }
}

int pt_table_apply(const struct pt_interval *iv, float *cost, int num_algo, int num_proto,
                   int *nchannels) {
  struct pt_hot h;
  if (!iv) return -1;
  pack(iv, &h);
  return apply_hot(&h, cost, num_algo, num_proto, nchannels);
}

int pt_table_apply_packed(const struct pt_hot *h, float *cost, int num_algo, int num_proto,
                          int *nchannels) {
  return apply_hot(h, cost, num_algo, num_proto, nchannels);
}

int pt_table_decide(const struct pt_table *t, int coll, int mode, uint64_t nbytes, float *cost,
                    int num_algo, int num_proto, int *nchannels, const struct pt_interval **iv) {
  const struct pt_ivset *set = set_of(t, coll, mode);
  *iv = NULL;
  if (!set) return -1;
  size_t i = find(set, nbytes);
  *iv = &set->iv[i];
  return apply_hot(&set->hot[i], cost, num_algo, num_proto, nchannels);
}

static size_t grain(int proto) {
  /* enqueue.cc rounds the chunk down to these; below them it becomes 0. */
  return proto == NCCL_PROTO_LL ? 16 : proto == NCCL_PROTO_LL128 ? 1920 : 512;
}

size_t pt_chunk_round(size_t chunk, int proto) {
  size_t g = grain(proto), c = chunk / g * g;
  return c < g ? g : c;
}

size_t pt_table_chunk(const struct pt_table *t, int coll, int mode, uint64_t nbytes, int algo,
                      int proto) {
  const struct pt_interval *iv = pt_table_lookup(t, coll, mode, nbytes);
  if (!iv || proto < 0 || proto >= NCCL_NUM_PROTOCOLS) return 0;
  for (int k = 0; k < iv->n; k++)
    if (iv->c[k].algo == algo && iv->c[k].proto == proto && iv->c[k].chunk)
      return pt_chunk_round(iv->c[k].chunk, proto);
  return 0;
}
