/*
 * How NCCL's device code cuts a channel's part into loops, chunks and
 * Simple slices, and what that costs in the truth's pipeline (docs/sim.md,
 * "Buffers and chunks"). What NCCL does with a tuner's chunk, and where,
 * is in tuner/chunk.c; here, how many pieces a step runs in. Facts, each
 * from NCCL 2.28.9, 2.30.7 and the 2.31 dev branch alike:
 *
 *  - NCCL_BUFFSIZE sets the Simple buffer only (init.cc computeBuffSizes).
 *    NCCL's own chunk is the ceiling pt_chunk_ceiling gives (enqueue.cc
 *    calcCollChunking), except tree LL128's, which it halves while a part
 *    is small (below).
 *  - A ring (runRing in all_reduce.h, line 38 in 2.30.7 and dev, 36 in
 *    2.28.9; all_gather.h and reduce_scatter.h alike) walks the channel's
 *    part in loops of nranks x chunk; the last, shorter loop runs a chunk
 *    of what remains over nranks.
 *  - A tree (all_reduce.h runTreeSplit) walks the part in chunks: one
 *    piece per chunk, the last one shorter.
 *  - Each ring Simple step of nelem is sent in slices (prims_simple.h
 *    genericOp, line 184 in 2.30.7 and dev, 194 in 2.28.9): half of nelem
 *    (SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 2) but never below
 *    stepSize x StepPerSlice / 32, buffSize / 128 bytes: a step is one
 *    slice when nelem is at most buffSize / 128, else two. Tree Simple runs
 *    ProtoSimple<1, 1> and LL/LL128 have no slices: one piece a step.
 */
#include <math.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/sim_box.h"

uint64_t pt_ring_buffsize(uint64_t buffsize) { return buffsize ? buffsize : PT_NCCL_BUFFSIZE_DEFAULT; }

/* enqueue.cc calcCollChunking, tree LL128 on one node (nNodes 1, ppn =
 * nranks): halve while part / chunk < nsteps x 64 / ppn (down to 128 KiB),
 * then while it is < nsteps x 16 / ppn (down to 32 KiB), nsteps = 1 +
 * log2(nNodes) + 0.1 ppn; the quotient is an integer division. */
static uint64_t tree_ll128_own(uint64_t chunk, int nranks, uint64_t part) {
  double ppn = nranks > 0 ? nranks : 1, nsteps = 1 + 0.1 * ppn;
  while ((double)(part / chunk) < nsteps * 64 / ppn && chunk > 131072) chunk /= 2;
  while ((double)(part / chunk) < nsteps * 16 / ppn && chunk > 32768) chunk /= 2;
  return chunk;
}

uint64_t pt_chunk_run(int coll, int algo, int proto, uint64_t buffsize, uint64_t chunk, int nranks,
                      uint64_t part) {
  uint64_t max = pt_chunk_ceiling(coll, algo, proto, pt_ring_buffsize(buffsize));
  if (!max) return 0;
  if (!chunk && algo == NCCL_ALGO_TREE && proto == NCCL_PROTO_LL128) chunk = tree_ll128_own(max, nranks, part);
  if (!chunk || chunk > max) chunk = max; /* NCCL's ceiling for a plugin's chunk */
  return pt_chunk_round((size_t)chunk, proto);
}

static unsigned long step_slices(int algo, int proto, uint64_t buffsize, uint64_t nelem) {
  if (algo != NCCL_ALGO_RING || proto != NCCL_PROTO_SIMPLE) return 1;
  return nelem > pt_ring_buffsize(buffsize) / 128 ? 2 : 1;
}

unsigned long pt_chunk_pieces(int coll, int algo, int proto, uint64_t buffsize, uint64_t chunk, int nranks,
                              uint64_t chan_bytes, unsigned long *loops) {
  uint64_t c = pt_chunk_run(coll, algo, proto, buffsize, chunk, nranks, chan_bytes);
  if (nranks < 1) nranks = 1;
  if (loops) *loops = 1;
  if (!c) return 1;
  uint64_t loop = algo == NCCL_ALGO_TREE ? c : (uint64_t)nranks * c;
  uint64_t full = chan_bytes / loop, rem = chan_bytes - full * loop;
  unsigned long n = (unsigned long)full * step_slices(algo, proto, buffsize, c);
  /* The last, shorter loop: on a ring, a chunk of what remains per rank. */
  uint64_t last = algo == NCCL_ALGO_TREE ? rem : (rem + (uint64_t)nranks - 1) / (uint64_t)nranks;
  if (rem) n += step_slices(algo, proto, buffsize, last);
  if (loops) *loops = (unsigned long)full + (rem != 0);
  return n ? n : 1;
}

unsigned pt_chunk_window(int algo, int proto) {
  /* prims_simple.h waitPeer: a sender waits while step + StepPerSlice is
   * past the receiver's step + NCCL_STEPS; ring Simple runs ProtoSimple<2,
   * 2> (ALLREDUCE_SLICESTEPS 2), tree ProtoSimple<1, 1>. prims_ll.h and
   * prims_ll128.h: one step a piece, NCCL_STEPS in flight. */
  return algo == NCCL_ALGO_RING && proto == NCCL_PROTO_SIMPLE ? 8 / 2 : 8;
}

/* A chain of k dependent steps (a ring in lockstep; one node's tree is a
 * chain too, sim/box.c steps), each step's x = X / k sent in N pieces of
 * x / N; piece i of step j may start only when the neighbour's piece i of
 * step j - 1 has arrived (hop later).
 *  - Pipelining: either the link never waits, and the last piece lands at
 *    link + hop, or every step waits for its first piece, and it lands at
 *    k hop + x + (k - 1) x / N. N = 1 is the truth's own additive form.
 *  - The extra dependent steps: a piece takes a FIFO slot, freed when the
 *    receiver's consumption has come back (pt_chunk_window slots): the link
 *    sends at most W of its k N pieces per round trip of a piece, taken as
 *    two hops plus the piece's own transfer: link = max(X, (2 hop k N +
 *    X) / W). At NCCL's own chunk the window does not bind; small chunks
 *    pay for it. That the round trip is two of the truth's fitted hops is
 *    the assumption no table here tests (docs/sim.md). */
double pt_chunk_pipe_us(int k, unsigned long pieces, unsigned window, double hop_us, double xfer_us) {
  double n = pieces ? (double)pieces : 1.0, w = window ? window : 1;
  if (k < 1) k = 1;
  double credit = (2 * hop_us * k * n + xfer_us) / w;
  double x = xfer_us / k, link = (credit > xfer_us ? credit : xfer_us) + hop_us;
  double chain = k * hop_us + x + (k - 1) * x / n;
  return link > chain ? link : chain;
}
