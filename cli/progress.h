/* Sweep progress on stderr: a bar with ETA when stderr is a terminal, one
 * plain line per phase otherwise (logs stay short). */
#ifndef PCIE_CLI_PROGRESS_H
#define PCIE_CLI_PROGRESS_H

#include "pcie/sweep.h"

struct pt_progress {
  int tty, quiet;
  double start, last;
  char last_key[96];
};

void pt_progress_init(struct pt_progress *p, int quiet);
/* Matches pt_sweep_opts.progress; arg is a struct pt_progress. */
void pt_progress_cb(void *arg, const struct pt_sweep_progress *sp);
/* Ends the bar line (tty) so later messages start on a fresh line. */
void pt_progress_end(struct pt_progress *p);

#endif
