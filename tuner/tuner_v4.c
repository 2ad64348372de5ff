/* Tuner ABI v4 (NCCL 2.24.3): v3 plus regBuff (1 during graph capture). */
#include "nccl/tuner_v4.h"
#include "pcie/core.h"

static ncclResult_t v4_init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                            void **context) {
  pt_core_init((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

static ncclResult_t v4_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                     int numPipeOps, float **collCostTable, int numAlgo,
                                     int numProto, int regBuff, int *nChannels) {
  (void)numPipeOps;
  pt_core_decide(context, (int)collType, nBytes, regBuff, (float *)collCostTable, numAlgo,
                 numProto, nChannels, NULL);
  return ncclSuccess;
}

static ncclResult_t v4_destroy(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}

PCIE_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = "PcieTuner",
    .init = v4_init,
    .getCollInfo = v4_get_coll_info,
    .destroy = v4_destroy,
};
