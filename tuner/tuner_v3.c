/* Tuner ABI v3 (NCCL 2.22.3): cost table, no regBuff (eager data serve it). */
#include "nccl/tuner_v3.h"
#include "pcie/core.h"

static ncclResult_t v3_init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                            void **context) {
  pt_core_init((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

static ncclResult_t v3_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                     int numPipeOps, float **collCostTable, int numAlgo,
                                     int numProto, int *nChannels) {
  (void)numPipeOps;
  /* collCostTable is a contiguous float[numAlgo][numProto] cast to float**. */
  pt_core_decide(context, (int)collType, nBytes, 0, (float *)collCostTable, numAlgo, numProto,
                 nChannels, NULL);
  return ncclSuccess;
}

static ncclResult_t v3_destroy(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}

PCIE_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {
    .name = "PcieTuner",
    .init = v3_init,
    .getCollInfo = v3_get_coll_info,
    .destroy = v3_destroy,
};
