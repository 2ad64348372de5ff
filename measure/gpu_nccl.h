/*
 * The GPU measurement backend, run inside `pcie-tune worker --backend nccl`
 * (never in the profiler itself: measure/isolate.c keeps it in a worker so a
 * crash or hang costs one candidate, not the sweep).
 *
 * One process drives one communicator over the chosen GPUs
 * (ncclCommInitAll). Before NCCL initialises it points NCCL_TUNER_PLUGIN at
 * this project's plugin and PCIE_TUNER_PROFILE at an empty directory (so
 * no profile decides anything), then finds the plugin's control interface
 * (include/pcie/control.h) in the library NCCL loaded. Per request it
 * forces the candidate (or nothing, for NCCL's default), asks NCCL whether
 * it has that combination disabled at that size (reported unsupported and
 * never run), captures `ops` all-reduces per rank into a CUDA graph (graph
 * mode) or launches them directly (eager), warms up, times repetitions
 * with CUDA events, and checks every output against the exact pattern of
 * measure/gpu_pattern.h (a mismatch is PT_PT_WRONG). A CUDA or NCCL error is
 * PT_PT_CRASH and poisons the backend: the worker leaves after reporting.
 *
 * Only all-reduce is measured; other collectives come back unsupported.
 * Not thread-safe; one per process (NCCL's tuner state is process-wide).
 */
#ifndef PCIE_CLI_GPU_NCCL_H
#define PCIE_CLI_GPU_NCCL_H

#include "pcie/sweep.h"

#define PT_GPU_MAX 64

struct pt_gpu_opts {
  int gpus[PT_GPU_MAX]; /* CUDA device ordinals, distinct */
  int ngpus;
  const char *plugin;   /* the tuner .so; NULL = found next to pcie-tune */
  const char *nccl_lib; /* NULL = libnccl.so.2 */
  unsigned ops;         /* collectives per timed launch / graph, 1..1000 */
  unsigned warmup;      /* untimed launches before timing, 0..1000 */
};

/* 1 when this pcie-tune was built with CUDA and NCCL (mk/gpu.mk). */
int pt_gpu_built(void);

/* Opens the backend on o's GPUs. *prov receives a malloc'ed provenance
 * group body (GPU names, PCI bus ids, P2P access, driver/runtime/NCCL
 * versions, NCCL_* environment). Returns 0; PT_ENOENT when built without
 * CUDA (err says how to enable it); PT_EIO when there is no usable device
 * ("no CUDA device: ..."), NCCL cannot load or initialise, or NCCL did not
 * load the plugin; PT_EINVAL for bad options. */
int pt_gpu_open(struct pt_backend *b, const struct pt_gpu_opts *o, char **prov,
                struct pt_error_rec *err);

#endif
