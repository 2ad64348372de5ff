/*
 * Which collective an nccl-tests run measured. Only the five collectives
 * NCCL's tuner sees are accepted.
 */
#ifndef PCIE_CLI_IMPORT_COLL_H
#define PCIE_CLI_IMPORT_COLL_H

#include "nccltests.h"
#include "pcie/profile.h"

/* From "Collective test starting: PROG" when the run has it, else from its
 * first row: redop "none" is all_gather (root -1) or broadcast (root >= 0);
 * another redop is reduce (root >= 0), or all_reduce / reduce_scatter told
 * apart by count x element size = size (all_reduce) or size / nranks
 * (reduce_scatter). Returns an enum pt_coll, or PT_EINVAL with *err. */
int imp_run_coll(const struct nt_log *log, const struct nt_run *run, struct pt_error_rec *err);

#endif
