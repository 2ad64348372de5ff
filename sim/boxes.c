/*
 * The built-in simulated boxes. A box is hardware (.hw), noise and the
 * published rows of the table it stands for (test/data/real, the same rows
 * as that table's box file). Neither its truth nor NCCL's view is typed
 * here: the first time a built-in box is asked for, NCCL's view is derived
 * from the hardware by NCCL's own search (sim/nccl_derive.c) and its truth
 * computed from the hardware by the physical model with the global
 * parameters fitted on every table (sim/phys.c). Each box's hardware is one
 * of the topologies in test/data/nccl-real, so its NCCL default is checked
 * against NCCL's code (test/test_sim_derive.c); test/test_sim_box.c reports
 * each box's error on its rows, and test/test_sim_loo.c the error of its
 * table when the parameters are fitted without it (docs/sim.md).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/sim_box.h"

#define RING NCCL_ALGO_RING
#define LL NCCL_PROTO_LL
#define LL128 NCCL_PROTO_LL128
#define SIMPLE NCCL_PROTO_SIMPLE
#define AR PT_ALLREDUCE
#define EAGER PT_MODE_EAGER
/* Held out: a table outside the fit (no NCCL version stated): NCCL's
 * default, eager or timed inside a CUDA graph. */
#define HDEF(bytes, us, src) {AR, EAGER, bytes, -1, -1, 0, us, src, 0, 1, ""}

/* Hardware: GPUs with a Gen5 or Gen4 x16 link under a switch (>= 0) or a
 * CPU socket (CPU(i)). */
#define CPU(i) (-(i)-1)
#define G5(parent) {parent, 5, 16, 120}
#define G4(parent) {parent, 4, 16, 89}

#define F_LUKE "rtxpro6000maxq-8x-nccl-vs-custom-voipmonitor-luke-switches.txt"
#define F_WRX90 "rtxpro6000-8x-ring-rootcomplexA-vs-B-voipmonitor-wrx90.txt"
#define F_XML "rtxpro6000-8x-graphXML-vs-default-voipmonitor-turin.txt"
#define F_4090X4 "rtx4090-4x-default-kalavai-docker.txt"
#define F_4090X2 "rtx4090-2x-default-kalavai-docker.txt"
#define F_LL128 "rtxpro6000-4x8x-default-vs-LL128tuner-voipmonitor-turin.txt"
#define F_V100 "v100sxm2-4x-nccl-vs-oneshot-cudagraph-sglangV100-pr2.txt"
#define GRAPH PT_MODE_GRAPH
#define GDEF(bytes, us, src) {AR, GRAPH, bytes, -1, -1, 0, us, src, 0, 1, ""}

