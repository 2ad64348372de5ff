/* The measuring options' rows; cli/measure_opts.h says who shares them. */
#include "measure_opts.h"
#include "measure/backend_nccl.h"
#include "measure/gpu_gap.h"

#include <stddef.h>
#include <stdio.h>

#define F(x) offsetof(struct cli_measure, x)
#define W (CLI_RECORD | CLI_WORKER)
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* --inject: checked here, kept as given (the worker parses it again). */
static int inject(void *opts, const char *v, char *why, size_t len) {
  struct cli_measure *m = opts;
  struct pt_fault f;
  if (m->ninject == PT_MAX_FAULTS) {
    snprintf(why, len, "at most %d faults", PT_MAX_FAULTS);
    return -1;
  }
  if (pt_fault_parse(v, &f, why, len)) return -1;
  m->inject[m->ninject++] = v;
  return 0;
}

const struct cli_opt cli_measure_gpu_rows[] = {
    CLI_ROW("gpus", 0, CLI_STR, "LIST", F(gpus), 0, 0, NULL, W, CLI_NCCL, "nccl: CUDA devices, e.g. 0-7 or 0,2,4,6"),
    CLI_ROW("ops", 0, CLI_UINT, "N", F(ops), 1, 1000, "20", W, CLI_NCCL, "nccl: all-reduces per captured graph / timed launch"),
    CLI_ROW("warmup", 0, CLI_UINT, "N", F(warmup), 0, 1000, "5", W, CLI_NCCL, "nccl: untimed launches after the first one"),
    CLI_ROW("warmup-ms", 0, CLI_UINT, "MS", F(warmup_ms), 0, 10000, "100", W, CLI_NCCL,
     "nccl: then untimed replays for this much GPU time"),
    CLI_ROW("gap", 0, CLI_UINT, "US", F(gap), 0, 1000, TEXT(PT_GAP_DEFAULT_US), W, CLI_NCCL,
     "nccl: microseconds of GPU compute (every SM busy) before each timed\nall-reduce, as a verify step's GEMM or attention kernel; 0: back to\nback, as nccl-tests (docs/gpu.md, \"The timed shape\")"),
    CLI_ROW("nccl-lib", 0, CLI_STR, "PATH|auto", F(nccl_lib), 0, 0, NULL, W, CLI_NCCL,
     "nccl: the libnccl to measure with; auto (the default): the one the\nengine loads (VLLM_NCCL_SO_PATH, else torch's wheel in python3's environment),\nelse the loader's libnccl.so.2; profile refuses another minor\nversion than the engine's unless forced"),
    CLI_ROW("cudart-lib", 0, CLI_STR, "PATH", F(cudart_lib), 0, 0, NULL, W, CLI_NCCL,
     "nccl: the CUDA runtime; default beside libnccl, then the system's"),
    CLI_ROW("plugin", 0, CLI_STR, "PATH", F(plugin), 0, 0, NULL, W, CLI_NCCL,
     "nccl: the tuner plugin NCCL loads; default next to pcie-tune"),
    CLI_ROW("process-model", 0, CLI_CHOICE, "per-gpu|single", F(single), 0, 0, "per-gpu", W, CLI_NCCL,
     "nccl: a process per GPU (as vLLM/torch), or one process for all"),
    CLI_ROW("same-gpu-ranks", 0, CLI_FLAG, NULL, F(same_gpu), 0, 0, NULL, W, CLI_NCCL,
     "nccl: let --gpus repeat a GPU (--gpus 0,0): each rank a node of its\nown to NCCL (NCCL_HOSTID), over sockets on lo, so that one GPU\ntests the forcing path (bench/gpu_smoke.sh); not a measurement"),
    CLI_ROW("in-place", 0, CLI_FLAG, NULL, F(in_place), 0, 0, NULL, W, CLI_NCCL,
     "nccl: all-reduce in place (default: out of place, as most engines)"),
    CLI_ROW("buffers", 0, CLI_CHOICE, "cudaMalloc|ncclMemAlloc", F(nccl_mem), 0, 0, "cudaMalloc", W, CLI_NCCL,
     "nccl: torch's caching allocator (the engines' default), or an NCCL\nmemory pool (docs/gpu.md)"),
    CLI_END_ROW,
};

const struct cli_opt cli_measure_rows[] = {
    CLI_INCLUDE(cli_measure_gpu_rows),
    CLI_ROW("box", 0, CLI_STR, "NAME|FILE", F(box), 0, 0, NULL, W, CLI_SIM, "sim: a built-in box name or a box file (docs/sim.md)"),
    CLI_ROW("seed", 0, CLI_UINT, "N", F(seed), 0, ~0ULL, "1", W, CLI_SIM, "sim: the simulated backend's noise seed"),
    CLI_ROW("inject", 0, CLI_CUSTOM, "FAULT", 0, 0, 0, NULL, W | CLI_MULTI, CLI_SIM,
     "sim --isolate: crash|abort|hang|wrong|exit|garbage:ALGO/PROTO/CH[@MIN]\n(a testing aid for the isolation; repeatable)",
     .parse = inject),
    CLI_END_ROW,
};

void cli_measure_nccl_opts(const struct cli_measure *m, const char *const *args, double timeout_s,
                           volatile sig_atomic_t *stop, struct pt_nccl_opts *no) {
  pt_nccl_opts_default(no);
  no->gpus = m->gpus;
  no->same_gpu = m->same_gpu;
  no->args = args;
  no->ops = (unsigned)m->ops;
  no->warmup = (unsigned)m->warmup;
  no->warmup_ms = (unsigned)m->warmup_ms;
  no->gap_us = (double)m->gap;
  no->timeout_s = timeout_s;
  no->stop = stop;
}
