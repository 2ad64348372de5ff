/*
 * The box a profile was measured on and the box the plugin runs on, in one
 * form (docs/profile-format.md, "provenance.box"): the NVIDIA GPUs the PCI
 * bus shows, each with its address, model, link and NUMA node, and the
 * chain of bridges above it (root complex, root port, switch ports), which
 * together give the PCIe tree between the GPUs.
 *
 * pt_host_read() takes it from sysfs, never through CUDA: the plugin calls
 * it at communicator init (never on the hot path), the GPU backend when it
 * writes a profile, so both read the same files the same way. The root
 * directory is PCIE_TUNER_SYSFS_ROOT when set (for tests and the simulated
 * host: a directory standing for "/"), else "/". Plain data, fixed arrays:
 * copyable, no release. Nothing here prints or allocates beyond the call.
 */
#ifndef PCIE_HOSTINFO_H
#define PCIE_HOSTINFO_H

#include <stddef.h>

#define PT_FP_MAX_GPUS 32
#define PT_FP_MAX_PATH 12 /* bridges above a GPU: root, root port, 5 switch levels */
#define PT_FP_ID_LEN 16   /* "0000:17:00.0", "pci0000:00", "10de:2330" */
#define PT_FP_NAME_LEN 96
#define PT_FP_NUMA_UNKNOWN (-100) /* not recorded; sysfs itself says -1 for "none" */

struct pt_fp_gpu {
  char bus_id[PT_FP_ID_LEN]; /* canonical sysfs form dddd:bb:dd.f, lower case */
  char model[PT_FP_ID_LEN];  /* PCI "vendor:device", e.g. "10de:2330"; "" = not recorded */
  char name[PT_FP_NAME_LEN]; /* what CUDA calls it, "" = not recorded; never compared */
  char host[64];             /* host name the rank ran on (nccl-tests' device line), "" = not
                                recorded; never compared (a container's differs from its box's) */
  int link_gen;              /* PCIe generation the link runs at, 0 = not recorded */
  int link_width;            /* lanes, 0 = not recorded */
  int numa;                  /* sysfs numa_node (-1: none), or PT_FP_NUMA_UNKNOWN */
  int npath;                 /* 0 = not recorded */
  char path[PT_FP_MAX_PATH][PT_FP_ID_LEN]; /* root first: "pci0000:00", "0000:00:01.0", ... */
};

struct pt_box_fp {
  int ngpus; /* sorted by bus_id */
  /* 1: every NVIDIA GPU of the host (what sysfs shows); 0: only those the
   * measured communicator used (an import of NCCL's INFO lines). With 0 the
   * host may have more GPUs, and the count is not compared. */
  int host_gpus;
  struct pt_fp_gpu gpu[PT_FP_MAX_GPUS];
  char driver[32]; /* NVIDIA driver version (/sys/module/nvidia/version), "" = unknown */
};

/* 1 when s is a canonical bus id ("0000:17:00.0", hex lower case). */
int pt_fp_bus_id_ok(const char *s);
/* 1 when s is a bus id as a profile may record it: canonical, or as
 * nccl-tests' device lines give it ("0000:17:00" without the function,
 * older versions "0x17", the bus number alone; hex lower case). A partial
 * id matches the host's GPU with that domain:bus:device, or that bus. */
int pt_fp_bus_id_given_ok(const char *s);
/* 1 when the bus id as recorded (given: full or partial) names the GPU at
 * the canonical id full. */
int pt_fp_bus_id_matches(const char *given, const char *full);
/* What pt_fp_compare compares for a profile's box and what the box does
 * not record ("box compared on: bus ids (...); not recorded: PCI model,
 * ...; recorded, not compared: GPU names, host names"), for the plugin's
 * init line and the CLI. */
void pt_fp_fields(const struct pt_box_fp *fp, char *buf, size_t len);
/* NCCL's int64 busId (as its INFO lines print it, "%lx": 17000) to the
 * canonical form; -1 when it does not fit one. */
int pt_fp_bus_id_from_nccl(const char *hex, char *out, size_t len);

/* Reads the host's NVIDIA GPUs (PCI class 0x0300/0x0302, vendor 0x10de)
 * under root (NULL: PCIE_TUNER_SYSFS_ROOT, else "/"). Returns 0 (possibly
 * with ngpus 0), or -1 with a message in err when the bus cannot be read or
 * holds more than PT_FP_MAX_GPUS GPUs. */
int pt_host_read(const char *root, struct pt_box_fp *fp, char *err, size_t errlen);

/* The same bounded reads, for doctor --host's further files (link state,
 * config space, IOMMU groups): the first line of a small file without its
 * newline (0, or -1 when absent), and up to len bytes of a binary one (the
 * count, or -1 when it cannot be opened). path already holds the root. */
int pt_host_line(char *buf, size_t len, const char *path);
long pt_host_bytes(const char *path, void *buf, size_t len);

/* Sorts fp's GPUs by bus id (writers fill them in any order). */
void pt_fp_sort(struct pt_box_fp *fp);

enum { PT_FP_DIFF_BOX = 1, PT_FP_DIFF_DRIVER = 2 };
/* Compares what a profile recorded (prof) with the host. Only fields the
 * profile recorded count (an import knows bus ids only); each bus id always
 * does, and the GPU count when prof lists all the host's GPUs (host_gpus).
 * Returns 0, or PT_FP_DIFF_* bits; msg names the
 * first differences ("GPU 0000:17:00.0: link gen 4 here, 5 when measured"). */
int pt_fp_compare(const struct pt_box_fp *prof, const struct pt_box_fp *host, char *msg,
                  size_t len);

/* One line for show/check: "8 GPUs 10de:2330 (NVIDIA H100 PCIe), PCIe gen5
 * x16, NUMA nodes 0,1, 4 switch levels..., driver 550.54". */
void pt_fp_summary(const struct pt_box_fp *fp, char *buf, size_t len);

#endif
