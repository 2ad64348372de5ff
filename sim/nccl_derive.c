/*
 * NCCL's view of a box, derived from its hardware (include/pcie/nccl_topo.h):
 * NCCL's P2P level, the ring search then the tree search with the ring's
 * channel count (init.cc), the communicator's channels (twice the search's,
 * connect.cc), NCCL_PROTO/NCCL_ALGO as tuning.cc reads them, and the inputs
 * of the cost model (sim/nccl_model.c).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl/common.h"
#include "nccl_graph.h"

static const char *const path_names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                         "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};

const char *pt_path_type_name(int type) {
  return type >= 0 && type < (int)(sizeof path_names / sizeof *path_names) ? path_names[type] : "?";
}

int pt_hw_check(const struct pt_hw *hw, char *err, size_t errlen) {
  if (hw->ncpus < 1 || hw->ncpus > PT_HW_MAX_CPUS) {
    snprintf(err, errlen, "%d CPU sockets; 1 to %d are supported", hw->ncpus, PT_HW_MAX_CPUS);
    return -1;
  }
  if (hw->ngpus < 1 || hw->ngpus > PT_HW_MAX_GPUS) {
    snprintf(err, errlen, "%d GPUs; 1 to %d are supported", hw->ngpus, PT_HW_MAX_GPUS);
    return -1;
  }
  if (hw->min_nchannels < 0 || hw->max_nchannels < 0) {
    snprintf(err, errlen, "NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS must be >= 0");
    return -1;
  }
  if (hw->nswitches < 0 || hw->nswitches > PT_HW_MAX_SWITCHES) {
    snprintf(err, errlen, "%d switches; at most %d are supported", hw->nswitches, PT_HW_MAX_SWITCHES);
    return -1;
  }
  for (int i = 0; i < hw->nswitches + hw->ngpus; i++) {
    int is_sw = i < hw->nswitches;
    const struct pt_hw_dev *d = is_sw ? &hw->sw[i] : &hw->gpu[i - hw->nswitches];
    int idx = is_sw ? i : i - hw->nswitches;
    const char *what = is_sw ? "switch" : "GPU";
    if (d->parent >= (is_sw ? i : hw->nswitches) || -d->parent - 1 >= hw->ncpus) {
      snprintf(err, errlen, "%s %d hangs off %s %d, which does not exist%s", what, idx,
               d->parent >= 0 ? "switch" : "CPU", d->parent >= 0 ? d->parent : -d->parent - 1,
               is_sw && d->parent >= 0 ? " before it" : "");
      return -1;
    }
    if (d->gen < 1 || d->gen > 6 || d->lanes < 1 || d->lanes > 32) {
      snprintf(err, errlen, "%s %d: PCIe gen %d x%d (gen 1..6, 1..32 lanes)", what, idx, d->gen, d->lanes);
      return -1;
    }
    if (!is_sw && (d->sm < 60 || d->sm > 200)) {
      snprintf(err, errlen, "GPU %d: compute capability sm%d (60..200)", idx, d->sm);
      return -1;
    }
  }
  return 0;
}

/* ncclGetLevel: a path type name up to SYS, or NCCL's old numbering. */
static int parse_level(const char *s) {
  static const int old[] = {NG_PATH_LOC, NG_PATH_PIX, NG_PATH_PXB, NG_PATH_PHB, NG_PATH_SYS, NG_PATH_SYS};
  for (int i = 0; i <= NG_PATH_SYS; i++)
    if (!strcmp(s, path_names[i])) return i;
  if (isdigit((unsigned char)s[0])) {
    long v = strtol(s, NULL, 0);
    return old[v > 5 ? 5 : v];
  }
  return -1;
}

/* tuning.cc parseList for the form without "function:" prefixes: "a,b"
 * enables exactly those, "^a,b" all but those. */
