/*
 * NCCL's ring and tree graph search on one node (NCCL 2.30
 * src/graph/search.cc: ncclTopoCompute, ncclTopoSearchRec, ncclTopoSearchRecGpu,
 * ncclTopoFollowPath, ncclTopoCompareGraphs, ncclTopoDupChannels), written
 * from its documented behaviour:
 *
 *  - a depth-first search over GPU orders; every hop consumes the channel's
 *    bandwidth on each link of its path (1.2x on the PCI links of a path
 *    through an Intel root complex) and fails when a link has too little left;
 *  - channels are added one by one (replaying the first ring when
 *    sameChannels), up to 32;
 *  - speeds come from NCCL's arrays per compute capability, starting at the
 *    fastest one the paths allow and going down until the next speed would
 *    be less than half the best found; path types are widened from the
 *    tightest to the loosest the box has;
 *  - each search has a step budget (NCCL's timeouts), as NCCL's does;
 *  - when nothing fits at any speed, one channel at 0.1 GB/s (type SYS).
 *
 * Only what a single PCIe node reaches is covered: no NET, NVLink, NVSwitch
 * or CollNet/NVLS patterns.
 */
#include <math.h>
#include <string.h>

#include "nccl_graph.h"

#define TIMEOUT_GLOBAL (1LL << 19)
#define TIMEOUT (1 << 14)
#define TIMEOUT_TREE (1 << 14)
#define TIMEOUT_SAMECHANNELS (1 << 8)
#define ORDER_PCI 1
#define ORDER_REPLAY 2

/* speedArrayIntra, sm90SpeedArrayIntra, sm100SpeedArrayIntra (GB/s). */
static const float speeds_sm80[] = {40.0f, 30.0f, 20.0f, 18.0f, 15.0f, 12.0f, 10.0f,
                                    9.0f,  7.0f,  6.0f,  5.0f,  4.0f,  3.0f};
static const float speeds_sm90[] = {60.0f, 50.0f, 40.0f, 30.0f, 24.0f, 20.0f,
                                    15.0f, 12.0f, 11.0f, 6.0f,  3.0f};
static const float speeds_sm100[] = {90.0f, 80.0f, 70.0f, 60.0f, 50.0f, 45.0f,
                                     40.0f, 30.0f, 24.0f, 20.0f, 19.0f, 18.0f};

struct search {
  struct ng_system *s;
  struct ng_graph *save; /* the best graph so far */
  int time;
};

static float sub_round(float a, float b) { return roundf((a - b) * 1000) / 1000; }

/* followPath: consume bw on the first max_steps links of p; returns the
 * number of links that had enough. */
static int follow(struct ng_system *s, struct ng_path *p, int start, int max_steps, float bw) {
  float pci = bw;
  for (int i = 0; i < p->count; i++) {
    const struct ng_node *n = &s->node[p->list[i]->rem];
    if (n->type == NG_CPU && p->type == NG_PATH_PHB && s->node[start].type == NG_GPU &&
        n->vendor == PT_CPU_INTEL)
      pci = bw * 6 / 5; /* INTEL_P2P_OVERHEAD */
  }
  for (int i = 0; i < max_steps; i++) {
    struct ng_link *l = p->list[i];
    float fw = l->type == NG_LINK_PCI ? pci : bw;
    if (l->bw < fw) return i;
    l->bw = sub_round(l->bw, fw);
  }
  return max_steps;
}

/* ncclTopoFollowPath between GPUs a and b (node indices; a < 0 = start). */
static int follow_gpu(struct search *x, struct ng_graph *g, int a, int b, float mult) {
  if (a < 0) return 1;
  struct ng_path *p = &x->s->path[a][b], *rev = &x->s->path[b][a];
  if (p->type >= NG_PATH_DIS) return 0;
  if (mult > 0 && p->type > g->type_intra) return 0;
  if (mult > 0 && g->pattern != NG_PATTERN_RING && rev->type > g->type_intra) return 0;
  float bw = g->bw_intra * mult;
  int step = follow(x->s, p, a, p->count, bw);
  if (step < p->count) {
    follow(x->s, p, a, step, -bw);
    return 0;
  }
  g->nhops += (int)mult * p->count;
  return 1;
}

static void search_rec(struct search *x, struct ng_graph *g);
static void rec_gpu(struct search *x, struct ng_graph *g, int gi, int step, int back_to_first, int order);

static void try_gpu(struct search *x, struct ng_graph *g, int step, int back_to_first, int order, int from,
                    int gi) {
  struct ng_system *s = x->s;
  unsigned long long flag = 1ULL << g->nchannels;
  int to = s->gpu[gi];
  if (!follow_gpu(x, g, from, to, 1)) return;
  s->node[to].used ^= flag;
  rec_gpu(x, g, gi, step, back_to_first, order);
  s->node[to].used ^= flag;
  follow_gpu(x, g, from, to, -1);
}

