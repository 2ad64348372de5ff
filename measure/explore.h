/*
 * Exploring one NCCL setting (`pcie-tune profile --explore VAR=LIST`,
 * `--explore-channels LIST` for NCCL_MIN_NCHANNELS): one sweep with NCCL's
 * own value, then one per value of the list; each profile, compiled as the
 * plugin compiles it (pt_table_build), is charged the measured latency of
 * what its table picks at every workload size; the sum over the workload
 * is compared with NCCL's default of the baseline run. Measured data only,
 * so it serves the simulated and the GPU backend alike.
 *
 * The settings that can be explored are the entries of pt_explore_vars
 * (measure/explore_var.c); adding one is one entry. The runs and the report
 * are measure/explore_run.c's; the sweep itself is the caller's callback.
 */
#ifndef PCIE_MEASURE_EXPLORE_H
#define PCIE_MEASURE_EXPLORE_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "pcie/profile.h"
#include "pcie/sim_box.h"

/* At most this many values in one exploration (plus NCCL's own). */
#define PT_EXPLORE_MAX 16

struct pt_explore_item {
  int coll;      /* enum pt_coll */
  uint64_t bytes;
  unsigned long count;
};

/* The verify-step workload (tokens 1,4,8,16,32,64,128 x 14336 B all-reduce,
 * once each) into items[0..7); returns 7. */
size_t pt_explore_default_workload(struct pt_explore_item *items);

/* The workload's total latency in us (sum of count x latency) for profile
 * p in mode: at each size the measured latency of the candidate p's table
 * puts first, or of p's own NCCL default where the table leaves NCCL to
 * decide. With nccl_default = 1, NCCL's default of p instead (the
 * baseline). Returns 0, or -1 with why filled (a collective p has no data
 * for, a size with no measured latency). */
int pt_explore_total(const struct pt_profile *p, int mode, const struct pt_explore_item *items,
                     size_t n, int nccl_default, double *total_us, char *why, size_t len);

/* Index of the winner among totals[0..n) (index 0 = NCCL's own count,
 * then ascending counts): a later entry wins only when it beats the
 * current winner by more than margin (relative). */
size_t pt_explore_pick(const double *totals, size_t n, double margin);

/* One NCCL setting exploration can vary. */
struct pt_explore_var {
  const char *name;      /* the environment variable, "NCCL_MIN_NCHANNELS" */
  const char *title;     /* the report's first words: "channel exploration" */
  const char *unset;     /* the first run: "NCCL's own channel count" */
  const char *none_wins; /* when NCCL's own value wins, with the margin in %: "more channels gain ..." */
  /* Parses one value of a list; 0, or -1 with why saying what it accepts. */
  int (*parse)(const char *s, long long *v, char *why, size_t len);
  /* 1 when v leaves the communicator NCCL built in the first run (base)
   * unchanged, so that its sweep would repeat the first; why: the note. */
  int (*same)(long long v, const struct pt_profile *base, char *why, size_t len);
  /* Sets v on a simulated box's hardware before its NCCL view is derived. */
  void (*box)(struct pt_box *box, long long v);
  /* What the plugin does to a job without the chosen value (the advice's
   * parenthesis), and 1 when a value changes the channel count (its
   * NCCL-default row names the count, else the value). */
  const char *otherwise;
  int channel_rows;
};

/* The setting named name, or NULL; names: the known ones, for errors. */
const struct pt_explore_var *pt_explore_var_find(const char *name);
const char *pt_explore_var_names(void);

/* "v1,v2,..." of var into vals[0..*n), ascending, each once. Returns 0, or
 * -1 with why. */
int pt_explore_values(const struct pt_explore_var *var, const char *list, long long *vals, size_t *n,
                      char *why, size_t len);

/* One exploration: the caller's sweep runs once per value. */
struct pt_explore_run {
  const struct pt_explore_var *var;
  const long long *values; /* ascending */
  size_t nvalues;
  const struct pt_explore_item *items; /* the workload judged on */
  size_t nitems;
  const char *workload; /* its name in the report; NULL: the verify step */
  int mode;             /* enum pt_mode judged */
  int set_env;          /* set the variable in this process's environment for each run
                           (GPU workers inherit it); else the sweep applies it itself */
  const char *who;      /* prefix of notes on stderr: "pcie-tune profile" */
  /* Sweeps with var = value (has_value 0: NCCL's own) into *out. Returns
   * 0 or the exit status (already reported). */
  int (*sweep)(void *arg, int has_value, long long value, struct pt_profile *out);
  void *arg;
};

struct pt_explore_result {
  struct pt_profile prof[1 + PT_EXPLORE_MAX]; /* [0]: NCCL's own value */
  long long value[1 + PT_EXPLORE_MAX];
  double total[1 + PT_EXPLORE_MAX], dflt[1 + PT_EXPLORE_MAX]; /* tuned, and NCCL's default, in us */
  size_t n, winner;
};

/* Runs the sweeps, skipping values that cannot change the communicator,
 * and judges each. Returns 0, or the exit status (reported on stderr). The
 * caller releases res with pt_explore_result_release either way. */
int pt_explore(const struct pt_explore_run *r, struct pt_explore_result *res);

/* The table of runs and the winner. */
void pt_explore_report(FILE *f, const struct pt_explore_run *r, const struct pt_explore_result *res);

/* After the winner is written: what it gains, and the line to run the job with. */
void pt_explore_advice(FILE *f, const struct pt_explore_run *r, const struct pt_explore_result *res);

void pt_explore_result_release(struct pt_explore_result *res);

#endif
