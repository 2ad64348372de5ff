/*
 * The sweep engine behind `pcie-tune profile`, and the seam every measurement
 * backend plugs into (the simulated box today, the GPU worker later).
 *
 * A backend only measures: given one candidate (or NCCL's default) at one
 * size it runs repetitions and returns latencies, or says the combination is
 * unsupported, gave a wrong result, crashed or hung. It never decides what to
 * measure next; the engine does, identically for every backend. A backend
 * that runs candidates in an isolated worker process reports a dead worker as
 * PT_PT_CRASH and a timeout as PT_PT_HANG, and keeps going.
 *
 * The engine measures NCCL's default and every candidate with repetitions,
 * keeps median and spread, and by default sweeps adaptively (docs/cli.md):
 * a coarse grid screened with few repetitions, candidates dominated by a
 * clear margin at every coarse size dropped, contenders confirmed with full
 * repetitions, sizes bisected where the winner changes. `full` measures the
 * whole grid. Not thread-safe: one sweep per struct pt_sweep.
 */
#ifndef PCIE_SWEEP_H
#define PCIE_SWEEP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pcie/hostinfo.h"
#include "pcie/profile.h"

#define PT_SWEEP_MAX_REPS 64
#define PT_SWEEP_MAX_SIZES 64

/* One measurement order. is_default: NCCL's own choice, algo/proto/channels
 * unused. Repetitions are numbered first_rep .. first_rep + reps - 1 so that
 * a deterministic backend (the simulator) draws the same samples whether a
 * point is measured at once or topped up later. */
struct pt_measure_req {
  int coll, mode;
  uint64_t nbytes;
  int is_default;
  int algo, proto, channels;
  unsigned first_rep, reps;
  /* 1: a correctness screen, not a measurement (measure/screen.h): reps
   * replays whose inputs change every replay, every output of every rank
   * checked; the samples need not be timed. */
  unsigned screen;
  /* Chunk in bytes the tuner's getChunkSize answers (0: NCCL's own);
   * include/pcie/chunk.h says where it changes anything. */
  uint32_t chunk;
};

struct pt_measure_res {
  int state;         /* enum pt_point_state; samples are valid only for PT_PT_OK */
  char detail[256];  /* why, for other states (e.g. "worker killed by signal 11") */
};

struct pt_backend_info {
  char name[64];          /* "sim", "gpu" */
  char target[256];       /* the box or the GPUs, for provenance */
  char nccl_version[32];
  int nranks, nnodes;
  int max_channels;       /* candidates above this are not measured */
  int comm_channels;      /* comm->nChannels as NCCL built it; 0 = not known */
  struct pt_box_fp box;   /* where it measures (provenance.box); ngpus 0 = not known */
};

struct pt_backend {
  void *self;
  int (*info)(void *self, struct pt_backend_info *out);
  /* Runs req->reps repetitions and writes their latencies in us to
   * samples[0 .. reps). Returns 0 with the outcome in *res, including
   * WRONG/CRASH/HANG, or a negative PT_E* code with *err filled when the
   * backend itself can no longer measure (the sweep stops). */
  int (*measure)(void *self, const struct pt_measure_req *req, double *samples,
                 struct pt_measure_res *res, struct pt_error_rec *err);
  void (*close)(void *self); /* frees self; may be NULL */
};

struct pt_cand_spec {
  int algo, proto, channels;
  uint32_t chunk; /* bytes for getChunkSize; 0: NCCL's own */
};

/* What the engine reports after each measurement. */
struct pt_sweep_progress {
  double fraction;      /* 0..1 over the whole sweep */
  const char *series;   /* "allreduce/graph" */
  const char *phase;    /* "screen", "confirm", "refine", "default", "full" */
  uint64_t samples;     /* repetitions run so far */
};

