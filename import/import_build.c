/*
 * Profile from nccl-tests logs (see import_build.h). Rows are first
 * gathered into slots (one per launch mode and setting, one row pointer per
 * size), which is where a size measured twice with different values is
 * caught with both locations; the profile is only emitted once every log
 * was accepted, so a bad log never yields a partial profile.
 */
#include "import_build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_coll.h"

struct slot {
  int mode, is_default;
  struct imp_setting set;
  const struct nt_row **row; /* per size of the mode; NULL: not measured */
  const char **from;         /* the log each row came from */
};

struct build {
  const struct imp_input *in;
  size_t n;
  const struct imp_options *o;
  struct pt_error_rec *err;
  int coll, nranks;
  size_t first;             /* the log coll and nranks came from */
  uint64_t *sizes[PT_NMODES];
  size_t nsizes[PT_NMODES];
  struct slot *slots;
  size_t nslots;
  struct imp_setting *set; /* per log */
  int *is_default;         /* per log */
  int *dropped;            /* per log: its channel count when left out, else 0 */
  size_t ndropped;
  int *forced;             /* per log: the count an all-gather/CollNet setting
                              forced (left out: the plugin never ranks it), else 0 */
  size_t nforced;
  int comm_channels;       /* of NCCL's default run; 0 = unknown */
};

