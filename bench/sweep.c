/*
 * bench/sweep: what the adaptive sweep costs against the full grid for the
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

#include "backends.h"
#include "simeval.h"
#include "sweepfile.h"

static double quality(const struct pt_box *box, const char *profile, const char *so) {
  struct ph_plugin pl;
  struct ph_comm comm;
  char err[512];
  double logsum = 0;
  int n = 0;
  setenv("PCIE_TUNER_PROFILE", profile, 1);
  if (ph_plugin_open(&pl, so, 0, err, sizeof err)) {
    fprintf(stderr, "bench/sweep: %s\n", err);
    exit(1);
  }
  if (ph_comm_init(&comm, &pl, (size_t)box->nranks, 1, 1)) exit(1);
  for (int k = 12; k <= 28 * 4; k++) {
    struct pt_sim_eval ev;
    pt_sim_eval(&comm, box, PT_ALLREDUCE, PT_MODE_GRAPH, (uint64_t)llround(pow(2.0, k / 4.0)), &ev);
    logsum += log(ev.tuned.us / ev.oracle.us);
    n++;
  }
  ph_comm_finalize(&comm);
  ph_plugin_close(&pl);
  return exp(logsum / n);
}

/* Sweeps box and writes path; returns the repetitions measured. */
static uint64_t sweep(const struct pt_box *box, int full, uint64_t seed, const char *path) {
  static const int chans[] = {1, 2, 3, 4, 5, 6, 7, 8};
  struct pt_cand_spec cands[64];
  struct pt_sweep_opts o;
  struct pt_backend be;
  struct pt_backend_info bi;
  struct pt_sweep sw;
  struct pt_error_rec e;
  struct pt_profile p;
  pt_sweep_opts_default(&o);
  o.full = full;
  if (pt_backend_sim_open(&be, box, seed)) exit(1);
  be.info(be.self, &bi);
  o.cands = cands;
  o.ncand = pt_sweep_cands(3u, 7u, chans, 8, bi.max_channels, cands, 64);
  if (pt_sweep_init(&sw, &o, &e) || pt_sweep_run(&sw, &be, &e)) {
    fprintf(stderr, "bench/sweep: %s\n", e.msg);
    exit(1);
  }
  memset(&p, 0, sizeof p);
  if (pt_sweepfile_build(&sw, &bi, box->name, "bench", 1, &p) ||
      pt_profile_write(&p, path, PT_WRITE_FORCE, &e)) {
    fprintf(stderr, "bench/sweep: %s:%d: %s\n", e.file, e.line, e.msg);
    exit(1);
  }
  uint64_t samples = sw.samples;
  pt_profile_release(&p);
  pt_sweep_release(&sw);
  be.close(be.self);
  return samples;
}

int main(void) {
  const char *so = getenv("PCIE_TUNER_SO");
  char path[256];
  if (!so) {
    fprintf(stderr, "bench/sweep: set PCIE_TUNER_SO (make bench does)\n");
    return 1;
  }
  snprintf(path, sizeof path, "/tmp/pt-bench-sweep-%d.cfg", (int)getpid());
  printf("bench/sweep: adaptive vs full grid, allreduce graph, 8 B..256 MB, 7 reps, seeds 1-3\n");
  printf("%-24s %10s %10s %7s %12s %12s\n", "box", "full reps", "adapt reps", "ratio", "full q", "adapt q");
  uint64_t tf = 0, ta = 0;
  double lqf = 0, lqa = 0;
  int n = 0;
  for (size_t i = 0; i < pt_box_builtin_count(); i++) {
    const struct pt_box *b = pt_box_builtin_at(i);
    uint64_t sf = 0, sa = 0;
    double qf = 0, qa = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
      sf += sweep(b, 1, seed, path);
      qf += log(quality(b, path, so));
      sa += sweep(b, 0, seed, path);
      qa += log(quality(b, path, so));
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
