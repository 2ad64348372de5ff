/*
 * The truth of a simulated box and its NCCL-view helpers: what a collective
 * really costs (pt_box_true_us), what NCCL would pick for it, and the best
 * any tuner could do. The formula is documented in include/pcie/sim_box.h
 * and docs/sim.md. NCCL's own arithmetic stays in sim/nccl_model.c; this file
 * only calls it, so the two models never share a parameter.
 */
#include <math.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/sim_box.h"
#include "pcie/table.h"

int pt_box_effective_channels(const struct pt_box *b, int channels) {
  int max = b->nccl.comm_channels < 1 ? 1 : b->nccl.comm_channels;
  if (channels < 1) return 1;
  return channels > max ? max : channels;
}

int pt_box_running_channels(const struct pt_box *b, int coll, int proto, int channels,
                            uint64_t nbytes) {
  return pt_nccl_sched_channels(&b->nccl, coll, proto, (size_t)nbytes,
                                pt_box_effective_channels(b, channels));
}

/* Pipeline steps a message crosses. Ring all-reduce is reduce-scatter then
 * all-gather, 2(n-1) steps; broadcast and reduce travel the ring once (n-1
 * hops). One node's Tree is a chain: up and back down, 2(n-1) hops. */
static int steps(int coll, int algo, int n) {
  if (algo == NCCL_ALGO_TREE) return 2 * (n - 1);
  if (coll == PT_ALLREDUCE) return 2 * (n - 1);
  return n - 1;
}

/* Bytes each rank puts on its link, per byte of message. A chain's middle
 * GPUs forward the reduction up and the result down through the same port,
 * so Tree moves the message twice; Ring moves 2(n-1)/n of it. */
static double traffic(int coll, int algo, int n) {
  if (algo == NCCL_ALGO_TREE) return 2.0;
  switch (coll) {
  case PT_ALLREDUCE: return 2.0 * (n - 1) / n;
  case PT_ALLGATHER:
  case PT_REDUCESCATTER: return (double)(n - 1) / n;
  default: return 1.0;
  }
}

/* What the buffer size and a tuner's chunk change (sim/ring_chunks.c):
 * the fitted truth stands for NCCL's default buffer and chunk, so only the
 * difference in the pieces the device code runs is added. Paths where no
 * chunk is offered (include/pcie/chunk.h) are not modelled. */
static double chunking_us(const struct pt_box *b, int coll, int algo, int proto, int ch,
                          uint64_t nbytes, uint64_t chunk, double hop, double xfer) {
  uint64_t buf = pt_ring_buffsize(b->nccl_buffsize);
  if (!pt_chunk_reach(coll, algo, b->nranks, 1) || (buf == PT_NCCL_BUFFSIZE_DEFAULT && !chunk)) return 0;
  int n = b->nranks, k = steps(coll, algo, n);
  uint64_t chan = nbytes / (uint64_t)(ch < 1 ? 1 : ch);
  unsigned long now = pt_chunk_pieces(coll, algo, proto, buf, chunk, n, chan, NULL);
  unsigned long dflt = pt_chunk_pieces(coll, algo, proto, PT_NCCL_BUFFSIZE_DEFAULT, 0, n, chan, NULL);
  unsigned w = pt_chunk_window(algo, proto);
  return now == dflt ? 0 : pt_chunk_pipe_us(k, now, w, hop, xfer) - pt_chunk_pipe_us(k, dflt, w, hop, xfer);
}

double pt_box_true_us(const struct pt_box *b, int coll, int mode, int algo, int proto,
                      int channels, uint64_t nbytes) {
  return pt_box_true_chunk_us(b, coll, mode, algo, proto, channels, nbytes, 0);
}

double pt_box_true_chunk_us(const struct pt_box *b, int coll, int mode, int algo, int proto,
                            int channels, uint64_t nbytes, uint64_t chunk) {
  const struct pt_box_truth *t = &b->truth;
  if (proto < 0 || proto >= NCCL_NUM_PROTOCOLS || coll < 0 || coll >= PT_NCOLL) return -1;
  if (algo != NCCL_ALGO_RING && algo != NCCL_ALGO_TREE) return -1;
  if (algo == NCCL_ALGO_TREE && coll != PT_ALLREDUCE) return -1;
  if (mode < 0 || mode >= PT_NMODES) return -1;
  /* NCCL clamps the request to comm->nChannels, then its scheduler spreads
   * the message over channels in cells of 32 KB of traffic: a small message
   * runs on fewer channels than asked for (enqueue.cc scheduleCollTasksToPlan). */
  int ch = pt_box_running_channels(b, coll, proto, channels, nbytes);
  int n = b->nranks;
  double per_ch = t->chan_bw[proto];
  /* A channel drives bandwidth with the threads NCCL gives it, and NCCL
   * sizes them for its own channel count at this size, whatever count a
   * tuner asks for (topoGetAlgoInfo: threads halve while the message is
   * below channels x threads x NCCL's thread threshold). The smooth form of
   * that rule is used, bytes / (own channels x threshold) threads, so that
   * latency stays monotone between NCCL's power-of-two steps. */
  if (t->warp_exp > 0) {
    double full = pt_nccl_max_threads(&b->nccl, algo, proto);
    double thr = proto == NCCL_PROTO_SIMPLE ? 64 : 8;
    if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_LL) thr *= n;
    double want = (double)nbytes / (pt_nccl_channels(&b->nccl, algo, proto, (size_t)nbytes) * thr);
    if (algo == NCCL_ALGO_TREE) want = full; /* Tree runs every thread */
    if (want < 96) want = 96;
    if (want < full) per_ch *= pow(want / full, t->warp_exp);
  }
  double wire = fmin(ch * per_ch, t->link_bw[proto]);
  /* Host staging copies every wire byte once more, in series with the link. */
  if (t->transport == PT_XPORT_SHM && t->host_bw > 0) wire = 1.0 / (1.0 / wire + 1.0 / t->host_bw);
  double bw = wire * t->eff[proto];
  double lat = steps(coll, algo, n) * t->hop_us[algo][proto];
  double xfer = traffic(coll, algo, n) * (double)nbytes / (1000.0 * bw); /* GB/s = 1000 B/us */
  double q = t->overlap[proto] < 1.0 ? 1.0 : t->overlap[proto];
  double pipe = pow(pow(lat, q) + pow(xfer, q), 1.0 / q);
  pipe += chunking_us(b, coll, algo, proto, ch, nbytes, chunk, t->hop_us[algo][proto], xfer);
  return t->launch_us[mode] + t->base_us[proto] + (ch - 1) * t->chan_us + pipe;
}

