/*
 * pcie-tune show: prints, per size interval, what the plugin decides for a
 * profile. It compiles the profile with the tuner core's own pt_table_build
 * and reads the intervals back, so the output is exactly the plugin's
 * decision table; nothing here ranks candidates.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "host_verdict.h"
#include "json.h"
#include "nccl/common.h"
#include "pcie/chunk.h"
#include "prov_text.h"
#include "pcie/files.h"
#include "pcie/table.h"
#include "svg.h"
#include "opt.h"

struct show_opts {
  const char *path, *svg;
  int coll, mode, json, force, quiet, bytes;
  unsigned long long nranks, nnodes;
};

static int one_profile(void *opts, const char *arg, char *why, size_t len) {
  struct show_opts *o = opts;
  if (!o->path) o->path = arg;
  else snprintf(why, len, "more than one profile given ('%s')", arg);
  return o->path == arg ? 0 : -1;
}

#define F(x) offsetof(struct show_opts, x)

static const struct cli_opt show_rows[] = {
    CLI_ROW("nranks", 0, CLI_UINT, "N", F(nranks), 1, 65536, NULL, 0, 0,
            "the communicator's size: fail unless the profile applies\nto it; rules for other sizes are left out"),
    CLI_ROW("nnodes", 0, CLI_UINT, "N", F(nnodes), 1, 65536, NULL, 0, 0, "the same for the number of nodes"),
    CLI_ROW("collective", 0, CLI_CHOICE, "broadcast|reduce|allgather|reducescatter|allreduce", F(coll), 0, 0,
            "allreduce", 0, 0, "the collective whose decisions to print"),
    CLI_ROW("graph", 0, CLI_SET, NULL, F(mode), PT_MODE_GRAPH, 0, "", 0, 0, "CUDA-graph launches (regBuff=1)"),
    CLI_ROW("eager", 0, CLI_SET, NULL, F(mode), PT_MODE_EAGER, 0, NULL, 0, 0, "eager launches"),
    CLI_ROW("bytes", 0, CLI_FLAG, NULL, F(bytes), 0, 0, NULL, 0, 0,
            "print every boundary in bytes (default: exact units, else bytes)"),
    CLI_ROW("svg", 0, CLI_STR, "FILE", F(svg), 0, 0, NULL, 0, 0,
            "also draw latency against size for every candidate, the\nchosen envelope and NCCL's default (never "
            "overwritten\nwithout --force, never the profile; '-': standard\noutput, instead of the table)"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0, "replace an existing --svg FILE"),
    CLI_ROW("json", 0, CLI_FLAG, NULL, F(json), 0, 0, NULL, 0, 0, "print the table as JSON instead of text"),
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0, "print nothing (with --svg: only the chart)"),
    CLI_END_ROW,
};

const struct cli_cmd show_cli = {
    "show",
    "usage: pcie-tune show PROFILE [--nranks N] [--nnodes N] [--collective C] [--graph|--eager]\n"
    "                      [--bytes] [--svg FILE [--force]] [--json]\n"
    "\n"
    "Prints, per message-size range, what the plugin decides for a profile: the\n"
    "candidate it ranks first (algo/proto/channels), the channel count NCCL will\n"
    "actually run, its expected latency, NCCL default's and the speedup, or why\n"
    "the range is left to NCCL; then the candidates excluded and why.\n"
    "Adjacent decision intervals with the same first choice share one row.\n",
    NULL,
    show_rows,
    one_profile,
};

/* A boundary, exact: "32 KiB" when it is a whole number of a unit, else
 * its bytes ("16718 B"); always bytes with --bytes. */
static void size_str(char *buf, size_t len, uint64_t n, int bytes) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  if (n == UINT64_MAX) {
    snprintf(buf, len, "max");
    return;
  }
  while (!bytes && u < 4 && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    u++;
  }
  snprintf(buf, len, "%llu %s", (unsigned long long)n, unit[u]);
}

/* " chunk N" after a name whose candidate sets a chunk (profile --chunks). */
static void chunk_suffix(char *buf, size_t len, size_t chunk) {
  size_t n = strlen(buf);
  if (chunk && n < len) snprintf(buf + n, len - n, " chunk %zu", chunk);
}

static void choice_name(char *buf, size_t len, const struct pt_choice *c) {
  if (c->channels)
    snprintf(buf, len, "%s/%s/%d", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels);
  else
    snprintf(buf, len, "%s/%s", pt_algo_name(c->algo), pt_proto_name(c->proto));
  chunk_suffix(buf, len, c->chunk);
  size_t n = strlen(buf);
  if (c->from_rule && n < len) snprintf(buf + n, len - n, " (rule)");
}

