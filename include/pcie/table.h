/*
 * The compiled decision table: each collective and launch mode of a profile
 * turned into sorted size intervals, each with up to PT_MAX_RANKED candidates
 * ranked by latency (see docs/decisions.md). Built once, then immutable: any
 * thread may look up and apply without locks. The hot-path functions
 * (pt_table_decide, pt_table_lookup, pt_table_apply*, pt_table_chunk) never
 * allocate, lock, log or touch libconfig.
 */
#ifndef PCIE_TABLE_H
#define PCIE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/common.h"
#include "pcie/profile.h"

#define PT_MAX_RANKED 4
#define PT_NKEYS 976 /* 16 small sizes + 60 octaves x 16 */

struct pt_choice {
  int8_t algo, proto;
  uint8_t channels;     /* requested; 0 = keep NCCL's count (rules only) */
  uint8_t set_channels; /* what the plugin writes to *nChannels after its own
                           clamp (communicator.channels, see table.c); 0 = it
                           leaves NCCL's count alone */
  uint8_t from_rule;    /* 1 when a hand rule put it here */
  uint8_t pad;
  uint16_t pipe_lo, pipe_hi; /* a rule's numPipeOps range; 0 = unbounded */
  uint32_t chunk;    /* bytes, 0 = NCCL's own */
  float lat_us;      /* expected latency at the interval's reference size; 0 when unknown */
};

/* Why an interval has the ranked list it has (for show and the trace). */
enum pt_iv_kind {
  PT_IV_MEASURED = 0, /* candidates beat NCCL's default by the margin */
  PT_IV_NO_GAIN,      /* measured, and no candidate beats NCCL's default by the margin */
  PT_IV_OUTSIDE,      /* outside the measured size range */
  PT_IV_NO_DATA,      /* inside the range, but nothing usable was measured there */
  PT_IV_NCCL_FAILS,   /* NCCL's own choice fails here: every working candidate is ranked */
  PT_IV_MODES_DIFFER, /* graph and eager rank differently: only their common prefix (maybe
                         nothing) is kept, since regBuff differs between ranks */
  PT_IV_NO_DEFAULT,   /* candidates measured, NCCL's default not: a measured choice is
                         made only where NCCL's own was measured too, so NCCL decides */
};

struct pt_interval {
  uint64_t lo, hi; /* inclusive byte range */
  uint8_t n;       /* ranked candidates; 0 = NCCL decides */
  uint8_t kind;    /* enum pt_iv_kind of the measured part */
  struct pt_choice c[PT_MAX_RANKED];
  float default_us; /* NCCL default's interpolated latency, or -1 */
};

/* An interval's ranked list packed for the hot path (32 bytes). */
struct pt_hot {
  int8_t algo[PT_MAX_RANKED], proto[PT_MAX_RANKED];
  uint8_t channels[PT_MAX_RANKED]; /* written to *nChannels; 0 = left alone */
  uint8_t n;
  uint8_t cond; /* bit k: entry k holds only for numPipeOps in [pipe_lo, pipe_hi] */
  /* bit algo x 3 + proto (Tree/Ring x LL/LL128/Simple): combinations NCCL
   * did not run when the profile was measured (recorded unsupported, or never
   * measured and not shown enabled). Where NCCL's own best entry is one of
   * them, the measured default says nothing about what NCCL now runs: the
   * call is left to NCCL (table.c, unseen_combos). */
  uint8_t unseen;
  uint8_t pad;
  uint16_t pipe_lo[PT_MAX_RANKED], pipe_hi[PT_MAX_RANKED];
};

/* One collective in one mode. Intervals cover 0..UINT64_MAX without gaps. */
struct pt_ivset {
  size_t n;
  struct pt_interval *iv;
  /* Hot mirrors of iv[], so a lookup touches few bytes per interval. */
  uint64_t *his;      /* iv[i].hi */
  struct pt_hot *hot; /* iv[i]'s ranked list */
  /* start[k] = the interval holding the smallest size of key k (16 keys per
   * power of two, see table.c). A lookup searches from there over a fixed
   * number of steps, so its cost does not grow with the profile. */
  uint32_t start[PT_NKEYS + 1];
  size_t top; /* search steps: log2(top) + 1 for every lookup in this set */
};

struct pt_table {
  /* NULL when the profile has nothing for that collective. One set serves
   * both modes: graph and eager (each compiled from its own series or,
   * lacking one, the other mode's) merged so that regBuff, which is not the
   * same on every rank, cannot change a decision (table.c, merge_modes). */
  const struct pt_ivset *set[PT_NCOLL];
  size_t ninterval; /* total over all sets, for the init log line */
  size_t nsets;     /* collective tables with intervals */
  /* The channel policy (docs/decisions.md): comm_channels from the profile
   * (0 = unknown); chan_cap = the clamp used when it is unknown (the
   * smallest channel count measured, 0 = none). */
  int comm_channels, chan_cap;
  /* 1: the profile's LL128 correctness screen failed (pt_ll128_screen):
   * NCCL's LL128 entries are ignored (table.c, pt_table_decide). */
  int no_ll128;
  /* The communicator's ranks (0 = unknown): where a chunk takes effect. */
  int nranks;
  struct pt_ivset storage[PT_NCOLL];
};

