/*
 * Judges one collective on a simulated box: NCCL's default, the plugin's
 * choice through the simulated host, and the oracle (sim/simeval.h).
 */
#include <string.h>

#include "pcie/table.h"
#include "simeval.h"

static void nccl_choice(const struct pt_box *b, int coll, int mode, uint64_t n,
                        struct pt_sim_choice *c) {
  c->state = PT_PT_OK;
  c->us = -1;
  if (pt_box_nccl_default(b, coll, n, &c->algo, &c->proto, &c->channels)) {
    c->algo = c->proto = -1;
    c->channels = 0;
    return;
  }
  c->us = pt_box_true_us(b, coll, mode, c->algo, c->proto, c->channels, n);
}

void pt_sim_eval(struct ph_comm *comm, const struct pt_box *b, int coll, int mode,
                 uint64_t nbytes, struct pt_sim_eval *out) {
  memset(out, 0, sizeof *out);
  nccl_choice(b, coll, mode, nbytes, &out->nccl);
  out->oracle.us = pt_box_oracle_us(b, coll, mode, nbytes, &out->oracle.algo, &out->oracle.proto,
                                    &out->oracle.channels);
  if (!comm) {
    out->tuned = out->nccl;
    return;
  }
  float table[7][3], before[7][3];
  struct ph_choice ch;
  pt_box_nccl_table(b, coll, nbytes, table);
  memcpy(before, table, sizeof before);
  ph_decide(comm, coll, (size_t)nbytes, mode == PT_MODE_GRAPH, table, &ch);
  int v231 = b->nccl.nccl_version >= PT_NCCL_V2_31;
  if (v231 && pt_nccl_select_tuned(&b->nccl, before, table, &ch.algo, &ch.proto)) ch.algo = ch.proto = -1;
  out->plugin_rc = ch.rc;
  struct pt_sim_choice *t = &out->tuned;
  t->algo = ch.algo;
  t->proto = ch.proto;
  t->us = -1;
  t->state = PT_PT_OK;
  if (ch.algo < 0) return;
  /* nChannels 0 leaves NCCL's own count; NCCL clamps the rest, and from
   * 2.31 takes it as a cap on its size heuristic (dev tuning_general.cc
   * ncclTuningGetChannels: the smaller of the two, the same as the heuristic
   * run from the clamped count). */
  t->channels = ch.nchannels > 0 ? pt_box_effective_channels(b, ch.nchannels)
                                 : pt_nccl_channels(&b->nccl, ch.algo, ch.proto, (size_t)nbytes);
  if (v231 && ch.nchannels > 0)
    t->channels = pt_nccl_channels_run(t->channels, b->nranks, ch.algo, ch.proto, nbytes);
  t->channels = pt_box_task_channels(b, t->channels); /* 2.31.2's NCCL_MIN_CTAS floor */
  t->us = pt_box_true_us(b, coll, mode, t->algo, t->proto, t->channels, nbytes);
  t->state = pt_box_fault_state(b, coll, t->algo, t->proto, nbytes);
  if (t->state != PT_PT_OK && out->nccl.us > 0) t->us += out->nccl.us;
}
