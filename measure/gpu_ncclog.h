/*
 * What NCCL's INFO log says about a communicator, for the profile
 * (docs/gpu.md, "What is recorded"): its channel count (the line
 * "N coll channels, ..." of init.cc) and the transport of each connection
 * ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", also SHM and NET). NCCL's API
 * publishes neither. Pure text processing, tested without a GPU.
 */
#ifndef PCIE_MEASURE_GPU_NCCLOG_H
#define PCIE_MEASURE_GPU_NCCLOG_H

#include <stddef.h>
#include <stdio.h>

#define PT_NCCLOG_MAX_LINKS 128

struct pt_ncclog {
  int comm_channels; /* smallest count any rank printed; 0 = none seen */
  size_t nlinks;
  struct {
    int from, to;
    char via[32]; /* "P2P/IPC", "SHM/direct/direct", "NET/Socket/0" ... */
  } links[PT_NCCLOG_MAX_LINKS]; /* distinct (from, to) pairs */
  size_t nexcerpt;
  char excerpt[24][200]; /* the lines used, for the profile and bug reports */
};

/* Reads one log (any number of ranks' lines) into l, adding to what it holds. */
void pt_ncclog_scan(FILE *f, struct pt_ncclog *l);

#endif
