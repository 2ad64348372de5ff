/*
 * doctor --host: this machine as NCCL will see it, read with the plugin's
 * own sysfs reader (tuner/hostinfo.c: the GPUs, their bridges, NUMA node)
 * and its bounded file reads for what only doctor needs: each link's
 * trained speed and width against the maximum, ACS on every bridge above a
 * GPU (PCIe extended capability 0x000D in config space), each GPU's IOMMU
 * group and its type, the IOMMU's presence, the kernel command line, the
 * CPU vendor (NCCL allows P2P over any path between two GPUs on AMD) and
 * BAR1. Under PCIE_TUNER_SYSFS_ROOT, which holds sys/ and proc/ as the
 * kernel lays them out, for the tests.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

#define DR_CONFIG_LEN 4096
#define ACS_CAP_ID 0x000d

static void host_path(const struct dr_host *h, char *buf, size_t len, const char *fmt, const char *a,
                      const char *b) {
  int n = snprintf(buf, len, "%s/", h->root);
  snprintf(buf + n, len - (size_t)n, fmt, a, b);
}

static int line_of(const struct dr_host *h, char *buf, size_t len, const char *fmt, const char *a,
                   const char *b) {
  char path[PATH_MAX];
  host_path(h, path, sizeof path, fmt, a, b);
  return pt_host_line(buf, len, path);
}

/* The ACS control register of bridge bdf: walks the extended capabilities
 * from offset 0x100 (PCIe Base Specification: header = ID in bits 0-15, next
 * offset in bits 20-31; ACS control at capability + 6). */
static void read_acs(const struct dr_host *h, struct dr_bridge *br) {
  unsigned char cfg[DR_CONFIG_LEN];
  char path[PATH_MAX];
  host_path(h, path, sizeof path, "sys/bus/pci/devices/%s/config%s", br->bdf, "");
  long got = pt_host_bytes(path, cfg, sizeof cfg);
  if (got <= 256) {
    /* Unprivileged reads of config stop at 64 or 256 bytes. */
    br->acs = -1;
    return;
  }
  br->acs = 0;
  for (unsigned off = 0x100, steps = 0; off >= 0x100 && off + 8 <= (unsigned)got && steps < 64; steps++) {
    unsigned hdr = cfg[off] | cfg[off + 1] << 8 | (unsigned)cfg[off + 2] << 16 | (unsigned)cfg[off + 3] << 24;
    if (!hdr || hdr == 0xffffffffu) return;
    if ((hdr & 0xffff) == ACS_CAP_ID) {
      br->acs = 1;
      br->acs_ctl = cfg[off + 6] | cfg[off + 7] << 8;
      return;
    }
    off = (hdr >> 20) & 0xffc;
  }
}

const struct dr_bridge *dr_host_bridge(const struct dr_host *h, const char *bdf) {
  for (int i = 0; i < h->nbr; i++)
    if (!strcmp(h->br[i].bdf, bdf)) return &h->br[i];
  return NULL;
}

static void add_bridge(struct dr_host *h, const char *bdf) {
  if (!pt_fp_bus_id_ok(bdf) || dr_host_bridge(h, bdf) || h->nbr == DR_MAX_BRIDGES) return;
  struct dr_bridge *br = &h->br[h->nbr++];
  SET(br->bdf, bdf);
  read_acs(h, br);
}

/* BAR1 from the resource file: one "start end flags" line per region. */
static unsigned long long bar1_of(const struct dr_host *h, const char *bdf) {
  char path[PATH_MAX], text[1024];
  host_path(h, path, sizeof path, "sys/bus/pci/devices/%s/resource%s", bdf, "");
  long got = pt_host_bytes(path, text, sizeof text - 1);
  if (got <= 0) return 0;
  text[got] = 0;
  const char *l = strchr(text, '\n'); /* region 1 is the second line */
  unsigned long long start, end;
  if (!l || sscanf(l + 1, "%llx %llx", &start, &end) != 2 || end <= start) return 0;
  return end - start + 1;
}

