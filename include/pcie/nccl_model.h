/*
 * NCCL's own cost model for a single PCIe node (NCCL 2.30
 * src/graph/tuning.cc ncclTopoTuneModel/ncclTopoGetAlgoTime and the
 * selection of src/enqueue.cc topoGetAlgoInfo/scheduleCollTasksToPlan, as
 * summarised in docs/sim.md): the cost table NCCL hands the tuner, the channel
 * count it would use, and the channels its scheduler really spreads a message
 * over. This is NCCL's *view* of a box, not how the box behaves; simulated
 * boxes keep their true behaviour in separate code with separate parameters.
 *
 * The parameters are either derived from a box's hardware by
 * sim/nccl_derive.c (NCCL's topology search) or typed by hand (an override).
 * Arithmetic is done in single precision where NCCL's is, so ties and
 * crossovers fall on the same byte counts.
 *
 * Pure functions; thread-safe.
 */
#ifndef PCIE_NCCL_MODEL_H
#define PCIE_NCCL_MODEL_H

#include <stddef.h>

struct pt_nccl_params {
  int nranks;
  int compcap;         /* 0 Volta, 1 Ampere (sm80-89), 2 Hopper, 3 Blackwell */
  int search_channels; /* ring graph nChannels (after ring/tree agree) */
  double bw_intra;     /* ring graph bwIntra, GB/s per channel */
  int comm_channels;   /* comm->nChannels (twice the search channels by default) */
  int ll128_enabled;   /* LL128 usable (on PCIe only when NCCL_PROTO asks for it) */
  int tree_enabled;    /* 0 when NCCL_ALGO excludes Tree */
  int ll_enabled;      /* 0 when NCCL_PROTO excludes LL */
  int simple_enabled;  /* 0 when NCCL_PROTO excludes Simple */
  int max_batch_colls; /* NCCL_MAX_DEV_WORK_BATCH_COLLS: 10 in 2.28.9, 8 in 2.30 */
  /* What a derived view adds; 0 means "as the ring" (a hand-typed view). */
  int tree_channels;        /* tree graph nChannels */
  double tree_bw_intra;     /* tree graph bwIntra: a chain can be faster than a ring */
  int tree_simple_pattern;  /* 1: the tree graph is NCCL's plain TREE pattern (busBw x 0.85) */
  int ring_diff_channels;   /* 1: ring sameChannels == 0 (broadcast/reduce pay per step) */
  int ring_simple_threads;  /* maxThreads[Ring][Simple]: 256 or 512; 0 = NCCL's rule */
  int nccl_version;         /* NCCL_VERSION_CODE of the NCCL modelled; 0 = 2.28-2.30 */
};

/* NCCL 2.31 (the dev branch at 86fa684d, src/tuning/): the first version whose
 * view differs from 2.30's (docs/sim.md, "NCCL 2.31"). */
#define PT_NCCL_V2_31 23100
#define PT_NCCL_V2_31_2 23102 /* NCCL_MIN_CTAS floors each collective's channels */

/* "2.31", "2.31.0", "2.30.7" -> NCCL_VERSION_CODE (23100, 23100, 23007); 0
 * when s is not "MAJOR.MINOR[.PATCH]". */
int pt_nccl_version_code(const char *s);

/* Defaults of an nranks-GPU Gen4 box on sm89 (G = 2 x 12 GB/s, 4 channels). */
void pt_nccl_params_default(struct pt_nccl_params *p, int nranks);

/* NCCL's cost table in us for one collective: row = algorithm, column =
 * protocol; disabled entries are -1. */
void pt_nccl_cost_table(const struct pt_nccl_params *p, int coll, size_t nbytes,
                        int num_pipe_ops, float table[7][3]);

/* NCCL's selection over a table: the smallest entry >= 0, ties to the lower
 * algorithm then protocol index. Returns 0, or -1 when none is usable. */
int pt_nccl_select(float table[7][3], int *algo, int *proto);

/* NCCL's selection after a tuner rewrote the table it was handed (before):
 * pt_nccl_select's rule up to 2.30; from 2.31 (p->nccl_version) the plain
 * minimum over the entries NCCL had given a time, so a negative entry wins
 * and an IGNORE one (-1) stays out; ties to the higher index. Returns 0, or
 * -1 when none is usable. */
int pt_nccl_select_tuned(const struct pt_nccl_params *p, float before[7][3], float after[7][3], int *algo,
                         int *proto);

/* maxThreads[algo][proto] of the communicator (tuning.cc). */
int pt_nccl_max_threads(const struct pt_nccl_params *p, int algo, int proto);

/* The channel count NCCL itself would use for (algo, proto) at nbytes
 * (comm channels shrunk for small messages, enqueue.cc topoGetAlgoInfo):
 * its nMaxChannels. */
int pt_nccl_channels(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes);

/* Warps per block NCCL launches for (algo, proto) at nbytes (topoGetAlgoInfo). */
int pt_nccl_warps(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes);

/* The channels a lone collective of nbytes really runs on when it asks for
 * nmax channels: the request clamped to comm->nChannels, then the message cut
 * into cells of 32 KB of traffic and spread over channels
 * (enqueue.cc scheduleCollTasksToPlan). */
int pt_nccl_sched_channels(const struct pt_nccl_params *p, int coll, int proto, size_t nbytes,
                           int nmax);

#endif
