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

struct pt_ctx {
  const struct pt_loaded *loaded; /* NULL: passive, NCCL decides */
  ncclDebugLogger_t log;
  size_t nranks, nnodes;
  uint64_t comm_id;
  int trace;        /* PCIE_TUNER_TRACE=1 at init */
  int v2_ll128;     /* NCCL_PROTO forces LL128 on (only the v2 shim needs it) */
};

/* Never fails: *out is a context (possibly passive) or NULL on ENOMEM. */
void pt_core_init(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                  ncclDebugLogger_t log);
/* Applies the ranked choice for (coll, nbytes, regBuff) to NCCL's cost table
 * (float[num_algo][num_proto]), or the profiler's forced choice
 * (include/pcie/control.h). Returns 1 with *out (when not NULL) set to the
 * applied choice, or 0 with the table and *nchannels untouched. Any argument
 * may be junk: no error exists. */
int pt_core_decide(const struct pt_ctx *ctx, int coll, size_t nbytes, int reg_buff, float *cost,
                   int num_algo, int num_proto, int *nchannels, struct pt_choice *out);
/* v6 getChunkSize: sets *chunk from the profile when it names one. */
void pt_core_chunk(const struct pt_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                   size_t *chunk);
void pt_core_finalize(struct pt_ctx *ctx); /* NULL-safe */

/* Whether NCCL_PROTO (as NCCL parses it) forces LL128 on. */
int pt_nccl_proto_forces_ll128(const char *nccl_proto);

#endif
