/*
 * The acceptance loop on a simulated box, shared by the end-to-end suite
 * and bench/measure_sweep so they measure the same thing: sweep the box into a
 * profile, then judge the built plugin (dlopen, simulated host) with that
 * profile at four sizes per octave from 8 B to 256 MB, most of them between
 * measured points.
 */
#ifndef PCIE_CLI_SIMJUDGE_H
#define PCIE_CLI_SIMJUDGE_H

#include <stdint.h>

#include "pcie/profile.h"
#include "pcie/sim_box.h"

/* Sweeps all-reduce in mode on box (candidates ring,tree x ll,ll128,simple x
 * 1..8 channels, the engine's default options; full = 1 for the whole grid)
 * and writes the profile to path with write_flags. *samples gets the
 * repetitions measured. Returns 0 or a PT_E* code with *err filled. */
int pt_sim_sweep_box(const struct pt_box *box, int mode, int full, uint64_t seed,
                     const char *path, unsigned write_flags, uint64_t *samples,
                     struct pt_error_rec *err);

struct pt_sim_quality {
  double geo;                  /* tuned/oracle, geometric mean */
  double worst, worst_at;      /* the largest tuned/oracle and its size */
  double speedup_32k_256k;     /* default/tuned, geometric mean over 32-256 KB */
  double min_speedup_32k_256k; /* and its minimum there */
  int bad_state;               /* tuned choices that ran into a box fault */
  int plugin_errors;           /* getCollInfo calls that did not return success */
};

/* Judges the plugin at so with PCIE_TUNER_PROFILE=profile (set in this
 * process's environment). Returns 0, or -1 with a message in err. */
int pt_sim_judge(const char *so, const char *profile, const struct pt_box *box, int mode,
                 struct pt_sim_quality *q, char *err, size_t errlen);

#endif
