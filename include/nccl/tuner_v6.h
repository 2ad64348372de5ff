/* Tuner ABI v6 (NCCL 2.30.3): v5 plus an optional getChunkSize, the last
 * member. Constants and NVLink info are the v5 types. */
#ifndef PCIE_NCCL_TUNER_V6_H
#define PCIE_NCCL_TUNER_V6_H
#include "nccl/tuner_v5.h"

typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t *nvlDomainInfo,
                       ncclTunerConstants_v6_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
  /* nBytes is one channel partition's bytes, nChannels 1 for Ring/Tree;
   * *chunkSize arrives holding NCCL's value. May be NULL. */
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t *chunkSize);
} ncclTuner_v6_t;

_Static_assert(sizeof(ncclTuner_v6_t) == 5 * sizeof(void *), "v6 has five members");
_Static_assert(offsetof(ncclTuner_v6_t, getChunkSize) == 4 * sizeof(void *),
               "getChunkSize is the last member");
#endif
