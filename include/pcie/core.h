/*
 * The tuner core behind every ABI shim: one context per communicator, a
 * profile chosen and compiled at init, decisions from the compiled table.
 *
 * pt_core_init never fails a communicator: when no profile applies (none
 * found, invalid, ambiguous, out of memory) it logs once and returns a
 * passive context (or NULL), and every decision is left to NCCL.
 * pt_core_decide and pt_core_chunk are the hot path: no allocation, lock,
 * logging (unless PCIE_TUNER_TRACE=1 was set at init) or parsing; safe to
 * call from any number of threads on any number of contexts at once.
 */
#ifndef PCIE_CORE_H
#define PCIE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/common.h"
#include "pcie/profile.h"
#include "pcie/table.h"

/* A loaded, validated and compiled profile; immutable once published and
 * shared by every communicator that selected it (reference-counted). */
struct pt_loaded {
  struct pt_profile prof;
  struct pt_table table;
};

/* The process-wide cache of loaded profiles, keyed by path and content
 * hash; the file is read outside the lock (tuner/registry.c). Thread-safe
 * (one mutex, init/finalize only).
 * acquire returns 0 with *out referenced, or an error with *err filled. */
int pt_registry_acquire(const char *path, const struct pt_loaded **out, struct pt_error_rec *err);
void pt_registry_release(const struct pt_loaded *l);
size_t pt_registry_count(void); /* live entries, for tests */

/* Profile selection for a communicator (docs/profile-format.md, Selection).
 * spec is PCIE_TUNER_PROFILE's value, or NULL for the installed directory.
 * Returns 0 with *out referenced; PT_ENOENT when nothing matches (msg says
 * what was searched); PT_EAMBIG when two equally specific profiles match;
 * another error for an unreadable or invalid profile. msg gets one line. */
int pt_select_profile(const char *spec, size_t nranks, size_t nnodes,
                      const struct pt_loaded **out, char *msg, size_t msglen);

/* Which algorithms and protocols NCCL enables per collective, from
 * NCCL_ALGO/NCCL_PROTO (graph/tuning.cc): 0 off, 1 on; proto 2 = NCCL's
 * "auto" for LL128 (off on a PCIe-only node). */
struct pt_nccl_enable {
  unsigned char algo[PT_NCOLL][NCCL_NUM_ALGORITHMS];
  unsigned char proto[PT_NCOLL][NCCL_NUM_PROTOCOLS];
};

struct pt_ctx {
  const struct pt_loaded *loaded; /* NULL: passive, NCCL decides */
  const struct pt_table *table;   /* loaded's table, or own */
  struct pt_table *own;           /* compiled for this communicator (rules on nranks/nnodes) */
  ncclDebugLogger_t log;
  size_t nranks, nnodes;
  uint64_t comm_id;
  int trace;        /* PCIE_TUNER_TRACE=1 at init */
  int v2_known;     /* v2 shim: NCCL_ALGO/NCCL_PROTO understood (else it answers nothing) */
  struct pt_nccl_enable v2_enable;
  struct pt_ctx *live_next; /* the process's live contexts (core.c), so finalize knows its own */
};

/* Never fails: *out is a context (possibly passive) or NULL on ENOMEM. */
void pt_core_init(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                  ncclDebugLogger_t log);
/* The same, told the tuner ABI version NCCL loaded (2..7; 0 = unknown),
 * which bounds NCCL's version when ncclGetVersion cannot be found. */
void pt_core_init_abi(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                      ncclDebugLogger_t log, int abi);
/* Applies the ranked choice for (coll, nbytes, regBuff, numPipeOps) to NCCL's
 * cost table (float[num_algo][num_proto]), or the profiler's forced choice
 * (include/pcie/control.h). Returns 1 with *out (when not NULL) set to the
 * applied choice, or 0 with the table and *nchannels untouched. Any argument
 * may be junk: no error exists. */
int pt_core_decide(const struct pt_ctx *ctx, int coll, size_t nbytes, int reg_buff,
                   int num_pipe_ops, float *cost, int num_algo, int num_proto, int *nchannels,
                   struct pt_choice *out);
/* v6/v7 getChunkSize: sets *chunk from the profile when the decision NCCL
 * runs as (algo, proto, nchannels) names one. */
void pt_core_chunk(const struct pt_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                   int nchannels, size_t *chunk);
/* NULL-safe; a context already finalized (or never handed out by init) is
 * left alone, so a second call is harmless. */
void pt_core_finalize(struct pt_ctx *ctx);

/* NCCL_ALGO/NCCL_PROTO (either may be NULL) as NCCL parses them. Returns 0,
 * or -1 when NCCL would refuse the value (then nobody can tell what it runs). */
int pt_nccl_enabled(const char *algo_env, const char *proto_env, struct pt_nccl_enable *out);

/* The size ranges where the profile's first choice is a combination that
 * en (a global NCCL_PROTO/NCCL_ALGO) turns off: "AllReduce 0 B-64 KiB
 * (ring/ll), ..." in msg; returns how many. Init only. */
struct pt_table;
int pt_env_blocked(const struct pt_table *t, const struct pt_nccl_enable *en, char *msg, size_t len);

enum { PT_ENV_CHANNELS = 1, PT_ENV_PROTOCOLS = 2, PT_ENV_TRANSPORT = 4, PT_ENV_TIMING = 8 };
/* Compares the profile's nccl_env with this process's environment. Returns
 * 0, or PT_ENV_* bits for what the differences can change; msg names each
 * differing variable. 0 when the profile recorded no environment. */
int pt_env_compare(const struct pt_profile *p, char *msg, size_t len);

/* Where the profile was measured against where it runs (tuner/provenance.c):
 * provenance.box against the host's GPUs (sysfs), provenance.nccl_version
 * against this process's NCCL (found through nccl_fn, the logger NCCL
 * passed to init, or bounded by abi), and a single-node profile on several
 * nodes. Returns 1 when the profile must not be used; must names why, warn
 * what only warns (both len bytes). With accept_foreign nothing refuses and
 * note, for the init line, gets "NCCL 2.30.7, foreign profile accepted
 * (PCIE_TUNER_ACCEPT_FOREIGN=1): <what differs>"; else "NCCL 2.30.7". */
int pt_prov_check(const struct pt_profile *p, size_t nnodes, const void *nccl_fn, int abi,
                  int accept_foreign, char *must, char *warn, size_t len, char *note,
                  size_t note_len);

#endif