/* A measured candidate as show names it: channels 0 is NCCL's own count. */
static void cand_name(char *buf, size_t len, const struct pt_candidate *c) {
  if (c->channels) snprintf(buf, len, "%s/%s/%d", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels);
  else snprintf(buf, len, "%s/%s (NCCL's count)", pt_algo_name(c->algo), pt_proto_name(c->proto));
  chunk_suffix(buf, len, c->chunk);
}

/* The channel count NCCL runs for a choice: what the plugin writes, which
 * NCCL clamps to comm->nChannels (known: already below it), or NCCL's own.
 * For a profile of NCCL 2.31 or later the count is only a cap under NCCL's
 * size heuristic: the range it runs over the interval [lo, hi]. */
static void runs_str(char *buf, size_t len, const struct pt_profile *p, const struct pt_table *t,
                     const struct pt_choice *c, uint64_t lo, uint64_t hi, long nranks) {
  const char *le = t->comm_channels ? "" : "<=";
  int a = c->set_channels, b = c->set_channels;
  if (!c->set_channels) {
    snprintf(buf, len, "NCCL's");
    return;
  }
  if (pt_nccl_caps_channels(p->prov.nccl_version)) {
    a = pt_nccl_channels_run(c->set_channels, (int)nranks, c->algo, c->proto, lo);
    b = pt_nccl_channels_run(c->set_channels, (int)nranks, c->algo, c->proto, hi);
  }
  if (a == b) snprintf(buf, len, "%s%d", le, a);
  else snprintf(buf, len, "%s%d-%d", le, a, b);
}

/* The candidate of s with the largest gain over NCCL's default at size
 * index i (OK points only); its gain in *gain, or NULL. */
static const struct pt_candidate *best_at(const struct pt_series *s, size_t i, double *gain) {
  const struct pt_candidate *best = NULL;
  *gain = 0;
  if (!s->nccl_default || s->nccl_default[i].state != PT_PT_OK) return NULL;
  for (size_t k = 0; k < s->ncand; k++) {
    const struct pt_point *q = &s->cand[k].points[i];
    if (q->state == PT_PT_OK && q->lat_us > 0 && s->nccl_default[i].lat_us / q->lat_us > *gain) {
      *gain = s->nccl_default[i].lat_us / q->lat_us;
      best = &s->cand[k];
    }
  }
  return best;
}

/* Why [lo, hi] is left to NCCL, as it happened. "No gain" has two causes
 * the table does not tell apart: nothing beats NCCL at the measured sizes
 * around the range, or something does at one of them but not at the other,
 * and the compiler could not tell what NCCL runs in between (tuner/table.c,
 * identify), so it keeps NCCL's choice. */
static const char *why_nccl(const struct pt_interval *iv, const struct pt_series *s, double margin, char *buf,
                            size_t len, int bytes) {
  if (!s) return "NCCL: no rule applies here";
  if (iv->kind == PT_IV_OUTSIDE) return "NCCL: outside the measured sizes";
  if (iv->kind == PT_IV_MODES_DIFFER)
    return "NCCL: graph and eager measurements disagree (regBuff differs per rank)";
  if (iv->kind == PT_IV_NO_DEFAULT)
    return "NCCL: its default was not measured here, so no candidate is shown faster (import its default run)";
  if (iv->kind != PT_IV_NO_GAIN) return "NCCL: nothing usable measured here";
  /* The measured segment the range starts in: the last measured size at
   * or below it and the next one. */
  size_t a = 0;
  for (size_t i = 0; i < s->nsizes; i++)
    if (s->sizes[i] <= iv->lo) a = i;
  size_t b = a + 1 < s->nsizes ? a + 1 : a;
  double ga, gb;
  const struct pt_candidate *ca = best_at(s, a, &ga), *cb = best_at(s, b, &gb);
  int fast_a = ca && ga > 1 + margin, fast_b = cb && gb > 1 + margin;
  if (fast_a == fast_b && !(fast_a && a == b)) return "NCCL: no candidate beats its default by the margin";
  const struct pt_candidate *c = fast_a ? ca : cb;
  char at[24], other[24], name[40];
  size_str(at, sizeof at, s->sizes[fast_a ? a : b], bytes);
  size_str(other, sizeof other, s->sizes[fast_a ? b : a], bytes);
  cand_name(name, sizeof name, c);
  snprintf(buf, len,
           "NCCL: %s is %.2fx faster at %s but nothing is at %s by the margin; in between NCCL keeps "
           "its choice: a candidate must beat it at both ends, or match what NCCL ran at both",
           name, fast_a ? ga : gb, at, other);
  return buf;
}