__attribute__((format(printf, 4, 5))) static int fail(struct build *b, const char *file, int line,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(b->err, PT_EINVAL, file, line, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static int oom(struct build *b) {
  pt_error_set(b->err, 0, "pcie-tune import", 0, "out of memory");
  return PT_ENOMEM;
}

static int left_out(const struct build *b, size_t i) { return b->dropped[i] || b->forced[i]; }

static int mode_of(const struct nt_run *r) { return r->graph > 0 ? PT_MODE_GRAPH : PT_MODE_EAGER; }

/* Every run of every log: one collective, one rank count. */
static int check_runs(struct build *b) {
  b->coll = -1;
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    for (size_t k = 0; k < log->nruns; k++) {
      const struct nt_run *r = &log->runs[k];
      int coll = imp_run_coll(log, r, b->err);
      if (coll < 0) return coll;
      if (b->coll < 0) {
        b->coll = coll;
        b->nranks = r->nranks;
        b->first = i;
        continue;
      }
      const char *first = b->in[b->first].log.name;
      if (coll != b->coll)
        return fail(b, log->name, r->line, "%s run mixed with %s runs (first in %s) in one profile; "
                    "the plugin uses one profile per communicator: import one collective's logs "
                    "(a tensor-parallel engine's are all-reduces)",
                    pt_coll_name(coll), pt_coll_name(b->coll), first);
      if (r->nranks != b->nranks)
        return fail(b, log->name, r->line, "run on %d ranks mixed with %d-rank runs (first in %s); "
                    "import each rank count into its own profile, in one directory that "
                    "PCIE_TUNER_PROFILE names: the plugin picks the one that fits",
                    r->nranks, b->nranks, first);
    }
  }
  return 0;
}

/* Whether run r has a rank on the GPU at bus (either id may be partial,
 * as nccl-tests versions print them). */
static int in_run(const struct nt_run *r, const char *bus) {
  for (size_t k = 0; k < r->ndev; k++) {
    const char *x = r->dev[k].bus;
    if (x[0] && (pt_fp_bus_id_matches(x, bus) || pt_fp_bus_id_matches(bus, x))) return 1;
  }
  return 0;
}

static int has_bus_ids(const struct nt_run *r) {
  for (size_t k = 0; k < r->ndev; k++)
    if (r->dev[k].bus[0]) return 1;
  return 0;
}

/* Every run on the GPUs of the first run whose device lines give bus ids
 * (a run without them is not compared): logs collected from several boxes,
 * or from other GPUs of one box, measure another PCIe path each and make
 * no one profile. */
static int same_gpus(struct build *b) {
  const struct nt_log *first = NULL;
  const struct nt_run *ref = NULL;
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    for (size_t r = 0; r < log->nruns; r++) {
      if (!ref && has_bus_ids(&log->runs[r])) first = log, ref = &log->runs[r];
      for (size_t k = 0; ref && k < log->runs[r].ndev; k++) {
        const struct nt_device *d = &log->runs[r].dev[k];
        if (!d->bus[0] || in_run(ref, d->bus)) continue;
        return fail(b, log->name, d->line,
                    "rank %d ran on GPU %s (host %s), which the runs of %s did not use: logs of one "
                    "set of GPUs make one profile; import each box's (or each GPU set's) logs "
                    "into a profile of its own",
                    d->rank, d->bus, d->host, first->name);
      }
    }
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sorted distinct sizes (> 0) measured in each mode. A 0-byte row is
 * dropped: NCCL's tuner is never asked about an empty collective. */
static int collect_sizes(struct build *b) {
  for (int m = 0; m < PT_NMODES; m++) {
    size_t total = 0, n = 0;
    for (size_t i = 0; i < b->n; i++)
      for (size_t k = 0; k < b->in[i].log.nruns && !left_out(b, i); k++)
        if (mode_of(&b->in[i].log.runs[k]) == m) total += b->in[i].log.runs[k].nrows;
    if (!total) continue;
    uint64_t *s = malloc(total * sizeof *s);
    if (!s) return oom(b);
    for (size_t i = 0; i < b->n; i++)
      for (size_t k = 0; k < b->in[i].log.nruns && !left_out(b, i); k++) {
        const struct nt_run *r = &b->in[i].log.runs[k];
        if (mode_of(r) != m) continue;
        for (size_t j = 0; j < r->nrows; j++)
          if (r->rows[j].size) s[n++] = r->rows[j].size;
      }
    qsort(s, n, sizeof *s, cmp_u64);
    size_t u = 0;
    for (size_t j = 0; j < n; j++)
      if (!u || s[u - 1] != s[j]) s[u++] = s[j];
    b->sizes[m] = s;
    b->nsizes[m] = u;
  }
  return 0;
}

static int same_setting(const struct slot *s, int mode, int is_default, const struct imp_setting *set) {
  if (s->mode != mode || s->is_default != is_default) return 0;
  return is_default || (s->set.algo == set->algo && s->set.proto == set->proto &&
                        s->set.channels == set->channels);
}

static struct slot *find_slot(struct build *b, int mode, size_t log) {
  for (size_t i = 0; i < b->nslots; i++)
    if (same_setting(&b->slots[i], mode, b->is_default[log], &b->set[log])) return &b->slots[i];
  struct slot *p = realloc(b->slots, (b->nslots + 1) * sizeof *p);
  if (!p) return NULL;
  b->slots = p;
  struct slot *s = &p[b->nslots];
  *s = (struct slot){.mode = mode, .is_default = b->is_default[log], .set = b->set[log]};
  s->row = calloc(b->nsizes[mode], sizeof *s->row);
  s->from = calloc(b->nsizes[mode], sizeof *s->from);
  b->nslots++; /* counted even when calloc failed, so release frees it */
  return s->row && s->from ? s : NULL;
}

static int same_cell(const struct nt_cell *a, const struct nt_cell *b) {
  return a->time_us == b->time_us && a->algbw == b->algbw && a->busbw == b->busbw &&
         a->wrong == b->wrong && a->flags == b->flags;
}

static int same_row(const struct nt_row *a, const struct nt_row *b) {
  return a->count == b->count && !strcmp(a->type, b->type) && !strcmp(a->redop, b->redop) &&
         a->root == b->root && same_cell(&a->oop, &b->oop) && same_cell(&a->ip, &b->ip);
}

static size_t size_index(const struct build *b, int mode, uint64_t size) {
  const uint64_t *p = bsearch(&size, b->sizes[mode], b->nsizes[mode], sizeof size, cmp_u64);
  return (size_t)(p - b->sizes[mode]); /* every size was collected */
}

/* Puts every row of every log into its slot. */
static int fill_slots(struct build *b) {
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    if (left_out(b, i)) continue;
    for (size_t k = 0; k < log->nruns; k++) {
      const struct nt_run *r = &log->runs[k];
      int m = mode_of(r);
      struct slot *s = find_slot(b, m, i);
      if (!s) return oom(b);
      for (size_t j = 0; j < r->nrows; j++) {
        const struct nt_row *row = &r->rows[j];
        if (!row->size) continue;
        size_t x = size_index(b, m, row->size);
        if (s->row[x] && !same_row(s->row[x], row))
          return fail(b, log->name, row->line,
                      "size %llu measured twice with different values (first at %s:%d): give one "
                      "log per setting (the run to keep)",
                      (unsigned long long)row->size, s->from[x], s->row[x]->line);
        s->row[x] = row;
        s->from[x] = log->name;
      }
    }
  }
  return 0;
}

/* A wrong result in either column marks the point: the combination
 * produced garbage, whichever buffer layout showed it. */
static struct pt_point point_of(const struct nt_row *row, int in_place) {
  const struct nt_cell *c = in_place ? &row->ip : &row->oop;
  if (row->oop.wrong > 0 || row->ip.wrong > 0) return (struct pt_point){.state = PT_PT_WRONG};
  if (c->flags & NT_TIME_NA) return (struct pt_point){.state = PT_PT_MISSING};
  return (struct pt_point){.lat_us = c->time_us, .state = PT_PT_OK};
}

static int emit_series(struct build *b, struct pt_profile *p, int m) {
  int ncand = 0;
  for (size_t i = 0; i < b->nslots; i++) ncand += b->slots[i].mode == m && !b->slots[i].is_default;
  if (!ncand && b->nforced && !b->ndropped)
    return fail(b, b->in[b->first].log.name, 0,
                "no setting left in %s mode: every %s setting forced a channel count, which NCCL does "
                "not clamp there and the plugin never writes (measure with NCCL_ALGO and NCCL_PROTO "
                "only, leaving NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS unset)",
                pt_mode_name(m), pt_coll_name(b->coll));
  if (!ncand && b->ndropped)
    return fail(b, b->in[b->first].log.name, 0,
                "no setting left in %s mode: every one was measured with more channels than the %d "
                "of NCCL's default run, which a default job never runs (measure settings with at most "
                "%d channels)",
                pt_mode_name(m), b->comm_channels, b->comm_channels);
  if (!ncand)
    return fail(b, b->in[b->first].log.name, 0,
                "no setting measured in %s mode besides NCCL's default (give logs with --setting or "
                "NCCL_ALGO/NCCL_PROTO/NCCL_MAX_NCHANNELS)",
                pt_mode_name(m));
  int has_default = 0;
  for (size_t i = 0; i < b->nslots; i++) has_default |= b->slots[i].mode == m && b->slots[i].is_default;
  /* A candidate is chosen only where NCCL's default was measured too
   * (tuner/table.c): without one the profile decides nothing, and the most
   * likely cause is a forgotten log, so it is refused unless kept as data. */
  if (!has_default && !b->o->without_default)
    return fail(b, b->in[b->first].log.name, 0,
                "no log of NCCL's default run in %s mode: a candidate is chosen only where NCCL's "
                "own choice was measured too, so this profile would decide nothing. Add the same "
                "nccl-tests command run without NCCL_ALGO, NCCL_PROTO, NCCL_*_NCHANNELS or "
                "--setting (with NCCL_DEBUG=INFO%s), or give --without-default to keep these "
                "logs as data (the plugin then leaves their sizes to NCCL)",
                pt_mode_name(m), m == PT_MODE_GRAPH ? " and the same -G N" : "");
  struct pt_series *s = pt_series_new(b->sizes[m], b->nsizes[m]);
  if (!s) return oom(b);
  p->series[b->coll][m] = s;
  for (size_t i = 0; i < b->nslots; i++) {
    const struct slot *sl = &b->slots[i];
    if (sl->mode != m) continue;
    struct pt_point *pts;
    if (sl->is_default) {
      pts = pt_series_default(s);
    } else {
      struct pt_candidate *c =
          pt_series_add_candidate(s, sl->set.algo, sl->set.proto, sl->set.channels, 0);
      pts = c ? c->points : NULL;
    }
    if (!pts) return oom(b);
    for (size_t x = 0; x < b->nsizes[m]; x++)
      if (sl->row[x]) pts[x] = point_of(sl->row[x], b->o->in_place);
  }
  return 0;
}

/* "2.28.9" from "2.28.9+cuda12.9", or from the nccl-library code. */
static void version_of(const struct nt_log *log, char *buf, size_t len) {
  buf[0] = '\0';
  if (log->nccl_version[0]) {
    snprintf(buf, len, "%.*s", (int)strcspn(log->nccl_version, "+"), log->nccl_version);
    return;
  }
  for (size_t k = 0; k < log->nruns && !buf[0]; k++) {
    long c = log->runs[k].nccl_library;
    /* NCCL_VERSION(X,Y,Z) is X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before. */
    if (c >= 20900) snprintf(buf, len, "%ld.%ld.%ld", c / 10000, c / 100 % 100, c % 100);
    else if (c > 0) snprintf(buf, len, "%ld.%ld.%ld", c / 1000, c / 100 % 10, c % 100);
  }
}

int imp_log_shape(const struct nt_log *log, struct imp_shape *s, struct pt_error_rec *err) {
  memset(s, 0, sizeof *s);
  s->coll = log->nruns ? imp_run_coll(log, &log->runs[0], err) : -1;
  if (s->coll < 0) return -1;
  s->nranks = log->runs[0].nranks;
  version_of(log, s->version, sizeof s->version);
  return 0;
}

/* A GPU of the box, added once; NULL when the box is full. */
static struct pt_fp_gpu *box_gpu(struct pt_box_fp *fp, const char *bus) {
  for (int j = 0; j < fp->ngpus; j++)
    if (!strcmp(fp->gpu[j].bus_id, bus)) return &fp->gpu[j];
  if (fp->ngpus == PT_FP_MAX_GPUS) return NULL;
  struct pt_fp_gpu *g = &fp->gpu[fp->ngpus++];
  snprintf(g->bus_id, PT_FP_ID_LEN, "%s", bus);
  g->numa = PT_FP_NUMA_UNKNOWN;
  return g;
}

/* provenance.box from what the logs give (docs/cli-import.md, "The box"):
 * each rank's device line ("#  Rank 0 ... on HOST device 0 [0000:01:00]
 * NVIDIA GeForce RTX 5090"): its bus id as nccl-tests printed it, the GPU
 * name and the host name; NCCL's Init lines ("busId 1000") give full ids,
 * which replace the partial ones they match. Only the communicator's GPUs
 * (host_gpus false); no model, link or tree: the logs do not say. Returns
 * -1 when out of memory. */
static int emit_box(struct build *b, struct pt_profile *p) {
  struct pt_box_fp fp;
  memset(&fp, 0, sizeof fp);
  for (size_t i = 0; i < b->n; i++)
    for (size_t r = 0; r < b->in[i].log.nruns; r++)
      for (size_t k = 0; k < b->in[i].log.runs[r].ndev; k++) {
        const struct nt_device *d = &b->in[i].log.runs[r].dev[k];
        struct pt_fp_gpu *g = d->bus[0] ? box_gpu(&fp, d->bus) : NULL;
        if (!g) continue;
        if (!g->name[0]) snprintf(g->name, sizeof g->name, "%s", d->gpu);
        if (!g->host[0]) snprintf(g->host, sizeof g->host, "%s", d->host);
      }
  for (size_t i = 0; i < b->n; i++)
    for (int k = 0; k < b->in[i].log.nbus; k++) {
      const char *full = b->in[i].log.bus[k];
      int j = 0;
      while (j < fp.ngpus && !pt_fp_bus_id_matches(fp.gpu[j].bus_id, full)) j++;
      if (j < fp.ngpus) snprintf(fp.gpu[j].bus_id, PT_FP_ID_LEN, "%s", full);
      else box_gpu(&fp, full);
    }
  if (!fp.ngpus) return 0;
  pt_fp_sort(&fp);
  /* Two partial ids upgraded to one full id: keep one. */
  int w = 0;
  for (int j = 0; j < fp.ngpus; j++)
    if (!w || strcmp(fp.gpu[w - 1].bus_id, fp.gpu[j].bus_id)) fp.gpu[w++] = fp.gpu[j];
  fp.ngpus = w;
  if (!(p->prov.box = malloc(sizeof *p->prov.box))) return -1;
  *p->prov.box = fp;
  return 0;
}

static int emit_provenance(struct build *b, struct pt_profile *p) {
  char ver[64] = "", v[64], set[96];
  const char *ver_from = NULL;
  for (size_t i = 0; i < b->n; i++) {
    version_of(&b->in[i].log, v, sizeof v);
    if (!v[0]) continue;
    if (!ver_from) {
      snprintf(ver, sizeof ver, "%s", v);
      ver_from = b->in[i].log.name;
    } else if (strcmp(v, ver)) {
      return fail(b, b->in[i].log.name, b->in[i].log.nccl_version_line,
                  "NCCL %s mixed with NCCL %s (%s) in one profile; import the logs of the NCCL "
                  "the job loads (pcie-tune check names it): another minor version is refused",
                  v, ver, ver_from);
    }
  }
  int modes = (p->series[b->coll][PT_MODE_EAGER] ? 1 : 0) | (p->series[b->coll][PT_MODE_GRAPH] ? 2 : 0);
  /* The note lists each log with the setting it became. */
  size_t cap = 128, len = 0;
  for (size_t i = 0; i < b->n; i++) cap += strlen(b->in[i].log.name) + 96;
  char *note = malloc(cap);
  if (!note) return oom(b);
  len += (size_t)snprintf(note, cap, "%s times of %zu nccl-tests log%s:",
                          b->o->in_place ? "in-place" : "out-of-place", b->n, b->n > 1 ? "s" : "");
  for (size_t i = 0; i < b->n; i++) {
    if (b->is_default[i]) snprintf(set, sizeof set, "nccl default");
    else {
      struct imp_setting as_run = b->set[i];
      if (b->forced[i]) as_run.channels = b->forced[i];
      imp_setting_format(&as_run, set, sizeof set);
    }
    if (b->forced[i])
      snprintf(set + strlen(set), sizeof set - strlen(set), ", left out: a forced count");
    else if (b->dropped[i])
      snprintf(set + strlen(set), sizeof set - strlen(set), ", left out: %d > %d channels",
               b->dropped[i], b->comm_channels);
    len += (size_t)snprintf(note + len, cap - len, " %s (%s)%s", b->in[i].log.name, set,
                            i + 1 < b->n ? ";" : "");
  }
  p->prov.note = note;
  if (emit_box(b, p)) return oom(b);
  if (b->o->box) {
    /* --box-here: this host's box, after checking that the logs' GPUs are
     * on it (an import on another machine would record the wrong box). */
    char diff[800];
    if (p->prov.box && (pt_fp_compare(p->prov.box, b->o->box, diff, sizeof diff) & PT_FP_DIFF_BOX))
      return fail(b, b->in[b->first].log.name, 0,
                  "--box-here: the logs did not run on this host's GPUs (%s); import them on the "
                  "box that ran nccl-tests, or leave --box-here out to record the box the logs give",
                  diff);
    if (!p->prov.box && !(p->prov.box = malloc(sizeof *p->prov.box))) return oom(b);
    *p->prov.box = *b->o->box;
  }
  p->prov.tool = pt_strdup("pcie-tune import");
  p->prov.backend = pt_strdup("nccl-tests");
  p->prov.nccl_version = pt_strdup(ver[0] ? ver : "unknown");
  p->prov.date = pt_strdup(b->o->date);
  p->prov.mode = pt_strdup(modes == 3 ? "both" : modes == 2 ? "graph" : "eager");
  p->name = pt_strdup(b->o->name);
  if (!p->prov.tool || !p->prov.backend || !p->prov.nccl_version || !p->prov.date || !p->prov.mode ||
      !p->name)
    return oom(b);
  return 0;
}

/* communicator.channels and nccl_env from the logs of NCCL's default run.
 * NCCL agrees on one nChannels across the ranks of a communicator
 * (src/init.cc, initTransportsRank), so default logs of one box that
 * disagree were run differently and are refused. nccl_env is recorded only
 * when a default log has "set by environment" lines: without them the log
 * may simply lack the ENV subsystem (NCCL_DEBUG_SUBSYS), and "none set"
 * would be a guess. */
static int default_communicator(struct build *b, struct pt_profile *p) {
  const struct nt_log *from = NULL;
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    if (!b->is_default[i] || !log->comm_channels) continue;
    if (from && log->comm_channels != from->comm_channels)
      return fail(b, log->name, log->comm_channels_line,
                  "NCCL's default run has %d channels here but %d in %s:%d; give default logs of "
                  "one configuration",
                  log->comm_channels, from->comm_channels, from->name, from->comm_channels_line);
    if (!from) from = log;
  }
  b->comm_channels = p->comm_channels = from ? from->comm_channels : 0;
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    if (!b->is_default[i] || !log->nvars) continue;
    for (size_t k = 0; k < log->nvars; k++) {
      const struct nt_nccl_var *v = &log->vars[k];
      const char *had = pt_profile_env(p, v->name);
      if (had && strcmp(had, v->value))
        return fail(b, log->name, v->line,
                    "%s set to '%s' in this default run but to '%s' in another; give default logs "
                    "of one configuration",
                    v->name, v->value, had);
      if (had) continue;
      struct pt_env_var *e = realloc(p->env, (p->nenv + 1) * sizeof *e);
      if (!e) return oom(b);
      p->env = e;
      e[p->nenv] = (struct pt_env_var){pt_strdup(v->name), pt_strdup(v->value)};
      p->nenv++;
      if (!e[p->nenv - 1].name || !e[p->nenv - 1].value) return oom(b);
    }
    p->env_recorded = 1;
  }
  return 0;
}

