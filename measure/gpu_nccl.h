/*
 * The GPU measurement backend, run inside `pcie-tune worker --backend nccl`
 * (never in the profiler itself: measure/isolate.c keeps it in a worker so a
 * crash or hang costs one candidate, not the sweep).
 *
 * The worker is a coordinator: it loads NCCL and the CUDA runtime
 * (measure/gpu_api.h) but runs no CUDA itself, starts one rank per GPU
 * (measure/gpu_rank.h) -- a forked process each by default, as inference
 * engines run, or a thread each with process_model single -- passes rank
 * 0's ncclUniqueId to the others, and per request sends every rank the
 * same order, forwards a heartbeat when every rank finished a repetition,
 * and gathers the per-op times: the slowest rank sets each repetition's
 * time. A rank that dies is the candidate's crash; a rank that cannot set
 * up (device, memory, NCCL init) is the environment's failure, returned
 * as a negative code that stops the sweep.
 *
 * Before the ranks start it points NCCL_TUNER_PLUGIN at this project's
 * plugin, PCIE_TUNER_PROFILE at an empty directory (so no profile decides
 * anything), and NCCL_DEBUG=INFO with NCCL_DEBUG_FILE into a scratch
 * directory, whose INFO lines give the communicator's channel count and
 * the transports NCCL chose (measure/gpu_ncclog.h). Only all-reduce is
 * measured. One per process.
 */
#ifndef PCIE_CLI_GPU_NCCL_H
#define PCIE_CLI_GPU_NCCL_H

#include "pcie/sweep.h"

#define PT_GPU_MAX 64

struct pt_gpu_opts {
  int gpus[PT_GPU_MAX]; /* CUDA device ordinals, distinct unless same_gpu */
  int ngpus;
  const char *plugin;     /* the tuner .so; NULL = found next to pcie-tune */
  const char *nccl_lib;   /* NULL = libnccl.so.2 */
  const char *cudart_lib; /* NULL = beside libnccl, then the loader's path */
  const char *scratch;    /* an existing directory for logs and the empty profile
                             directory, removed by whoever made it; NULL = own */
  int single;             /* 1: one process, a thread per GPU */
  int same_gpu;           /* 1: gpus may repeat: each rank process gets its own NCCL_HOSTID
                             (a node of its own to NCCL), NCCL_IB_DISABLE=1 and
                             NCCL_SOCKET_IFNAME=lo, so NCCL runs them over sockets */
  int in_place;           /* 1: all-reduce in place (default out of place) */
  int nccl_mem;           /* 1: buffers from ncclMemAlloc (default cudaMalloc) */
  int beat_fd;            /* where heartbeat frames go (the worker's protocol); -1 none */
  unsigned ops;           /* collectives per timed launch / graph, 1..1000 */
  unsigned warmup;        /* untimed launches after the first, 0..1000 */
  double warmup_ms;       /* then untimed replays for this much GPU time, 0..10000 */
  double gap_us;          /* compute before each timed all-reduce (measure/gpu_gap.h); 0: back to back */
};

/* 1: this pcie-tune has the GPU backend (always, since CUDA and NCCL are
 * loaded at run time). */
int pt_gpu_built(void);

/* Opens the backend on o's GPUs. *prov receives a malloc'ed provenance
 * text (the `gpu` and `nccl` groups of provenance.extra). Returns 0;
 * PT_EIO when a library cannot load, there is no usable device ("no CUDA
 * device: ..."), NCCL cannot initialise, or NCCL did not load the plugin;
 * PT_EINVAL for bad options. */
int pt_gpu_open(struct pt_backend *b, const struct pt_gpu_opts *o, char **prov,
                struct pt_error_rec *err);

#endif
