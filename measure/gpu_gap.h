/*
 * The compute gap between timed collectives (docs/gpu.md, "The timed
 * shape"): in a verify step every all-reduce follows a GEMM or attention
 * kernel, so NCCL never starts op j+1 while its peers still finish op j.
 * The backend puts a kernel that keeps every SM busy for a given time
 * before each timed all-reduce. It is PTX, loaded through the CUDA driver
 * (measure/gpu_api.h), so nothing is compiled for a GPU at build time and
 * the driver JIT-compiles it for whatever GPU is there.
 */
#ifndef PCIE_MEASURE_GPU_GAP_H
#define PCIE_MEASURE_GPU_GAP_H

#include <stddef.h>

#include "gpu_api.h"

/* The gap `profile` and the worker use unless told (--gap). */
#define PT_GAP_DEFAULT_US 50

struct pt_gap {
  pt_cu_module mod;
  pt_cu_function fn; /* NULL: no gap (--gap 0) */
  unsigned blocks;   /* one per SM */
  unsigned long long ns;
};

/* The kernel's entry and its PTX text (the double checks both). */
extern const char pt_gap_entry[];
extern const char pt_gap_ptx[];

/* Loads the kernel into the current device's context for a gap of gap_us
 * (0: nothing to load). Returns 0, or -1 with why[] saying what failed and
 * what to do. */
int pt_gap_open(struct pt_gap *g, const struct pt_gpu_api *a, int dev, double gap_us, char *why, size_t len);
/* Enqueues one gap on s (captured when s captures). Returns the CUresult
 * and, on failure, *what the driver's text. */
pt_cu_res pt_gap_launch(const struct pt_gap *g, const struct pt_gpu_api *a, pt_cu_stream s, const char **what);
void pt_gap_close(struct pt_gap *g, const struct pt_gpu_api *a);

#endif
