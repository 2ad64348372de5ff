/*
 * What NCCL does with a tuner's chunk (getChunkSize), from its source
 * (tuner/chunk.c cites the functions). One place for these facts: the
 * plugin's answer (tuner/table.c), the simulator's truth (sim/ring_chunks.c)
 * and profile --chunks (cli/profile.c) all use them.
 */
#ifndef PCIE_CHUNK_H
#define PCIE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

/* NCCL's LL and LL128 buffers (init.cc DEFAULT_LL_BUFFSIZE,
 * DEFAULT_LL128_BUFFSIZE); NCCL_BUFFSIZE sets only Simple's. */
#define PT_NCCL_LL_BUFFSIZE ((uint64_t)8 * 512 * 8 * 16)
#define PT_NCCL_LL128_BUFFSIZE ((uint64_t)120 * 640 * 8 * 8)

/* A chunk size rounded down to the protocol's grain, never below one grain
 * (NCCL would make it 0 there). */
size_t pt_chunk_round(size_t chunk, int proto);

/* NCCL's ceiling for a tuner's chunk on (coll, algo, proto) with a Simple
 * buffer of simple_buffsize bytes: the chunk its buffers give before any
 * size-dependent shrink (bufferMaxChunkSize). 0 where this project neither
 * models nor offers a chunk (pt_chunk_reach is 0 there too). */
uint64_t pt_chunk_ceiling(int coll, int algo, int proto, uint64_t simple_buffsize);

/* The bytes one channel's part must exceed for a chunk of chunk bytes to
 * change what NCCL's device code runs: nranks x chunk on a ring (below, one
 * loop, whose chunk runRing recomputes from the count), chunk on a tree (one
 * piece). 0 where the chunk is not offered (not a ring of all-reduce,
 * all-gather or reduce-scatter, nor a tree of all-reduce). */
uint64_t pt_chunk_reach(int coll, int algo, int nranks, uint64_t chunk);

/* The device function that recomputes or walks the chunk there, for
 * messages ("all_reduce.h runRing"); "" where pt_chunk_reach is 0. */
const char *pt_chunk_where(int coll, int algo);

/* 1 when an NCCL of that version ("2.30.7", "2.30 (sim, ...)") asks a
 * tuner for its chunk: getChunkSize came with tuner ABI v6 in 2.30. */
int pt_chunk_asked(const char *nccl_version);

#endif
