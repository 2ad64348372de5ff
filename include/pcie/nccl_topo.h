/*
 * A PCIe box's hardware, and what NCCL derives from it (docs/sim.md,
 * "NCCL's view, derived").
 *
 * struct pt_hw is what `lspci -t` and the BIOS would tell: GPUs (compute
 * capability, PCIe generation and width), PCI switches (or bridges) between
 * them and the CPU sockets, the CPU vendor (which fixes the inter-socket
 * bandwidth NCCL assumes), whether the driver allows GPU peer-to-peer, and
 * the NCCL_* variables that change NCCL's view. It is plain data with fixed
 * arrays, so it can be copied.
 *
 * pt_nccl_derive() runs this project's implementation of what NCCL 2.30 does
 * on one node: the topology graph and its paths (src/graph/topo.cc,
 * paths.cc), the ring and tree graph searches with NCCL's speed arrays and
 * its fallback (search.cc), the communicator's channel count (init.cc,
 * connect.cc), and the cost model's inputs (tuning.cc). It is checked
 * against NCCL's own code on every topology in test/data/nccl-real.
 *
 * Pure functions; thread-safe (no global state).
 */
#ifndef PCIE_NCCL_TOPO_H
#define PCIE_NCCL_TOPO_H

#include <stddef.h>

#include "pcie/nccl_model.h"

#define PT_HW_MAX_GPUS 16
#define PT_HW_MAX_SWITCHES 16
#define PT_HW_MAX_CPUS 4

/* NCCL's CPU vendor codes (topo.h NCCL_TOPO_CPU_VENDOR_*), x86 only. */
enum pt_cpu_vendor { PT_CPU_OTHER = 0, PT_CPU_INTEL = 1, PT_CPU_AMD = 2 };
/* Intel generations NCCL tells apart for the inter-socket bandwidth. */
enum pt_intel_model { PT_INTEL_BDW = 0, PT_INTEL_SKL = 1, PT_INTEL_SRP = 2, PT_INTEL_ERP = 3 };

/* A PCIe device's upstream link and where it hangs: parent >= 0 is a switch
 * index, parent < 0 is CPU socket -(parent + 1). */
struct pt_hw_dev {
  int parent;
  int gen;   /* PCIe generation 1..6 */
  int lanes; /* 1..32 */
  int sm;    /* GPUs: compute capability x 10 + minor, e.g. 89, 120 */
};

struct pt_hw {
  int nccl_version; /* the NCCL whose view is derived, as NCCL_VERSION_CODE (23100 = 2.31.0);
                     * 0 = the 2.28-2.30 behaviour (PT_NCCL_V2_31 and later change it) */
  int ncpus;      /* sockets (NUMA nodes with devices), 1..PT_HW_MAX_CPUS */
  int cpu_vendor; /* enum pt_cpu_vendor */
  int cpu_model;  /* enum pt_intel_model (Intel only) */
  int cpu_family;  /* CPUID family and model of the topology's <cpu> (familyid, modelid), */
  int cpu_modelid; /* 0 = unknown: NCCL 2.31 reads AMD's Zen generation and more Intel ids from them */
  int nswitches;
  struct pt_hw_dev sw[PT_HW_MAX_SWITCHES]; /* a switch's parent is a lower index or a CPU */
  int ngpus;
  struct pt_hw_dev gpu[PT_HW_MAX_GPUS];
  int p2p;             /* 1 when the driver allows GPU peer-to-peer (NVML) */
  double host_staging_gbs; /* GB/s the host copies NCCL's SHM staging at, measured
                              on this host (docs/sim.md); 0: the fitted shm_bw */
  char p2p_level[16];  /* NCCL_P2P_LEVEL ("" = unset): LOC, PIX, PXB, PHB, SYS or 0..5 */
  char proto[64];      /* NCCL_PROTO ("" = unset) */
  char algo[64];       /* NCCL_ALGO ("" = unset) */
  int min_nchannels;   /* NCCL_MIN_NCHANNELS (0 = unset): more communicator channels */
  int max_nchannels;   /* NCCL_MAX_NCHANNELS (0 = unset) */
  int min_ctas;        /* NCCL_MIN_CTAS (0 = unset): a communicator floor like NCCL_MIN_NCHANNELS,
                          and from 2.31.2 also each collective's (pt_box_task_channels) */
  int p2p_disable;     /* NCCL_P2P_DISABLE=1: as NCCL_P2P_LEVEL=LOC, and it wins over it */
  int shm_disable;     /* NCCL_SHM_DISABLE=1: refused where a GPU pair lacks P2P */
};

/* One graph search result (struct ncclTopoGraph's fields that matter here). */
struct pt_nccl_graph {
  int nchannels;
  float bw_intra;    /* GB/s per channel */
  int type_intra;    /* path type, see pt_path_type_name */
  int same_channels; /* 1: every channel is the same ring */
  int pattern;       /* NCCL_TOPO_PATTERN_*: 1 balanced tree, 3 tree, 4 ring */
  int fallback;      /* 1: nothing fitted at any speed; NCCL's 1 channel x 0.1 GB/s */
};

struct pt_nccl_view {
  struct pt_nccl_graph ring, tree;
  int comm_channels; /* comm->nChannels */
  int cc_min, cc_max;
  struct pt_nccl_params params; /* the cost model's inputs */
  int shm_pairs; /* ordered GPU pairs NCCL connects without P2P (SHM through the CPU) */
};

/* "LOC", "PIX", "PXB", "PHB", "SYS", ... for a path type. */
const char *pt_path_type_name(int type);

/* Checks a hardware description; 0, or -1 with a message in err. */
int pt_hw_check(const struct pt_hw *hw, char *err, size_t errlen);

/* Derives NCCL's view of hw. Returns 0, or -1 with a message in err (bad
 * hardware, or an NCCL_* value NCCL itself would reject). */
int pt_nccl_derive(const struct pt_hw *hw, struct pt_nccl_view *v, char *err, size_t errlen);

/* Reads an NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format)
 * into hw: CPUs, PCI bridges and GPUs; NICs and NVLinks are ignored. The
 * environment fields are left empty and p2p is set to 1. Returns 0, or -1
 * with "file:line: what" in err. */
int pt_hw_from_topo_xml(const char *path, struct pt_hw *hw, char *err, size_t errlen);

#endif
