/*
 * doctor --workload-out: what each communicator ran, from NCCL's COLL lines
 * (src/enqueue.cc, ncclEnqueueCheck: "%s: opCount %lx ... count %zu datatype
 * %d ... comm %p [nranks=%d] stream %p"), in the workload format (STEP
 * COLLECTIVE BYTES COUNT, measure/workload.h), so that `profile --workload`
 * measures and `simulate --workload` rehearses exactly the job's sizes.
 *
 * - One rank per communicator: every rank enqueues the same collectives;
 *   the lowest rank in the log speaks for it (its process and comm pointer).
 * - BYTES is NCCL's nBytes, what the tuner is asked about: count x the
 *   datatype's size (src/enqueue.cc: elementSize x
 *   ncclFuncMaxSendRecvCount), times nRanks for AllGather and ReduceScatter.
 * - Steps: under CUDA-graph capture NCCL logs each collective once, at
 *   capture; vLLM and SGLang capture one graph per batch size, each graph a
 *   whole forward pass whose all-reduces share one size (tokens x hidden x
 *   dtype). A new step begins where the all-reduce size changes. Eager
 *   steps that repeat one size run into one step: doctor cannot tell two
 *   forward passes of the same batch apart (NCCL prints no step marker).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "pcie/files.h"
#include "pcie/profile.h"
#include "pcie/table.h"

/* ncclDataType_t sizes, ncclInt8 = 0 .. ncclFloat8e5m2 = 11 (nccl.h). */
static const unsigned type_size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static unsigned long long nbytes(const struct dr_coll *c) {
  if (c->dtype < 0 || c->dtype >= (int)(sizeof type_size / sizeof *type_size)) return 0;
  unsigned long long b = c->count * type_size[c->dtype];
  if (!strcmp(c->op, "AllGather") || !strcmp(c->op, "ReduceScatter")) b *= (unsigned)c->nranks;
  return b;
}

/* "AllReduce" -> "allreduce" (pt_coll_parse's spelling), or NULL for what
 * the tuner is not asked about (Send, Recv, ...). */
static const char *coll_of(const char *op, char *buf, size_t len) {
  size_t i = 0;
  for (; op[i] && i + 1 < len; i++) buf[i] = (char)(op[i] >= 'A' && op[i] <= 'Z' ? op[i] + 32 : op[i]);
  buf[i] = 0;
  return pt_coll_parse(buf) >= 0 ? buf : NULL;
}

static int add(struct dr_workload *w, const struct dr_wl_item *it) {
  /* Same step, collective and size as an earlier item of the step: count it. */
  for (size_t i = w->n; i-- > 0 && !strcmp(w->items[i].step, it->step);)
    if (!strcmp(w->items[i].coll, it->coll) && w->items[i].bytes == it->bytes &&
        !strcmp(w->items[i].comm, it->comm)) {
      w->items[i].count++;
      return 0;
    }
  struct dr_wl_item *n = realloc(w->items, (w->n + 1) * sizeof *n);
  if (!n) return -1;
  w->items = n;
  w->items[w->n++] = *it;
  return 0;
}

/* The collectives of member m (its process, its comm pointer). */
static int one_comm(const struct dr_doctor *d, const struct dr_member *m, struct dr_workload *w) {
  unsigned long long step_size = 0;
  int step = 0;
  for (size_t i = 0; i < d->ncoll; i++) {
    const struct dr_coll *c = &d->colls[i];
    char coll[16];
    if (c->proc != m->proc || strcmp(c->ptr, m->ptr) || !coll_of(c->op, coll, sizeof coll)) continue;
    unsigned long long b = nbytes(c);
    if (!step || (!strcmp(coll, "allreduce") && b != step_size && step_size)) step++, step_size = 0;
    if (!strcmp(coll, "allreduce") && !step_size) step_size = b;
    struct dr_wl_item it;
    memset(&it, 0, sizeof it);
    SET(it.comm, m->commid[0] ? m->commid : "nocommid");
    snprintf(it.step, sizeof it.step, "%.16s.s%d", it.comm, step);
    SET(it.coll, coll);
    it.bytes = b;
    it.count = 1;
    if (add(w, &it)) return -1;
  }
  return 0;
}

int dr_workload_build(const struct dr_doctor *d, struct dr_workload *w) {
  struct dr_comms c;
  int rc = 0;
  memset(w, 0, sizeof *w);
  if (dr_comms(d, -1, &c) < 0) rc = -1;
  for (size_t k = 0; !rc && k < c.n; k++) {
    /* Sorted by rank: the first member with a pointer speaks for the
     * communicator. */
    for (size_t i = c.start[k]; i < c.start[k + 1]; i++) {
      const struct dr_member *m = &d->mem[c.order[i]];
      if (!m->ptr[0]) continue;
      rc = one_comm(d, m, w);
      break;
    }
  }
  dr_comms_free(&c);
  return rc;
}

