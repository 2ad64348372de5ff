/*
 * The functions behind the exported tuner structs. Signatures repeat across
 * ABI versions (getCollInfo of v4-v6, destroy/finalize of all; v7 differs
 * from v6 only in its constants), so each exists once here and tuner_vN.c
 * only assembles its version's struct. Each version has its own init, which
 * tells the core the ABI NCCL loaded (it bounds NCCL's version). Every one returns ncclSuccess: an error
 * from the tuner fails the user's collective (NCCL does not fall back).
 */
#ifndef PCIE_TUNER_SHIM_H
#define PCIE_TUNER_SHIM_H

#include "nccl/tuner_v6.h"
#include "nccl/tuner_v7.h"

ncclResult_t pt_shim_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context);
ncclResult_t pt_shim_init_v3(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context);
ncclResult_t pt_shim_init_v4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context);
ncclResult_t pt_shim_init_v6(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                             ncclTunerConstants_v5_t *constants);
ncclResult_t pt_shim_init_v5(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                             ncclTunerConstants_v5_t *constants);
ncclResult_t pt_shim_init_v7(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t *nvlDomainInfo,
                             ncclTunerConstants_v7_t *constants);
/* v3: no regBuff, so eager measurements serve it. */
ncclResult_t pt_shim_get_coll_info_v3(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int *nChannels);
/* v4, v5, v6. */
ncclResult_t pt_shim_get_coll_info_v4(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int regBuff, int *nChannels);
ncclResult_t pt_shim_get_chunk_size(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                                    int proto, int nChannels, size_t *chunkSize);
ncclResult_t pt_shim_finalize(void *context);

#endif
