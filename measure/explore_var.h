/*
 * The NCCL settings `pcie-tune profile` can explore (one sweep per value),
 * one entry each: how a value is read from the command line, how NCCL
 * reads it from the environment, and what it changes on a simulated box.
 * Adding a setting is adding an entry (measure/explore_var.c).
 */
#ifndef PCIE_MEASURE_EXPLORE_VAR_H
#define PCIE_MEASURE_EXPLORE_VAR_H

#include <stddef.h>

#include "pcie/sim_box.h"

struct pt_explore_var {
  const char *name;  /* the environment variable: NCCL_MIN_NCHANNELS */
  const char *what;  /* "channels", "bytes": for errors */
  long long lo, hi;  /* accepted values, inclusive */
  int suffixes;      /* 1: K, M, G (binary) accepted, and written as bytes */
  /* A value that gives the first, unset run again (skipped), and whether
   * values at or below the communicator's channel count do too. */
  long long same_as_unset;
  int skip_to_comm_channels;
  /* The simulator's model of the setting on box b; 0, or -1 with why. */
  int (*apply_box)(struct pt_box *b, long long v, char *why, size_t len);
  /* The last line when no value beats NCCL's own by the margin. */
  const char *keep_line;
  /* What the plugin does when the job runs without the chosen value. */
  const char *otherwise;
};

/* The entry for name (the variable, e.g. "NCCL_BUFFSIZE"), or NULL. */
const struct pt_explore_var *pt_explore_var_find(const char *name);
/* The names, comma-separated, for messages. */
const char *pt_explore_var_names(void);
/* Parses one value of a list for var: returns 0, or -1 with why. */
int pt_explore_var_parse(const struct pt_explore_var *var, const char *text, long long *v, char *why,
                         size_t len);
/* The value as NCCL must read it: a plain decimal (NCCL's ncclLoadParam
 * reads strtoll(s, NULL, 0), so "1M" would be the number 1). */
void pt_explore_var_format(long long v, char *out, size_t len);

#endif
