/*
 * The built-in simulated boxes, each calibrated against published
 * measurements (test/data/real). Every anchor below names its source; the
 * calibration test (test/test_sim_box.c) holds each box to its anchors within
 * 15 %, the held-out ones included. How the parameters were fitted, and which
 * published rows were left out and why, is in docs/sim.md.
 *
 * A box is hardware (.hw) plus its truth. NCCL's view is never typed here:
 * it is derived from the hardware by NCCL's own search (sim/nccl_derive.c)
 * the first time a built-in box is asked for, and each box's hardware is one
 * of the topologies in test/data/nccl-real, so its NCCL default is checked
 * against NCCL's code (test/test_sim_derive.c).
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
/* An anchor on NCCL's default choice, and one on a named candidate. */
#define DEF(bytes, us, src) {AR, EAGER, bytes, -1, -1, 0, us, src, 0, 0}
#define CAND(bytes, a, p, c, us, src) {AR, EAGER, bytes, a, p, c, us, src, 0, 0}
/* Held out of the fit: the model's out-of-sample error. */
#define HDEF(bytes, us, src) {AR, EAGER, bytes, -1, -1, 0, us, src, 0, 1}
/* A candidate measured on a communicator of comm channels (NCCL_GRAPH_FILE). */
#define CANDC(bytes, a, p, c, comm, us, src, held) {AR, EAGER, bytes, a, p, c, us, src, comm, held}

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
/* NCCL's default timed inside a CUDA graph. */
#define GDEF(bytes, us, src, held) {AR, GRAPH, bytes, -1, -1, 0, us, src, 0, held}