static void read_gpu(struct dr_host *h, int i) {
  const struct pt_fp_gpu *g = &h->fp.gpu[i];
  struct dr_hgpu *x = &h->gpu[i];
  char v[64], path[PATH_MAX + 8], real[PATH_MAX];
  const char *dev = "sys/bus/pci/devices/%s/%s";
  line_of(h, x->cur_speed, sizeof x->cur_speed, dev, g->bus_id, "current_link_speed");
  line_of(h, x->max_speed, sizeof x->max_speed, dev, g->bus_id, "max_link_speed");
  if (!line_of(h, v, sizeof v, dev, g->bus_id, "current_link_width")) x->cur_width = atoi(v);
  if (!line_of(h, v, sizeof v, dev, g->bus_id, "max_link_width")) x->max_width = atoi(v);
  /* The port above: what the slot offers (src/graph/xml.cc reads
   * "../max_link_speed" and "../max_link_width" too). */
  if (g->npath > 1) {
    const char *port = g->path[g->npath - 1];
    line_of(h, x->port_speed, sizeof x->port_speed, dev, port, "max_link_speed");
    if (!line_of(h, v, sizeof v, dev, port, "max_link_width")) x->port_width = atoi(v);
  }
  host_path(h, path, sizeof path, "sys/bus/pci/devices/%s/%s", g->bus_id, "iommu_group");
  if (realpath(path, real)) {
    const char *slash = strrchr(real, '/');
    SET(x->group, slash ? slash + 1 : real);
    snprintf(path, sizeof path, "%s/type", real);
    pt_host_line(x->group_type, sizeof x->group_type, path);
  }
  x->bar1 = bar1_of(h, g->bus_id);
  for (int k = 1; k < g->npath; k++) add_bridge(h, g->path[k]);
}

static void read_iommu(struct dr_host *h) {
  char path[PATH_MAX];
  host_path(h, path, sizeof path, "sys/class/iommu%s%s", "", "");
  DIR *d = opendir(path);
  h->iommu = d ? 0 : -1;
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (h->iommu++ < 4) {
      size_t n = strlen(h->iommu_names);
      snprintf(h->iommu_names + n, sizeof h->iommu_names - n, "%s%.24s", n ? ", " : "", e->d_name);
    }
  }
  closedir(d);
}

static void read_cpu(struct dr_host *h) {
  char path[PATH_MAX], text[4096];
  host_path(h, path, sizeof path, "proc/cpuinfo%s%s", "", "");
  long got = pt_host_bytes(path, text, sizeof text - 1);
  if (got > 0) {
    text[got] = 0;
    h->amd = strstr(text, "AuthenticAMD") != NULL;
  }
  line_of(h, h->cmdline, sizeof h->cmdline, "proc/cmdline%s%s", "", "");
}

int dr_host_read(struct dr_host *h, const char *root, char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  if (!root) root = getenv("PCIE_TUNER_SYSFS_ROOT");
  if (!root) root = "";
  if (strlen(root) >= sizeof h->root) {
    snprintf(err, errlen, "PCIE_TUNER_SYSFS_ROOT is longer than %zu bytes", sizeof h->root - 1);
    return -1;
  }
  SET(h->root, root);
  if (pt_host_read(h->root[0] ? h->root : "", &h->fp, err, errlen)) return -1;
  for (int i = 0; i < h->fp.ngpus; i++) read_gpu(h, i);
  read_iommu(h);
  read_cpu(h);
  return 0;
}

/* NCCL's PCI ancestors of a GPU (src/graph/xml.cc, ncclTopoGetXmlFromSys):
 * from the device it rewinds two levels of the sysfs path (skipping a
 * switch's downstream port) to the next PCI node, and stops at a CPU when a
 * level is the root complex ("pci0000:00", no BDF). Indices into path[]. */
static int ancestors(const struct pt_fp_gpu *g, int *out) {
  int n = 0, x = g->npath; /* the device itself */
  while (x > 0) {
    if (x - 1 == 0 || x - 2 == 0) break; /* a root complex: the CPU */
    x -= 2;
    out[n++] = x;
  }
  return n;
}

const char *dr_host_path(const struct dr_host *h, int a, int b, int *other_rc) {
  const struct pt_fp_gpu *ga = &h->fp.gpu[a], *gb = &h->fp.gpu[b];
  int xa[PT_FP_MAX_PATH], xb[PT_FP_MAX_PATH];
  int na = ancestors(ga, xa), nb = ancestors(gb, xb);
  *other_rc = ga->npath && gb->npath && strcmp(ga->path[0], gb->path[0]);
  for (int i = 0; i < na; i++)
    for (int k = 0; k < nb; k++)
      if (!strcmp(ga->path[xa[i]], gb->path[xb[k]]))
        /* paths.cc: one PCI node between the GPUs is PIX, a PCI-to-PCI hop PXB. */
        return i == 0 && k == 0 ? "PIX" : "PXB";
  /* Through a CPU: one per NUMA node (the numaid attribute). */
  return ga->numa == gb->numa ? "PHB" : "SYS";
}
