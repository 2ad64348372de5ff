/*
 * Simulated PCIe boxes (docs/sim.md). A box holds two separate models of one
 * machine:
 *
 *  - its truth (struct pt_box_truth): how the interconnect really behaves,
 *    used to "measure" a candidate; and
 *  - NCCL's view (struct pt_nccl_params, include/pcie/nccl_model.h): the cost
 *    table NCCL builds for it and hence the choice an untuned job gets.
 *
 * The two never share parameters: where they disagree is what the tuner
 * exists to fix. Boxes are plain data with fixed-size arrays (no heap), so a
 * struct pt_box can be copied and needs no release. Every function here is
 * pure and thread-safe; none prints.
 */
#ifndef PCIE_SIM_BOX_H
#define PCIE_SIM_BOX_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/nccl_model.h"
#include "pcie/nccl_topo.h"
#include "pcie/profile.h"

#define PT_BOX_MAX_ANCHORS 32
#define PT_BOX_MAX_FAULTS 8

enum pt_transport {
  PT_XPORT_P2P = 0, /* GPU-to-GPU writes over PCIe */
  PT_XPORT_SHM = 1, /* host-staged through shared memory (no P2P) */
};

/* How the box really behaves. Latency of one collective (docs/sim.md):
 *
 *   t = launch[mode] + base[p] + (ch-1)*chan_us + (L^q + X^q)^(1/q),  q = overlap[p]
 *   L = steps(coll, algo, n) * hop[algo][p]
 *   X = traffic(coll, algo, n) * bytes / bw
 *   bw = eff[p] * wire,  wire = min(ch * chan_bw[p] * w^warp_exp, link_bw[p])
 *   (w: NCCL's threads per channel for its own channel count, over the full)
 *
 * and, when transport is SHM, wire = 1 / (1/wire + 1/host_bw): the staging
 * copy through host memory is in series with the link. q >= 1 says how much
 * the per-step latency overlaps the transfer (q = 1: not at all, NCCL's
 * additive model; LL's fine-grained flags overlap best). */
struct pt_box_truth {
  double launch_us[PT_NMODES]; /* per launch: eager and graph replay */
  double base_us[3];           /* per protocol: fixed cost of a collective */
  double hop_us[2][3];         /* [NCCL_ALGO_TREE|NCCL_ALGO_RING][proto], per step */
  double chan_us;              /* added latency per channel beyond the first */
  double chan_bw[3];           /* GB/s of wire bandwidth one channel drives, per protocol */
  double link_bw[3];           /* GB/s per direction: where more channels stop helping */
  double eff[3];               /* payload fraction of the wire bytes, per protocol */
  double overlap[3];           /* q above, >= 1, per protocol */
  int transport;               /* enum pt_transport */
  double host_bw;              /* GB/s of the host staging copy (SHM only) */
  /* > 0: a channel's bandwidth scales as (warps / full warps)^warp_exp,
   * the warps NCCL launches per channel, which it computes from its own
   * channel count for the size (enqueue.cc topoGetAlgoInfo), not from the
   * count a tuner asks for. 0: no scaling. */
  double warp_exp;
};

/* The physical truth (sim/phys.c, docs/sim.md "The truth"): global
 * parameters, the same for every box, from which a box's truth is computed
 * from its hardware. Latencies in us, bandwidths in GB/s. */
enum { PT_PHYS_SW = 0, PT_PHYS_RC = 1, PT_PHYS_SYS = 2, PT_PHYS_SHM = 3 };
struct pt_phys {
  double base_us[3];  /* per protocol: fixed cost of one collective */
  double step_us[3];  /* per protocol: GPU-side cost of one pipeline step */
  double hop_us[4];   /* per step, per element crossed: PCIe switch, root complex
                         (a path through the CPU), socket interconnect, host
                         memory staging (SHM) */
  double chan_bw[3];  /* per protocol: wire GB/s one channel with NCCL's full
                         warps drives */
  double pcie_eff;    /* fraction of a PCIe link's raw rate GPU writes reach */
  double sys_bw;      /* GB/s of GPU peer traffic across sockets */
  double shm_bw;      /* GB/s of the host staging copy (SHM) */
  double chan_us;     /* latency per running channel beyond the first */
  double overlap[3];  /* per protocol: q of the truth's formula */
  double launch_us[PT_NMODES];
  double warp_exp;    /* a channel's bandwidth scales as (warps / full warps)^warp_exp */
  double rc_bw;       /* GB/s of GPU peer traffic one CPU's root complex forwards
                         between its root ports, shared by every ring hop routed
                         through that CPU */
};
#define PT_PHYS_NPARAM 24

