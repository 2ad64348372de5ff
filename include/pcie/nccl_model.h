/*
 * NCCL's own cost model for a single PCIe node (NCCL 2.28/2.30
 * src/graph/tuning.cc and enqueue.cc, as summarised in
 * shared/reference/nccl-tuner-abi-and-model.md §3): the cost table NCCL hands
 * the tuner, and the channel count it would use. This is NCCL's *view* of a
 * box, not how the box behaves; simulated boxes keep their true behaviour in
 * separate code with separate parameters.
 *
 * Pure functions; thread-safe.
 */
#ifndef PCIE_NCCL_MODEL_H
#define PCIE_NCCL_MODEL_H

#include <stddef.h>

struct pt_nccl_params {
  int nranks;
  int compcap;         /* 0 Volta, 1 Ampere (sm80-89), 2 Hopper, 3 Blackwell */
  int search_channels; /* channels found by the ring graph search */
  double bw_intra;     /* GB/s per search channel (graph bwIntra) */
  int comm_channels;   /* comm->nChannels (twice the search channels by default) */
  int ll128_enabled;   /* 1 only when the user forced LL128 through NCCL_PROTO */
  int tree_enabled;    /* 0 when NCCL_ALGO excludes Tree */
  int ll_enabled;      /* 0 when NCCL_PROTO excludes LL */
  int simple_enabled;  /* 0 when NCCL_PROTO excludes Simple */
  int max_batch_colls; /* NCCL_MAX_DEV_WORK_BATCH_COLLS: 10 in 2.28.9, 8 in 2.30 */
};

/* Defaults of an nranks-GPU Gen4 box on sm89 (G = 2 x 12 GB/s, 4 channels). */
void pt_nccl_params_default(struct pt_nccl_params *p, int nranks);

/* NCCL's cost table in us for one collective: row = algorithm, column =
 * protocol; disabled entries are -1. */
void pt_nccl_cost_table(const struct pt_nccl_params *p, int coll, size_t nbytes,
                        int num_pipe_ops, float table[7][3]);

/* NCCL's selection over a table: the smallest entry >= 0, ties to the lower
 * algorithm then protocol index. Returns 0, or -1 when none is usable. */
int pt_nccl_select(float table[7][3], int *algo, int *proto);

/* The channel count NCCL itself would use for (algo, proto) at nbytes
 * (comm channels shrunk for small messages, enqueue.cc). */
int pt_nccl_channels(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes);

#endif
