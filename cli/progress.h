/* Sweep progress on stderr: a bar with ETA when stderr is a terminal, one
 * plain line per phase otherwise (logs stay short). Wrapped around the
 * backend (pt_progress_wrap), it also names the point being measured and
 * when its deadline falls, so a slow GPU measurement does not look like a
 * hang. */
#ifndef PCIE_CLI_PROGRESS_H
#define PCIE_CLI_PROGRESS_H

#include "pcie/sweep.h"

struct pt_progress {
  int tty, quiet;
  double start, last, last_line;
  char last_key[96];
  /* What the last report said, redrawn when a measurement starts. */
  double fraction;
  unsigned long long samples;
  char point[128];
  /* The wrapped backend. */
  const struct pt_backend *inner;
  struct pt_backend outer;
  double deadline_s; /* per measurement; 0 = none */
};

void pt_progress_init(struct pt_progress *p, int quiet);
/* Matches pt_sweep_opts.progress; arg is a struct pt_progress. */
void pt_progress_cb(void *arg, const struct pt_sweep_progress *sp);
/* A backend that announces each measurement, then runs it on be. deadline_s
 * is the backend's per-measurement timeout (0 when it has none). The result
 * lives in p; be stays the caller's to close. */
const struct pt_backend *pt_progress_wrap(struct pt_progress *p, const struct pt_backend *be,
                                          double deadline_s);
/* Ends the bar line (tty) so later messages start on a fresh line. */
void pt_progress_end(struct pt_progress *p);

#endif
