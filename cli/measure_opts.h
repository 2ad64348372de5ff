/*
 * The options that say how to measure, shared by `pcie-tune profile` (which
 * records them for --resume) and the hidden `pcie-tune worker` (which
 * measures with them): one set of rows, cli_measure_rows, that both tables
 * include, over struct cli_measure, the first member of both commands'
 * options, so that a row's offset means the same field in each. profile
 * builds the worker's command line from the rows flagged CLI_WORKER
 * (cli/opt.h, cli_emit_argv).
 */
#ifndef PCIE_CLI_MEASURE_OPTS_H
#define PCIE_CLI_MEASURE_OPTS_H

#include <signal.h>

#include "measure/backend_isolated_faults.h"
#include "opt.h"

/* Scope bits of profile's and the worker's rows: the backend they are for. */
enum { CLI_NCCL = 1u << 0, CLI_SIM = 1u << 1 };

struct cli_measure {
  const char *gpus, *nccl_lib, *cudart_lib, *plugin, *box;
  int single;   /* --process-model single (the index in "per-gpu|single") */
  int in_place; /* --in-place */
  int nccl_mem; /* --buffers ncclMemAlloc (the index in "cudaMalloc|ncclMemAlloc") */
  int same_gpu; /* --same-gpu-ranks: --gpus may repeat a GPU (measure/gpu_nccl.h) */
  unsigned long long ops, warmup, warmup_ms, seed;
  unsigned long long gap; /* --gap: us of compute before each timed all-reduce */
  const char *inject[PT_MAX_FAULTS]; /* --inject, as given */
  size_t ninject;
};

extern const struct cli_opt cli_measure_rows[];
/* The GPU backend's options from m's fields (what profile and screen
 * hand pt_backend_nccl_open): args are the worker's (cli_emit_argv of the
 * CLI_WORKER rows), timeout_s the base deadline, stop the caller's Ctrl-C
 * flag. */
struct pt_nccl_opts;
void cli_measure_nccl_opts(const struct cli_measure *m, const char *const *args, double timeout_s,
                           volatile sig_atomic_t *stop, struct pt_nccl_opts *no);
/* The GPU backend's rows alone (scope CLI_NCCL), for `pcie-tune screen`,
 * which measures nothing simulated; cli_measure_rows includes them. */
extern const struct cli_opt cli_measure_gpu_rows[];

#endif
