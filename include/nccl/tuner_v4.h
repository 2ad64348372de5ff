/* Tuner ABI v4 (NCCL 2.24.3): v3 plus regBuff before nChannels. regBuff is 1
 * for registered buffers and during CUDA-graph capture. */
#ifndef PCIE_NCCL_TUNER_V4_H
#define PCIE_NCCL_TUNER_V4_H
#include "nccl/common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v4_t;

_Static_assert(sizeof(ncclTuner_v4_t) == 4 * sizeof(void *), "v4 has four members");
_Static_assert(offsetof(ncclTuner_v4_t, destroy) == 3 * sizeof(void *), "v4 layout");
#endif