static int is_setting_var(const char *name) {
  for (int v = 0; nt_env_name(v); v++)
    if (!strcmp(name, nt_env_name(v))) return 1;
  return 0;
}

/* A forced run measured under other NCCL settings than NCCL's default run
 * (NCCL_P2P_LEVEL=SYS against PHB: another transport) compares a candidate
 * with a default it never ran beside, and the profile would choose by the
 * difference of the settings. Only a variable both logs show ("set by
 * environment" lines) counts: NCCL logs a parameter when it reads it, and
 * it reads some only on the paths a setting takes. The setting's own
 * variables (NCCL_ALGO, NCCL_PROTO, the channel counts) may differ. */
static int same_settings(struct build *b, const struct pt_profile *p) {
  for (size_t i = 0; i < b->n; i++) {
    const struct nt_log *log = &b->in[i].log;
    for (size_t k = 0; !b->is_default[i] && k < log->nvars; k++) {
      const struct nt_nccl_var *v = &log->vars[k];
      const char *had = pt_profile_env(p, v->name);
      if (!had || !strcmp(had, v->value) || is_setting_var(v->name)) continue;
      return fail(b, log->name, v->line,
                  "%s set to '%s' in this run but to '%s' in NCCL's default run: a candidate is "
                  "compared with NCCL's default only under the same settings; rerun one of them so",
                  v->name, v->value, had);
    }
  }
  return 0;
}

