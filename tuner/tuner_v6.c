/* Tuner ABI v6 (NCCL 2.30.3): v5 plus getChunkSize (last member). */
#include "nccl/tuner_v6.h"
#include "pcie/core.h"

static ncclResult_t v6_init(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                            ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t *nvlDomainInfo,
                            ncclTunerConstants_v6_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

static ncclResult_t v6_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                     int numPipeOps, float **collCostTable, int numAlgo,
                                     int numProto, int regBuff, int *nChannels) {
  (void)numPipeOps;
  pt_core_decide(context, (int)collType, nBytes, regBuff, (float *)collCostTable, numAlgo,
                 numProto, nChannels, NULL);
  return ncclSuccess;
}

static ncclResult_t v6_get_chunk_size(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                                      int proto, int nChannels, size_t *chunkSize) {
  (void)nChannels;
  pt_core_chunk(context, (int)collType, nBytes, algo, proto, chunkSize);
  return ncclSuccess;
}

static ncclResult_t v6_finalize(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}

PCIE_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = "PcieTuner",
    .init = v6_init,
    .getCollInfo = v6_get_coll_info,
    .finalize = v6_finalize,
    .getChunkSize = v6_get_chunk_size,
};
