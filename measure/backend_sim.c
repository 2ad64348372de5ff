/*
 * The simulated measurement backend: "runs" a candidate on a simulated box
 * (sim/box.c) by evaluating its true latency and applying the box's seeded
 * noise per repetition. Reports what a real worker would: unsupported where
 * NCCL's cost table has the combination disabled (the plugin could never
 * select it), and the box's declared faults as wrong/crash/hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "pcie/sim_box.h"
#include "pcie/sim_fp.h"
#include "pcie/table.h"

struct sim_backend {
  struct pt_box box;
  uint64_t seed;
};

static int sim_info(void *self, struct pt_backend_info *out) {
  const struct sim_backend *sb = self;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "sim");
  snprintf(out->target, sizeof out->target, "%s", sb->box.name);
  /* The NCCL whose view the box models (2.31 and later from a box file's
   * nccl_version, else the 2.28-2.30 view, labelled 2.30), and whether that
   * view was derived from the hardware or typed by hand. */
  int v = sb->box.nccl.nccl_version >= PT_NCCL_V2_31 ? sb->box.nccl.nccl_version : 23000;
  char patch[8] = "";
  if (v % 100) snprintf(patch, sizeof patch, ".%d", v % 100);
  snprintf(out->nccl_version, sizeof out->nccl_version, "%d.%d%s (sim, %s view)", v / 10000, v / 100 % 100, patch,
           sb->box.view_source == PT_VIEW_TYPED ? "typed" : "derived");
  out->nranks = sb->box.nranks;
  out->nnodes = sb->box.nnodes;
  out->max_channels = sb->box.nccl.comm_channels;
  out->comm_channels = sb->box.nccl.comm_channels;
  /* The box's GPUs as the plugin will see them on it (sim/box_fp.c). */
  if (pt_box_fingerprint(&sb->box, &out->box)) out->box.ngpus = 0;
  return 0;
}

static int sim_measure(void *self, const struct pt_measure_req *req, double *samples,
                       struct pt_measure_res *res, struct pt_error_rec *err) {
  const struct sim_backend *sb = self;
  const struct pt_box *b = &sb->box;
  int algo = req->algo, proto = req->proto, ch = req->channels;
  (void)err;
  res->state = PT_PT_OK;
  res->detail[0] = 0;
  if (req->is_default) {
    if (pt_box_nccl_default(b, req->coll, req->nbytes, &algo, &proto, &ch)) {
      res->state = PT_PT_UNSUPPORTED;
      snprintf(res->detail, sizeof res->detail, "NCCL has no usable algorithm");
      return 0;
    }
  } else {
    float table[7][3];
    pt_box_nccl_table(b, req->coll, req->nbytes, table);
    if (algo < 0 || algo >= 7 || proto < 0 || proto >= 3 || table[algo][proto] < 0) {
      res->state = PT_PT_UNSUPPORTED;
      snprintf(res->detail, sizeof res->detail, "NCCL's cost table disables %s/%s",
               pt_algo_name(algo) ? pt_algo_name(algo) : "?", pt_proto_name(proto) ? pt_proto_name(proto) : "?");
      return 0;
    }
    int fault = pt_box_fault_state(b, req->coll, algo, proto, req->nbytes);
    if (fault != PT_PT_OK) {
      res->state = fault;
      snprintf(res->detail, sizeof res->detail, "the box declares %s/%s %s here", pt_algo_name(algo),
               pt_proto_name(proto), pt_point_state_name(fault));
      return 0;
    }
  }
  /* Channels 0: the tuner leaves NCCL's own count, which NCCL then picks
   * for the size as for its default (enqueue.cc, topoGetAlgoInfo). */
  if (!req->is_default && ch == 0) ch = pt_box_task_channels(b, pt_nccl_channels(&b->nccl, algo, proto, (size_t)req->nbytes));
  /* From 2.31 a tuner's count is a cap on NCCL's size heuristic (dev
   * tuning_general.cc ncclTuningGetChannels): a candidate runs, and so
   * measures, what NCCL makes of it, as sim/simeval.c judges it. */
  else if (!req->is_default && b->nccl.nccl_version >= PT_NCCL_V2_31)
    ch = pt_box_task_channels(b, pt_nccl_channels_run(pt_box_effective_channels(b, ch), b->nranks, algo, proto,
                                                      req->nbytes));
  double us = pt_box_true_chunk_us(b, req->coll, req->mode, algo, proto, ch, req->nbytes, req->is_default ? 0 : req->chunk);
  if (us < 0) {
    res->state = PT_PT_UNSUPPORTED;
    snprintf(res->detail, sizeof res->detail, "no such algorithm for this collective");
    return 0;
  }
  /* The default's noise is keyed like a candidate's, by what actually ran. */
  uint64_t key = pt_noise_key(req->coll, req->mode, algo, proto, pt_box_effective_channels(b, ch), req->nbytes);
  for (unsigned r = 0; r < req->reps; r++) samples[r] = us * pt_noise_factor(b, sb->seed, key, req->first_rep + r);
  return 0;
}

static void sim_close(void *self) { free(self); }

int pt_backend_sim_open(struct pt_backend *b, const struct pt_box *box, uint64_t seed) {
  struct sim_backend *sb = malloc(sizeof *sb);
  if (!sb) return PT_ENOMEM;
  sb->box = *box;
  sb->seed = seed;
  b->self = sb;
  b->info = sim_info;
  b->measure = sim_measure;
  b->close = sim_close;
  return 0;
}