/* A published measurement the box is calibrated against. algo < 0 means
 * "NCCL's default choice"; otherwise the latency of that candidate.
 * comm_channels > 0: the measurement ran on a communicator with that many
 * channels (e.g. under NCCL_GRAPH_FILE), not the box's own. held_out: kept
 * out of the fit, to report the model's out-of-sample error. */
struct pt_box_anchor {
  int coll, mode;
  uint64_t nbytes;
  int algo, proto, channels;
  double lat_us;
  char source[160]; /* data file (test/data/real) or reference it comes from */
  int comm_channels;
  int held_out;
  char curve[32]; /* which published curve ("" = NCCL's default; else a forced one) */
};

/* Where a box's NCCL view comes from. */
enum pt_view_source {
  PT_VIEW_DERIVED = 0, /* derived from hw by NCCL's search (sim/nccl_derive.c) */
  PT_VIEW_TYPED = 1,   /* typed by hand in the box file: an override */
};

/* A combination that misbehaves on this box, for backends to report. */
struct pt_box_fault {
  int coll; /* -1 = any */
  int algo, proto;
  uint64_t min_bytes, max_bytes; /* inclusive */
  int state;                     /* PT_PT_WRONG, PT_PT_CRASH or PT_PT_HANG */
};

/* The NCCL release the simulator models unless a box file says otherwise:
 * the built-in boxes' views, and the simulated host's tuner probing
 * (sim/host.c). */
#define PT_SIM_NCCL "2.30"

struct pt_box {
  char name[64];
  char desc[256];
  int nranks, nnodes;
  struct pt_box_truth truth;
  struct pt_nccl_params nccl; /* NCCL's view */
  int view_source;            /* enum pt_view_source */
  int has_hw;                 /* 1: hw holds the box's hardware */
  struct pt_hw hw;
  struct pt_nccl_view derived; /* the full derivation when view_source is derived */
  char nccl_version[64]; /* the NCCL whose view the box and its anchors model (PT_SIM_NCCL) */
  int phys;              /* 1: truth computed from hw by the physical model */
  /* Measurement noise: each sample is truth * exp(N(0, sigma)); with
   * probability outlier_prob it is further multiplied by 1 + U(0,1) *
   * outlier_scale (a preempted or late rank). */
  double noise_sigma, outlier_prob, outlier_scale;
  size_t nanchors;
  struct pt_box_anchor anchors[PT_BOX_MAX_ANCHORS];
  size_t nfaults;
  struct pt_box_fault faults[PT_BOX_MAX_FAULTS];
  /* NCCL_BUFFSIZE the box's jobs run with (0: unset, NCCL's 4 MiB). The
   * truth is fitted on tables measured with NCCL's default; another size
   * moves Simple ring all-reduce by what sim/ring_chunks.c derives. */
  uint64_t nccl_buffsize;
};

/* ---- built-in boxes (sim/boxes.c) ---- */
size_t pt_box_builtin_count(void);
const struct pt_box *pt_box_builtin_at(size_t i);
const struct pt_box *pt_box_builtin(const char *name); /* NULL when unknown */
const char *pt_box_default_name(void);

/* ---- box files (sim/box_file.c, format in docs/sim.md) ---- */
/* Loads a libconfig box description. On failure fills *err ("file:line:
 * what") and returns PT_EIO, PT_ESYNTAX or PT_EINVAL. */
int pt_box_load(struct pt_box *b, const char *path, struct pt_error_rec *err);
/* The same for a box file's text already in memory; path names it in errors. */
int pt_box_parse(struct pt_box *b, const char *text, const char *path, struct pt_error_rec *err);
/* A built-in name, or else a file path. */
int pt_box_resolve(struct pt_box *b, const char *name_or_path, struct pt_error_rec *err);
/* Checks ranges; returns 0 or PT_EINVAL with err->msg set (no file/line). */
int pt_box_check(const struct pt_box *b, struct pt_error_rec *err);
/* Derives b->nccl from b->hw (view_source becomes derived). Returns 0, or
 * PT_EINVAL with err->msg set. */
int pt_box_derive(struct pt_box *b, struct pt_error_rec *err);
/* "derived from hardware (ring 2 x 24.0 GB/s PHB, 4 channels)" or "typed by
 * hand (override)": for provenance and show. */
