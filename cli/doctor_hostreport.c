/*
 * doctor --host's report: per GPU its link, NUMA node, IOMMU group and BAR1;
 * per GPU pair NCCL's path type and the transport NCCL picks over it by
 * default (src/graph/paths.cc, ncclTopoCheckP2p: P2P up to PXB, over any
 * path between two GPUs with an AMD CPU, else SHM); and the findings, each
 * with its evidence, effect, source and fix (docs/cli.md lists them).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

/* ACS control bits (PCIe Base Specification, ACS Extended Capability). */
#define ACS_REQ_REDIR 0x4
#define ACS_CMPLT_REDIR 0x8

static const char src_acs[] = "NVIDIA/nccl#2079 (2x RTX 5880 Ada, AMD root ports ACSCtl 0x001d: "
                              "all-reduce deadlock); local-inference-lab/rtx6kpro#15 (4x RTX PRO "
                              "6000, ACS redirect on the root ports, IOMMU translating: 2-rank "
                              "all-reduce hang until NCCL_P2P_DISABLE=1); NCCL user guide, "
                              "Troubleshooting, PCI Access Control Services";
static const char src_p2p[] = "NCCL src/graph/paths.cc, ncclTopoCheckP2p (P2P up to PATH_PXB by "
                              "default, any path for 2 GPUs with an AMD CPU); "
                              "test/data/real/rtxpro6000-4x8x-nccl-vs-pcieoneshot-voipmonitor-asus-"
                              "broadcom.txt (all-reduce 32 MB, 4 GPUs: 30.3 GB/s by default, 39.3 "
                              "with NCCL_P2P_LEVEL=SYS)";
static const char src_link[] = "Linux Documentation/ABI/testing/sysfs-bus-pci "
                               "(current_link_speed/width, max_link_speed/width); "
                               "noonghunna/club-3090#707 (an x16 RTX 3080 negotiated at x4)";
static const char src_iommu[] = "Linux Documentation/ABI/testing/sysfs-kernel-iommu_groups (type: "
                                "identity, DMA, DMA-FQ); NVIDIA/nccl#2079";

const char *dr_sev_name(enum dr_sev s) {
  return s == DR_DEGRADES ? "DEGRADES" : s == DR_WARN ? "WARN" : "INFO";
}

void dr_add_finding(struct dr_findings *fs, const struct dr_finding *f) {
  struct dr_finding *n = realloc(fs->f, (fs->n + 1) * sizeof *n);
  if (!n) {
    fs->oom = 1;
    return;
  }
  fs->f = n;
  fs->f[fs->n++] = *f;
}

void dr_print_finding(const struct dr_finding *f) {
  printf("  [%s] %s: %s\n", dr_sev_name(f->sev), f->about, f->what);
  if (f->evidence[0]) printf("    evidence: %s\n", f->evidence);
  if (f->effect[0]) printf("    effect: %s\n", f->effect);
  if (f->source[0]) printf("    source: %s\n", f->source);
  if (f->fix[0]) printf("    fix: %s\n", f->fix);
}

static void fmt(char *dst, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *dst, size_t len, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(dst, len, f, ap);
  va_end(ap);
}

/* "32.0 GT/s PCIe" -> 32.0 */
static double gts(const char *s) { return s[0] ? strtod(s, NULL) : 0; }

