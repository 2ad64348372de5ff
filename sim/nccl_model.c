/*
 * NCCL's single-node PCIe cost model (NCCL 2.30 tuning.cc ncclTopoTuneModel
 * and ncclTopoGetAlgoTime, enqueue.cc topoGetAlgoInfo and
 * scheduleCollTasksToPlan). Owns only NCCL's view; the true behaviour of a
 * simulated box lives elsewhere. Checked against NCCL's own code on every
 * topology of test/data/nccl-real by test/test_sim_derive.c.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "nccl/common.h"
#include "pcie/nccl_model.h"
#include "pcie/profile.h"

/* tuning.cc ncclTunerConstantsDefaults: baseLatencies (Tree, Ring), us. */
static const double base_lat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
/* hwLatencies, the PCI row (Tree, Ring), us per step. */
static const double hw_lat_pci[2][3] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}};
/* llMaxBws[cc][N1], perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws (N1). */
static const double ll_max_bw[4] = {39.0, 87.7, 141.0, 282.0};
static const double ring_ll128_bw[4] = {20.0, 20.0, 36.7, 40.0};
static const double tree_ll128_bw[4] = {20.0, 20.0, 36.7, 55.6};
static const double tree_bw[4] = {26.5, 24.0, 38.7, 70.0};
/* treeCorrectionFactor[proto][log2(nBytes/64)]: NCCL applies it to every
 * protocol of Tree all-reduce (ncclTopoGetAlgoTime). */
static const float tree_corr[3][23] = {
    {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f, .7f, .7f, .6f, .5f,
     .4f,  .4f,  .5f,  .6f,  .7f, .8f, .9f, 1.0f, 1.0f, 1.0f, 1.0f},
    {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f, .6f, .6f,
     .6f,  .6f,  .6f,  .6f,  .8f,  .9f, .9f, .9f, .9f, 1.0f, 1.0f},
    {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f,
     .5f, .5f, .5f, .6f, .7f, .8f, .7f, .7f, .8f, .9f, .9f}};

void pt_nccl_params_default(struct pt_nccl_params *p, int nranks) {
  *p = (struct pt_nccl_params){0};
  p->nranks = nranks;
  p->compcap = 1;
  p->search_channels = 2;
  p->bw_intra = 12.0;
  p->comm_channels = 4;
  p->tree_enabled = 1;
  p->ll_enabled = 1;
  p->simple_enabled = 1;
  p->max_batch_colls = 10;
}

int pt_nccl_version_code(const char *s) {
  int major, minor, patch = 0, n = 0;
  if (!s || (sscanf(s, "%d.%d%n.%d%n", &major, &minor, &n, &patch, &n) < 2) || s[n] || major < 0 ||
      minor < 0 || minor > 99 || patch < 0 || patch > 99)
    return 0;
  return major * 10000 + minor * 100 + patch;
}

static int cc_index(const struct pt_nccl_params *p) {
  return p->compcap < 0 ? 0 : p->compcap > 3 ? 3 : p->compcap;
}

static int tree_nch(const struct pt_nccl_params *p) {
  return p->tree_channels > 0 ? p->tree_channels : p->search_channels;
}

static float tree_bwi(const struct pt_nccl_params *p) {
  return (float)(p->tree_bw_intra > 0 ? p->tree_bw_intra : p->bw_intra);
}

static int nsteps(int coll, int n) {
  switch (coll) {
  case PT_ALLREDUCE: return 2 * (n - 1);
  case PT_ALLGATHER:
  case PT_REDUCESCATTER: return n - 1;
  default: return n;
  }
}

static int proto_on(const struct pt_nccl_params *p, int pr) {
  return pr == NCCL_PROTO_LL ? p->ll_enabled : pr == NCCL_PROTO_LL128 ? p->ll128_enabled
                                                                    : p->simple_enabled;
}

