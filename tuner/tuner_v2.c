/*
 * Tuner ABI v2 (NCCL 2.21.5 .. 2.30): no cost table; the answer is an
 * algorithm and protocol. The shim builds the table NCCL would mark usable on
 * a PCIe node (Ring LL/Simple, Tree for AllReduce, LL128 only when NCCL_PROTO
 * forces it, CollNet/NVLS only when NCCL says they are supported), less what
 * NCCL_ALGO/NCCL_PROTO disable as NCCL parses them, so that the core's ranked
 * fallback never answers a pair NCCL has disabled. When the variables cannot
 * be read as NCCL reads them, it answers nothing.
 */
#include "nccl/tuner_v2.h"
#include "pcie/core.h"
#include "shim.h"

static ncclResult_t v2_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                     int collNetSupport, int nvlsSupport, int numPipeOps,
                                     int *algorithm, int *protocol, int *nChannels) {
  const struct pt_ctx *ctx = context;
  float cost[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  if (!ctx || !algorithm || !protocol || !ctx->v2_known) return ncclSuccess;
  if ((unsigned)collType >= PT_NCOLL) return ncclSuccess;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
      int usable = a == NCCL_ALGO_RING ||
                   (a == NCCL_ALGO_TREE && collType == ncclFuncAllReduce) ||
                   (collNetSupport && (a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN)) ||
                   (nvlsSupport && (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE));
      /* LL128 "auto" (2) stays off on a PCIe-only node; only 1 forces it on. */
      if (ctx->v2_enable.algo[collType][a] != 1 || ctx->v2_enable.proto[collType][p] != 1)
        usable = 0;
      cost[a][p] = usable ? 1.0f : -1.0f;
    }
  int ch = 0;
  struct pt_choice c;
  if (!pt_core_decide(ctx, (int)collType, nBytes, 0, numPipeOps, &cost[0][0],
                      NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, &ch, &c))
    return ncclSuccess;
  *algorithm = c.algo;
  *protocol = c.proto;
  if (nChannels) *nChannels = ch;
  return ncclSuccess;
}

/* NCCL 2.21.5 introduced v2. */
PCIE_EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v2,
    .getCollInfo = v2_get_coll_info,
    .destroy = pt_shim_finalize,
};
