/*
 * The fingerprint of a simulated box (include/pcie/sim_fp.h), and the
 * sysfs tree that presents it to the plugin. The PCI addresses are made up
 * the way a BIOS numbers buses: one root complex per socket (bus 0x00,
 * 0x40, ...), a root port per device on it, and below a switch an upstream
 * port and one downstream port per child, each on the next free bus. GPUs
 * get device id 0xf000 + compute capability, a range no NVIDIA GPU uses, so
 * a simulated box never matches a real one.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/sim_fp.h"

struct place {
  int npath;
  char path[PT_FP_MAX_PATH][PT_FP_ID_LEN]; /* the bridges above the device's own link */
  int numa;
};

struct numbering {
  int next_bus[PT_HW_MAX_CPUS]; /* per socket: the next free bus */
  int root_ports[PT_HW_MAX_CPUS];
  int sw_bus[PT_HW_MAX_SWITCHES]; /* a switch's upstream port bus */
  int sw_ports[PT_HW_MAX_SWITCHES];
  struct place sw[PT_HW_MAX_SWITCHES]; /* path down to and including its upstream port */
};

/* Where a device with this parent hangs, and the bus it gets. */
static int place_below(struct numbering *n, const struct pt_hw *hw, int parent, struct place *out) {
  int cpu;
  memset(out, 0, sizeof *out);
  if (parent < 0) {
    cpu = -(parent + 1);
    if (cpu >= PT_HW_MAX_CPUS) return -1;
    snprintf(out->path[0], PT_FP_ID_LEN, "pci0000:%02x", (cpu * 0x40) & 0xff);
    snprintf(out->path[1], PT_FP_ID_LEN, "0000:%02x:%02x.0", (cpu * 0x40) & 0xff,
             ++n->root_ports[cpu] & 0x1f);
    out->npath = 2;
    out->numa = cpu;
  } else {
    if (parent >= hw->nswitches) return -1;
    *out = n->sw[parent];
    if (out->npath >= PT_FP_MAX_PATH) return -1;
    snprintf(out->path[out->npath++], PT_FP_ID_LEN, "0000:%02x:%02x.0", (n->sw_bus[parent] + 1) & 0xff,
             n->sw_ports[parent]++ & 0x1f);
    cpu = out->numa;
  }
  int bus = n->next_bus[cpu]++;
  if (bus >= cpu * 0x40 + 0x40) return -1;
  return bus;
}

int pt_box_fingerprint(const struct pt_box *b, struct pt_box_fp *fp) {
  struct numbering n;
  memset(&n, 0, sizeof n);
  memset(fp, 0, sizeof *fp);
  fp->host_gpus = 1;
  for (int c = 0; c < PT_HW_MAX_CPUS; c++) n.next_bus[c] = c * 0x40 + 1;
  if (!b->has_hw) {
    /* A typed view has no hardware: one GPU per rank of a node, each on its
     * own root port of one socket. */
    int per_node = b->nnodes > 0 ? b->nranks / b->nnodes : b->nranks;
    if (per_node < 1 || per_node > PT_FP_MAX_GPUS) return -1;
    for (int i = 0; i < per_node; i++) {
      struct place p;
      int bus = place_below(&n, &b->hw, -1, &p);
      struct pt_fp_gpu *g = &fp->gpu[fp->ngpus++];
      snprintf(g->bus_id, sizeof g->bus_id, "0000:%02x:00.0", bus & 0xff);
      snprintf(g->model, sizeof g->model, "10de:f000");
      snprintf(g->name, sizeof g->name, "simulated GPU");
      g->numa = p.numa;
      g->npath = p.npath;
      memcpy(g->path, p.path, sizeof p.path);
    }
    return 0;
  }
  const struct pt_hw *hw = &b->hw;
  if (hw->ngpus > PT_FP_MAX_GPUS) return -1;
  for (int s = 0; s < hw->nswitches; s++) {
    struct place p;
    int bus = place_below(&n, hw, hw->sw[s].parent, &p);
    if (bus < 0 || p.npath + 1 > PT_FP_MAX_PATH) return -1;
    snprintf(p.path[p.npath++], PT_FP_ID_LEN, "0000:%02x:00.0", bus & 0xff);
    /* The switch's internal bus for its downstream ports. */
    n.next_bus[p.numa]++;
    n.sw_bus[s] = bus;
    n.sw[s] = p;
  }
  for (int i = 0; i < hw->ngpus; i++) {
    struct place p;
    int bus = place_below(&n, hw, hw->gpu[i].parent, &p);
    if (bus < 0) return -1;
    struct pt_fp_gpu *g = &fp->gpu[fp->ngpus++];
    snprintf(g->bus_id, sizeof g->bus_id, "0000:%02x:00.0", bus & 0xff);
    snprintf(g->model, sizeof g->model, "10de:%04x", 0xf000 + hw->gpu[i].sm);
    snprintf(g->name, sizeof g->name, "simulated GPU (sm %d)", hw->gpu[i].sm);
    g->link_gen = hw->gpu[i].gen;
    g->link_width = hw->gpu[i].lanes;
    g->numa = p.numa;
    g->npath = p.npath;
    memcpy(g->path, p.path, sizeof p.path);
  }
  pt_fp_sort(fp);
  return 0;
}