/* The measured figures of a row [lo, hi] with first choice c, at the
 * measured sizes inside it: latency and NCCL's at the first, the speed-up's
 * range over all and the row's two ends. Returns how many there are; with none the outputs are
 * left as they were (the table's interpolated figures). */
static size_t row_figures(const struct pt_series *s, uint64_t lo, uint64_t hi, const struct pt_choice *c,
                          double *lat, double *def, double *smin, double *smax) {
  const struct pt_candidate *cd = NULL;
  size_t n = 0;
  for (size_t k = 0; s && k < s->ncand && !cd; k++)
    if (s->cand[k].algo == c->algo && s->cand[k].proto == c->proto && s->cand[k].channels == c->channels)
      cd = &s->cand[k];
  for (size_t i = 0; cd && s->nccl_default && i < s->nsizes; i++) {
    const struct pt_point *q = &cd->points[i], *d = &s->nccl_default[i];
    if (s->sizes[i] < lo || s->sizes[i] > hi || q->state != PT_PT_OK || d->state != PT_PT_OK || q->lat_us <= 0)
      continue;
    double sp = d->lat_us / q->lat_us;
    if (!n) *lat = q->lat_us, *def = d->lat_us, *smin = *smax = sp;
    *smin = fmin(*smin, sp);
    *smax = fmax(*smax, sp);
    n++;
  }
  /* A row wider than its measured sizes rests on the lines to the measured
   * sizes beyond it too: its speed-up at its own ends (interpolated, as the
   * plugin decided it) belongs in the range, or a row measured at one size
   * shows that size's gain over all of it (issue 26: 1.42x printed for
   * 24393 B-256 KiB, where the truth runs from 1.69x down to 1.00x). */
  for (int e = 0; n && e < 2; e++) {
    uint64_t x = e ? hi : lo;
    if (x < s->sizes[0] || x > s->sizes[s->nsizes - 1]) continue;
    double q = pt_interp_latency(s, cd->points, x), d = pt_interp_latency(s, s->nccl_default, x);
    if (q <= 0 || d <= 0) continue;
    *smin = fmin(*smin, d / q);
    *smax = fmax(*smax, d / q);
  }
  return n;
}

/* Two intervals share a summary row when their first choice (or their
 * reason for leaving the size to NCCL) is the same. */
static int same_row(const struct pt_interval *a, const struct pt_interval *b) {
  if (!a->n || !b->n) return !a->n && !b->n && a->kind == b->kind;
  const struct pt_choice *x = &a->c[0], *y = &b->c[0];
  return x->algo == y->algo && x->proto == y->proto && x->channels == y->channels &&
         x->set_channels == y->set_channels && x->from_rule == y->from_rule;
}

static double speedup(const struct pt_interval *iv) {
  if (!iv->n || iv->c[0].lat_us <= 0 || iv->default_us <= 0) return -1;
  return iv->default_us / iv->c[0].lat_us;
}

/* Why a candidate of s is never ranked; NULL when it may be. */
static const char *excluded(const struct pt_table *t, const struct pt_series *s, int coll,
                            const struct pt_candidate *c, char *buf, size_t len, int bytes) {
  char at[48];
  for (size_t i = 0; i < s->nsizes; i++)
    if (c->points[i].state >= PT_PT_WRONG) {
      size_str(at, sizeof at, s->sizes[i], bytes);
      snprintf(buf, len, "%s at %s", pt_point_state_name(c->points[i].state), at);
      return buf;
    }
  int unclamped = coll == PT_ALLGATHER || c->algo == NCCL_ALGO_COLLNET_DIRECT ||
                  c->algo == NCCL_ALGO_COLLNET_CHAIN;
  if (unclamped && c->channels) {
    snprintf(buf, len,
             "measured with %d channels, but NCCL does not clamp a tuner's count here (AllGatherV, "
             "CollNet), so the plugin never writes one: only candidates measured with NCCL's own "
             "count (channels = 0) run as measured",
             c->channels);
    return buf;
  }
  if (!t->comm_channels && !unclamped && t->chan_cap && c->channels > t->chan_cap) {
    snprintf(buf, len,
             "%d channels: the communicator's count is unknown, so the plugin returns at most "
             "%d (the smallest measured) and this would not run as measured",
             c->channels, t->chan_cap);
    return buf;
  }
  return NULL;
}

