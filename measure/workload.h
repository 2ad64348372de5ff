/*
 * The sizes a workload runs, for `pcie-tune profile --workload FILE`: the
 * file format of `pcie-tune simulate --workload` (docs/cli.md), lines
 * 'STEP COLLECTIVE BYTES COUNT', '#' comments. Measuring exactly these sizes
 * (e.g. tokens x 14336 B of a verify step) beats interpolating between
 * powers of two.
 */
#ifndef PCIE_MEASURE_WORKLOAD_H
#define PCIE_MEASURE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/profile.h"

/* Adds every BYTES of the file to sizes[0..*n) (kept ascending and
 * distinct, at most max). Returns 0, or PT_EIO / PT_EINVAL with err naming
 * the file and line. */
int pt_workload_sizes(const char *path, uint64_t *sizes, size_t *n, size_t max, struct pt_error_rec *err);

/* Inserts v into the ascending distinct list sizes[0..*n); -1 when full. */
int pt_sizes_add(uint64_t *sizes, size_t *n, size_t max, uint64_t v);

#endif
