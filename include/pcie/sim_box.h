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

#define PT_BOX_MAX_ANCHORS 24
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
 *   bw = eff[p] * wire,  wire = min(ch * chan_bw[p], link_bw[p])
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
};

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
  /* Measurement noise: each sample is truth * exp(N(0, sigma)); with
   * probability outlier_prob it is further multiplied by 1 + U(0,1) *
   * outlier_scale (a preempted or late rank). */
  double noise_sigma, outlier_prob, outlier_scale;
  size_t nanchors;
  struct pt_box_anchor anchors[PT_BOX_MAX_ANCHORS];
  size_t nfaults;
  struct pt_box_fault faults[PT_BOX_MAX_FAULTS];
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

/* ---- the truth (sim/box.c) ---- */
/* True latency in us of (algo, proto, channels) without noise, or -1 when the
 * algorithm does not exist for coll (Tree outside all-reduce, CollNet, ...).
 * Channels are clamped to [1, nccl.comm_channels] as NCCL clamps a tuner's
 * nChannels to the communicator's, then reduced to those NCCL's scheduler
 * really uses for this message (pt_box_running_channels). */
double pt_box_true_us(const struct pt_box *b, int coll, int mode, int algo, int proto,
                      int channels, uint64_t nbytes);
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