static const char *served_from(const struct pt_profile *p, int coll, int mode) {
  if (p->series[coll][mode] || !p->series[coll][!mode]) return NULL;
  return mode == PT_MODE_GRAPH ? "graph calls (regBuff=1) use the eager data: the profile "
                                 "has no graph series for this collective"
                               : "eager calls use the graph data: the profile has no eager "
                                 "series for this collective";
}

/* Chunk candidates (profile --chunks): where NCCL's device code uses the
 * chunk, and where the plugin leaves NCCL its own (tuner/chunk.c). */
static void print_chunks(const struct pt_profile *p, int coll, int mode) {
  const struct pt_series *cs = pt_profile_series(p, coll, mode);
  int any = 0;
  for (size_t k = 0; cs && k < cs->ncand; k++) {
    const struct pt_candidate *c = &cs->cand[k];
    int first = 1;
    for (size_t j = 0; j < k && first; j++)
      first = cs->cand[j].chunk != c->chunk || cs->cand[j].algo != c->algo || cs->cand[j].proto != c->proto;
    uint64_t reach = pt_chunk_reach(coll, c->algo, p->match_nranks, c->chunk);
    if (!c->chunk || !first || !reach) continue;
    char more[64];
    if (c->algo == NCCL_ALGO_RING && p->match_nranks <= 0) snprintf(more, sizeof more, "nranks x %zu B", c->chunk);
    else snprintf(more, sizeof more, "%llu B", (unsigned long long)reach);
    printf("chunk %zu B on %s/%s: runs as measured only where a channel carries more than %s; below, %s %s and "
           "the plugin leaves NCCL its own chunk\n", c->chunk, pt_algo_name(c->algo), pt_proto_name(c->proto), more,
           pt_chunk_where(coll, c->algo),
           c->algo == NCCL_ALGO_RING ? "recomputes the chunk in one loop" : "runs the part in one piece");
    any = 1;
  }
  if (any)
    printf("chunk: NCCL asks the plugin from 2.30 on (getChunkSize, tuner ABI v6; enqueue.cc calcCollChunking), "
           "never before; it clamps a chunk to its own ceiling (LL 32768 B, LL128 576000 B, Simple NCCL_BUFFSIZE/2 "
           "on a ring, /8 on a tree); CollNet, NVLS and PAT chunks are not offered\n");
}

/* The table's heading lines: what was measured, how channels and the
 * margin apply, and the column names. */
