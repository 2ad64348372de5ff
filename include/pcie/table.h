/*
 * The compiled decision table: each collective and launch mode of a profile
 * turned into sorted size intervals, each with up to PT_MAX_RANKED candidates
 * ranked by latency (see docs/decisions.md). Built once, then immutable: any
 * thread may look up and apply without locks. The hot-path functions
 * (pt_table_lookup, pt_table_apply, pt_table_chunk) never allocate, lock,
 * log or touch libconfig.
 */
#ifndef PCIE_TABLE_H
#define PCIE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/profile.h"

#define PT_MAX_RANKED 4

struct pt_choice {
  int8_t algo, proto;
  uint8_t channels;
  uint8_t from_rule; /* 1 when a hand rule put it here */
  uint32_t chunk;    /* bytes, 0 = NCCL's own */
  float lat_us;      /* expected latency at the interval's reference size; 0 for rules */
};

struct pt_interval {
  uint64_t lo, hi; /* inclusive byte range */
  uint8_t n;       /* ranked candidates */
  struct pt_choice c[PT_MAX_RANKED];
  float default_us; /* NCCL default's interpolated latency, or -1 */
};

/* One collective in one mode. Intervals cover 0..UINT64_MAX without gaps. */
struct pt_ivset {
  size_t n;
  struct pt_interval *iv;
  /* bucket[k] = index of the interval holding 2^k (k = 0..64, bucket[0] also
   * holds 0); the lookup scans forward from there, bounded by the intervals
   * inside one power of two. */
  uint32_t bucket[65];
};

struct pt_table {
  /* NULL when the profile has nothing for that collective. A mode without
   * data of its own is compiled from the other mode's series. */
  const struct pt_ivset *set[PT_NCOLL][PT_NMODES];
  size_t ninterval; /* total over all sets, for the init log line */
  struct pt_ivset storage[PT_NCOLL][PT_NMODES];
};

/* A series' latency at nbytes, interpolated linearly in log(size)/log(latency)
 * between the two measured sizes around it (both must be PT_PT_OK), or the
 * nearest measured value outside the measured range. Returns -1 when that
 * value is not measured. pts is one of the series' point arrays. */
double pt_interp_latency(const struct pt_series *s, const struct pt_point *pts, uint64_t nbytes);

/* The series serving (coll, mode): the mode's own, else the other mode's. */
const struct pt_series *pt_profile_series(const struct pt_profile *p, int coll, int mode);

/* Compiles a validated profile. Returns 0 or PT_ENOMEM. */
int pt_table_build(struct pt_table *t, const struct pt_profile *p);
void pt_table_release(struct pt_table *t);

/* The interval for (coll, mode, nbytes), or NULL when the profile has no data
 * for coll or coll is out of range. */
const struct pt_interval *pt_table_lookup(const struct pt_table *t, int coll, int mode,
                                          uint64_t nbytes);

/* Applies an interval to NCCL's cost table (float[num_algo][num_proto]): the
 * first ranked candidate whose entry is >= 0 gets 0.0 and its channels go to
 * *nchannels. Returns the index of the applied candidate, or -1 with nothing
 * changed. */
int pt_table_apply(const struct pt_interval *iv, float *cost, int num_algo, int num_proto,
                   int *nchannels);

/* The chunk size a candidate (algo, proto) asks for at nbytes in mode, rounded
 * down to the protocol's grain and never below it; 0 when the profile sets
 * none. */
size_t pt_table_chunk(const struct pt_table *t, int coll, int mode, uint64_t nbytes, int algo,
                      int proto);

#endif
