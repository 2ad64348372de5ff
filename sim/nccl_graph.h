/*
 * Internal to sim/: the topology graph NCCL builds for one node (nodes, links
 * with bandwidths the search consumes, precomputed paths), shared by
 * sim/nccl_paths.c (building it) and sim/nccl_search.c (NCCL's ring and tree
 * search over it). Names follow NCCL's topo.h so the comments citing NCCL
 * read naturally; the code is this project's own.
 */
#ifndef PCIE_SIM_NCCL_GRAPH_H
#define PCIE_SIM_NCCL_GRAPH_H

#include "pcie/nccl_topo.h"

#define NG_MAX_NODES (PT_HW_MAX_GPUS + PT_HW_MAX_SWITCHES + PT_HW_MAX_CPUS)
#define NG_MAX_LINKS (PT_HW_MAX_GPUS + PT_HW_MAX_SWITCHES + PT_HW_MAX_CPUS)
#define NG_MAX_HOPS (2 * NG_MAX_NODES)
#define NG_MAX_CHANNELS 32 /* MAXCHANNELS / 2: what the ring search may find */

/* Node types (topo.h). */
enum { NG_GPU = 0, NG_PCI = 1, NG_CPU = 3 };
/* Link types, which double as path types (topo.h). */
enum { NG_LINK_LOC = 0, NG_LINK_PCI = 4, NG_LINK_SYS = 9 };
enum {
  NG_PATH_LOC = 0,
  NG_PATH_NVB = 2,
  NG_PATH_PIX = 4,
  NG_PATH_PXB = 5,
  NG_PATH_PHB = 8,
  NG_PATH_SYS = 9,
  NG_PATH_DIS = 11
};
/* Search patterns (graph.h NCCL_TOPO_PATTERN_*). */
enum { NG_PATTERN_BALANCED_TREE = 1, NG_PATTERN_TREE = 3, NG_PATTERN_RING = 4 };

#define NG_LOC_BW 5000.0f

struct ng_link {
  int type;
  float bw; /* what is left of it during a search */
  int rem;  /* node index at the other end */
};

struct ng_node {
  int type;
  int nlinks;
  struct ng_link links[NG_MAX_LINKS]; /* sorted by bandwidth, highest first */
  int vendor, model;                  /* CPUs */
  int sm, rank;                       /* GPUs */
  float pci_bw;                       /* GPUs: their own PCIe link */
  unsigned long long used;            /* GPUs: bit c set while channel c passes here */
};

struct ng_path {
  int count;
  struct ng_link *list[NG_MAX_HOPS]; /* list[0] leaves the source */
  int type;
  float bw;
};

struct ng_system {
  int nnodes;
  struct ng_node node[NG_MAX_NODES];
  int ngpus, gpu[PT_HW_MAX_GPUS]; /* node index of GPU i (rank i) */
  int ncpus, cpu[PT_HW_MAX_CPUS];
  struct ng_path path[NG_MAX_NODES][NG_MAX_NODES]; /* [from][to] */
  float max_bw, total_bw;
  int cc_min, cc_max;
  int vendor; /* of the first CPU, as ncclTopoCpuType */
  int shm_pairs; /* ordered GPU pairs without P2P (routed through the CPU: SHM) */
};

/* Builds the graph of hw and every path, GPU-to-GPU ones routed through the
 * CPU where NCCL would not use P2P. Returns 0, or -1 with err set. */
int ng_build(struct ng_system *s, const struct pt_hw *hw, int p2p_level, char *err, size_t errlen);

struct ng_graph {
  int pattern;
  int min_channels, max_channels;
  int nchannels;
  float bw_intra, bw_inter;
  int type_intra;
  int same_channels;
  int nhops;
  int fallback; /* 1: nothing fitted, NCCL's simple-order fallback */
  int intra[NG_MAX_CHANNELS * PT_HW_MAX_GPUS]; /* ranks per channel */
};

/* ncclTopoCompute for one node. Fills g->nchannels, bw, type, sameChannels
 * and pattern; falls back to one 0.1 GB/s channel when nothing fits. */
void ng_search(struct ng_system *s, struct ng_graph *g);

#endif