static int put(const char *dir, const char *file, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "%s\n", text);
  return fclose(f) ? -1 : 0;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

int pt_sysfs_write(const struct pt_box_fp *fp, const char *root, char *err, size_t errlen) {
  static const char *const speed[] = {"", "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe",
                                      "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe",
                                      "128.0 GT/s PCIe"};
  char bus[2048], dev[4096], link[4096], v[64];
  snprintf(bus, sizeof bus, "%s/sys/bus/pci/devices", root);
  if (make_dirs(bus)) goto fail;
  for (int i = 0; i < fp->ngpus; i++) {
    const struct pt_fp_gpu *g = &fp->gpu[i];
    /* ROOT/sys/devices/<path...>/<bus id>, linked from the bus as sysfs
     * does, with a relative link so the tree can move. */
    char rel[2048] = "";
    for (int k = 0; k < g->npath; k++)
      snprintf(rel + strlen(rel), sizeof rel - strlen(rel), "%s/", g->path[k]);
    snprintf(rel + strlen(rel), sizeof rel - strlen(rel), "%s", g->bus_id);
    snprintf(dev, sizeof dev, "%s/sys/devices/%s", root, rel);
    if (make_dirs(dev)) goto fail;
    snprintf(v, sizeof v, "0x%s", g->model[0] ? g->model + 5 : "0000");
    if (put(dev, "vendor", "0x10de") || put(dev, "class", "0x030200") || put(dev, "device", v))
      goto fail;
    snprintf(v, sizeof v, "%d", g->numa == PT_FP_NUMA_UNKNOWN ? -1 : g->numa);
    if (put(dev, "numa_node", v)) goto fail;
    if (g->link_gen > 0 && g->link_gen <= 7 &&
        (put(dev, "max_link_speed", speed[g->link_gen]) ||
         put(dev, "current_link_speed", speed[1]))) /* idle: trained down */
      goto fail;
    snprintf(v, sizeof v, "%d", g->link_width);
    if (g->link_width && put(dev, "current_link_width", v)) goto fail;
    snprintf(link, sizeof link, "%s/%s", bus, g->bus_id);
    snprintf(dev, sizeof dev, "../../../devices/%s", rel);
    if (symlink(dev, link) && errno != EEXIST) goto fail;
  }
  if (fp->driver[0]) {
    snprintf(dev, sizeof dev, "%s/sys/module/nvidia", root);
    if (make_dirs(dev) || put(dev, "version", fp->driver)) goto fail;
  }
  return 0;
fail:
  snprintf(err, errlen, "cannot write the simulated sysfs under %s: %s", root, strerror(errno));
  return -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void pt_sysfs_remove(const char *root) { nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS); }