int pt_box_fault_state(const struct pt_box *b, int coll, int algo, int proto, uint64_t nbytes) {
  for (size_t i = 0; i < b->nfaults; i++) {
    const struct pt_box_fault *f = &b->faults[i];
    if ((f->coll < 0 || f->coll == coll) && f->algo == algo && f->proto == proto &&
        nbytes >= f->min_bytes && nbytes <= f->max_bytes)
      return f->state;
  }
  return PT_PT_OK;
}

void pt_box_nccl_table(const struct pt_box *b, int coll, uint64_t nbytes, float table[7][3]) {
  pt_nccl_cost_table(&b->nccl, coll, (size_t)nbytes, 1, table);
}

int pt_box_task_channels(const struct pt_box *b, int ch) {
  /* 2.31.2 src/enqueue/enqueue.cc scheduleCollTasksToPlan: after tuning,
   * task->nMaxChannels = min(max(nMaxChannels, task->minCTAs), maxCTAs),
   * then at most comm->nChannels; minCTAs is NCCL_MIN_CTAS first
   * (task_posttuning.cc, NCCL_CONFIG_SET: env > per-call > comm). */
  if (b->nccl.nccl_version < PT_NCCL_V2_31_2 || b->hw.min_ctas <= ch) return ch;
  return pt_box_effective_channels(b, b->hw.min_ctas);
}

int pt_box_nccl_default(const struct pt_box *b, int coll, uint64_t nbytes, int *algo,
                        int *proto, int *channels) {
  float table[7][3];
  pt_box_nccl_table(b, coll, nbytes, table);
  if (pt_nccl_select(table, algo, proto)) return -1;
  *channels = pt_box_task_channels(b, pt_nccl_channels(&b->nccl, *algo, *proto, (size_t)nbytes));
  return 0;
}

double pt_box_default_us(const struct pt_box *b, int coll, int mode, uint64_t nbytes) {
  int a, p, c;
  if (pt_box_nccl_default(b, coll, nbytes, &a, &p, &c)) return -1;
  return pt_box_true_us(b, coll, mode, a, p, c, nbytes);
}

/* A combination that corrupts, crashes or hangs at any size is not trusted
 * at any size: the plugin poisons such a candidate for the whole collective,
 * and so does anyone who has seen it corrupt data. */
static int untrusted(const struct pt_box *b, int coll, int algo, int proto) {
  for (size_t i = 0; i < b->nfaults; i++) {
    const struct pt_box_fault *f = &b->faults[i];
    if ((f->coll < 0 || f->coll == coll) && f->algo == algo && f->proto == proto) return 1;
    /* A wrong LL128 result is the box's (torn 128-byte lines over its
     * PCIe), not one algorithm's: LL128 is unusable there, as the
     * profiler's correctness screen records (measure/screen.h). */
    if (proto == NCCL_PROTO_LL128 && f->proto == NCCL_PROTO_LL128 && f->state == PT_PT_WRONG) return 1;
  }
  return 0;
}

double pt_box_oracle_us(const struct pt_box *b, int coll, int mode, uint64_t nbytes, int *algo,
                        int *proto, int *channels) {
  float table[7][3];
  double best = -1;
  int ba = -1, bp = -1, bc = 0;
  pt_box_nccl_table(b, coll, nbytes, table);
  /* The best choice a tuner can make: from 2.31 its channel count is a cap
   * on NCCL's size heuristic (dev tuning_general.cc ncclTuningGetChannels),
   * under 2.31.2's NCCL_MIN_CTAS floor, so only the counts those give are
   * in reach (sim/simeval.c runs the plugin's the same way). */
  int v231 = b->nccl.nccl_version >= PT_NCCL_V2_31;
  for (int a = 0; a < 2; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      if (table[a][p] < 0 || untrusted(b, coll, a, p)) continue;
      for (int c = 1; c <= pt_box_effective_channels(b, PT_MAX_CHANNELS); c++) {
        int r = v231 ? pt_box_task_channels(b, pt_nccl_channels_run(c, b->nranks, a, p, nbytes)) : c;
        double us = pt_box_true_us(b, coll, mode, a, p, r, nbytes);
        if (us >= 0 && (best < 0 || us < best)) {
          best = us;
          ba = a;
          bp = p;
          bc = r;
        }
      }
    }
  if (algo) *algo = ba;
  if (proto) *proto = bp;
  if (channels) *channels = bc;
  return best;
}
