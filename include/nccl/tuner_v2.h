/* Tuner ABI v2 (NCCL 2.21.5): context pointer added; decisions come back as
 * algorithm/protocol out-parameters, there is no cost table. */
#ifndef PCIE_NCCL_TUNER_V2_H
#define PCIE_NCCL_TUNER_V2_H
#include "nccl/common.h"

typedef struct {
  const char *name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int *algorithm, int *protocol,
                              int *nChannels);
  ncclResult_t (*destroy)(void *context);
} ncclTuner_v2_t;

_Static_assert(sizeof(ncclTuner_v2_t) == 4 * sizeof(void *), "v2 has four members");
_Static_assert(offsetof(ncclTuner_v2_t, destroy) == 3 * sizeof(void *), "v2 destroy is last");
#endif
