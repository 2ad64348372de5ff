/*
 * A sweep as a profile file: assembling the profile (name, match, provenance
 * with the sweep's own record in provenance.extra) and reading a partial one
 * back so that `pcie-tune profile --resume` continues it. The layout of
 * provenance.extra is documented in docs/cli.md.
 */
#ifndef PCIE_CLI_SWEEPFILE_H
#define PCIE_CLI_SWEEPFILE_H

#include <stddef.h>

#include "pcie/profile.h"
#include "pcie/sweep.h"

/* Fills p (zeroed by the caller) from the sweep: every measured point,
 * match = the backend's nranks/nnodes, provenance, and extra holding
 * `sweep = { state; args; target; samples; }` and the repetitions of each
 * point. args is the canonical option string the sweep was started with.
 * Returns 0 or PT_ENOMEM. */
int pt_sweepfile_build(const struct pt_sweep *s, const struct pt_backend_info *bi,
                       const char *name, const char *args, int complete, struct pt_profile *p);

/* What a partial profile says about its sweep. */
struct pt_sweepfile_state {
  int complete;
  char args[1024];
  unsigned long long samples;
};

/* Reads path's sweep record into *st (without seeding anything). Returns 0,
 * PT_EIO/PT_ESYNTAX, or PT_EINVAL when the file was not written by a sweep. */
int pt_sweepfile_state(const char *path, struct pt_sweepfile_state *st, struct pt_error_rec *err);

/* Loads path (validated like any profile) and seeds s with its points and
 * their repetitions. Returns 0 or a PT_E* code with *err filled. */
int pt_sweepfile_seed(struct pt_sweep *s, const char *path, struct pt_error_rec *err);

#endif
