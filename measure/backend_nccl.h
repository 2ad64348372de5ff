/*
 * `pcie-tune profile --backend nccl`: the real GPUs, measured in isolated
 * worker processes. This is the constructor cli/profile.c calls; it builds
 * the worker's command line (`pcie-tune worker --backend nccl ...`) and
 * opens a measure/isolate.h backend over it, so the sweep engine sees a plain
 * struct pt_backend. What a worker does on the GPUs is measure/gpu_nccl.h.
 */
#ifndef PCIE_CLI_BACKEND_NCCL_H
#define PCIE_CLI_BACKEND_NCCL_H

#include <signal.h>

#include "pcie/sweep.h"

struct pt_nccl_opts {
  const char *gpus; /* "0-7", "0,2,4,6": CUDA device ordinals, checked here */
  int same_gpu;     /* --same-gpu-ranks: gpus may repeat (measure/gpu_nccl.c gives each rank
                       its own NCCL_HOSTID); args carry the option to the worker */
  /* The worker's options, NULL-terminated ("--gpus", "0-7", "--ops", "20",
   * ...): profile builds them from its option table (cli/measure_opts.h);
   * the worker's own defaults hold for any left out. */
  const char *const *args;
  /* What the deadlines are scaled by (pt_isolate_window_s); the values
   * args carry (their defaults and ranges are the option table's). 0 ops:
   * the deadline is timeout_s, unscaled. */
  unsigned ops;       /* all-reduces per timed launch / captured graph */
  unsigned warmup;    /* untimed launches after the first one */
  unsigned warmup_ms; /* then untimed replays for this much GPU time */
  double gap_us;      /* compute before each timed all-reduce (measure/gpu_gap.h) */
  double timeout_s;       /* base deadline per measurement and between heartbeats,
                             scaled up with size (pt_isolate_window_s) */
  double start_timeout_s; /* NCCL initialisation of a fresh worker */
  const char *exe;        /* the pcie-tune binary; NULL = /proc/self/exe */
  int stderr_fd;          /* workers' stderr; -1 = the profiler's */
  volatile sig_atomic_t *stop; /* abandons a measurement in progress (isolate.h) */
};

/* timeout 60 s, start 120 s, everything else 0/NULL/-1. */
void pt_nccl_opts_default(struct pt_nccl_opts *o);

/* Parses a GPU list ("0-7", "0,2-3") into out[0..max). Returns how many,
 * or -1 for syntax errors, duplicates (unless repeat), more than max, or
 * ordinals above 1023. */
int pt_nccl_parse_gpus(const char *s, int *out, int max, int repeat);

/* 1 when this binary can measure GPUs (built with CUDA and NCCL). */
int pt_backend_nccl_built(void);

/* Starts the first worker (NCCL initialised on the GPUs) and returns the
 * backend. Returns 0; PT_EINVAL for bad options (err->msg says which);
 * PT_ENOENT when built without CUDA (err->msg says how to enable it);
 * PT_EIO when the worker could not start (err->msg is the worker's reason,
 * e.g. "no CUDA device: ..."). The provenance group body for the profile's
 * provenance.extra is pt_isolate_provenance(b) (measure/isolate.h). */
int pt_backend_nccl_open(struct pt_backend *b, const struct pt_nccl_opts *o,
                         struct pt_error_rec *err);

#endif