/* comm->bandwidths[coll][a][p] (algorithm bandwidth, GB/s); 0 = disabled. */
static float algo_bw(const struct pt_nccl_params *p, int coll, int a, int pr) {
  int cc = cc_index(p), n = p->nranks;
  if (a != NCCL_ALGO_TREE && a != NCCL_ALGO_RING) return 0;
  if (a == NCCL_ALGO_TREE && (coll != PT_ALLREDUCE || !p->tree_enabled)) return 0;
  if (!proto_on(p, pr)) return 0;
  int nch = a == NCCL_ALGO_TREE ? tree_nch(p) : p->search_channels;
  float busbw = (float)nch * (a == NCCL_ALGO_TREE ? tree_bwi(p) : (float)p->bw_intra);
  if (a == NCCL_ALGO_RING) {
    if (pr == NCCL_PROTO_LL) busbw = (float)fmin(ll_max_bw[cc], busbw * .5);
    if (pr == NCCL_PROTO_LL128) busbw = (float)fmin(busbw * 0.92, nch * ring_ll128_bw[cc]);
    float ratio = 1.0f;
    ratio *= (float)((1.0 * n) / nsteps(coll, n));
    return busbw * ratio;
  }
  busbw = (float)fmin(busbw * .92, nch * tree_bw[cc]);
  if (pr == NCCL_PROTO_LL) busbw = (float)fmin(busbw * 1.0 / 3.8, ll_max_bw[cc]);
  if (pr == NCCL_PROTO_LL128) busbw = (float)fmin(busbw * 7.0 / 9.0, nch * tree_ll128_bw[cc]);
  if (p->tree_simple_pattern) busbw = (float)(busbw * .85);
  return busbw * .5f;
}

/* comm->latencies[coll][a][p], us (single node: every step is intra-node). */
static float latency(const struct pt_nccl_params *p, int coll, int a, int pr) {
  int n = p->nranks;
  float lat = (float)base_lat[a][pr];
  float intra = (float)hw_lat_pci[a][pr];
  if (a == NCCL_ALGO_TREE) return lat + 2 * ((n - 1) * intra);
  if (coll == PT_BROADCAST || coll == PT_REDUCE) {
    if (!p->ring_diff_channels) return lat + intra;
    if (pr == NCCL_PROTO_SIMPLE) intra = (float)hw_lat_pci[NCCL_ALGO_TREE][pr];
    return lat + nsteps(coll, n) * intra;
  }
  return lat + nsteps(coll, n) * intra;
}

/* log2 rounded down; -1 for 0, as NCCL's log2i. */
static int log2i(size_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    l++;
  }
  return l;
}

void pt_nccl_cost_table(const struct pt_nccl_params *p, int coll, size_t nbytes,
                        int num_pipe_ops, float table[7][3]) {
  int ops = num_pipe_ops < 1 ? 1 : num_pipe_ops;
  int batch = p->max_batch_colls > 0 ? p->max_batch_colls : 10;
  int logsize = log2i(nbytes >> 6);
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
      float bw = algo_bw(p, coll, a, pr);
      if (bw <= 0) {
        table[a][pr] = (float)NCCL_ALGO_PROTO_IGNORE;
        continue;
      }
      if (a == NCCL_ALGO_TREE && coll == PT_ALLREDUCE && logsize >= 0 && logsize < 23)
        bw *= tree_corr[pr][logsize];
      int lat_count = a == NCCL_ALGO_RING ? ops : (ops + batch - 1) / batch;
      table[a][pr] = latency(p, coll, a, pr) * (float)lat_count + (float)nbytes / (1000 * bw);
    }
  }
}

int pt_nccl_select(float table[7][3], int *algo, int *proto) {
  float best = -1.0f;
  *algo = -1;
  *proto = -1;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
      float t = table[a][pr];
      if (t < 0.0f) continue;
      if (best < 0.0f || t < best) {
        best = t;
        *algo = a;
        *proto = pr;
      }
    }
  return *algo < 0 ? -1 : 0;
}

int pt_nccl_select_tuned(const struct pt_nccl_params *p, float before[7][3], float after[7][3], int *algo,
                         int *proto) {
  if (p->nccl_version < PT_NCCL_V2_31) return pt_nccl_select(after, algo, proto);
  /* dev tuning.cc: ncclTuningComputeAllTunings pushes each valid model (a
   * time > 0) to the front of a list, ncclTuningCompute copies the tuner's
   * table back into it, and ncclTuningSelectBestTuning keeps the first
   * strictly smaller time from FLT_MAX: whatever the tuner wrote, negative
   * included, among the entries NCCL had given a time; ties to the last
   * pushed, the higher index. */
  float best = FLT_MAX;
  *algo = -1;
  *proto = -1;
  for (int a = NCCL_NUM_ALGORITHMS - 1; a >= 0; a--)
    for (int pr = NCCL_NUM_PROTOCOLS - 1; pr >= 0; pr--)
      if (before[a][pr] > 0.0f && after[a][pr] < best) {
        best = after[a][pr];
        *algo = a;
        *proto = pr;
      }
  return *algo < 0 ? -1 : 0;
}