struct pt_sweep_opts {
  uint64_t min_bytes, max_bytes; /* the grid: powers of two between them */
  const uint64_t *sizes;         /* or, when nsizes > 0, exactly these (ascending, */
  size_t nsizes;                 /* distinct, at most PT_SWEEP_MAX_SIZES) */
  unsigned coll_mask;            /* 1 << PT_ALLREDUCE, ... */
  unsigned mode_mask;            /* 1 << PT_MODE_GRAPH, ... */
  const struct pt_cand_spec *cands;
  size_t ncand;
  unsigned reps;        /* full repetitions, 1..PT_SWEEP_MAX_REPS */
  unsigned screen_reps; /* repetitions when screening, 1..reps */
  int full;             /* 1: every candidate at every grid size */
  double margin;        /* screening drops a candidate slower than the best by
                           more than this fraction at every coarse size */
  double tol;           /* refinement stops where using either end's winner
                           across an interval costs at most this fraction */
  unsigned coarse_log2; /* coarse grid every 2^coarse_log2 */
  uint64_t budget;      /* stop after this many samples; 0 = no limit */
  /* Whether candidate c is measured for coll at nbytes (NULL: every one
   * everywhere); a point it refuses stays missing. profile --chunks
   * measures a chunk variant only where NCCL's device code uses its chunk. */
  int (*measures)(void *arg, int coll, const struct pt_cand_spec *c, uint64_t nbytes);
  void *measures_arg;
  volatile sig_atomic_t *stop; /* set asynchronously (SIGINT) to stop early */
  void (*progress)(void *arg, const struct pt_sweep_progress *p);
  void *progress_arg;
};

/* Fills o with the defaults documented in docs/cli.md (no candidates). */
void pt_sweep_opts_default(struct pt_sweep_opts *o);

struct pt_sweep_series; /* opaque */

struct pt_sweep {
  struct pt_sweep_opts opts; /* copy; cands points at a private copy */
  size_t nseries;
  struct pt_sweep_series *series;
  uint64_t samples;  /* repetitions run by this process */
  uint64_t calls;    /* backend calls */
  int stopped;       /* 1 when stop or budget ended the run early */
};

/* Allocates the grid for every (collective, mode) of o. Returns 0 or
 * PT_EINVAL (err->msg says which option) / PT_ENOMEM. */
int pt_sweep_init(struct pt_sweep *s, const struct pt_sweep_opts *o, struct pt_error_rec *err);
void pt_sweep_release(struct pt_sweep *s);

/* Pre-fills one point from an earlier partial profile (resume). nreps is how
 * many repetitions the stored median came from. Unknown points are ignored.
 * Returns 1 when the point was taken, 0 otherwise. */
int pt_sweep_seed_point(struct pt_sweep *s, int coll, int mode, const struct pt_cand_spec *c,
                        uint64_t nbytes, const struct pt_point *pt, unsigned nreps);

/* Runs (or continues) the sweep. Returns 0, also when stopped early (then
 * s->stopped is 1), or the backend's negative code with *err filled. */
int pt_sweep_run(struct pt_sweep *s, const struct pt_backend *b, struct pt_error_rec *err);

/* Copies every measured point into p's series (sizes measured by anyone;
 * candidates with at least one point that is not missing or unsupported).
 * p's other fields are left to the caller. *reps_text receives a malloc'ed
 * libconfig list body "( { collective = ...; mode = ...; nreps = [...]; }, ... )"
 * giving the repetitions behind every point, row by row (candidates in
 * profile order, then nccl_default), for resuming. */
int pt_sweep_to_profile(const struct pt_sweep *s, struct pt_profile *p, char **reps_text);

/* The cross product of algorithms (bit mask of NCCL_ALGO_*), protocols
 * (mask of NCCL_PROTO_*) and channel counts, leaving out channel counts above
 * max_channels. Writes at most max entries; returns how many it wrote. */
size_t pt_sweep_cands(unsigned algo_mask, unsigned proto_mask, const int *channels, size_t nch,
                      int max_channels, struct pt_cand_spec *out, size_t max);

/* Sample statistics used for every point. Sorts v in place. */
double pt_median(double *v, size_t n);
double pt_rel_iqr(double *v, size_t n); /* interquartile range / median */

#endif