static void link_findings(const struct dr_host *h, int i, struct dr_findings *fs) {
  const struct pt_fp_gpu *g = &h->fp.gpu[i];
  const struct dr_hgpu *x = &h->gpu[i];
  struct dr_finding f;
  int can_w = x->max_width && x->port_width && x->port_width < x->max_width ? x->port_width : x->max_width;
  double can_s = gts(x->max_speed), port_s = gts(x->port_speed), cur_s = gts(x->cur_speed);
  if (port_s && port_s < can_s) can_s = port_s;
  if (x->cur_width && can_w && x->cur_width < can_w) {
    memset(&f, 0, sizeof f);
    f.sev = DR_DEGRADES;
    SET(f.id, "link-width-down");
    fmt(f.about, sizeof f.about, "GPU %s", g->bus_id);
    fmt(f.what, sizeof f.what, "link trained at x%d where x%d is possible", x->cur_width, can_w);
    fmt(f.evidence, sizeof f.evidence,
        "sys/bus/pci/devices/%s/current_link_width = %d, max_link_width = %d; the port above "
        "(%s) max_link_width = %d",
        g->bus_id, x->cur_width, x->max_width, g->npath ? g->path[g->npath - 1] : "?", x->port_width);
    fmt(f.effect, sizeof f.effect,
        "every transfer to and from this GPU (P2P, SHM through host memory) runs at %d of %d "
        "lanes: the ring's slowest hop, so every all-reduce above a few KB is slower",
        x->cur_width, can_w);
    SET(f.source, src_link);
    SET(f.fix, "reseat the card or its riser, check the slot's lane sharing (M.2 or other slots "
               "taking lanes) and the BIOS bifurcation setting; width does not drop at idle, so "
               "this is not power saving");
    dr_add_finding(fs, &f);
  } else if (x->port_width && x->max_width && x->port_width < x->max_width) {
    memset(&f, 0, sizeof f);
    f.sev = DR_WARN;
    SET(f.id, "slot-narrower");
    fmt(f.about, sizeof f.about, "GPU %s", g->bus_id);
    fmt(f.what, sizeof f.what, "an x%d card in an x%d slot", x->max_width, x->port_width);
    fmt(f.evidence, sizeof f.evidence, "max_link_width %d, the port above (%s) max_link_width %d",
        x->max_width, g->path[g->npath - 1], x->port_width);
    SET(f.effect, "the GPU's PCIe bandwidth is the slot's: NCCL's rings through it run at that rate");
    SET(f.source, src_link);
    SET(f.fix, "move the GPU to a full-width slot if there is one");
    dr_add_finding(fs, &f);
  }
  if (cur_s && can_s && cur_s < can_s * 0.95) {
    /* GPUs drop their link to 2.5 GT/s when idle; an intermediate rate is
     * what the link negotiated. */
    int idle = cur_s < 2.6;
    memset(&f, 0, sizeof f);
    f.sev = idle ? DR_INFO : DR_DEGRADES;
    SET(f.id, idle ? "link-speed-idle" : "link-speed-down");
    fmt(f.about, sizeof f.about, "GPU %s", g->bus_id);
    fmt(f.what, sizeof f.what, "link at %s where %.1f GT/s is possible%s", x->cur_speed, can_s,
        idle ? " (likely idle power saving)" : "");
    fmt(f.evidence, sizeof f.evidence,
        "sys/bus/pci/devices/%s/current_link_speed = %s, max_link_speed = %s; port above: %s",
        g->bus_id, x->cur_speed, x->max_speed, x->port_speed[0] ? x->port_speed : "not read");
    SET(f.effect, idle ? "none while idle: the link trains up under load"
                       : "the link runs a lower PCIe generation than both ends support: "
                         "bandwidth to this GPU is cut accordingly");
    SET(f.source, src_link);
    SET(f.fix, idle ? "read it again while a job runs (doctor --host, or nvidia-smi -q -d PCIe: "
                      "'Link Gen Current'); only a rate that stays low under load is a problem"
                    : "check the riser or cable (signal quality), the slot's generation setting in "
                      "the BIOS, and read it again under load");
    dr_add_finding(fs, &f);
  }
}

/* Bridges of the path between GPUs a and b that are not shared by both
 * (the ports peer traffic crosses) with ACS redirect on, or unreadable. */
