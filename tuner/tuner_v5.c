/*
 * Tuner ABI v5 (NCCL 2.28.3): context first, commId, NVLink-domain info and
 * NCCL's model constants. The constants are left exactly as NCCL made them:
 * the profile overrides decisions, not NCCL's model of everything else.
 */
#include "nccl/tuner_v5.h"
#include "pcie/core.h"

static ncclResult_t v5_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                            ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                            ncclTunerConstants_v5_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

static ncclResult_t v5_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                     int numPipeOps, float **collCostTable, int numAlgo,
                                     int numProto, int regBuff, int *nChannels) {
  (void)numPipeOps;
  pt_core_decide(context, (int)collType, nBytes, regBuff, (float *)collCostTable, numAlgo,
                 numProto, nChannels, NULL);
  return ncclSuccess;
}

static ncclResult_t v5_finalize(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}

PCIE_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = "PcieTuner",
    .init = v5_init,
    .getCollInfo = v5_get_coll_info,
    .finalize = v5_finalize,
};
