/*
 * One collective on a simulated box, three ways: what an untuned NCCL job
 * runs, what the loaded tuner plugin makes NCCL run (through the simulated
 * host, include/pcie/host.h), and the best any choice could do. Shared by
 * `pcie-tune simulate`, the end-to-end suites and bench/measure_sweep, so they judge
 * the plugin identically. Pure apart from the plugin call; not thread-safe
 * only as far as the plugin is not.
 */
#ifndef PCIE_CLI_SIMEVAL_H
#define PCIE_CLI_SIMEVAL_H

#include <stdint.h>

#include "pcie/host.h"
#include "pcie/sim_box.h"

struct pt_sim_choice {
  int algo, proto, channels; /* algo -1: nothing usable */
  double us;                 /* true latency; -1 when nothing usable */
  int state;                 /* PT_PT_OK, or the box fault the choice runs into */
};

struct pt_sim_eval {
  struct pt_sim_choice nccl, tuned, oracle;
  int plugin_rc; /* what getCollInfo returned */
};

/* Evaluates coll of nbytes in mode. comm may be NULL: tuned is then NCCL's
 * default (no plugin). A tuned choice that hits a box fault keeps its state
 * and costs the default's latency plus a failed run (never better). */
void pt_sim_eval(struct ph_comm *comm, const struct pt_box *b, int coll, int mode,
                 uint64_t nbytes, struct pt_sim_eval *out);

#endif
