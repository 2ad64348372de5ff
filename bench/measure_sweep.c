/*
 * bench/measure_sweep: what the adaptive sweep costs against the full grid for the
 * same decision quality. For every built-in box and three noise seeds it
 * sweeps all-reduce in graph mode both ways (same candidates, grid 8 B ..
 * 256 MB, 7 repetitions), compiles each profile through the built plugin
 * (dlopen, simulated host) and reports the repetitions measured and the
 * tuned/oracle geometric mean over four sizes per octave. Target: adaptive
 * <= 30 % of the full grid's repetitions at equal quality.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure/simjudge.h"

/* Sweeps box into path (full grid or adaptive) and returns the repetitions;
 * *q gets the plugin's tuned/oracle geometric mean with that profile. */
static uint64_t sweep_and_judge(const struct pt_box *box, int full, uint64_t seed,
                                const char *path, const char *so, double *q) {
  struct pt_error_rec e;
  struct pt_sim_quality sq;
  char err[512];
  uint64_t samples = 0;
  if (pt_sim_sweep_box(box, PT_MODE_GRAPH, full, seed, path, PT_WRITE_FORCE, &samples, &e)) {
    fprintf(stderr, "bench/measure_sweep: %s:%d: %s\n", e.file, e.line, e.msg);
    exit(1);
  }
  if (pt_sim_judge(so, path, box, PT_MODE_GRAPH, &sq, err, sizeof err)) {
    fprintf(stderr, "bench/measure_sweep: %s\n", err);
    exit(1);
  }
  *q = sq.geo;
  return samples;
}

int main(void) {
  const char *so = getenv("PCIE_TUNER_SO");
  char path[256];
  if (!so) {
    fprintf(stderr, "bench/measure_sweep: set PCIE_TUNER_SO (make bench does)\n");
    return 1;
  }
  snprintf(path, sizeof path, "/tmp/pt-bench-sweep-%d.cfg", (int)getpid());
  printf("bench/measure_sweep: adaptive vs full grid, allreduce graph, 8 B..256 MB, 7 reps, seeds 1-3\n");
  printf("%-24s %10s %10s %7s %12s %12s\n", "box", "full reps", "adapt reps", "ratio", "full q", "adapt q");
  uint64_t tf = 0, ta = 0;
  double lqf = 0, lqa = 0;
  int n = 0;
  for (size_t i = 0; i < pt_box_builtin_count(); i++) {
    const struct pt_box *b = pt_box_builtin_at(i);
    uint64_t sf = 0, sa = 0;
    double qf = 0, qa = 0, q;
    for (uint64_t seed = 1; seed <= 3; seed++) {
      sf += sweep_and_judge(b, 1, seed, path, so, &q);
      qf += log(q);
      sa += sweep_and_judge(b, 0, seed, path, so, &q);
      qa += log(q);
    }
    printf("%-24s %10llu %10llu %6.1f%% %12.4f %12.4f\n", b->name, (unsigned long long)sf,
           (unsigned long long)sa, 100.0 * (double)sa / (double)sf, exp(qf / 3), exp(qa / 3));
    tf += sf;
    ta += sa;
    lqf += qf;
    lqa += qa;
    n += 3;
  }
  printf("%-24s %10llu %10llu %6.1f%% %12.4f %12.4f\n", "all", (unsigned long long)tf,
         (unsigned long long)ta, 100.0 * (double)ta / (double)tf, exp(lqf / n), exp(lqa / n));
  printf("(q = tuned/oracle geometric mean over 4 sizes per octave, 8 B..256 MB; 1 is perfect)\n");
  unlink(path);
  return 0;
}