void pt_box_view_label(const struct pt_box *b, char *buf, size_t len);
/* What a box's truth cannot be trusted for, in one sentence (docs/sim.md,
 * "Leave-one-out"), or NULL: the physical truth of a box where NCCL stages
 * GPU pairs through host memory (SHM) rests on two consumer tables only. */
const char *pt_box_truth_caveat(const struct pt_box *b);

/* ---- the physical truth (sim/phys.c, sim/phys_fit.c) ---- */
/* The global parameters fitted on every table in the .box.cfg files of test/data/real
 * (test_sim_loo refits them and checks these are the fit's). */
const struct pt_phys *pt_phys_fitted(void);
/* The physical starting point of that fit, and its prior. */
const struct pt_phys *pt_phys_prior(void);
/* Parameters as a vector of PT_PHYS_NPARAM positive numbers, and back. */
void pt_phys_to_vec(const struct pt_phys *p, double *v);
void pt_phys_from_vec(struct pt_phys *p, const double *v);
const char *pt_phys_param_name(int i);
/* Computes b->truth from b->hw, b->derived (NCCL's view: which pairs use
 * P2P) and ph; sets b->phys. b's view must be derived. */
void pt_box_truth_from_hw(struct pt_box *b, const struct pt_phys *ph);
/* The model's latency for an anchor: NCCL's default on the box's view, or
 * the named candidate (channels 0: NCCL's own count), on the anchor's
 * communicator when it names one (comm_channels). */
double pt_box_anchor_us(const struct pt_box *b, const struct pt_box_anchor *a);
/* Fits the parameters whose bit is set in mask (bit i: parameter i of the
 * vector) on the anchors of boxes[i] for every i != skip (skip -1: all),
 * each table weighted equally, with a weak prior towards start; the others
 * keep start's values. boxes[i] must have hardware; their truth is
 * recomputed from the result. Returns the final objective.
 * PT_PHYS_FIT_P2P: what P2P tables determine (all but the host-memory hop
 * and bandwidth, Simple's overlap, which is NCCL's additive 1, and the
 * launch costs, which these eager tables cannot tell from the fixed
 * costs); PT_PHYS_FIT_SHM: the host-memory hop and bandwidth. */
#define PT_PHYS_FIT_SHM ((1ul << 9) | (1ul << 15))
#define PT_PHYS_FIT_P2P ((((1ul << 19) - 1) | (1ul << 22) | (1ul << 23)) & ~PT_PHYS_FIT_SHM)
double pt_phys_fit(struct pt_box *boxes, size_t nboxes, long skip, unsigned long mask,
                   const struct pt_phys *start, struct pt_phys *out);

/* The model's error on one published curve of a box: |ln(model/published)|
 * over its anchors with lo <= bytes <= hi. */
struct pt_curve_err {
  char curve[32]; /* "" = NCCL's default */
  int n;
  double median, p90; /* p90: nearest rank */
};
/* One entry per curve of b's anchors, in the order first seen; returns the
 * count (at most max). */
size_t pt_box_curve_errors(const struct pt_box *b, uint64_t lo, uint64_t hi, struct pt_curve_err *out,
                           size_t max);

/* ---- the truth's out-of-sample error (sim/oos.c) ---- */
struct pt_oos_err {
  const char *machine; /* "voipmonitor-turin" */
  int rows;            /* published rows at 0.5-2 MiB, every curve */
  double median, p90;  /* |ln(model/published)| with the machine left out */
};
/* The machine a published table (file name, any directory) was measured
 * on: its name's last two words ("voipmonitor-turin"). */
void pt_table_machine(const char *name, char *out, size_t len);
/* The figures of machine, or of the machine b's fitted rows come from;
 * NULL when none of its published rows lies at 0.5-2 MiB. */
const struct pt_oos_err *pt_oos_find(const char *machine);
const struct pt_oos_err *pt_box_oos(const struct pt_box *b);
/* One sentence for box and simulate: that error, or that it is unknown. */
void pt_box_oos_line(const struct pt_box *b, char *buf, size_t len);

/* ---- NCCL's chunking (sim/ring_chunks.c; where a tuner's chunk acts:
 * include/pcie/chunk.h) ---- */
#define PT_NCCL_BUFFSIZE_DEFAULT ((uint64_t)4 << 20) /* init.cc DEFAULT_BUFFSIZE */
/* buffsize, or NCCL's default when 0. */
uint64_t pt_ring_buffsize(uint64_t buffsize);
/* The chunk (coll, algo, proto) runs with for a channel's part of part
 * bytes, NCCL_BUFFSIZE buffsize (0: default) and a tuner's chunk (0:
 * NCCL's own; above NCCL's ceiling: the ceiling), rounded to the grain;
 * 0 on a path pt_chunk_reach does not offer. */