static void acs_findings(const struct dr_host *h, int a, int b, struct dr_findings *fs, int *unreadable) {
  const struct pt_fp_gpu *ga = &h->fp.gpu[a], *gb = &h->fp.gpu[b];
  char list[256] = "", bits[512] = "";
  int common = 0, n = 0;
  while (common < ga->npath && common < gb->npath && !strcmp(ga->path[common], gb->path[common]))
    common++;
  for (int side = 0; side < 2; side++) {
    const struct pt_fp_gpu *g = side ? gb : ga;
    for (int k = common; k < g->npath; k++) {
      const struct dr_bridge *br = dr_host_bridge(h, g->path[k]);
      if (!br) continue;
      if (br->acs < 0) *unreadable = 1;
      if (br->acs != 1 || !(br->acs_ctl & (ACS_REQ_REDIR | ACS_CMPLT_REDIR))) continue;
      size_t l = strlen(list), m = strlen(bits);
      snprintf(list + l, sizeof list - l, "%s%s", n ? " " : "", br->bdf);
      snprintf(bits + m, sizeof bits - m, "%ssys/bus/pci/devices/%s/config: ACS control 0x%04x (ReqRedir%c CmpltRedir%c)",
               n ? "; " : "", br->bdf, br->acs_ctl, br->acs_ctl & ACS_REQ_REDIR ? '+' : '-',
               br->acs_ctl & ACS_CMPLT_REDIR ? '+' : '-');
      n++;
    }
  }
  if (!n) return;
  struct dr_finding f;
  memset(&f, 0, sizeof f);
  f.sev = DR_DEGRADES;
  SET(f.id, "acs-redirect");
  fmt(f.about, sizeof f.about, "GPUs %s and %s", ga->bus_id, gb->bus_id);
  fmt(f.what, sizeof f.what, "ACS P2P redirect on %d bridge%s of their path", n, n == 1 ? "" : "s");
  SET(f.evidence, bits);
  fmt(f.effect, sizeof f.effect,
      "peer writes between these GPUs are sent up to the root complex%s instead of across; NCCL "
      "cannot see ACS and still uses P2P: slow, or an all-reduce that hangs",
      h->iommu > 0 ? " and through the IOMMU" : "");
  SET(f.source, src_acs);
  fmt(f.fix, sizeof f.fix,
      "as root, for each bridge: setpci -s BDF ECAP_ACS+6.w=0000 (%s; lost at reboot), or boot "
      "with pci=noacs or turn ACS off in the BIOS; until then NCCL_P2P_DISABLE=1 avoids the hang "
      "at SHM's speed",
      list);
  dr_add_finding(fs, &f);
}

static void pair_finding(const struct dr_host *h, int a, int b, const char *type, int other_rc,
                         struct dr_findings *fs) {
  struct dr_finding f;
  memset(&f, 0, sizeof f);
  f.sev = DR_DEGRADES;
  SET(f.id, "shm-by-default");
  fmt(f.about, sizeof f.about, "GPUs %s and %s", h->fp.gpu[a].bus_id, h->fp.gpu[b].bus_id);
  fmt(f.what, sizeof f.what, "NCCL uses SHM between them by default (path %s%s)", type,
      !strcmp(type, "PHB") && other_rc ? ", nvidia-smi's NODE: two root complexes of one NUMA node" : "");
  fmt(f.evidence, sizeof f.evidence, "bridges above %s: %s...; above %s: %s...; NUMA nodes %d and %d",
      h->fp.gpu[a].bus_id, h->fp.gpu[a].npath ? h->fp.gpu[a].path[0] : "?", h->fp.gpu[b].bus_id,
      h->fp.gpu[b].npath ? h->fp.gpu[b].path[0] : "?", h->fp.gpu[a].numa, h->fp.gpu[b].numa);
  SET(f.effect, "data between these GPUs is copied through host memory (SHM): more latency, less "
                "bandwidth than P2P");
  SET(f.source, src_p2p);
  fmt(f.fix, sizeof f.fix,
      "if P2P works across this path (p2pBandwidthLatencyTest, no ACS redirect above), set "
      "NCCL_P2P_LEVEL=%s for the job and measure the profile with it",
      type);
  dr_add_finding(fs, &f);
}

static void iommu_findings(const struct dr_host *h, struct dr_findings *fs) {
  char groups[512] = "";
  int dma = 0;
  for (int i = 0; i < h->fp.ngpus; i++) {
    const struct dr_hgpu *x = &h->gpu[i];
    if (strncmp(x->group_type, "DMA", 3)) continue;
    size_t l = strlen(groups);
    snprintf(groups + l, sizeof groups - l, "%ssys/kernel/iommu_groups/%s/type = %s (GPU %s)",
             dma++ ? "; " : "", x->group, x->group_type, h->fp.gpu[i].bus_id);
  }
  if (!dma) return;
  struct dr_finding f;
  memset(&f, 0, sizeof f);
  f.sev = DR_WARN;
  SET(f.id, "iommu-translating");
  SET(f.about, "host");
  fmt(f.what, sizeof f.what, "the IOMMU translates the DMA of %d GPU%s", dma, dma == 1 ? "" : "s");
  fmt(f.evidence, sizeof f.evidence, "%s; kernel command line: %s", groups,
      h->cmdline[0] ? h->cmdline : "not read");
  SET(f.effect, "peer traffic that ACS redirects up to the root complex is translated by the "
                "IOMMU (the hang of NVIDIA/nccl#2079); without ACS redirect it does not matter to "
                "P2P");
  SET(f.source, src_iommu);
  SET(f.fix, "boot with iommu=pt (with amd_iommu=on or intel_iommu=on) for pass-through, unless "
             "the host needs translation (VMs, VFIO)");
  dr_add_finding(fs, &f);
}