static struct pt_box builtin[] = {
    {
        .name = "gen5-8x-p2p",
        .desc = "8x RTX PRO 6000 class, PCIe Gen5 x16 behind switches, one CPU socket, P2P",
        .nranks = 8,
        .nnodes = 1,
        /* Threadripper (one AMD socket), two Gen5 switches of 4 GPUs on
         * separate root complexes, NCCL_P2P_LEVEL=SYS as in the wrx90 source
         * (test/data/nccl-real/sm120-gen5-8x-2switch-1socket.P2P_LEVEL_SYS.txt):
         * NCCL derives 2 x 24 GB/s (PHB), 4 channels. */
        .has_hw = 1,
        .hw = {.ncpus = 1, .cpu_vendor = PT_CPU_AMD, .nswitches = 2,
               .sw = {{CPU(0), 5, 16, 0}, {CPU(0), 5, 16, 0}}, .ngpus = 8,
               .gpu = {G5(0), G5(0), G5(0), G5(0), G5(1), G5(1), G5(1), G5(1)}, .p2p = 1,
               .p2p_level = "SYS"},
        .noise_sigma = 0.02,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 10,
        .anchors =
            {
                /* The rows of this table's box file in test/data/real
                 * (channels 0: NCCL's own count; comm: the communicator the
                 * row ran on, NCCL 2.28.3's or NCCL_GRAPH_FILE's). */
                {AR, EAGER, 16384, -1, -1, 0, 18.66, F_WRX90, 0, 0, ""},
                {AR, EAGER, 65536, -1, -1, 0, 18.13, F_WRX90, 0, 0, ""},
                {AR, EAGER, 262144, -1, -1, 0, 25.09, F_WRX90, 0, 0, ""},
                {AR, EAGER, 1048576, -1, -1, 0, 81.08, F_WRX90, 0, 0, ""},
                {AR, EAGER, 4194304, -1, -1, 0, 182.49, F_WRX90, 0, 0, ""},
                {AR, EAGER, 16777216, -1, -1, 0, 664.71, F_WRX90, 0, 0, ""},
                /* Held out: NCCL on luke's Max-Q box (three switches, one
                 * socket; NCCL version not stated). */
                HDEF(8192, 24.2, F_LUKE),
                HDEF(32768, 24.5, F_LUKE),
                HDEF(65536, 24.1, F_LUKE),
                HDEF(262144, 28.0, F_LUKE),
            },
    },
    {
        .name = "gen5-8x-dual-misdetect",
        .desc = "8x RTX PRO 6000, dual AMD Turin, direct attach: NCCL finds no ring through the "
                "inter-socket link, falls back to 1 slow channel and picks Simple from 4 KB",
        .nranks = 8,
        .nnodes = 1,
        /* Two AMD sockets, 4 GPUs direct on each, NCCL_P2P_LEVEL=SYS (the
         * source's recipe): no ring fits through the 16 GB/s inter-socket
         * link at Blackwell's slowest search speed (18 GB/s), so NCCL falls
         * back to 1 channel x 0.1 GB/s and 2 communicator channels
         * (sm120-gen5-8x-direct-2socket.P2P_LEVEL_SYS.txt): Simple from 4 KB. */
        .has_hw = 1,
        .hw = {.ncpus = 2, .cpu_vendor = PT_CPU_AMD, .ngpus = 8,
               .gpu = {G5(CPU(0)), G5(CPU(0)), G5(CPU(0)), G5(CPU(0)), G5(CPU(1)), G5(CPU(1)),
                       G5(CPU(1)), G5(CPU(1))},
               .p2p = 1, .p2p_level = "SYS"},
        .noise_sigma = 0.02,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 8,
        .anchors =
            {
                /* The rows of this table's box file in test/data/real
                 * (channels 0: NCCL's own count; comm: the communicator the
                 * row ran on, NCCL 2.28.3's or NCCL_GRAPH_FILE's). */
                {AR, EAGER, 32768, RING, SIMPLE, 0, 48.16, F_XML, 4, 0, ""},
                {AR, EAGER, 65536, RING, SIMPLE, 0, 48.69, F_XML, 4, 0, ""},
                {AR, EAGER, 131072, RING, SIMPLE, 0, 51.56, F_XML, 4, 0, ""},
                {AR, EAGER, 262144, RING, SIMPLE, 0, 56.48, F_XML, 4, 0, ""},
                {AR, EAGER, 32768, RING, LL, 0, 26.20, F_XML, 4, 0, "graph XML"},
                {AR, EAGER, 65536, RING, LL, 0, 25.59, F_XML, 4, 0, "graph XML"},
                {AR, EAGER, 131072, RING, LL, 0, 32.09, F_XML, 4, 0, "graph XML"},
                {AR, EAGER, 262144, RING, LL, 0, 37.26, F_XML, 4, 0, "graph XML"},
            },
    },
    {
        .name = "gen4-4x-shm",
        .desc = "4x RTX 4090, PCIe Gen4, no P2P: host-staged (SHM) transport",
        .nranks = 4,
        .nnodes = 1,
        /* Four Gen4 GPUs direct on one socket, no P2P (consumer driver).
         * The source does not name the CPU; this box assumes Intel, where
         * NCCL derives 1 x 20 GB/s and 2 channels
         * (sm89-gen4-4x-direct-1socket-intel.noP2P.txt; AMD would give 2 x 12). */
        .has_hw = 1,
        .hw = {.ncpus = 1, .cpu_vendor = PT_CPU_INTEL, .cpu_model = PT_INTEL_SRP, .ngpus = 4,
               .gpu = {G4(CPU(0)), G4(CPU(0)), G4(CPU(0)), G4(CPU(0))}, .p2p = 0},
        .noise_sigma = 0.03,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 12,
        .anchors =
            {
                /* The rows of this table's box file in test/data/real
                 * (channels 0: NCCL's own count; comm: the communicator the
                 * row ran on, NCCL 2.28.3's or NCCL_GRAPH_FILE's). */
                {AR, EAGER, 8192, -1, -1, 0, 23.52, F_4090X4, 0, 0, ""},
                {AR, EAGER, 16384, -1, -1, 0, 31.99, F_4090X4, 0, 0, ""},
                {AR, EAGER, 32768, RING, LL, 2, 44.12, F_4090X4, 4, 0, ""},
                {AR, EAGER, 65536, RING, LL, 4, 81.19, F_4090X4, 4, 0, ""},
                {AR, EAGER, 131072, RING, SIMPLE, 4, 125.5, F_4090X4, 4, 0, ""},
                {AR, EAGER, 262144, RING, SIMPLE, 4, 211.5, F_4090X4, 4, 0, ""},
                {AR, EAGER, 524288, RING, SIMPLE, 4, 347.4, F_4090X4, 4, 0, ""},
                {AR, EAGER, 1048576, RING, SIMPLE, 4, 642.4, F_4090X4, 4, 0, ""},
                {AR, EAGER, 2097152, RING, SIMPLE, 4, 1251.1, F_4090X4, 4, 0, ""},
                {AR, EAGER, 4194304, RING, SIMPLE, 4, 2474.5, F_4090X4, 4, 0, ""},
                {AR, EAGER, 8388608, RING, SIMPLE, 4, 4883.4, F_4090X4, 4, 0, ""},
                {AR, EAGER, 16777216, RING, SIMPLE, 4, 9782.3, F_4090X4, 4, 0, ""},
            },
    },
    {
        .name = "consumer-2x",
        .desc = "2x RTX 4090 consumer box, stock driver (no P2P): SHM transport",
        .nranks = 2,
        .nnodes = 1,
        /* Two Gen4 GPUs direct on one (assumed Intel) socket, no P2P:
         * 1 x 20 GB/s, 2 channels (sm89-gen4-2x-direct-1socket-intel.noP2P.txt). */
        .has_hw = 1,
        .hw = {.ncpus = 1, .cpu_vendor = PT_CPU_INTEL, .cpu_model = PT_INTEL_SRP, .ngpus = 2,
               .gpu = {G4(CPU(0)), G4(CPU(0))}, .p2p = 0},
        .noise_sigma = 0.03,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 13,
        .anchors =
            {
                /* The rows of this table's box file in test/data/real
                 * (channels 0: NCCL's own count; comm: the communicator the
                 * row ran on, NCCL 2.28.3's or NCCL_GRAPH_FILE's). */
                {AR, EAGER, 8192, -1, -1, 0, 16.82, F_4090X2, 0, 0, ""},
                {AR, EAGER, 16384, -1, -1, 0, 23.67, F_4090X2, 0, 0, ""},
                {AR, EAGER, 32768, RING, LL, 4, 40.18, F_4090X2, 4, 0, ""},
                {AR, EAGER, 65536, RING, SIMPLE, 4, 60.23, F_4090X2, 4, 0, ""},
                {AR, EAGER, 131072, RING, SIMPLE, 4, 97.90, F_4090X2, 4, 0, ""},
                {AR, EAGER, 262144, RING, SIMPLE, 4, 163.4, F_4090X2, 4, 0, ""},
                {AR, EAGER, 524288, RING, SIMPLE, 4, 280.1, F_4090X2, 4, 0, ""},
                {AR, EAGER, 1048576, RING, SIMPLE, 4, 538.5, F_4090X2, 4, 0, ""},
                {AR, EAGER, 2097152, RING, SIMPLE, 4, 1025.7, F_4090X2, 4, 0, ""},
                {AR, EAGER, 4194304, RING, SIMPLE, 4, 2022.1, F_4090X2, 4, 0, ""},
                {AR, EAGER, 8388608, RING, SIMPLE, 4, 4077.0, F_4090X2, 4, 0, ""},
                {AR, EAGER, 16777216, RING, SIMPLE, 4, 8137.9, F_4090X2, 4, 0, ""},
                {AR, EAGER, 33554432, RING, SIMPLE, 4, 15190.0, F_4090X2, 4, 0, ""},
            },
    },
    {
        .name = "gen5-8x-ll128",
        .desc = "8x RTX PRO 6000, dual AMD Turin, P2P, LL128 opted in with "
                "NCCL_PROTO=LL,LL128,Simple",
        .nranks = 8,
        .nnodes = 1,
        /* The dual-socket box of the misdetect entry with LL128 opted in:
         * NCCL's fallback view (1 x 0.1 GB/s, 2 channels) with LL128 on
         * (sm120-gen5-8x-direct-2socket.P2P_LEVEL_SYS.PROTO_LL_LL128_Simple.txt). */
        .has_hw = 1,
        .hw = {.ncpus = 2, .cpu_vendor = PT_CPU_AMD, .ngpus = 8,
               .gpu = {G5(CPU(0)), G5(CPU(0)), G5(CPU(0)), G5(CPU(0)), G5(CPU(1)), G5(CPU(1)),
                       G5(CPU(1)), G5(CPU(1))},
               .p2p = 1, .p2p_level = "SYS", .proto = "LL,LL128,Simple"},
        .noise_sigma = 0.02,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 14,
        .anchors =
            {
                /* The rows of this table's box file in test/data/real
                 * (channels 0: NCCL's own count; comm: the communicator the
                 * row ran on, NCCL 2.28.3's or NCCL_GRAPH_FILE's). */
                {AR, EAGER, 65536, RING, LL, 0, 23.12, F_LL128, 4, 0, ""},
                {AR, EAGER, 262144, RING, LL, 0, 49.01, F_LL128, 4, 0, ""},
                {AR, EAGER, 524288, RING, LL, 0, 70.25, F_LL128, 4, 0, ""},
                {AR, EAGER, 1048576, RING, LL, 0, 111.42, F_LL128, 4, 0, ""},
                {AR, EAGER, 2097152, RING, LL, 0, 192.15, F_LL128, 4, 0, ""},
                {AR, EAGER, 4194304, RING, SIMPLE, 0, 219.37, F_LL128, 4, 0, ""},
                {AR, EAGER, 16777216, RING, SIMPLE, 0, 726.92, F_LL128, 4, 0, ""},
                {AR, EAGER, 65536, RING, LL, 0, 23.36, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 262144, RING, LL, 0, 51.03, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 524288, RING, LL128, 0, 63.58, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 1048576, RING, LL128, 0, 86.07, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 2097152, RING, LL128, 0, 128.01, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 4194304, RING, SIMPLE, 0, 220.16, F_LL128, 4, 0, "plugin"},
                {AR, EAGER, 16777216, RING, SIMPLE, 0, 730.53, F_LL128, 4, 0, "plugin"},
            },
    },
    {
        .name = "v100-4x-plx",
        .desc = "4x V100 SXM2 on PCIe carriers behind one Gen3 PLX switch, P2P; "
                "calibrated on in-graph (CUDA graph) timings",
        .nranks = 4,
        .nnodes = 1,
        /* Each GPU on its own downstream port of the PLX (all pairs PXB),
         * an Intel Skylake host: 1 x 12 GB/s, 2 channels
         * (test/data/nccl-real/sm70-gen3-4x-plx.txt). */
        .has_hw = 1,
        .hw = {.ncpus = 1, .cpu_vendor = PT_CPU_INTEL, .cpu_model = PT_INTEL_SKL, .nswitches = 5,
               .sw = {{CPU(0), 3, 16, 0}, {0, 3, 16, 0}, {0, 3, 16, 0}, {0, 3, 16, 0}, {0, 3, 16, 0}},
               .ngpus = 4,
               .gpu = {{1, 3, 16, 70}, {2, 3, 16, 70}, {3, 3, 16, 70}, {4, 3, 16, 70}}, .p2p = 1},
        .noise_sigma = 0.02,
        .outlier_prob = 0.03,
        .outlier_scale = 0.5,
        .nanchors = 6,
        .anchors =
            {
                /* Held out: the table states no NCCL version. */
                GDEF(4096, 19.4, F_V100),
                GDEF(8192, 20.3, F_V100),
                GDEF(16384, 22.3, F_V100),
                GDEF(32768, 24.2, F_V100),
                GDEF(131072, 51.8, F_V100),
                GDEF(393216, 83.5, F_V100),
            },
    },
};

