/*
 * NCCL's topology graph of one node and its paths (sim/nccl_graph.h), after
 * NCCL 2.30's behaviour in src/graph/topo.cc (nodes, link bandwidths,
 * inter-CPU links) and src/graph/paths.cc (ncclTopoSetPaths' breadth-first
 * path types and bandwidths, ncclTopoCheckP2p, and the detour through the
 * CPU when P2P is not used).
 */
#include <stdio.h>
#include <string.h>

#include "nccl_graph.h"

/* kvDictPciGen: 100 Mbps per lane for each generation; GB/s = lanes x speed / 80. */
static float pci_bw(int gen, int lanes) {
  static const int speed[7] = {0, 15, 30, 60, 120, 240, 480};
  return (float)(lanes * speed[gen < 1 ? 3 : gen > 6 ? 6 : gen]) / 80.0f;
}

/* ncclTopoGetInterCpuBw for x86: AMD 16 GB/s; Intel by generation; other
 * 5000. NCCL 2.31 (dev topo.cc, ncclTopoGetInterCpuBw and the familyid/modelid
 * reading of ncclTopoAddCpu): AMD by Zen generation, 24 GB/s for Zen 3/4
 * (family 25, or 0xAF in older dumps), 32 for Zen 5 (26 or 0xBF); Intel
 * Granite Rapids and Sierra Forest (model 0xAD-0xAF) count as Emerald Rapids. */
static float inter_cpu_bw(const struct pt_hw *hw) {
  static const float intel[4] = {6.0f, 10.0f, 22.0f, 40.0f}; /* BDW, SKL, SRP, ERP */
  int v231 = hw->nccl_version >= PT_NCCL_V2_31, f = hw->cpu_family, m = hw->cpu_modelid;
  if (hw->cpu_vendor == PT_CPU_AMD) {
    if (v231 && (f == 26 || f == 0xBF)) return 32.0f;
    if (v231 && (f == 25 || f == 0xAF)) return 24.0f;
    return 16.0f;
  }
  if (hw->cpu_vendor == PT_CPU_INTEL) {
    if (v231 && f == 6 && m >= 0xAD && m <= 0xAF) return intel[PT_INTEL_ERP];
    return intel[hw->cpu_model < 0 || hw->cpu_model > 3 ? 0 : hw->cpu_model];
  }
  return NG_LOC_BW;
}

/* ncclTopoConnectNodes: links are kept sorted by bandwidth, highest first,
 * and a new link goes after those of equal bandwidth. */
static void connect(struct ng_system *s, int a, int b, int type, float bw) {
  struct ng_node *n = &s->node[a];
  int i = n->nlinks++;
  while (i > 0 && n->links[i - 1].bw < bw) {
    n->links[i] = n->links[i - 1];
    i--;
  }
  n->links[i] = (struct ng_link){type, bw, b};
}

static int add_node(struct ng_system *s, int type) {
  int i = s->nnodes++;
  memset(&s->node[i], 0, sizeof s->node[i]);
  s->node[i].type = type;
  return i;
}

static struct ng_link *reverse_link(struct ng_system *s, int from, int to, int type) {
  struct ng_node *n = &s->node[from];
  for (int l = 0; l < n->nlinks; l++)
    if (n->links[l].rem == to && n->links[l].type == type) return &n->links[l];
  return NULL;
}

/* ncclTopoSetPaths: breadth-first from base, every node learns its best path
 * to base (lower type, then higher bandwidth, then fewer hops). Crossing two
 * PCI nodes makes a path PXB, touching a CPU over PCI makes it PHB. */
static void set_paths(struct ng_system *s, int base) {
  int frontier[NG_MAX_NODES], next[NG_MAX_NODES], nf = 1, nn;
  for (int i = 0; i < s->nnodes; i++)
    s->path[i][base] = (struct ng_path){.count = 0, .type = NG_PATH_DIS, .bw = 0};
  s->path[base][base] = (struct ng_path){.count = 0, .type = NG_PATH_LOC, .bw = NG_LOC_BW};
  frontier[0] = base;
  while (nf) {
    nn = 0;
    for (int f = 0; f < nf; f++) {
      int node = frontier[f];
      const struct ng_path *p = &s->path[node][base];
      for (int l = 0; l < s->node[node].nlinks; l++) {
        const struct ng_link *link = &s->node[node].links[l];
        int rem = link->rem;
        float bw = p->bw < link->bw ? p->bw : link->bw;
        int type = link->type;
        if (s->node[node].type == NG_PCI && s->node[rem].type == NG_PCI) type = NG_PATH_PXB;
        if (link->type == NG_LINK_PCI && (s->node[node].type == NG_CPU || s->node[rem].type == NG_CPU))
          type = NG_PATH_PHB;
        if (p->type > type) type = p->type;
        struct ng_path *rp = &s->path[rem][base];
        if (type < rp->type || (type == rp->type && rp->bw < bw) ||
            (type == rp->type && rp->bw == bw && rp->count > p->count + 1)) {
          rp->list[0] = reverse_link(s, rem, node, link->type);
          for (int i = 0; i < p->count; i++) rp->list[i + 1] = p->list[i];
          rp->count = p->count + 1;
          rp->bw = bw;
          rp->type = type;
          int seen = 0;
          for (int i = 0; i < nn && !seen; i++) seen = next[i] == rem;
          if (!seen) next[nn++] = rem;
        }
      }
    }
    memcpy(frontier, next, sizeof(int) * (size_t)nn);
    nf = nn;
  }
}

