/*
 * Provenance text of the GPU backend: a libconfig group body that
 * `pcie-tune profile` stores under provenance.extra, so a profile says what
 * it was measured on. The GPU facts are gathered by measure/gpu_nccl.c; this
 * file owns the parts that need no GPU (quoting, the NCCL_* environment),
 * so they are tested anywhere. Writes to a FILE (open_memstream).
 */
#ifndef PCIE_CLI_GPU_PROV_H
#define PCIE_CLI_GPU_PROV_H

#include <stdio.h>

/* Writes s as a libconfig string literal: quotes, backslashes escaped,
 * control characters dropped. */
void pt_prov_quote(FILE *f, const char *s);

/* Writes `nccl_env = [ "NCCL_A=1", ... ];` with every NCCL_* variable of
 * envp (NULL-terminated), sorted by name; `nccl_env = [ ];` when none.
 * Returns 0, or -1 when out of memory. */
int pt_prov_nccl_env(FILE *f, const char *const *envp);

/* The box the GPU backend measures on (provenance.box): the host's GPUs
 * read from sysfs by the plugin's own reader (tuner/hostinfo.c), so the
 * plugin's check at init compares like with like. ngpus 0 when sysfs shows
 * no NVIDIA GPU (the profile then records no box). */
struct pt_box_fp;
void pt_prov_box(struct pt_box_fp *fp);

#endif