static int parse_list(const char *str, const char *const *names, int n, int *out, char *err,
                      size_t errlen) {
  char buf[64], *save = NULL;
  const char *list = str;
  int set = 1;
  if (strchr(str, ':') || strchr(str, ';')) {
    snprintf(err, errlen, "'%s': per-function lists are not modelled; give one list for every collective", str);
    return -1;
  }
  if (list[0] == '^') {
    set = 0;
    list++;
  }
  for (int e = 0; e < n; e++) out[e] = !set;
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int e = 0;
    while (e < n && strcasecmp(tok, names[e])) e++;
    if (e == n) {
      snprintf(err, errlen, "unrecognized element '%s' in '%s' (NCCL rejects it too)", tok, str);
      return -1;
    }
    out[e] = set;
  }
  return 0;
}

static void copy_graph(struct pt_nccl_graph *out, const struct ng_graph *g, int fallback) {
  out->nchannels = g->nchannels;
  out->bw_intra = g->bw_intra;
  out->type_intra = g->type_intra;
  out->same_channels = g->same_channels;
  out->pattern = g->pattern;
  out->fallback = fallback;
}

static int cc_index(int sm) { return sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0; }

/* Protocol and algorithm enables (tuning.cc): LL128 is on by default only
 * over NVLink (typeIntra <= NVB), so never on PCIe unless NCCL_PROTO names
 * it; NCCL_PROTO="^LL" turns it on as well, as NCCL does. */