uint64_t pt_chunk_run(int coll, int algo, int proto, uint64_t buffsize, uint64_t chunk, int nranks,
                      uint64_t part);
/* The pieces one channel's part of chan_bytes runs each step of its chain
 * in, summed over its loops (*loops, may be NULL): Simple slices on a
 * ring, chunks on a tree. 1 on a path not offered. */
unsigned long pt_chunk_pieces(int coll, int algo, int proto, uint64_t buffsize, uint64_t chunk, int nranks,
                              uint64_t chan_bytes, unsigned long *loops);
/* The pieces (algo, proto) may have in flight on one connection: NCCL_STEPS
 * FIFO slots over the steps a piece takes. */
unsigned pt_chunk_window(int algo, int proto);
/* Time of pieces streamed through k dependent steps of hop_us latency
 * each, moving xfer_us of transfer in all, at most window pieces in flight
 * per link (sim/ring_chunks.c). */
double pt_chunk_pipe_us(int k, unsigned long pieces, unsigned window, double hop_us, double xfer_us);

/* ---- the truth (sim/box.c) ---- */
/* True latency in us of (algo, proto, channels) without noise, or -1 when the
 * algorithm does not exist for coll (Tree outside all-reduce, CollNet, ...).
 * Channels are clamped to [1, nccl.comm_channels] as NCCL clamps a tuner's
 * nChannels to the communicator's, then reduced to those NCCL's scheduler
 * really uses for this message (pt_box_running_channels). */
double pt_box_true_us(const struct pt_box *b, int coll, int mode, int algo, int proto,
                      int channels, uint64_t nbytes);
/* The same with a chunk of chunk bytes (a tuner's getChunkSize; 0:
 * NCCL's own), where pt_chunk_reach offers one. */
double pt_box_true_chunk_us(const struct pt_box *b, int coll, int mode, int algo, int proto,
                            int channels, uint64_t nbytes, uint64_t chunk);
/* The request after NCCL's clamp to comm->nChannels. */
int pt_box_effective_channels(const struct pt_box *b, int channels);
/* The channels that really run: the clamped request, spread in cells over
 * channels by NCCL's scheduler (fewer for small messages). */
int pt_box_running_channels(const struct pt_box *b, int coll, int proto, int channels,
                            uint64_t nbytes);
/* PT_PT_OK, or the state a fault makes this combination report. */
int pt_box_fault_state(const struct pt_box *b, int coll, int algo, int proto, uint64_t nbytes);

/* ---- NCCL's view of the box ---- */
void pt_box_nccl_table(const struct pt_box *b, int coll, uint64_t nbytes, float table[7][3]);
/* What an untuned job runs: NCCL's selection and its own channel count.
 * Returns 0, or -1 when NCCL has nothing usable. */
/* The channels a collective that NCCL's tuning gave ch runs on: from NCCL
 * 2.31.2, at least NCCL_MIN_CTAS (hw.min_ctas), at most the communicator's;
 * ch unchanged before 2.31.2 or without the variable. */
int pt_box_task_channels(const struct pt_box *b, int ch);
int pt_box_nccl_default(const struct pt_box *b, int coll, uint64_t nbytes, int *algo,
                        int *proto, int *channels);
/* True latency of NCCL's default, -1 when none. */
double pt_box_default_us(const struct pt_box *b, int coll, int mode, uint64_t nbytes);
/* The best true latency over every (algo, proto) NCCL leaves usable (entry
 * >= 0) and that has no fault at any size for coll, and every channel count 1..comm_channels; -1 when none.
 * The arguments after nbytes may be NULL. */
double pt_box_oracle_us(const struct pt_box *b, int coll, int mode, uint64_t nbytes, int *algo,
                        int *proto, int *channels);

/* ---- reproducible noise (sim/noise.c) ---- */
/* A deterministic key for one measured point: the same inputs give the same
 * key in every process, whatever order points are measured in. */
uint64_t pt_noise_key(int coll, int mode, int algo, int proto, int channels, uint64_t nbytes);
/* The multiplicative noise of repetition rep of the point key under seed. */
double pt_noise_factor(const struct pt_box *b, uint64_t seed, uint64_t key, unsigned rep);

#endif
