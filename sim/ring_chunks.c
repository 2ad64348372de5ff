/*
 * How NCCL's ring all-reduce cuts a channel's share into loops, chunks and
 * Simple slices, from its device code (docs/sim.md, "Buffers and chunks"),
 * and what that costs in the truth's pipeline. Facts, each from NCCL
 * 2.28.9, 2.30.7 and the 2.31 dev branch alike:
 *
 *  - NCCL_BUFFSIZE sets the Simple buffer only (init.cc computeBuffSizes:
 *    BUFFSIZE, LL_BUFFSIZE and LL128_BUFFSIZE are separate parameters); a
 *    step is buffSize / NCCL_STEPS (8), and ring Simple's chunk is
 *    ALLREDUCE_CHUNKSTEPS (4) steps: half the buffer (enqueue.cc
 *    calcCollChunking). A tuner's getChunkSize may only make it smaller.
 *  - runRing (src/device/all_reduce.h, line 38 in 2.30.7 and dev, 36 in
 *    2.28.9) walks the channel's count in loops of nranks x chunk and, in
 *    a loop shorter than that, recomputes the chunk from what remains:
 *    below nranks x chunk per channel the chunk is never used as set.
 *  - Each step of nelem is sent in slices (prims_simple.h genericOp, line
 *    184 in 2.30.7 and dev, 194 in 2.28.9): a slice is half of nelem
 *    (SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 2) but never below
 *    stepSize x StepPerSlice / 32, buffSize / 128 bytes: 32 KiB with the
 *    default 4 MiB buffer, 8 KiB with 1 MiB. So a step is one slice when
 *    nelem is at most buffSize / 128, else two.
 */
#include "nccl/common.h"
#include "pcie/sim_box.h"

uint64_t pt_ring_buffsize(uint64_t buffsize) { return buffsize ? buffsize : PT_NCCL_BUFFSIZE_DEFAULT; }

uint64_t pt_ring_simple_chunk(uint64_t buffsize) { return pt_ring_buffsize(buffsize) / 2; }

static unsigned long step_slices(uint64_t buffsize, uint64_t nelem) {
  return nelem > pt_ring_buffsize(buffsize) / 128 ? 2 : 1;
}

unsigned long pt_ring_simple_slices(uint64_t buffsize, uint64_t chunk, int nranks,
                                    uint64_t chan_bytes, unsigned long *loops) {
  uint64_t max = pt_ring_simple_chunk(buffsize);
  if (!chunk || chunk > max) chunk = max; /* NCCL's ceiling for a plugin's chunk */
  if (nranks < 1) nranks = 1;
  uint64_t loop = (uint64_t)nranks * chunk;
  uint64_t full = chan_bytes / loop, rem = chan_bytes - full * loop;
  unsigned long n = (unsigned long)full * step_slices(buffsize, chunk);
  /* The last, shorter loop: the chunk recomputed from what remains. */
  if (rem) n += step_slices(buffsize, (rem + (uint64_t)nranks - 1) / (uint64_t)nranks);
  if (loops) *loops = (unsigned long)full + (rem != 0);
  return n ? n : 1;
}

/* The ring in lockstep: each rank's link sends its k steps in order, each
 * step in N slices of x / N (x = X / k, X the whole transfer), and slice i
 * of step j may start only when the neighbour's slice i of step j - 1 has
 * arrived (hop later). Either the link never waits, and the last slice
 * lands at X + hop, or every step waits for its first slice, and it lands
 * at k hop + x + (k - 1) x / N. N = 1 is the truth's own additive form,
 * k hop + X. A slice costs the link its bytes only: its flag and fence are
 * on the dependency chain (the assumption no table here tests). */
double pt_ring_pipe_us(int k, unsigned long slices, double hop_us, double xfer_us) {
  double n = slices ? (double)slices : 1.0;
  if (k < 1) k = 1;
  double x = xfer_us / k, link = xfer_us + hop_us, chain = k * hop_us + x + (k - 1) * x / n;
  return link > chain ? link : chain;
}