/* A series' latency at nbytes, interpolated linearly in log(size)/log(latency)
 * between the two measured sizes around it (both must be PT_PT_OK), or the
 * nearest measured value outside the measured range. Returns -1 when that
 * value is not measured. pts is one of the series' point arrays. */
double pt_interp_latency(const struct pt_series *s, const struct pt_point *pts, uint64_t nbytes);

/* The series serving (coll, mode): the mode's own, else the other mode's. */
const struct pt_series *pt_profile_series(const struct pt_profile *p, int coll, int mode);

/* Compiles a validated profile for a communicator of nranks x nnodes (0 =
 * unknown: rules conditioned on it are kept). Returns 0 or PT_ENOMEM. */
int pt_table_build_for(struct pt_table *t, const struct pt_profile *p, size_t nranks,
                       size_t nnodes);
/* pt_table_build_for(t, p, 0, 0). */
int pt_table_build(struct pt_table *t, const struct pt_profile *p);
/* 1 when some rule applies only to some communicators (nranks/nnodes), so a
 * shared table cannot serve every communicator. */
int pt_profile_has_comm_rules(const struct pt_profile *p);
void pt_table_release(struct pt_table *t);

/* The interval for (coll, nbytes), or NULL when the profile has no data for
 * coll or coll is out of range. mode does not matter (both modes decide from
 * one merged list, see struct pt_table); it is checked for range only. */
const struct pt_interval *pt_table_lookup(const struct pt_table *t, int coll, int mode,
                                          uint64_t nbytes);

/* Applies an interval to NCCL's cost table (float[num_algo][num_proto]): the
 * first ranked candidate that holds for num_pipe_ops (a grouped call,
 * num_pipe_ops > 1, only for a rule with a numPipeOps range) and whose entry
 * is usable (>= 0, and not over PT_STEER_AWAY_RATIO x NCCL's own best) gets 0.0,
 * and its set_channels (when not 0) go to *nchannels. Returns the index of
 * the applied candidate, or -1 with nothing changed. */
int pt_table_apply(const struct pt_interval *iv, float *cost, int num_algo, int num_proto,
                   int num_pipe_ops, int *nchannels);

/* pt_table_apply over a packed ranked list (the profiler's forced choice). */
int pt_table_apply_packed(const struct pt_hot *h, float *cost, int num_algo, int num_proto,
                          int num_pipe_ops, int *nchannels);

/* The hot path: lookup and apply in one, on the packed mirrors. Returns the
 * applied rank (or -1, nothing changed); *iv gets the interval (or NULL). */
int pt_table_decide(const struct pt_table *t, int coll, uint64_t nbytes, float *cost,
                    int num_algo, int num_proto, int num_pipe_ops, int *nchannels,
                    const struct pt_interval **iv);

/* getChunkSize: the chunk of the decision NCCL runs as (algo, proto) for a
 * part of nbytes bytes (one channel's part of a call, or a whole CollNet
 * call; table.c says how NCCL asks). Every decision of calls that can have
 * such a part must agree. Returns the chunk rounded down to the protocol's
 * grain (never below it), 0 when that is NCCL's own or the part is at most
 * pt_chunk_reach (the device code recomputes or never uses the chunk
 * there), or -1 when they disagree or the profile has no data. */
long long pt_table_chunk(const struct pt_table *t, int coll, uint64_t nbytes, int algo, int proto);

/* 1 when an NCCL version string ("2.31.0", "2.32", ...) is 2.31 or later:
 * there the tuner's channel count is only a cap under NCCL's own size
 * heuristic (dev: src/tuning/tuning_general.cc, ncclTuningGetChannels). */
int pt_nccl_caps_channels(const char *nccl_version);
/* What NCCL 2.31+ runs when the tuner asks for ch channels (ch > 0) at
 * nbytes: ch, lowered while nbytes < nc x maxThreads x threadThreshold
 * (Simple 512 x 64, LL 512 x 8, x nranks for Ring, LL128 640 x 8), never
 * below 1. CollNet/NVLS keep their own counts: ch. For ch <= comm->nChannels
 * this is NCCL's min(heuristic from comm->nChannels, ch); test_sim_derive
 * checks it against dev's ncclTuningGetChannels on every 2.31 output of
 * test/data/nccl-real, every cap and size. */
int pt_nccl_channels_run(int ch, int nranks, int algo, int proto, uint64_t nbytes);

/* 1 where NCCL uses the tuner's channel count without clamping it to
 * comm->nChannels, so the plugin never writes one there: the AllGatherV
 * path of NCCL 2.29.2 and later asks about an all-gather and takes the count
 * as the number of channels to spread over (scheduler/allgatherv_sched.cc,
 * scheduleCollTasksToPlan's AllGatherV branch), and CollNet tasks run on
 * task->nMaxChannels as given (enqueue.cc, scheduleCollTasksToPlan,
 * task->isCollnet). The plugin cannot see comm->nChannels, which can be
 * below the profile's (docs/decisions.md, "Channels"). Only candidates
 * measured with NCCL's own count (channels 0) are ranked there, and the
 * sweep measures them so (measure/sweep.c). */
static inline int pt_channels_unclamped(int coll, int algo) {
  return coll == PT_ALLGATHER || algo == NCCL_ALGO_COLLNET_DIRECT || algo == NCCL_ALGO_COLLNET_CHAIN;
}

#endif
