/*
 * NCCL's example tuner configuration (plugins/tuner/example in NVIDIA/nccl,
 * read from NCCL_TUNER_CONFIG_FILE) turned into profile rules of the same
 * meaning (docs/cli-import.md). Pure: no I/O, no printing.
 */
#ifndef PCIE_IMPORT_NCCL_EXAMPLE_H
#define PCIE_IMPORT_NCCL_EXAMPLE_H

#include <stddef.h>

#include "pcie/profile.h"

/* Parses text (len bytes, named file in errors) and appends one rule per
 * configuration line to p->rules (p->nrules grows). Returns 0, or PT_EINVAL
 * with err naming file:line and what the profile cannot express, or
 * PT_ENOMEM. */
int imp_nccl_example(const char *text, size_t len, const char *file, struct pt_profile *p,
                     struct pt_error_rec *err);

#endif