size_t pt_box_builtin_count(void) { return sizeof builtin / sizeof builtin[0]; }

static pthread_once_t derived_once = PTHREAD_ONCE_INIT;

/* Derives every built-in box's NCCL view and computes its truth once. A failure is a bug in this
 * file (the hardware above is fixed), caught by every test. */
static void derive_builtins(void) {
  for (size_t i = 0; i < pt_box_builtin_count(); i++) {
    struct pt_error_rec e;
    if (pt_box_derive(&builtin[i], &e)) {
      fprintf(stderr, "built-in box %s: %s\n", builtin[i].name, e.msg);
      abort();
    }
    pt_box_truth_from_hw(&builtin[i], pt_phys_fitted());
    snprintf(builtin[i].nccl_version, sizeof builtin[i].nccl_version, "%s", PT_SIM_NCCL);
  }
}

const struct pt_box *pt_box_builtin_at(size_t i) {
  pthread_once(&derived_once, derive_builtins);
  return i < pt_box_builtin_count() ? &builtin[i] : NULL;
}

const struct pt_box *pt_box_builtin(const char *name) {
  for (size_t i = 0; i < pt_box_builtin_count(); i++)
    if (!strcmp(pt_box_builtin_at(i)->name, name)) return &builtin[i];
  return NULL;
}

const char *pt_box_default_name(void) { return builtin[0].name; }