static void print_heading(const struct pt_profile *p, const struct pt_table *t, const struct pt_ivset *set,
                          int coll, int mode, long nranks, long nnodes) {
  const struct pt_series *s = pt_profile_series(p, coll, mode);
  size_t rows = 0;
  for (size_t i = 0; i < set->n; i++) rows += !i || !same_row(&set->iv[i - 1], &set->iv[i]);
  printf("profile %s (%s): %s, %s mode\n", p->name, p->path ? p->path : "-", pt_coll_name(coll),
         pt_mode_name(mode));
  /* Which NCCL the data was measured with; on a simulated box, whether its
   * NCCL view was derived from hardware or typed by hand (docs/sim.md). */
  if (p->prov.backend && p->prov.nccl_version)
    printf("measured with backend %s, NCCL %s\n", p->prov.backend, p->prov.nccl_version);
  char prov[1400];
  cli_prov_box(p, prov, sizeof prov);
  printf("measured on: %s\n", prov); /* the box the plugin requires at init */
  if (served_from(p, coll, mode)) printf("note: %s\n", served_from(p, coll, mode));
  print_chunks(p, coll, mode);
  /* LL128 on PCIe only after its correctness screen (measure/screen.h). */
  char ll[600];
  if (p->ll128_screen == PT_LL128_SCREENED)
    printf("ll128: screened for torn lines on this box (provenance.extra.ll128_screen)\n");
  else if (p->ll128_screen == PT_LL128_UNUSABLE)
    printf("ll128: unusable on this box: it failed its correctness screen (provenance.extra.ll128_screen); "
           "never chosen, and NCCL's own LL128 is set aside too\n");
  else if (cli_ll128_text(p, p->path, ll, sizeof ll))
    printf("ll128: %s; rows marked [ll128 unscreened] are where it would be chosen\n", ll);
  if (pt_nccl_caps_channels(p->prov.nccl_version))
    printf("channels: NCCL %s takes a tuner's count as a cap under its size heuristic: \"runs\" "
           "is what it runs (Simple with c channels only from c x 32 KiB)\n",
           p->prov.nccl_version);
  if (t->comm_channels)
    printf("channels: the communicator has %d (communicator.channels); NCCL runs at most that\n",
           t->comm_channels);
  else if (t->chan_cap)
    printf("channels: the communicator's count is unknown; all-gather and CollNet keep NCCL's "
           "count, the rest gets at most %d (the smallest measured)\n",
           t->chan_cap);
  else
    printf("channels: the communicator's count is unknown; all-gather and CollNet keep NCCL's "
           "count, a rule's count elsewhere is passed on (NCCL clamps it)\n");
  /* The plugin refuses the profile when the job's channel-shaping variables
   * differ from nccl_env (docs/decisions.md, step 3): say how to match. */
  static const char *const shaping[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"};
  for (size_t i = 0; i < sizeof shaping / sizeof shaping[0]; i++)
    if (pt_profile_env(p, shaping[i]))
      printf("measured with %s set; run the job with: export %s=%s\n", shaping[i], shaping[i],
             pt_profile_env(p, shaping[i]));
  if (pt_profile_has_comm_rules(p) && (nranks || nnodes))
    printf("%zu decision intervals in this table, %zu in the profile for nRanks %ld nNodes %ld "
           "(as the plugin's init line counts them)",
           set->n, t->ninterval, nranks, nnodes);
  else
    printf("%zu decision intervals in this table, %zu in the profile (as check and the "
           "plugin's init line count them)",
           set->n, t->ninterval);
  printf("; %zu rows: neighbours with the same first choice share one\n", rows);
  if (s && s->nccl_default)
    printf("a candidate is chosen only where it beats NCCL's default by %.0f %% (and the "
           "measured noise)\n",
           100 * pt_profile_margin(p));
  else if (s)
    printf("warning: no nccl_default in this series: a candidate is chosen only where NCCL's "
           "default was measured too, so NCCL decides every measured size (import its default "
           "run)%s\n", p->nrules ? "; hand rules still apply where they say" : "");
  printf("figures are measured at the sizes inside a row; ~ marks a row with none, whose figures are\n"
         "interpolated between measured sizes (simulate --box gives the truth there)\n");
  printf("%14s %14s  %-24s %6s %11s %11s %13s  %s\n", "from", "to", "choice", "runs", "latency",
         "NCCL", "speedup", "why / fallbacks");
}

/* One row, from interval i up to the last neighbour with the same first
 * choice; returns the interval after it. */
/* " [ll128 unscreened: ring/ll128/4]" where the table the profile would
 * give with a passing LL128 screen (alt) ranks LL128 first inside
 * [lo, hi]: what the plugin leaves to NCCL until `pcie-tune screen`. */
static void ll128_mark(const struct pt_ivset *alt, uint64_t lo, uint64_t hi, char *buf, size_t len) {
  buf[0] = 0;
  for (size_t i = 0; alt && i < alt->n; i++) {
    const struct pt_interval *iv = &alt->iv[i];
    if (iv->hi < lo || iv->lo > hi || !iv->n || iv->c[0].proto != NCCL_PROTO_LL128) continue;
    char ch[64];
    choice_name(ch, sizeof ch, &iv->c[0]);
    snprintf(buf, len, " [ll128 unscreened: %s]", ch);
    return;
  }
}

static size_t print_row(const struct pt_profile *p, const struct pt_table *t, const struct pt_ivset *set,
                        const struct pt_ivset *alt, const struct pt_series *s, size_t i, int bytes,
                        long nranks) {
  char mark_ll[96];
  char lo[48], hi[48], ch[64], run[16], why[300];
  const struct pt_interval *iv = &set->iv[i];
  size_t j = i;
  double smin = INFINITY, smax = 0;
  while (j < set->n && same_row(iv, &set->iv[j])) {
    double sp = speedup(&set->iv[j]);
    if (sp > 0) {
      smin = fmin(smin, sp);
      smax = fmax(smax, sp);
    }
    j++;
  }
  size_str(lo, sizeof lo, iv->lo, bytes);
  size_str(hi, sizeof hi, set->iv[j - 1].hi, bytes);
  ll128_mark(alt, iv->lo, set->iv[j - 1].hi, mark_ll, sizeof mark_ll);
  if (!iv->n) {
    printf("%14s %14s  %-24s %6s %11s %11s %13s  %s%s\n", lo, hi, "(NCCL decides)", "-", "-", "-",
           "-", why_nccl(iv, s, pt_profile_margin(p), why, sizeof why, bytes), mark_ll);
    return j;
  }
  choice_name(ch, sizeof ch, &iv->c[0]);
  runs_str(run, sizeof run, p, t, &iv->c[0], iv->lo, set->iv[j - 1].hi, nranks);
  printf("%14s %14s  %-24s %6s", lo, hi, ch, run);
  double lat = iv->c[0].lat_us, def = iv->default_us;
  size_t nmeas = iv->c[0].from_rule ? 0 : row_figures(s, iv->lo, set->iv[j - 1].hi, &iv->c[0], &lat, &def,
                                                      &smin, &smax);
  const char *mark = nmeas || iv->c[0].from_rule ? " " : "~";
  if (lat > 0) printf(" %s%7.1f \u00b5s", mark, lat);
  else printf(" %11s", "-");
  if (def > 0) printf(" %s%7.1f \u00b5s", mark, def);
  else printf(" %11s", "-");
  /* A measured choice within the margin of NCCL's default pins the
   * choice NCCL makes there (it could switch inside the range to a
   * slower one it also runs; interpolated, it may even look slower than
   * NCCL's interpolated line, which is no figure NCCL ran): said so, not "1.00x" under a header that
   * promises a gain. Never a speed-up below 1x: a rule that may not beat
   * NCCL is labelled as such. */
  int pins = !iv->c[0].from_rule && iv->kind != PT_IV_NCCL_FAILS && smax > 0 &&
             smax < 1.0 + pt_profile_margin(p);
  char r[40];
  if (pins) snprintf(r, sizeof r, "= NCCL's");
  else if (smax >= 1.0 && smin >= 1.0 && smax - smin < 0.005) snprintf(r, sizeof r, "%s%.2fx", mark, smin);
  else if (smax >= 1.0 && (smin >= 1.0 || !iv->c[0].from_rule))
    snprintf(r, sizeof r, "%s%.2f-%.2fx", mark, smin, smax);
  else snprintf(r, sizeof r, "%s", iv->c[0].from_rule && smin < 1.0 ? "rule" : "-");
  printf(" %13s", r);
  snprintf(why, sizeof why, "%s%s",
           iv->c[0].from_rule                ? "rule"
           : iv->kind == PT_IV_NCCL_FAILS ? "measured; NCCL's own choice fails here"
                                          : "measured",
           pins ? "; pins the choice NCCL makes here" : "");
  if (iv->c[0].pipe_lo || iv->c[0].pipe_hi) {
    size_t w = strlen(why);
    if (iv->c[0].pipe_lo == iv->c[0].pipe_hi)
      snprintf(why + w, sizeof why - w, " when numPipeOps = %d", iv->c[0].pipe_lo);
    else if (iv->c[0].pipe_hi)
      snprintf(why + w, sizeof why - w, " when numPipeOps is %d..%d", iv->c[0].pipe_lo,
               iv->c[0].pipe_hi);
    else
      snprintf(why + w, sizeof why - w, " when numPipeOps >= %d", iv->c[0].pipe_lo);
  }
  printf("  %s", why);
  for (int k = 1; k < iv->n; k++) {
    choice_name(ch, sizeof ch, &iv->c[k]);
    printf("%s%s", k == 1 ? "; then " : ", ", ch);
  }
  printf("%s\n", mark_ll);
  return j;
}

static void print_text(const struct pt_profile *p, const struct pt_table *t, const struct pt_ivset *set,
                       const struct pt_ivset *alt, int coll, int mode, int bytes, long nranks, long nnodes) {
  char why[300];
  const struct pt_series *s = pt_profile_series(p, coll, mode);
  int ll128 = pt_profile_ll128_usable(p);
  const char *unscreened = p->ll128_screen == PT_LL128_UNUSABLE ? "LL128 failed its correctness screen on this box"
                                                                 : "no passing LL128 correctness screen recorded";
  print_heading(p, t, set, coll, mode, nranks, nnodes);
  for (size_t i = 0; i < set->n;) i = print_row(p, t, set, alt, s, i, bytes, nranks);
  for (size_t k = 0; s && k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    char name[64];
    const char *no = excluded(t, s, coll, c, why, sizeof why, bytes);
    if (!no && !ll128 && c->proto == NCCL_PROTO_LL128) no = unscreened;
    if (!no) continue;
    cand_name(name, sizeof name, c);
    printf("excluded: %s: %s\n", name, no);
  }
  for (size_t i = 0; !ll128 && i < p->nrules; i++)
    if (p->rules[i].coll == coll && p->rules[i].proto == NCCL_PROTO_LL128)
      printf("excluded: the rule at line %d (%s/ll128): %s\n", p->rules[i].line, pt_algo_name(p->rules[i].algo),
             unscreened);
}

static const char *kind_name(const struct pt_interval *iv) {
  if (iv->n) return iv->c[0].from_rule ? "rule" : iv->kind == PT_IV_NCCL_FAILS ? "measured_nccl_fails" : "measured";
  return iv->kind == PT_IV_OUTSIDE ? "nccl_outside_range"
         : iv->kind == PT_IV_NO_GAIN ? "nccl_no_gain"
         : iv->kind == PT_IV_MODES_DIFFER ? "nccl_modes_differ"
         : iv->kind == PT_IV_NO_DEFAULT ? "nccl_no_default"
                                     : "nccl_no_data";
}

static void print_json(const struct pt_profile *p, const struct pt_table *t,
                       const struct pt_ivset *set, int coll, int mode) {
  const struct pt_series *s = pt_profile_series(p, coll, mode);
  char why[300];
  printf("{\"profile\": ");
  cli_json_str(p->name);
  printf(", \"path\": ");
  cli_json_str(p->path);
  printf(", \"collective\": \"%s\", \"mode\": \"%s\", \"served_from\": \"%s\"", pt_coll_name(coll),
         pt_mode_name(mode), pt_mode_name(p->series[coll][mode] || !p->series[coll][!mode] ? mode : !mode));
  printf(", \"comm_channels\": %d, \"channel_clamp\": %d, \"margin\": %.4f",
         t->comm_channels, t->chan_cap, pt_profile_margin(p));
  printf(", \"table_intervals\": %zu, \"profile_intervals\": %zu, \"intervals\": [", set->n,
         t->ninterval);
  for (size_t i = 0; i < set->n; i++) {
    const struct pt_interval *iv = &set->iv[i];
    printf("%s\n  {\"lo\": %llu, \"hi\": %llu, \"decision\": \"%s\", ", i ? "," : "",
           (unsigned long long)iv->lo, (unsigned long long)iv->hi, kind_name(iv));
    if (iv->default_us > 0) printf("\"default_us\": %.3f, ", iv->default_us);
    else printf("\"default_us\": null, ");
    printf("\"ranked\": [");
    for (int k = 0; k < iv->n; k++) {
      const struct pt_choice *c = &iv->c[k];
      printf("%s{\"algo\": \"%s\", \"proto\": \"%s\", \"channels\": %d, \"nccl_channels\": ",
             k ? ", " : "", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels);
      if (c->set_channels) printf("%d", c->set_channels);
      else printf("null");
      printf(", \"rule\": %s", c->from_rule ? "true" : "false");
      if (c->chunk) printf(", \"chunk\": %u", c->chunk);
      if (c->pipe_lo || c->pipe_hi) printf(", \"min_pipe_ops\": %d, \"max_pipe_ops\": %d", c->pipe_lo, c->pipe_hi);
      if (c->lat_us > 0) printf(", \"lat_us\": %.3f", c->lat_us);
      printf("}");
    }
    printf("]");
    double sp = speedup(iv);
    if (sp >= 1.0) printf(", \"speedup\": %.4f", sp);
    printf("}");
  }
  printf("\n], \"excluded\": [");
  int first = 1;
  for (size_t k = 0; s && k < s->ncand; k++) {
    const struct pt_candidate *c = &s->cand[k];
    if (!excluded(t, s, coll, c, why, sizeof why, 1)) continue;
    printf("%s\n  {\"algo\": \"%s\", \"proto\": \"%s\", \"channels\": %d, \"reason\": ",
           first ? "" : ",", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels);
    cli_json_str(why);
    printf("}");
    first = 0;
  }
  printf("\n]}\n");
}

static int svg_check(const char *svg, int force, const char *profile) {
  struct pt_error_rec e;
  char buf[1200];
  if (!pt_output_check(svg, force ? PT_OUT_FORCE : 0, &profile, 1, &e)) return 0;
  pt_error_format(&e, buf, sizeof buf);
  fprintf(stderr, "pcie-tune show: %s\n", buf);
  return -1;
}

/* The table p would give with a passing LL128 screen, to mark the rows
 * LL128 would take (ll128_mark), for a communicator of nranks x nnodes.
 * Returns 1 with *alt built (the caller releases it), 0 when p has no
 * unscreened LL128 choice (or out of memory: no marks). */
static int screened_table(const struct pt_profile *p, size_t nranks, size_t nnodes, struct pt_table *alt) {
  struct pt_profile screened = *p; /* read only: shares p's memory */
  screened.ll128_screen = PT_LL128_SCREENED;
  if (p->ll128_screen != PT_LL128_UNSCREENED || !pt_profile_ll128_choices(p)) return 0;
  return !pt_table_build_for(alt, &screened, nranks, nnodes);
}

int cmd_show(int argc, char **argv) {
  struct show_opts o;
  struct cli_state st;
  memset(&o, 0, sizeof o);
  int rc = cli_parse(&show_cli, argc, argv, &o, &st, 1);
  if (rc) return rc == CLI_HELP ? 0 : rc;
  const char *path = o.path, *svg = o.svg;
  int coll = o.coll, mode = o.mode, json = o.json, force = o.force, quiet = o.quiet, status = 1, bytes = o.bytes;
  long nranks = (long)o.nranks, nnodes = (long)o.nnodes;
  if (!path) return cli_bad(&show_cli, "missing PROFILE");
  if (force && !svg) return cli_bad(&show_cli, "--force only applies to --svg FILE");
  /* Refuse before printing anything: an existing chart without --force, a
   * FIFO or device, the profile itself (include/pcie/files.h). The write
   * itself also refuses (link), should the file appear meanwhile. */
  if (svg && svg_check(svg, force, path)) return 1;

  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  struct pt_table alt;
  char buf[3000];
  int built = 0, alt_built = 0;
  memset(&p, 0, sizeof p);
  if (pt_profile_load(&p, path, &e)) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune show: %s\n", buf);
    return 1;
  }
  /* The plugin refuses a partial sweep: what follows is not what a job gets. */
  if (pt_profile_partial(&p, buf, sizeof buf))
    fprintf(stderr, "pcie-tune show: %s: %s; the plugin refuses it and leaves every decision to NCCL until then\n",
            path, buf);
  if (nranks && p.match_nranks && p.match_nranks != nranks) {
    fprintf(stderr, "pcie-tune show: %s: profile applies to %d ranks, not %ld\n", path, p.match_nranks, nranks);
    goto out;
  }
  if (nnodes && p.match_nnodes && p.match_nnodes != nnodes) {
    fprintf(stderr, "pcie-tune show: %s: profile applies to %d nodes, not %ld\n", path, p.match_nnodes, nnodes);
    goto out;
  }
  /* Rules for other communicators are left out, as the plugin does. */
  size_t nr = (size_t)(nranks ? nranks : p.match_nranks), nn = (size_t)(nnodes ? nnodes : p.match_nnodes);
  if (pt_table_build_for(&t, &p, nr, nn)) {
    fprintf(stderr, "pcie-tune show: out of memory\n");
    goto out;
  }
  built = 1;
  alt_built = screened_table(&p, nr, nn, &alt);
  const struct pt_ivset *set = t.set[coll];
  if (!set) {
    fprintf(stderr, "pcie-tune show: %s: no %s data in this profile\n", path, pt_coll_name(coll));
    goto out;
  }
  /* The series drawn is the one the table serves this mode from. */
  const struct pt_series *s = p.series[coll][mode] ? p.series[coll][mode] : p.series[coll][!mode];
  /* --quiet prints nothing but the chart; with --svg -, standard output
   * carries the chart alone. */
  if (!quiet && (!svg || strcmp(svg, "-"))) {
    if (json) print_json(&p, &t, set, coll, mode);
    else {
      print_text(&p, &t, set, alt_built ? alt.set[coll] : NULL, coll, mode, bytes,
                 nranks ? nranks : p.match_nranks, nnodes ? nnodes : p.match_nnodes);
      cli_host_verdict(&p, (size_t)nnodes, buf, sizeof buf);
      printf("%s\n", buf);
    }
  }
  if (svg) {
    char title[300];
    /* The mode whose data is drawn: an eager-only import serves graph
     * calls from its eager series, and the title says so. */
    int drawn = p.series[coll][mode] || !p.series[coll][!mode] ? mode : !mode;
    if (drawn == mode)
      snprintf(title, sizeof title, "%s: %s, %s mode", p.name, pt_coll_name(coll), pt_mode_name(mode));
    else
      snprintf(title, sizeof title, "%s: %s, %s mode (its data also serves %s calls)", p.name,
               pt_coll_name(coll), pt_mode_name(drawn), pt_mode_name(mode));
    struct pt_error_rec we;
    if (pt_svg_write(svg, title, s, set, force, &we)) {
      pt_error_format(&we, buf, sizeof buf);
      fprintf(stderr, "pcie-tune show: %s\n", buf);
      goto out;
    }
    if (!json && !quiet && strcmp(svg, "-")) printf("chart written to %s\n", svg);
  }
  status = 0;
out:
  if (built) pt_table_release(&t);
  if (alt_built) pt_table_release(&alt);
  pt_profile_release(&p);
  return status;
}
