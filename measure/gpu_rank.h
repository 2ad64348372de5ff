/*
 * One rank of the GPU backend: one GPU, one NCCL communicator, one stream,
 * driven over a SOCK_SEQPACKET socket by the coordinator in
 * measure/gpu_nccl.c. The same code runs as a forked process per GPU (the
 * default, as vLLM, SGLang and torch run) or as a thread per GPU of one
 * process (--process-model single). Either way every rank launches and
 * times its own work, so no GPU waits on another GPU's host launch.
 *
 * Per measurement a rank (docs/gpu.md, "What one measurement does"):
 * forces the candidate through the plugin's control interface, asks NCCL
 * whether it has it disabled (ncclGroupSimulateEnd), captures `ops`
 * all-reduces into a graph and uploads it (or launches them eagerly),
 * replays once untimed plus --warmup more, then for --warmup-ms of GPU time
 * (the coordinator turns every rank's replay time into one count, so all
 * ranks run the same collectives), then per repetition: fills the
 * outputs with NaN, aligns the ranks with a one-float all-reduce on the
 * GPU, records an event, replays, records an event, waits,
 * and checks every output of that replay exactly. Failures of the set-up
 * (device, memory, NCCL init) are the environment's and stop the sweep;
 * failures while the candidate runs are the candidate's.
 */
#ifndef PCIE_MEASURE_GPU_RANK_H
#define PCIE_MEASURE_GPU_RANK_H

#include "gpu_api.h"
#include "pcie/sweep.h"

/* coordinator -> rank */
enum { PT_RK_CMD_UID = 1, PT_RK_CMD_FORCE = 2, PT_RK_CMD_MEASURE = 3, PT_RK_CMD_WARM = 4, PT_RK_CMD_CONNECT = 5 };
/* rank -> coordinator */
enum { PT_RK_UID = 1, PT_RK_READY = 2, PT_RK_BEAT = 3, PT_RK_DONE = 4, PT_RK_FAIL = 5, PT_RK_WARM = 6 };

struct pt_rank_cmd {
  int type;
  int do_force;   /* force the candidate here (each process; rank 0 of a single process) */
  int do_verdict; /* check the plugin's counters here */
  struct pt_measure_req req;
  pt_nccl_uid uid;
  unsigned warm; /* WARM: further untimed replays, the same on every rank */
};

struct pt_rank_msg {
  int type, rank;
  unsigned rep;  /* BEAT: repetitions done */
  double warm_us; /* WARM: time of one replay, us */
  int code;      /* FAIL: PT_E* */
  struct pt_measure_res res;
  double samples[PT_SWEEP_MAX_REPS]; /* DONE: us per op, one per repetition */
  pt_nccl_uid uid;
  char text[8192]; /* READY of rank 0: provenance body; FAIL: why */
};

struct pt_rank_cfg {
  const struct pt_gpu_api *api;
  const char *plugin; /* absolute path NCCL_TUNER_PLUGIN names */
  const int *devs;    /* every rank's CUDA device */
  int rank, nranks;
  unsigned ops, warmup;
  int in_place; /* 1: each op reduces its buffer in place (inputs restored before each replay) */
  int nccl_mem; /* 1: buffers from ncclMemAlloc, 0: cudaMalloc (docs/gpu.md, "Buffers") */
  double warmup_ms; /* after the counted warm-up, replay until this much GPU time passed */
  double gap_us;    /* compute before each timed all-reduce (measure/gpu_gap.h); 0: back to back */
};

/* Serves one rank on fd until the coordinator closes it. Returns the exit
 * status (0 after a clean end, 1 after a failure it reported). */
int pt_rank_serve(int fd, const struct pt_rank_cfg *c);

#endif
