/*
 * What NCCL does with a tuner's chunk (include/pcie/chunk.h). Facts, read
 * in NVIDIA/nccl v2.30.7-1 and the dev branch (2.31, 86fa684d) alike:
 *
 *  - enqueue.cc calcCollChunking computes NCCL's chunk, then, for every
 *    algorithm and protocol, asks getChunkSize with it, clamps the answer
 *    to bufferMaxChunkSize (the chunk the buffers give: stepSize =
 *    buffSize / NCCL_STEPS (8), times chunkSteps for ring Simple
 *    (ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS = 4) and 1 otherwise;
 *    LL carries data in half of each line, LL128 in 15 of 16 words) and
 *    rounds it down to the protocol's grain (ncclProtoGrainSize: LL 16,
 *    LL128 1920, Simple 512 bytes). So the answer replaces NCCL's own
 *    chunk wherever it is asked, also tree LL128's size-dependent one.
 *  - v2.28.9-1 and v2.29 have no getChunkSize (tuner ABI up to v5).
 *  - The device code (src/device/): a ring (all_reduce.h, all_gather.h,
 *    reduce_scatter.h runRing, every protocol) walks a channel's part in
 *    loops of nranks x chunk; all_reduce.h recomputes the chunk from the
 *    remainder in a loop shorter than that, the other two cut the last
 *    loop short: below nranks x chunk per channel, one loop, the chunk is
 *    never used as set. A tree (all_reduce.h runTreeSplit / runTreeUpDown,
 *    every protocol) walks the part in chunks, never recomputed: it
 *    matters above one chunk per channel.
 */
#include <stdio.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/profile.h"

static size_t grain(int proto) {
  return proto == NCCL_PROTO_LL ? 16 : proto == NCCL_PROTO_LL128 ? 1920 : 512;
}

size_t pt_chunk_round(size_t chunk, int proto) {
  size_t g = grain(proto), c = chunk / g * g;
  return c < g ? g : c;
}

static int offered(int coll, int algo) {
  if (algo == NCCL_ALGO_RING) return coll == PT_ALLREDUCE || coll == PT_ALLGATHER || coll == PT_REDUCESCATTER;
  return algo == NCCL_ALGO_TREE && coll == PT_ALLREDUCE;
}

uint64_t pt_chunk_ceiling(int coll, int algo, int proto, uint64_t simple_buffsize) {
  if (!offered(coll, algo)) return 0;
  switch (proto) {
  case NCCL_PROTO_LL: return PT_NCCL_LL_BUFFSIZE / 8 / 2;
  case NCCL_PROTO_LL128: return PT_NCCL_LL128_BUFFSIZE / 8 / 16 * 15;
  case NCCL_PROTO_SIMPLE: return simple_buffsize / 8 * (algo == NCCL_ALGO_RING ? 4 : 1);
  default: return 0;
  }
}

uint64_t pt_chunk_reach(int coll, int algo, int nranks, uint64_t chunk) {
  if (!offered(coll, algo)) return 0;
  return algo == NCCL_ALGO_RING ? (uint64_t)(nranks > 1 ? nranks : 1) * chunk : chunk;
}

const char *pt_chunk_where(int coll, int algo) {
  if (!offered(coll, algo)) return "";
  if (algo == NCCL_ALGO_TREE) return "all_reduce.h runTreeSplit";
  return coll == PT_ALLREDUCE ? "all_reduce.h runRing" : coll == PT_ALLGATHER ? "all_gather.h runRing"
                                                                               : "reduce_scatter.h runRing";
}

int pt_chunk_asked(const char *nccl_version) {
  int major = 0, minor = 0;
  if (!nccl_version || sscanf(nccl_version, "%d.%d", &major, &minor) != 2) return 0;
  return major > 2 || (major == 2 && minor >= 30);
}