/* The channels a setting's log ran with at least: the setting's count,
 * NCCL_MIN_NCHANNELS (a floor NCCL raises nChannels to), the log's own
 * "coll channels" line. */
static int channels_run(const struct build *b, size_t i) {
  const struct nt_log *log = &b->in[i].log;
  int ch = b->set[i].channels;
  const struct nt_env *min = &log->env[NT_ENV_MIN_NCHANNELS];
  if (min->line && atoi(min->value) > ch) ch = atoi(min->value);
  if (log->comm_channels > ch) ch = log->comm_channels;
  return ch;
}

/* Leaves out each setting measured with more channels than the default
 * run's communicator has; refuses when no setting is left. */
static int drop_above(struct build *b) {
  size_t nset = 0, last = 0;
  if (!b->comm_channels) return 0;
  for (size_t i = 0; i < b->n; i++) {
    if (b->is_default[i] || b->forced[i]) continue;
    nset++;
    int ch = channels_run(b, i);
    if (ch > b->comm_channels) {
      b->dropped[i] = ch;
      b->ndropped++;
      last = i;
    }
  }
  if (nset && b->ndropped == nset)
    return fail(b, b->in[last].log.name, 0,
                "every setting was measured with more channels than the %d of NCCL's default run, "
                "which a default job never runs; nothing left to import (measure settings with at "
                "most %d channels)",
                b->comm_channels, b->comm_channels);
  return 0;
}