static struct pt_box builtin[] = {
    {
        .name = "gen5-8x-p2p",
        .desc = "8x RTX PRO 6000 class, PCIe Gen5 x16 behind switches, one CPU socket, P2P",
        .nranks = 8,
        .nnodes = 1,
        .truth =
            {
                .launch_us = {4.5, 1.5},
                .base_us = {6.0, 8.0, 8.0},
                .hop_us = {{1.05, 2.0, 3.3}, {0.95, 1.8, 3.0}},
                .chan_us = 0.3,
                .chan_bw = {15.0, 14.0, 11.0},
                .link_bw = {55.0, 50.0, 48.0},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {3.0, 2.5, 2.0},
                .transport = PT_XPORT_P2P,
            },
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
        .nanchors = 14,
        .anchors =
            {
                DEF(256, 24.6, F_LUKE),
                DEF(1024, 24.1, F_LUKE),
                DEF(8192, 24.2, F_LUKE),
                DEF(32768, 24.5, F_LUKE),
                DEF(65536, 24.1, F_LUKE),
                DEF(262144, 28.0, F_LUKE),
                /* algbw 12.33 / 21.94 / 25.24 / 26.25 GB/s */
                DEF(1048576, 85.0, F_WRX90),
                DEF(4194304, 191.2, F_WRX90),
                DEF(16777216, 664.7, F_WRX90),
                DEF(268435456, 10226.1, F_WRX90),
                /* Held out: the wrx90 rows not used above (group A; 64 MB
                 * and 1 GB from algbw 26.07 and 26.54 GB/s). */
                HDEF(16384, 18.66, F_WRX90),
                HDEF(262144, 25.09, F_WRX90),
                HDEF(67108864, 2574.2, F_WRX90),
                HDEF(1073741824, 40457.5, F_WRX90),
            },
    },
    {
        .name = "gen5-8x-dual-misdetect",
        .desc = "8x RTX PRO 6000, dual AMD Turin, direct attach: NCCL finds no ring through the "
                "inter-socket link, falls back to 1 slow channel and picks Simple from 4 KB",
        .nranks = 8,
        .nnodes = 1,
        .truth =
            {
                .launch_us = {4.5, 1.5},
                .base_us = {6.0, 8.0, 8.0},
                .hop_us = {{1.1, 2.2, 2.8}, {1.0, 2.0, 2.5}},
                .chan_us = 0.3,
                .chan_bw = {9.4, 9.0, 4.55},
                .link_bw = {40.0, 40.0, 40.0},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {2.5, 2.0, 2.0},
                .transport = PT_XPORT_P2P,
            },
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
                /* Every row of the table is used: nothing is held out.
                 * "Without XML": NCCL 2.28.3's Simple, which the source says
                 * ran on 2 channels at 32 KB (as 2.30's default does) and,
                 * with that version's 4-channel communicator, on 4 above. */
                DEF(32768, 48.16, F_XML),
                CANDC(65536, RING, SIMPLE, 4, 4, 48.69, F_XML, 0),
                CANDC(131072, RING, SIMPLE, 4, 4, 51.56, F_XML, 0),
                CANDC(262144, RING, SIMPLE, 4, 4, 56.48, F_XML, 0),
                /* "With XML": NCCL_GRAPH_FILE gives 4 channels and LL. */
                CANDC(32768, RING, LL, 4, 4, 26.20, F_XML, 0),
                CANDC(65536, RING, LL, 4, 4, 25.59, F_XML, 0),
                CANDC(131072, RING, LL, 4, 4, 32.09, F_XML, 0),
                CANDC(262144, RING, LL, 4, 4, 37.26, F_XML, 0),
            },
    },
    {
        .name = "gen4-4x-shm",
        .desc = "4x RTX 4090, PCIe Gen4, no P2P: host-staged (SHM) transport",
        .nranks = 4,
        .nnodes = 1,
        .truth =
            {
                .launch_us = {4.5, 2.0},
                .base_us = {6.0, 8.0, 8.0},
                .hop_us = {{1.5, 4.4, 8.2}, {1.4, 4.0, 7.5}},
                .chan_us = 0.3,
                .chan_bw = {10.8, 8.0, 6.0},
                .link_bw = {19.3, 19.3, 19.3},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {3.0, 1.5, 1.0},
                .transport = PT_XPORT_SHM,
                .host_bw = 2.97,
            },
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
        .nanchors = 14,
        .anchors =
            {
                /* Published with NCCL 2.19 (NGC 24.01), whose choice above
                 * 32 KB differs from 2.30's: those rows are the candidate
                 * that run used, on its 4-channel communicator. */
                DEF(8, 18.90, F_4090X4),
                DEF(4096, 20.61, F_4090X4),
                DEF(16384, 31.99, F_4090X4),
                CANDC(65536, RING, LL, 4, 4, 81.19, F_4090X4, 0),
                CANDC(131072, RING, SIMPLE, 4, 4, 125.5, F_4090X4, 0),
                CANDC(262144, RING, SIMPLE, 4, 4, 211.5, F_4090X4, 0),
                CANDC(1048576, RING, SIMPLE, 4, 4, 642.4, F_4090X4, 0),
                CANDC(4194304, RING, SIMPLE, 4, 4, 2474.5, F_4090X4, 0),
                CANDC(16777216, RING, SIMPLE, 4, 4, 9782.3, F_4090X4, 0),
                CANDC(268435456, RING, SIMPLE, 4, 4, 156396.0, F_4090X4, 0),
                HDEF(2048, 20.43, F_4090X4),
                CANDC(32768, RING, LL, 2, 4, 44.12, F_4090X4, 1),
                CANDC(524288, RING, SIMPLE, 4, 4, 347.4, F_4090X4, 1),
                CANDC(8388608, RING, SIMPLE, 4, 4, 4883.4, F_4090X4, 1),
            },
    },
    {
        .name = "consumer-2x",
        .desc = "2x RTX 4090 consumer box, stock driver (no P2P): SHM transport",
        .nranks = 2,
        .nnodes = 1,
        .truth =
            {
                .launch_us = {4.5, 2.0},
                .base_us = {3.0, 8.0, 8.0},
                .hop_us = {{0.85, 4.4, 8.8}, {0.75, 4.0, 8.0}},
                .chan_us = 0.3,
                .chan_bw = {7.7, 7.0, 6.0},
                .link_bw = {20.7, 20.7, 20.7},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {3.0, 1.5, 1.0},
                .transport = PT_XPORT_SHM,
                .host_bw = 2.3,
            },
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
                /* NCCL 2.19 as above: from 64 KB the candidate that ran. */
                DEF(8, 8.97, F_4090X2),
                DEF(4096, 12.01, F_4090X2),
                DEF(16384, 23.67, F_4090X2),
                CANDC(65536, RING, SIMPLE, 4, 4, 60.23, F_4090X2, 0),
                CANDC(262144, RING, SIMPLE, 4, 4, 163.4, F_4090X2, 0),
                CANDC(1048576, RING, SIMPLE, 4, 4, 538.5, F_4090X2, 0),
                CANDC(4194304, RING, SIMPLE, 4, 4, 2022.1, F_4090X2, 0),
                CANDC(67108864, RING, SIMPLE, 4, 4, 30690.0, F_4090X2, 0),
                CANDC(268435456, RING, SIMPLE, 4, 4, 120583.0, F_4090X2, 0),
                HDEF(2048, 10.94, F_4090X2),
                CANDC(32768, RING, LL, 4, 4, 40.18, F_4090X2, 1),
                CANDC(524288, RING, SIMPLE, 4, 4, 280.1, F_4090X2, 1),
                CANDC(8388608, RING, SIMPLE, 4, 4, 4077.0, F_4090X2, 1),
            },
    },
    {
        .name = "gen5-8x-ll128",
        .desc = "8x RTX PRO 6000, dual AMD Turin, P2P, LL128 opted in with "
                "NCCL_PROTO=LL,LL128,Simple",
        .nranks = 8,
        .nnodes = 1,
        .truth =
            {
                .launch_us = {4.0, 1.5},
                .base_us = {5.5, 8.0, 8.0},
                .hop_us = {{0.9, 2.2, 3.3}, {0.8, 2.0, 3.0}},
                .chan_us = 0.3,
                .chan_bw = {12.0, 12.0, 13.0},
                .link_bw = {28.0, 44.9, 46.0},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {3.0, 1.0, 1.0},
                .transport = PT_XPORT_P2P,
            },
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
        .nanchors = 10,
        .anchors =
            {
                /* busbw -> time = bytes * 2(n-1)/n / busbw. Baseline rows
                 * where NCCL's default is LL either way; Plugin rows where
                 * NCCL itself picks LL128 once it is opted in. */
                /* NCCL 2.28.3 on a 4-channel communicator: its default ran
                 * LL up to 512 KB, the plugin's LL128 at 1-2 MB. */
                CANDC(65536, RING, LL, 2, 4, 23.12, F_LL128, 0),
                CANDC(262144, RING, LL, 4, 4, 49.01, F_LL128, 0),
                CANDC(524288, RING, LL, 4, 4, 70.25, F_LL128, 0),
                CANDC(1048576, RING, LL128, 4, 4, 86.07, F_LL128, 0),
                CANDC(2097152, RING, LL128, 4, 4, 128.0, F_LL128, 0),
                CANDC(524288, RING, LL128, 4, 4, 63.58, F_LL128, 0),
                CANDC(4194304, RING, SIMPLE, 4, 4, 219.4, F_LL128, 0),
                CANDC(16777216, RING, SIMPLE, 4, 4, 726.9, F_LL128, 0),
                /* Held out: the plugin column where it runs what the
                 * baseline ran (LL), 64 and 256 KB (busbw 4.91, 8.99). */
                CANDC(65536, RING, LL, 2, 4, 23.36, F_LL128, 1),
                CANDC(262144, RING, LL, 4, 4, 51.03, F_LL128, 1),
            },
    },
    {
        .name = "v100-4x-plx",
        .desc = "4x V100 SXM2 on PCIe carriers behind one Gen3 PLX switch, P2P; "
                "calibrated on in-graph (CUDA graph) timings",
        .nranks = 4,
        .nnodes = 1,
        .truth =
            {
                /* Only graph-mode data exists for this box: the eager
                 * launch is the graph one plus the 3 us the other boxes
                 * assume, not a measured figure. */
                .launch_us = {7.0, 4.0},
                .base_us = {8.1, 8.0, 8.0},
                .hop_us = {{1.3, 2.5, 3.3}, {1.2, 2.3, 3.0}},
                .chan_us = 0.3,
                .chan_bw = {5.0, 4.6, 4.3},
                .link_bw = {11.0, 11.0, 11.0},
                .eff = {0.5, 0.9375, 1.0},
                .overlap = {3.0, 2.0, 2.0},
                .transport = PT_XPORT_P2P,
            },
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
                /* All six rows were used to fit: nothing is held out. */
                GDEF(4096, 19.4, F_V100, 0),
                GDEF(8192, 20.3, F_V100, 0),
                GDEF(16384, 22.3, F_V100, 0),
                GDEF(32768, 24.2, F_V100, 0),
                GDEF(131072, 51.8, F_V100, 0),
                GDEF(393216, 83.5, F_V100, 0),
            },
    },
};

size_t pt_box_builtin_count(void) { return sizeof builtin / sizeof builtin[0]; }

static pthread_once_t derived_once = PTHREAD_ONCE_INIT;

/* Derives every built-in box's NCCL view once. A failure is a bug in this
 * file (the hardware above is fixed), caught by every test. */
static void derive_builtins(void) {
  for (size_t i = 0; i < pt_box_builtin_count(); i++) {
    struct pt_error_rec e;
    if (pt_box_derive(&builtin[i], &e)) {
      fprintf(stderr, "built-in box %s: %s\n", builtin[i].name, e.msg);
      abort();
    }
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
