/*
 * NCCL's single-node PCIe cost model (tuning.cc / enqueue.cc of NCCL 2.28 and
 * 2.30, which agree for PCIe). Owns only NCCL's view; the true behaviour of
 * a simulated box lives elsewhere.
 */
#include <math.h>

#include "nccl/common.h"
#include "pcie/nccl_model.h"
#include "pcie/profile.h"

/* tuning.cc:151-154, µs. */
static const double base_lat[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
/* tuning.cc:165-168, the PCI row, µs per step. */
static const double hw_lat_pci[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
    {1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}};
/* llMaxBws[cc][N1], perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws (N1 column). */
static const double ll_max_bw[4] = {39.0, 87.7, 141.0, 282.0};
static const double ring_ll128_bw[4] = {20.0, 20.0, 36.7, 40.0};
static const double tree_ll128_bw[4] = {20.0, 20.0, 36.7, 55.6};
static const double tree_bw[4] = {26.5, 24.0, 38.7, 70.0};
/* treeCorrectionFactor, Simple column, indexed by log2(nBytes/64). */
static const double tree_corr_simple[23] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6,
                                            .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9};

void pt_nccl_params_default(struct pt_nccl_params *p, int nranks) {
  p->nranks = nranks;
  p->compcap = 1;
  p->search_channels = 2;
  p->bw_intra = 12.0;
  p->comm_channels = 4;
  p->ll128_enabled = 0;
  p->tree_enabled = 1;
  p->ll_enabled = 1;
  p->simple_enabled = 1;
  p->max_batch_colls = 10;
}

static int steps(int coll, int n) {
  switch (coll) {
  case PT_ALLREDUCE: return 2 * (n - 1);
  case PT_ALLGATHER:
  case PT_REDUCESCATTER: return n - 1;
  default: return n;
  }
}

/* Bus bandwidth in GB/s converted to algorithm bandwidth; 0 = disabled. */
static double algo_bw(const struct pt_nccl_params *p, int coll, int a, int pr, size_t nbytes) {
  int cc = p->compcap < 0 ? 0 : p->compcap > 3 ? 3 : p->compcap;
  double G = p->search_channels * p->bw_intra, bw;
  int nch = p->search_channels;
  if (a == NCCL_ALGO_TREE && coll != PT_ALLREDUCE) return 0;
  if (a != NCCL_ALGO_TREE && a != NCCL_ALGO_RING) return 0;
  if (a == NCCL_ALGO_TREE && !p->tree_enabled) return 0;
  if ((pr == NCCL_PROTO_LL && !p->ll_enabled) || (pr == NCCL_PROTO_SIMPLE && !p->simple_enabled) ||
      (pr == NCCL_PROTO_LL128 && !p->ll128_enabled))
    return 0;
  if (a == NCCL_ALGO_RING) {
    if (pr == NCCL_PROTO_LL) bw = fmin(ll_max_bw[cc], 0.5 * G);
    else if (pr == NCCL_PROTO_LL128) bw = fmin(0.92 * G, nch * ring_ll128_bw[cc]);
    else bw = G;
    return bw * p->nranks / steps(coll, p->nranks);
  }
  bw = fmin(0.92 * G, nch * tree_bw[cc]);
  if (pr == NCCL_PROTO_LL) bw = fmin(bw / 3.8, ll_max_bw[cc]);
  else if (pr == NCCL_PROTO_LL128) bw = fmin(bw * 7.0 / 9.0, nch * tree_ll128_bw[cc]);
  if (pr == NCCL_PROTO_SIMPLE) {
    int idx = 0;
    for (size_t b = nbytes / 64; b > 1 && idx < 22; b >>= 1) idx++;
    if (nbytes / 64 < 512 * 1024 * 16) bw *= tree_corr_simple[idx];
  }
  return bw * 0.5;
}

static double latency(const struct pt_nccl_params *p, int coll, int a, int pr) {
  int n = p->nranks;
  if (a == NCCL_ALGO_TREE) return base_lat[a][pr] + 2.0 * (n - 1) * hw_lat_pci[a][pr];
  if (coll == PT_BROADCAST || coll == PT_REDUCE) return base_lat[a][pr] + hw_lat_pci[a][pr];
  return base_lat[a][pr] + steps(coll, n) * hw_lat_pci[a][pr];
}

void pt_nccl_cost_table(const struct pt_nccl_params *p, int coll, size_t nbytes,
                        int num_pipe_ops, float table[7][3]) {
  int ops = num_pipe_ops < 1 ? 1 : num_pipe_ops;
  int batch = p->max_batch_colls > 0 ? p->max_batch_colls : 10;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
    for (int pr = 0; pr < NCCL_NUM_PROTOCOLS; pr++) {
      double bw = algo_bw(p, coll, a, pr, nbytes);
      if (bw <= 0) {
        table[a][pr] = (float)NCCL_ALGO_PROTO_IGNORE;
        continue;
      }
      int lat_count = a == NCCL_ALGO_RING ? ops : (ops + batch - 1) / batch;
      table[a][pr] = (float)(latency(p, coll, a, pr) * lat_count + (double)nbytes / (1000.0 * bw));
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

int pt_nccl_channels(const struct pt_nccl_params *p, int algo, int proto, size_t nbytes) {
  /* enqueue.cc:2091-2105: shrink channels while each would carry less than
   * threads x threshold bytes. Ring LL's threshold scales with nRanks. */
  static const int threshold[3] = {8, 8, 64};
  int nt = proto == NCCL_PROTO_LL128 ? 640 : 512;
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_SIMPLE && p->search_channels * p->bw_intra <= 12.0)
    nt = 256;
  size_t thr = (size_t)threshold[proto < 0 || proto > 2 ? 2 : proto];
  if (algo == NCCL_ALGO_RING && proto == NCCL_PROTO_LL) thr *= (size_t)p->nranks;
  int nc = p->comm_channels < 1 ? 1 : p->comm_channels;
  while (nc >= 2 && nbytes < (size_t)nc * (size_t)nt * thr) nc--;
  return nc;
}