static int build(struct build *b, struct pt_profile *p) {
  int rc;
  b->set = calloc(b->n, sizeof *b->set);
  b->is_default = calloc(b->n, sizeof *b->is_default);
  b->dropped = calloc(b->n, sizeof *b->dropped);
  b->forced = calloc(b->n, sizeof *b->forced);
  if (!b->set || !b->is_default || !b->dropped || !b->forced) return oom(b);
  /* The collective first: it decides whether a setting's count is NCCL's. */
  if ((rc = check_runs(b)) || (rc = same_gpus(b))) return rc;
  for (size_t i = 0; i < b->n; i++) {
    if ((rc = imp_setting_resolve(&b->in[i].log, &b->in[i].cli, b->coll, &b->set[i], &b->is_default[i],
                                  &b->forced[i], b->err)))
      return rc;
    b->nforced += b->forced[i] != 0;
  }
  if ((rc = default_communicator(b, p)) || (rc = same_settings(b, p)) || (rc = drop_above(b))) return rc;
  if (b->o->dropped) memcpy(b->o->dropped, b->dropped, b->n * sizeof *b->dropped);
  if (b->o->forced) memcpy(b->o->forced, b->forced, b->n * sizeof *b->forced);
  if ((rc = collect_sizes(b)) || (rc = fill_slots(b))) return rc;
  p->version = PT_PROFILE_VERSION;
  p->match_nranks = b->nranks;
  for (int m = 0; m < PT_NMODES; m++)
    if (b->nsizes[m] && (rc = emit_series(b, p, m))) return rc;
  if ((rc = emit_provenance(b, p))) return rc;
  return pt_profile_validate(p, b->err);
}

int imp_build(struct pt_profile *p, const struct imp_input *in, size_t n,
              const struct imp_options *o, struct pt_error_rec *err) {
  struct build b = {.in = in, .n = n, .o = o, .err = err};
  int rc;
  memset(err, 0, sizeof *err);
  if (!n) rc = fail(&b, "pcie-tune import", 0, "no logs");
  else rc = build(&b, p);
  for (size_t i = 0; i < b.nslots; i++) {
    free(b.slots[i].row);
    free(b.slots[i].from);
  }
  free(b.slots);
  for (int m = 0; m < PT_NMODES; m++) free(b.sizes[m]);
  free(b.set);
  free(b.is_default);
  free(b.dropped);
  free(b.forced);
  if (rc) pt_profile_release(p);
  return rc;
}
