/*
 * Judging profiles swept at different communicator channel counts
 * (`pcie-tune profile --explore-channels`): each profile, compiled as the
 * plugin compiles it (pt_table_build), is charged the measured latency of
 * what its table picks at every workload size; the sum over the workload
 * is compared with NCCL's default of the baseline run (no
 * NCCL_MIN_NCHANNELS). Measured data only, so it serves the simulated and
 * the GPU backend alike.
 */
#ifndef PCIE_MEASURE_EXPLORE_H
#define PCIE_MEASURE_EXPLORE_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/profile.h"

struct pt_explore_item {
  int coll;      /* enum pt_coll */
  uint64_t bytes;
  unsigned long count;
};

/* The verify-step workload (tokens 1,4,8,16,32,64,128 x 14336 B all-reduce,
 * once each) into items[0..7); returns 7. */
size_t pt_explore_default_workload(struct pt_explore_item *items);

/* The workload's total latency in us (sum of count x latency) for profile
 * p in mode: at each size the measured latency of the candidate p's table
 * puts first, or of p's own NCCL default where the table leaves NCCL to
 * decide. With nccl_default = 1, NCCL's default of p instead (the
 * baseline). Returns 0, or -1 with why filled (a collective p has no data
 * for, a size with no measured latency). */
int pt_explore_total(const struct pt_profile *p, int mode, const struct pt_explore_item *items,
                     size_t n, int nccl_default, double *total_us, char *why, size_t len);

/* Index of the winner among totals[0..n) (index 0 = NCCL's own count,
 * then ascending counts): a later entry wins only when it beats the
 * current winner by more than margin (relative). */
size_t pt_explore_pick(const double *totals, size_t n, double margin);

#endif
