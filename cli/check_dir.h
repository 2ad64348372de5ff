/* pcie-tune check on a directory, and the selection report of
 * `check SPEC --nranks N [--nnodes M]` (cli/check_dir.c). */
#ifndef PCIE_CLI_CHECK_DIR_H
#define PCIE_CLI_CHECK_DIR_H

#include <stddef.h>

/* Validates every profile the plugin would consider in dir, with one(path,
 * quiet, json) per file; returns 0 when all are valid, 1 otherwise. */
int check_dir(const char *dir, int quiet, int json, int (*one)(const char *path, int quiet, int json));

/* Says which profile the plugin would choose with PCIE_TUNER_PROFILE=spec (a
 * file or a directory) for an (nranks, nnodes) communicator, and why: each
 * file's verdict, then the choice, a tie or a refusal. Returns 0 when a
 * profile would be chosen, 1 when the communicator would be left to NCCL. */
int check_select(const char *spec, size_t nranks, size_t nnodes, int quiet);

#endif