int dr_workload_write(const struct dr_doctor *d, const struct dr_workload *w, const char *path,
                      int force) {
  struct pt_error_rec e;
  size_t cap = 4096 + w->n * 256, used = 0;
  char *text = malloc(cap);
  if (!text) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    return 1;
  }
  used += (size_t)snprintf(text + used, cap - used,
                           "# pcie-tune doctor --workload-out: what each communicator enqueued "
                           "(NCCL's COLL lines),\n# one rank per communicator; a step ends where "
                           "the all-reduce size changes (docs/cli.md).\n# STEP COLLECTIVE BYTES "
                           "COUNT\n");
  if (d->colls_dropped)
    used += (size_t)snprintf(text + used, cap - used, "# %zu COLL lines beyond the first %zu not read\n",
                             d->colls_dropped, d->ncoll);
  for (size_t i = 0; i < w->n; i++) {
    const struct dr_wl_item *it = &w->items[i];
    if (!i || strcmp(it->comm, w->items[i - 1].comm))
      used += (size_t)snprintf(text + used, cap - used, "# communicator %s\n", it->comm);
    used += (size_t)snprintf(text + used, cap - used, "%s %s %llu %lu\n", it->step, it->coll,
                             it->bytes, it->count);
  }
  int rc = 0;
  if (!w->n) {
    fprintf(stderr, "pcie-tune doctor: --workload-out %s: no collective in the log (run the job "
                    "with NCCL_DEBUG_SUBSYS including COLL); nothing written\n", path);
    rc = 1;
  } else if (pt_output_write(path, text, used, force ? PT_OUT_FORCE : 0, &e)) {
    fprintf(stderr, "pcie-tune doctor: --workload-out: %s%s%s\n", e.file, e.file[0] ? ": " : "",
            e.msg);
    rc = 1;
  }
  free(text);
  return rc;
}

/* A latency in us from series s's points pts at nbytes, "~" when it is not
 * a measured size (interpolated, or the nearest measured size outside the
 * range); -1 when not measured. */
static double lat_at(const struct pt_series *s, const struct pt_point *pts, uint64_t nbytes, int *interp) {
  double v = pts ? pt_interp_latency(s, pts, nbytes) : -1;
  int exact = 0;
  for (size_t i = 0; i < s->nsizes && !exact; i++) exact = s->sizes[i] == nbytes;
  if (v >= 0 && !exact) *interp = 1;
  return v;
}

/* One item's time (count calls) by NCCL's default and by the profile's
 * choice, graph mode (what a captured step replays). */
static void item_times(const struct pt_profile *p, const struct pt_table *t, const struct dr_wl_item *it,
                       double *def, double *tuned, int *interp) {
  int coll = pt_coll_parse(it->coll);
  const struct pt_series *s = pt_profile_series(p, coll, PT_MODE_GRAPH);
  const struct pt_interval *iv = pt_table_lookup(t, coll, PT_MODE_GRAPH, it->bytes);
  *def = *tuned = -1;
  if (!s || !iv) return;
  *def = lat_at(s, s->nccl_default, it->bytes, interp);
  *tuned = *def; /* left to NCCL */
  if (!iv->n) return;
  for (size_t c = 0; c < s->ncand; c++) {
    const struct pt_candidate *k = &s->cand[c];
    if (k->algo == iv->c[0].algo && k->proto == iv->c[0].proto &&
        (!iv->c[0].channels || k->channels == iv->c[0].channels)) {
      double v = lat_at(s, k->points, it->bytes, interp);
      if (v >= 0) *tuned = v;
      return;
    }
  }
}

int dr_workload_profile(const struct dr_workload *w, const char *path) {
  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  char buf[1200];
  memset(&p, 0, sizeof p);
  if (pt_profile_load(&p, path, &e)) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune doctor: --profile: %s\n", buf);
    return 1;
  }
  if (pt_table_build_for(&t, &p, (size_t)p.match_nranks, (size_t)p.match_nnodes)) {
    pt_profile_release(&p);
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    return 1;
  }
  double all_def = 0, all_tuned = 0;
  unsigned long ncalls = 0, nar = 0;
  int any_interp = 0, unknown = 0;
  printf("\nper step, by %s's measurements (graph mode; ~ interpolated or nearest measured size):\n",
         path);
  printf("  %-24s %-40s %14s %14s\n", "step", "collectives", "NCCL default", "this profile");
  for (size_t i = 0; i < w->n;) {
    size_t j = i;
    double def = 0, tuned = 0;
    int interp = 0, missing = 0;
    char what[256] = "";
    for (; j < w->n && !strcmp(w->items[j].step, w->items[i].step); j++) {
      const struct dr_wl_item *it = &w->items[j];
      double d1, t1;
      item_times(&p, &t, it, &d1, &t1, &interp);
      if (d1 < 0 || t1 < 0) missing = 1;
      else def += d1 * (double)it->count, tuned += t1 * (double)it->count;
      ncalls += it->count;
      if (!strcmp(it->coll, "allreduce")) nar += it->count;
      size_t l = strlen(what);
      snprintf(what + l, sizeof what - l, "%s%s %llu x%lu", l ? ", " : "", it->coll, it->bytes,
               it->count);
    }
    if (missing) {
      unknown = 1;
      printf("  %-24s %-40s %14s %14s\n", w->items[i].step, what, "not measured", "not measured");
    } else {
      char a[32], b[32];
      snprintf(a, sizeof a, "%s%.1f us", interp ? "~" : "", def);
      snprintf(b, sizeof b, "%s%.1f us", interp ? "~" : "", tuned);
      printf("  %-24s %-40s %14s %14s\n", w->items[i].step, what, a, b);
      all_def += def, all_tuned += tuned;
    }
    any_interp |= interp;
    i = j;
  }
  printf("  %lu collectives (%lu all-reduces): %s%.3f ms by NCCL's default, %s%.3f ms with this "
         "profile%s\n",
         ncalls, nar, any_interp ? "~" : "", all_def / 1000, any_interp ? "~" : "", all_tuned / 1000,
         unknown ? " (steps the profile did not measure left out)" : "");
  pt_table_release(&t);
  pt_profile_release(&p);
  return 0;
}
