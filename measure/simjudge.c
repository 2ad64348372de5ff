/* The sweep-then-judge loop on a simulated box (measure/simjudge.h). */
#include "simjudge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "screen.h"
#include "sim/simeval.h"
#include "sweepfile.h"

int pt_sim_sweep_box(const struct pt_box *box, int mode, int full, uint64_t seed,
                     const char *path, unsigned write_flags, uint64_t *samples,
                     struct pt_error_rec *err) {
  static const int chans[] = {1, 2, 3, 4, 5, 6, 7, 8};
  struct pt_cand_spec cands[64];
  struct pt_sweep_opts o;
  struct pt_backend be = {0};
  struct pt_backend_info bi;
  struct pt_sweep sw = {0};
  struct pt_profile p = {0};
  int rc;
  memset(err, 0, sizeof *err);
  pt_sweep_opts_default(&o);
  o.mode_mask = 1u << mode;
  o.full = full;
  if ((rc = pt_backend_sim_open(&be, box, seed)))
    return pt_error_set(err, rc, box->name, 0, "cannot open the simulated backend");
  be.info(be.self, &bi);
  o.cands = cands;
  o.ncand = pt_sweep_cands(3u, 7u, chans, 8, bi.max_channels, cands, 64);
  struct pt_screen sc;
  if (!(rc = pt_screen_sweep(&be, &o, cands, &o.ncand, &sc, err)) && !(rc = pt_sweep_init(&sw, &o, err)) &&
      !(rc = pt_sweep_run(&sw, &be, err)) && !(rc = pt_sweepfile_build(&sw, &bi, box->name, "simjudge", 1, &p)) &&
      !(rc = pt_screen_record(&sc, &p)))
    rc = pt_profile_write(&p, path, write_flags, err);
  else if (rc == PT_ENOMEM && !err->msg[0])
    pt_error_set(err, rc, box->name, 0, "out of memory");
  *samples = sw.samples;
  pt_profile_release(&p);
  pt_sweep_release(&sw);
  be.close(be.self);
  return rc;
}

int pt_sim_judge(const char *so, const char *profile, const struct pt_box *box, int mode,
                 struct pt_sim_quality *q, char *err, size_t errlen) {
  struct ph_plugin pl;
  struct ph_comm comm;
  double logsum = 0, sp_log = 0;
  int n = 0, nsp = 0;
  memset(q, 0, sizeof *q);
  char sysroot[4096] = "";
  setenv("PCIE_TUNER_PROFILE", profile, 1);
  if (ph_plugin_open(&pl, so, 0, err, errlen)) return -1;
  /* The plugin checks the profile against the host: here the box. */
  if (ph_box_present(box, sysroot, sizeof sysroot, err, errlen)) {
    ph_plugin_close(&pl);
    return -1;
  }
  int irc = ph_comm_init(&comm, &pl, (size_t)box->nranks, 1, 1);
  ph_box_withdraw(sysroot);
  if (irc) {
    snprintf(err, errlen, "the plugin's init failed");
    ph_plugin_close(&pl);
    return -1;
  }
  q->min_speedup_32k_256k = INFINITY;
  for (int k = 12; k <= 28 * 4; k++) {
    uint64_t bytes = (uint64_t)llround(pow(2.0, k / 4.0));
    struct pt_sim_eval ev;
    pt_sim_eval(&comm, box, PT_ALLREDUCE, mode, bytes, &ev);
    q->plugin_errors += ev.plugin_rc != 0;
    q->bad_state += ev.tuned.state != PT_PT_OK;
    double r = ev.tuned.us / ev.oracle.us;
    logsum += log(r);
    n++;
    if (r > q->worst) {
      q->worst = r;
      q->worst_at = (double)bytes;
    }
    if (bytes >= 32768 && bytes <= 262144) {
      double sp = ev.nccl.us / ev.tuned.us;
      sp_log += log(sp);
      nsp++;
      if (sp < q->min_speedup_32k_256k) q->min_speedup_32k_256k = sp;
    }
  }
  q->geo = exp(logsum / n);
  q->speedup_32k_256k = exp(sp_log / nsp);
  ph_comm_finalize(&comm);
  ph_plugin_close(&pl);
  return 0;
}