/* ncclGetLocalCpu: the CPU with the best path type from the GPU, then the
 * fewest hops. */
static int local_cpu(const struct ng_system *s, int gpu) {
  int best = s->cpu[0];
  for (int c = 1; c < s->ncpus; c++) {
    const struct ng_path *p = &s->path[gpu][s->cpu[c]], *b = &s->path[gpu][best];
    if (p->type < b->type || (p->type == b->type && p->count < b->count)) best = s->cpu[c];
  }
  return best;
}

/* addInterStep: the path from a to b goes through cpu instead. */
static int detour(struct ng_system *s, int a, int cpu, int b) {
  const struct ng_path *p1 = &s->path[a][cpu], *p2 = &s->path[cpu][b];
  struct ng_path *p = &s->path[a][b];
  if (p1->count + p2->count > NG_MAX_HOPS) return -1;
  for (int i = 0; i < p1->count; i++) p->list[i] = p1->list[i];
  for (int i = 0; i < p2->count; i++) p->list[p1->count + i] = p2->list[i];
  p->count = p1->count + p2->count;
  p->type = p1->type > p2->type ? p1->type : p2->type;
  p->bw = p1->bw < p2->bw ? p1->bw : p2->bw;
  return 0;
}

static int build_nodes(struct ng_system *s, const struct pt_hw *hw, char *err, size_t errlen) {
  int sw[PT_HW_MAX_SWITCHES];
  for (int c = 0; c < hw->ncpus; c++) {
    s->cpu[c] = add_node(s, NG_CPU);
    s->node[s->cpu[c]].vendor = hw->cpu_vendor;
    s->node[s->cpu[c]].model = hw->cpu_model;
  }
  s->ncpus = hw->ncpus;
  for (int i = 0; i < hw->nswitches; i++) {
    const struct pt_hw_dev *d = &hw->sw[i];
    if (d->parent >= i) {
      snprintf(err, errlen, "switch %d: its parent must be a CPU or an earlier switch", i);
      return -1;
    }
    sw[i] = add_node(s, NG_PCI);
    int up = d->parent >= 0 ? sw[d->parent] : s->cpu[-d->parent - 1];
    connect(s, sw[i], up, NG_LINK_PCI, pci_bw(d->gen, d->lanes));
    connect(s, up, sw[i], NG_LINK_PCI, pci_bw(d->gen, d->lanes));
  }
  s->cc_min = 1 << 30;
  s->cc_max = 0;
  for (int g = 0; g < hw->ngpus; g++) {
    const struct pt_hw_dev *d = &hw->gpu[g];
    int n = s->gpu[g] = add_node(s, NG_GPU);
    int up = d->parent >= 0 ? sw[d->parent] : s->cpu[-d->parent - 1];
    float bw = pci_bw(d->gen, d->lanes);
    s->node[n].sm = d->sm;
    s->node[n].rank = g;
    s->node[n].pci_bw = bw;
    connect(s, n, up, NG_LINK_PCI, bw);
    connect(s, up, n, NG_LINK_PCI, bw);
    if (d->sm < s->cc_min) s->cc_min = d->sm;
    if (d->sm > s->cc_max) s->cc_max = d->sm;
  }
  s->ngpus = hw->ngpus;
  /* ncclTopoConnectCpus: every pair of sockets, at the vendor's bandwidth. */
  for (int a = 0; a < hw->ncpus; a++)
    for (int b = 0; b < hw->ncpus; b++)
      if (a != b) connect(s, s->cpu[a], s->cpu[b], NG_LINK_SYS, inter_cpu_bw(hw));
  s->vendor = hw->cpu_vendor;
  return 0;
}

int ng_build(struct ng_system *s, const struct pt_hw *hw, int p2p_level, char *err, size_t errlen) {
  s->nnodes = 0;
  if (build_nodes(s, hw, err, errlen)) return -1;
  for (int c = 0; c < s->ncpus; c++) set_paths(s, s->cpu[c]);
  for (int g = 0; g < s->ngpus; g++) set_paths(s, s->gpu[g]);
  /* ncclTopoSearchInit on one node: the best raw GPU-to-GPU bandwidth, and
   * the fastest GPU link. */
  s->max_bw = s->total_bw = 0;
  for (int a = 0; a < s->ngpus; a++) {
    for (int b = 0; b < s->ngpus; b++) {
      const struct ng_path *p = &s->path[s->gpu[a]][s->gpu[b]];
      if (a != b && p->bw > s->max_bw) s->max_bw = p->bw;
    }
    if (s->node[s->gpu[a]].pci_bw > s->total_bw) s->total_bw = s->node[s->gpu[a]].pci_bw;
  }
  if (s->ngpus == 1) s->max_bw = s->total_bw = NG_LOC_BW;
  /* ncclTopoCheckP2p: P2P only up to p2p_level, and only where the driver
   * allows it; otherwise the traffic is diverted through the CPU local to the
   * receiving GPU (ncclTopoComputePaths). */
  s->shm_pairs = 0;
  for (int g = 0; g < s->ngpus; g++)
    for (int p = 0; p < s->ngpus; p++) {
      if (p == g) continue;
      int p2p = s->path[s->gpu[p]][s->gpu[g]].type <= p2p_level && hw->p2p;
      s->shm_pairs += !p2p;
      if (!p2p && detour(s, s->gpu[p], local_cpu(s, s->gpu[g]), s->gpu[g])) {
        snprintf(err, errlen, "the topology is too deep (more than %d hops between GPUs)", NG_MAX_HOPS);
        return -1;
      }
    }
  return 0;
}