/* ncclTopoCompareGraphs: more total bandwidth, then fewer hops. */
static int better(const struct ng_graph *g, const struct ng_graph *ref) {
  if (g->nchannels < g->min_channels) return 0;
  if (g->nchannels * g->bw_intra > ref->nchannels * ref->bw_intra) return 1;
  if (g->nchannels * g->bw_intra < ref->nchannels * ref->bw_intra) return 0;
  return g->pattern == ref->pattern && g->nhops < ref->nhops;
}

/* ncclTopoSearchNextGpuSort without NICs: by bandwidth to this GPU, then
 * hops, then distance in index order. */
static int next_gpus(struct ng_system *s, struct ng_graph *g, int gi, int *next) {
  unsigned long long flag = 1ULL << g->nchannels;
  int bw[PT_HW_MAX_GPUS], hops[PT_HW_MAX_GPUS], count = 0;
  for (int i = 1; i < s->ngpus; i++) {
    int o = (gi + i) % s->ngpus;
    const struct ng_path *p = &s->path[s->gpu[gi]][s->gpu[o]];
    if (p->count == 0 || (s->node[s->gpu[o]].used & flag)) continue;
    /* Insertion sort; the start index breaks ties, so it is stable. */
    int j = count++;
    while (j > 0 && ((int)p->bw > bw[j - 1] || ((int)p->bw == bw[j - 1] && p->count < hops[j - 1]))) {
      next[j] = next[j - 1];
      bw[j] = bw[j - 1];
      hops[j] = hops[j - 1];
      j--;
    }
    next[j] = o;
    bw[j] = (int)p->bw;
    hops[j] = p->count;
  }
  return count;
}

static void rec_gpu(struct search *x, struct ng_graph *g, int gi, int step, int back_to_first, int order) {
  struct ng_system *s = x->s;
  int n = s->ngpus;
  if (x->time <= 0) return;
  x->time--;
  if (step == n) {
    g->nchannels++;
    if (better(g, x->save)) {
      *x->save = *g;
      if (g->nchannels == g->max_channels) x->time = -1;
    }
    if (g->nchannels < g->max_channels) search_rec(x, g);
    g->nchannels--;
    return;
  }
  g->intra[g->nchannels * n + step] = s->node[s->gpu[gi]].rank;
  if (step < n - 1) {
    int next[PT_HW_MAX_GPUS], count;
    if (order == ORDER_PCI) {
      next[0] = step + 1;
      count = 1;
    } else if (order == ORDER_REPLAY) {
      next[0] = g->intra[(g->nchannels - 1) * n + step + 1];
      count = 1;
    } else {
      count = next_gpus(s, g, gi, next);
    }
    for (int i = 0; i < count; i++) try_gpu(x, g, step + 1, back_to_first, order, s->gpu[gi], next[i]);
  } else if (step == back_to_first) {
    int first = g->intra[g->nchannels * n];
    if (follow_gpu(x, g, s->gpu[gi], s->gpu[first], 1)) {
      rec_gpu(x, g, first, step + 1, -1, order);
      follow_gpu(x, g, s->gpu[gi], s->gpu[first], -1);
    }
  } else {
    rec_gpu(x, g, gi, n, -1, order);
  }
}

/* ncclTopoSearchRec on one node. */
static void search_rec(struct search *x, struct ng_graph *g) {
  int back_to_first = g->pattern == NG_PATTERN_RING ? x->s->ngpus - 1 : -1;
  if (g->nchannels == 0) {
    try_gpu(x, g, 0, back_to_first, ORDER_PCI, -1, 0);
  } else {
    int first = g->intra[(g->nchannels - 1) * x->s->ngpus];
    try_gpu(x, g, 0, back_to_first, ORDER_REPLAY, -1, first);
  }
  if (!g->same_channels || g->nchannels == 0)
    for (int i = 0; i < x->s->ngpus; i++) try_gpu(x, g, 0, back_to_first, 0, -1, i);
}

/* ncclTopoDupChannels: only for fast graphs (>= 25 GB/s per channel). */
static void dup_channels(const struct ng_system *s, struct ng_graph *g) {
  if (g->nchannels == 0 || g->bw_intra < 25.0f) return;
  if (s->cc_min > 80 && g->bw_intra < 50.0f && g->nchannels > 4) return;
  int dup = g->nchannels * 2 < g->max_channels ? g->nchannels * 2 : g->max_channels;
  int n = s->ngpus;
  memcpy(g->intra + g->nchannels * n, g->intra, sizeof(int) * (size_t)((dup - g->nchannels) * n));
  g->bw_intra /= (float)((dup + g->nchannels - 1) / g->nchannels);
  g->bw_inter /= (float)((dup + g->nchannels - 1) / g->nchannels);
  g->nchannels = dup;
}

static int type_bounds(const struct ng_system *s, int *min, int *max) {
  *min = NG_PATH_SYS;
  *max = NG_PATH_LOC;
  for (int a = 0; a < s->ngpus; a++)
    for (int b = 0; b < s->ngpus; b++) {
      if (a == b) continue;
      int t = s->path[s->gpu[a]][s->gpu[b]].type;
      if (t < *min) *min = t;
      if (t > *max) *max = t;
    }
  return 0;
}

