/* The shared bodies of the tuner ABI shims (see shim.h). */
#include "shim.h"

#include "pcie/core.h"

/* v2-v4 share a signature; each is told its own ABI version, which bounds
 * NCCL's version when ncclGetVersion cannot be found. */
ncclResult_t pt_shim_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context) {
  pt_core_init_abi((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction, 2);
  return ncclSuccess;
}

ncclResult_t pt_shim_init_v3(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context) {
  pt_core_init_abi((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction, 3);
  return ncclSuccess;
}

ncclResult_t pt_shim_init_v4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context) {
  pt_core_init_abi((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction, 4);
  return ncclSuccess;
}

/* The constants are left exactly as NCCL made them: the profile overrides
 * decisions, not NCCL's model of everything else. */
ncclResult_t pt_shim_init_v5(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                             ncclTunerConstants_v5_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init_abi((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction, 5);
  return ncclSuccess;
}

ncclResult_t pt_shim_init_v6(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                             ncclTunerConstants_v5_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init_abi((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction, 6);
  return ncclSuccess;
}

/* collCostTable is a contiguous float[numAlgo][numProto] cast to float**. */
ncclResult_t pt_shim_get_coll_info_v3(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int *nChannels) {
  pt_core_decide(context, (int)collType, nBytes, 0, numPipeOps, (float *)collCostTable, numAlgo,
                 numProto, nChannels, NULL);
  return ncclSuccess;
}

ncclResult_t pt_shim_get_coll_info_v4(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int regBuff, int *nChannels) {
  pt_core_decide(context, (int)collType, nBytes, regBuff, numPipeOps, (float *)collCostTable,
                 numAlgo, numProto, nChannels, NULL);
  return ncclSuccess;
}

ncclResult_t pt_shim_get_chunk_size(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                                    int proto, int nChannels, size_t *chunkSize) {
  pt_core_chunk(context, (int)collType, nBytes, algo, proto, nChannels, chunkSize);
  return ncclSuccess;
}

/* v7's constants are larger (5 compute capabilities), but like v5/v6 they
 * are left exactly as NCCL made them, so the core never sees them. */
ncclResult_t pt_shim_init_v7(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t *nvlDomainInfo,
                             ncclTunerConstants_v7_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init_abi((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction, 7);
  return ncclSuccess;
}

ncclResult_t pt_shim_finalize(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}