static int enables(const struct pt_hw *hw, const struct pt_nccl_view *v, struct pt_nccl_params *p,
                   char *err, size_t errlen) {
  static const char *const protos[] = {"LL", "LL128", "Simple"};
  static const char *const algos[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  int pe[3] = {1, 2, 1}, ae[7] = {1, 1, 1, 1, 1, 1, 1};
  if (hw->proto[0] && parse_list(hw->proto, protos, 3, pe, err, errlen)) return -1;
  if (hw->algo[0] && parse_list(hw->algo, algos, 7, ae, err, errlen)) return -1;
  if (!ae[NCCL_ALGO_RING]) {
    snprintf(err, errlen, "NCCL_ALGO='%s' leaves out Ring; not modelled", hw->algo);
    return -1;
  }
  int rule = v->ring.type_intra <= NG_PATH_NVB && v->tree.type_intra <= NG_PATH_NVB &&
             (v->cc_min == v->cc_max || v->cc_min >= 90) && v->cc_min >= 70;
  if (hw->nccl_version >= PT_NCCL_V2_31) {
    /* dev cost_model.cc, ncclTuningCostModelInit: the rule (isLL128Enabled)
     * is only applied to functions NCCL_PROTO or NCCL_ALGO force; otherwise
     * every model stays on, LL128 over PCIe included. */
    if (hw->proto[0] || hw->algo[0]) pe[NCCL_PROTO_LL128] = pe[NCCL_PROTO_LL128] && rule;
    else pe[NCCL_PROTO_LL128] = 1;
  } else if (pe[NCCL_PROTO_LL128] == 2) {
    pe[NCCL_PROTO_LL128] = rule;
  }
  p->ll_enabled = pe[NCCL_PROTO_LL];
  p->ll128_enabled = pe[NCCL_PROTO_LL128];
  p->simple_enabled = pe[NCCL_PROTO_SIMPLE];
  p->tree_enabled = ae[NCCL_ALGO_TREE];
  if (!p->ll_enabled && !p->ll128_enabled && !p->simple_enabled) {
    snprintf(err, errlen, "NCCL_PROTO='%s' enables no protocol", hw->proto);
    return -1;
  }
  return 0;
}

int pt_nccl_derive(const struct pt_hw *hw, struct pt_nccl_view *v, char *err, size_t errlen) {
  struct ng_system *s = NULL;
  struct ng_graph ring, tree;
  int rc = -1, level = NG_PATH_PXB;
  memset(v, 0, sizeof *v);
  if (pt_hw_check(hw, err, errlen)) return -1;
  /* ncclTopoCheckP2p: P2P across host bridges only between two GPUs on AMD. */
  if (hw->cpu_vendor == PT_CPU_AMD && hw->ngpus <= 2) level = NG_PATH_SYS;
  if (hw->p2p_level[0] && (level = parse_level(hw->p2p_level)) < 0) {
    snprintf(err, errlen, "NCCL_P2P_LEVEL='%s' (expected LOC, PIX, PXB, PHB, SYS or 0..5)", hw->p2p_level);
    return -1;
  }
  /* paths.cc ncclGetLevel: NCCL_P2P_DISABLE=1 is read first and means LOC. */
  if (hw->p2p_disable) level = NG_PATH_LOC;
  if (!(s = calloc(1, sizeof *s))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (ng_build(s, hw, level, err, errlen)) goto out;
  /* paths.cc ncclTopoComputePaths marks a pair that neither P2P nor SHM can
   * connect as PATH_NET, and ncclTopoTrimSystem then splits the GPUs into
   * network domains: NCCL runs such a job as several nodes over its network
   * transport, which this single-node model does not cover. */
  if (hw->shm_disable && s->shm_pairs) {
    snprintf(err, errlen,
             "NCCL_SHM_DISABLE=1 with %d GPU pair(s) lacking P2P: NCCL splits the GPUs into network domains "
             "(graph/paths.cc ncclTopoTrimSystem) and runs multi-node over its network transport; "
             "not modelled (drop NCCL_SHM_DISABLE or allow P2P)",
             s->shm_pairs / 2 > 0 ? s->shm_pairs / 2 : 1);
    goto out;
  }
  v->shm_pairs = s->shm_pairs;
  memset(&ring, 0, sizeof ring);
  ring.pattern = NG_PATTERN_RING;
  ring.min_channels = 1;
  ring.max_channels = NG_MAX_CHANNELS;
  ng_search(s, &ring);
  memset(&tree, 0, sizeof tree);
  tree.pattern = NG_PATTERN_BALANCED_TREE;
  tree.min_channels = tree.max_channels = ring.nchannels;
  ng_search(s, &tree);
  /* init.cc: both graphs keep the smaller channel count; connect.cc doubles
   * it for the communicator (up to MAXCHANNELS). */
  int nch = ring.nchannels < tree.nchannels ? ring.nchannels : tree.nchannels;
  ring.nchannels = tree.nchannels = nch;
  copy_graph(&v->ring, &ring, ring.fallback);
  copy_graph(&v->tree, &tree, tree.fallback);
  /* connect.cc: the channels are duplicated; NCCL_MAX_NCHANNELS caps them,
   * then NCCL_MIN_NCHANNELS copies more. The search's own channels, hence
   * the cost table, stay as they are. */
  v->comm_channels = 2 * nch > 64 ? 64 : 2 * nch;
  if (hw->max_nchannels > 0 && v->comm_channels > hw->max_nchannels) v->comm_channels = hw->max_nchannels;
  /* NCCL_MIN_CTAS (comm->config.minCTAs) raises it the same way:
   * copyChannels up to max(ncclMinNchannels(), config.minCTAs). */
  int min_ch = hw->min_nchannels > hw->min_ctas ? hw->min_nchannels : hw->min_ctas;
  if (min_ch > v->comm_channels) v->comm_channels = min_ch > 64 ? 64 : min_ch;
  v->cc_min = s->cc_min;
  v->cc_max = s->cc_max;
  struct pt_nccl_params *p = &v->params;
  pt_nccl_params_default(p, hw->ngpus);
  p->compcap = cc_index(s->cc_min);
  p->search_channels = nch;
  p->bw_intra = ring.bw_intra;
  p->comm_channels = v->comm_channels;
  p->max_batch_colls = 8; /* NCCL 2.30 */
  p->tree_channels = nch;
  p->tree_bw_intra = tree.bw_intra;
  p->tree_simple_pattern = tree.pattern == NG_PATTERN_TREE;
  p->ring_diff_channels = !ring.same_channels;
  /* dev tuning_general.cc, ncclTuningSetThreadThresholds: 2.31 always
   * defaults Ring/Simple to NCCL_SIMPLE_MAX_NTHREADS. */
  p->ring_simple_threads =
      hw->nccl_version < PT_NCCL_V2_31 && ring.bw_intra * (float)nch <= 12.0f ? 256 : 512;
  p->nccl_version = hw->nccl_version;
  rc = enables(hw, v, p, err, errlen);
out:
  free(s);
  return rc;
}