int pt_nccl_max_threads(const struct pt_nccl_params *p, int algo, int proto) {
  if (proto == NCCL_PROTO_LL128) return 640;
  if (proto == NCCL_PROTO_LL || algo != NCCL_ALGO_RING) return 512;
  if (p->ring_simple_threads > 0) return p->ring_simple_threads;
  /* PCI_BW (12 GB/s, Gen3 x16) or less in the ring graph: 256 threads. */
  return (float)p->bw_intra * (float)p->search_channels <= 12.0f ? 256 : 512;
}

/* threadThresholds: NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD, Ring LL x nRanks. */
static size_t thread_threshold(const struct pt_nccl_params *p, int algo, int proto) {
  size_t thr = proto == NCCL_PROTO_SIMPLE ? 64 : 8;
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_LL) thr *= (size_t)p->nranks;
  return thr;
}

int pt_nccl_channels(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes) {
  size_t nt = (size_t)pt_nccl_max_threads(p, algo, proto), thr = thread_threshold(p, algo, proto);
  int nc = p->comm_channels < 1 ? 1 : p->comm_channels;
  while (nc >= 2 && nbytes < (size_t)nc * nt * thr) nc--;
  return nc;
}

int pt_nccl_warps(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes) {
  int nc = pt_nccl_channels(p, algo, proto, nbytes);
  size_t nt = (size_t)pt_nccl_max_threads(p, algo, proto), thr = thread_threshold(p, algo, proto);
  while (nbytes < (size_t)nc * nt * thr && nt % 128 == 0) nt /= 2;
  if (proto == NCCL_PROTO_SIMPLE) nt += algo == NCCL_ALGO_RING ? 32 : 4 * 32;
  if (nt / 32 < 3) nt = 3 * 32;
  if (algo == NCCL_ALGO_TREE) nt = 640; /* NCCL_MAX_NTHREADS: Tree uses every thread */
  return (int)(nt / 32);
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

int pt_nccl_sched_channels(const struct pt_nccl_params *p, int coll, int proto, size_t nbytes,
                           int nmax) {
  const size_t min_traffic = 32 << 10; /* MinTrafficPerChannel */
  int comm = p->comm_channels < 1 ? 1 : p->comm_channels;
  int n = p->nranks < 1 ? 1 : p->nranks;
  /* ncclFuncTrafficPerByte, x4 for LL's flags; all-gather and reduce-scatter
   * count per rank (the task's count is the per-rank one). */
  size_t per_byte = coll == PT_ALLREDUCE ? 2 : (coll == PT_ALLGATHER || coll == PT_REDUCESCATTER) ? (size_t)n : 1;
  size_t task_bytes = (coll == PT_ALLGATHER || coll == PT_REDUCESCATTER) ? nbytes / (size_t)n : nbytes;
  if (task_bytes == 0) task_bytes = 1;
  if (proto == NCCL_PROTO_LL) per_byte *= 4;
  size_t traffic = task_bytes * per_byte;
  if (traffic < min_traffic) traffic = min_traffic;
  int nch = nmax < 1 ? 1 : nmax > comm ? comm : nmax;
  size_t per_channel = div_up(traffic / (size_t)nch, 16) * 16;
  size_t cell = div_up(div_up(min_traffic, per_byte), 16) * 16;
  size_t cells = div_up(task_bytes, cell);
  size_t per_cell = cell * per_byte;
  size_t cells_per_ch = div_up(per_channel, per_cell);
  if (cells_per_ch > cells) cells_per_ch = cells;
  size_t lo = comm == 1 ? cells : cells_per_ch;
  size_t mid = (cells - lo) / cells_per_ch, hi = (cells - lo) % cells_per_ch;
  int used = (lo != 0) + (int)mid + (hi != 0);
  return used > comm ? comm : used < 1 ? 1 : used;
}
