/*
 * Builds a struct pt_profile from parsed nccl-tests logs (one setting each):
 * one collective and one rank count per profile, a series per launch mode
 * (graph when the run's header says graph: N > 0), NCCL's default from the
 * logs without a setting, one candidate per setting. No printing, no files.
 *
 * The default run's logs also give the communicator: communicator.channels
 * from NCCL's "N coll channels" INFO line and nccl_env from its "NCCL_X set
 * by environment to Y" lines (either stays unknown when the logs lack
 * them). With the count known, a setting measured with more channels
 * (--setting channels=, NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS or the
 * log's own count) is something a default job never runs: that log is
 * left out (o->dropped), and refused when nothing else is left.
 */
#ifndef PCIE_CLI_IMPORT_BUILD_H
#define PCIE_CLI_IMPORT_BUILD_H

#include <stddef.h>

#include "import_setting.h"
#include "nccltests.h"
#include "pcie/profile.h"

struct imp_input {
  struct nt_log log;       /* parsed log, owned by the caller */
  struct imp_setting cli;  /* from --setting before it; IMP_SETTING_NONE when none */
};

struct imp_options {
  int in_place;     /* take in-place times instead of out-of-place */
  /* 1: a mode without NCCL's default run is written anyway (as data: the
   * plugin leaves its sizes to NCCL); 0: refused, naming the run to add. */
  int without_default;
  /* NULL: provenance.box from what the logs give (device lines, NCCL's
   * Init lines); else this box (import --box-here: the host's, read with
   * the plugin's own sysfs reader), copied. */
  const struct pt_box_fp *box;
  const char *name; /* profile name (copied) */
  const char *date; /* provenance date, "YYYY-MM-DD" (copied) */
  /* Optional, one per log: set to the channel count of each log left out
   * for measuring more channels than NCCL's default run has (below), else
   * 0. The caller tells the user. */
  int *dropped;
  /* Optional, one per log: set to the channel count an all-gather (or
   * CollNet) setting forced, else 0. NCCL does not clamp the tuner's count
   * there, so the plugin only ranks candidates measured with NCCL's own
   * (channels 0): such a log is left out, and the caller tells the user. */
  int *forced;
};

/* Fills *p (which must be zeroed) from in[0..n-1]. On failure *p is
 * released and *err names the log and line (or the profile, for a
 * validation failure). Returns 0, PT_EINVAL or PT_ENOMEM. */
int imp_build(struct pt_profile *p, const struct imp_input *in, size_t n,
              const struct imp_options *o, struct pt_error_rec *err);

/* What one profile holds, as a log's first run gives it: its collective,
 * rank count and NCCL version ("" when the log does not say). Logs of
 * different shapes cannot go into one profile; the caller groups them to
 * tell the user which go together. Returns 0, or -1 with *err set (a run
 * whose collective cannot be told). */
struct imp_shape {
  int coll, nranks;
  char version[64];
};
int imp_log_shape(const struct nt_log *log, struct imp_shape *s, struct pt_error_rec *err);

#endif
