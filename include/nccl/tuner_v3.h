/* Tuner ABI v3 (NCCL 2.22.3): getCollInfo receives the cost table, a
 * contiguous float[numAlgo][numProto] cast to float**. */
#ifndef PCIE_NCCL_TUNER_V3_H
#define PCIE_NCCL_TUNER_V3_H
#include "nccl/common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v3_t;

_Static_assert(sizeof(ncclTuner_v3_t) == 4 * sizeof(void *), "v3 has four members");
_Static_assert(offsetof(ncclTuner_v3_t, getCollInfo) == 2 * sizeof(void *), "v3 layout");
#endif