static void search_once(struct ng_system *s, struct ng_graph *tmp, struct ng_graph *save, int *time) {
  struct search x = {s, save, *time};
  tmp->nchannels = 0;
  for (int i = 0; i < s->ngpus; i++) s->node[s->gpu[i]].used = 0;
  search_rec(&x, tmp);
  *time = x.time;
}

void ng_search(struct ng_system *s, struct ng_graph *graph) {
  const float *speeds = s->cc_min >= 100 ? speeds_sm100 : s->cc_min >= 90 ? speeds_sm90 : speeds_sm80;
  int nspeeds = s->cc_min >= 100   ? (int)(sizeof speeds_sm100 / sizeof *speeds)
                : s->cc_min >= 90 ? (int)(sizeof speeds_sm90 / sizeof *speeds)
                                  : (int)(sizeof speeds_sm80 / sizeof *speeds);
  int min_type = NG_PATH_LOC, max_type = NG_PATH_SYS;
  if (s->ngpus > 1) type_bounds(s, &min_type, &max_type);
  graph->bw_intra = graph->bw_inter = 0;
  graph->type_intra = min_type;
  graph->nchannels = 0;
  graph->nhops = 0;
  graph->same_channels = 1;
  graph->fallback = 0;
  struct ng_graph tmp = *graph;
  int pass = 1, si = 0, time = 0;
  float max_bw = s->max_bw, total_bw = s->total_bw;
  long long global = TIMEOUT_GLOBAL;
  /* Trees need not return to where they started: more bandwidth to spend. */
  if (s->ngpus > 1 && graph->pattern != NG_PATTERN_RING) total_bw *= (float)(s->ngpus * 1.0 / (s->ngpus - 1));
  while ((speeds[si] > max_bw || speeds[si] * (float)graph->min_channels > total_bw) && si < nspeeds - 1) si++;
  tmp.bw_intra = tmp.bw_inter = speeds[si];

  for (;;) {
    time = tmp.same_channels ? TIMEOUT_SAMECHANNELS : tmp.pattern == NG_PATTERN_TREE ? TIMEOUT_TREE : TIMEOUT;
    global -= time;
    search_once(s, &tmp, graph, &time);
    int done = time == -1 || graph->nchannels * graph->bw_inter >= s->total_bw;
    if (!done && pass == 1) {
      /* Different rings per channel, except through AMD CPUs across sockets. */
      if (tmp.same_channels && !(s->vendor == PT_CPU_AMD && tmp.type_intra == NG_PATH_SYS)) {
        tmp.same_channels = 0;
        continue;
      }
      tmp.same_channels = 1;
      if (time != -1) global += time;
      else global = TIMEOUT_GLOBAL;
      if (global < 0 && graph->nchannels) {
        done = 1;
      } else {
        if (s->cc_min >= 90 && tmp.pattern == NG_PATTERN_BALANCED_TREE) {
          tmp.pattern = NG_PATTERN_TREE; /* a simpler tree */
          continue;
        }
        tmp.pattern = graph->pattern;
        if (tmp.type_intra < max_type && (graph->nchannels == 0 || tmp.type_intra < graph->type_intra)) {
          tmp.type_intra++;
          if (tmp.type_intra < NG_PATH_DIS) continue;
        }
        tmp.type_intra = min_type;
        if (si < nspeeds - 1 && (graph->nchannels == 0 || speeds[si + 1] / graph->bw_inter > .49)) {
          tmp.bw_inter = tmp.bw_intra = speeds[++si];
          continue;
        }
        si = 0;
        while (speeds[si] > max_bw && si < nspeeds - 1) si++;
        tmp.bw_intra = tmp.bw_inter = speeds[si];
      }
    }
    /* done: */
    if (pass == 1) {
      time = -1;
      dup_channels(s, graph);
      tmp = *graph;
      si = 0;
      while (speeds[si] > graph->bw_inter && si < nspeeds - 1) si++;
      tmp.bw_intra = tmp.bw_inter = speeds[si];
      tmp.min_channels = graph->nchannels;
      pass = 2;
    }
    /* Pass 2: see whether the same channels go faster. */
    if (time != 0 && si > 0) {
      if (graph->pattern == NG_PATTERN_RING) {
        tmp.bw_intra = tmp.bw_inter = speeds[--si];
        continue;
      }
      if (tmp.bw_intra == graph->bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
        tmp.bw_intra = speeds[--si];
        continue;
      }
    }
    break;
  }
  if (graph->nchannels == 0) {
    for (int i = 0; i < s->ngpus; i++) graph->intra[i] = i;
    graph->bw_intra = 0.1f;
    graph->bw_inter = 0;
    graph->type_intra = NG_PATH_SYS;
    graph->nchannels = 1;
    graph->fallback = 1;
  }
}