static void print_gpus(const struct dr_host *h) {
  printf("host: %d NVIDIA GPU%s under %s/sys; IOMMU %s%s%s; CPU %s; kernel command line: %s\n",
         h->fp.ngpus, h->fp.ngpus == 1 ? "" : "s", h->root[0] ? h->root : "",
         h->iommu < 0 ? "not present" : h->iommu ? "present (" : "present",
         h->iommu > 0 ? h->iommu_names : "", h->iommu > 0 ? ")" : "", h->amd ? "AMD" : "not AMD",
         h->cmdline[0] ? h->cmdline : "not read");
  for (int i = 0; i < h->fp.ngpus; i++) {
    const struct pt_fp_gpu *g = &h->fp.gpu[i];
    const struct dr_hgpu *x = &h->gpu[i];
    char bar[32] = "not read";
    if (x->bar1 >= 1ull << 30) snprintf(bar, sizeof bar, "%llu GiB", x->bar1 >> 30);
    else if (x->bar1) snprintf(bar, sizeof bar, "%llu MiB", x->bar1 >> 20);
    printf("  GPU %s %s: link %s x%d (max %s x%d; slot %s x%d), NUMA %d, IOMMU group %s (%s), "
           "BAR1 %s\n",
           g->bus_id, g->model[0] ? g->model : "", x->cur_speed[0] ? x->cur_speed : "?",
           x->cur_width, x->max_speed[0] ? x->max_speed : "?", x->max_width,
           x->port_speed[0] ? x->port_speed : "?", x->port_width, g->numa,
           x->group[0] ? x->group : "none", x->group_type[0] ? x->group_type : "no type",
           bar);
  }
}

int dr_host_report(const struct dr_host *h, struct dr_findings *fs, int quiet) {
  int unreadable = 0;
  if (!quiet) print_gpus(h);
  for (int i = 0; i < h->fp.ngpus; i++) link_findings(h, i, fs);
  if (!quiet && h->fp.ngpus > 1) printf("GPU pairs (NCCL's path type; NCCL's transport by default):\n");
  for (int a = 0; a < h->fp.ngpus; a++)
    for (int b = a + 1; b < h->fp.ngpus; b++) {
      int other_rc;
      const char *type = dr_host_path(h, a, b, &other_rc);
      int p2p = !strcmp(type, "PIX") || !strcmp(type, "PXB") || (h->amd && h->fp.ngpus <= 2);
      if (!quiet)
        printf("  %s - %s: %s%s, %s\n", h->fp.gpu[a].bus_id, h->fp.gpu[b].bus_id, type,
               !strcmp(type, "PHB") && other_rc ? " (nvidia-smi: NODE)" : "",
               p2p ? "P2P" : "SHM (P2P with NCCL_P2P_LEVEL)");
      if (!p2p) pair_finding(h, a, b, type, other_rc, fs);
      acs_findings(h, a, b, fs, &unreadable);
    }
  iommu_findings(h, fs);
  if (unreadable) {
    struct dr_finding f;
    memset(&f, 0, sizeof f);
    f.sev = DR_WARN;
    SET(f.id, "acs-unreadable");
    SET(f.about, "host");
    SET(f.what, "ACS not read on some bridges between GPUs: config space past 256 bytes needs root");
    SET(f.evidence, "sys/bus/pci/devices/*/config read 256 bytes or fewer");
    SET(f.effect, "an ACS redirect there (slow P2P, or a hang) cannot be ruled out");
    SET(f.source, src_acs);
    SET(f.fix, "run it as root: sudo pcie-tune doctor --host (or sudo lspci -vvv | grep ACSCtl)");
    dr_add_finding(fs, &f);
  }
  int bad = 0;
  for (size_t i = 0; i < fs->n; i++) bad += fs->f[i].sev == DR_DEGRADES;
  if (!quiet) {
    printf("host findings:%s\n", fs->n ? "" : " none");
    for (size_t i = 0; i < fs->n; i++) dr_print_finding(&fs->f[i]);
  }
  return bad;
}
