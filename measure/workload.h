/*
 * Workload files, the one reader for `pcie-tune simulate --workload` (which
 * runs the steps) and `pcie-tune profile --workload` (which measures their
 * sizes): lines 'STEP COLLECTIVE BYTES COUNT', '#' comments, BYTES with the
 * binary K/M/G suffixes (docs/cli.md). Measuring exactly a workload's sizes
 * (e.g. tokens x 14336 B of a verify step) beats interpolating between
 * powers of two.
 */
#ifndef PCIE_MEASURE_WORKLOAD_H
#define PCIE_MEASURE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/profile.h"

#define PT_WORKLOAD_MAX_BYTES (1ULL << 40)
#define PT_WORKLOAD_MAX_COUNT 1000000UL

struct pt_workload_item {
  char step[64];
  int coll; /* enum pt_coll */
  uint64_t bytes;
  unsigned long count;
};

/* Called once per workload line, in file order; returns 0, or -1 with why
 * filled in (the reader adds the file and line). */
typedef int (*pt_workload_fn)(void *ctx, const struct pt_workload_item *item, char *why, size_t len);

/* Reads path whole (a FIFO or device is refused at once, as every input,
 * include/pcie/files.h) and hands each line to fn. Returns 0, or PT_EIO /
 * PT_EINVAL with err naming the file and line ("no workload lines" for a
 * file of comments only). */
int pt_workload_read(const char *path, pt_workload_fn fn, void *ctx, struct pt_error_rec *err);

/* Adds every BYTES of the file to sizes[0..*n) (kept ascending and
 * distinct, at most max). Returns as pt_workload_read. */
int pt_workload_sizes(const char *path, uint64_t *sizes, size_t *n, size_t max, struct pt_error_rec *err);

/* Inserts v into the ascending distinct list sizes[0..*n); -1 when full. */
int pt_sizes_add(uint64_t *sizes, size_t *n, size_t max, uint64_t v);

/* A decimal byte count with an optional binary suffix (K, M, G; KiB, MiB,
 * GiB; case-insensitive), lo <= value <= hi. Returns 0 or -1. The size
 * syntax of the command line and of workload files alike. */
int pt_size_parse(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

#endif
