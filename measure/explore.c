/* The judge of `profile --explore-channels` (measure/explore.h). */
#include "explore.h"

#include <stdio.h>
#include <string.h>

#include "pcie/table.h"

size_t pt_explore_default_workload(struct pt_explore_item *items) {
  static const unsigned tokens[] = {1, 4, 8, 16, 32, 64, 128};
  for (size_t i = 0; i < 7; i++)
    items[i] = (struct pt_explore_item){PT_ALLREDUCE, (uint64_t)tokens[i] * 14336, 1};
  return 7;
}

/* The measured latency at nbytes of the candidate the table ranks first,
 * or -1 when the table leaves NCCL to decide (or the candidate is not in
 * the series, e.g. a hand rule). */
static double chosen_us(const struct pt_series *s, const struct pt_interval *iv, uint64_t nbytes) {
  if (!iv || !iv->n) return -1;
  const struct pt_choice *c = &iv->c[0];
  for (size_t i = 0; i < s->ncand; i++) {
    const struct pt_candidate *cd = &s->cand[i];
    if (cd->algo == c->algo && cd->proto == c->proto && cd->channels == c->channels)
      return pt_interp_latency(s, cd->points, nbytes);
  }
  return -1;
}

int pt_explore_total(const struct pt_profile *p, int mode, const struct pt_explore_item *items,
                     size_t n, int nccl_default, double *total_us, char *why, size_t len) {
  struct pt_table t;
  int rc = -1;
  if (pt_table_build(&t, p)) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  *total_us = 0;
  for (size_t i = 0; i < n; i++) {
    const struct pt_series *s = pt_profile_series(p, items[i].coll, mode);
    if (!s) {
      snprintf(why, len, "the profile has no %s measurements", pt_coll_name(items[i].coll));
      goto out;
    }
    double us = nccl_default ? -1 : chosen_us(s, pt_table_lookup(&t, items[i].coll, mode, items[i].bytes), items[i].bytes);
    if (us < 0) us = s->nccl_default ? pt_interp_latency(s, s->nccl_default, items[i].bytes) : -1;
    if (us < 0) {
      snprintf(why, len, "no measured latency for %s at %llu B", pt_coll_name(items[i].coll),
               (unsigned long long)items[i].bytes);
      goto out;
    }
    *total_us += us * (double)items[i].count;
  }
  rc = 0;
out:
  pt_table_release(&t);
  return rc;
}

size_t pt_explore_pick(const double *totals, size_t n, double margin) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (totals[i] < totals[best] * (1.0 - margin)) best = i;
  return best;
}
