/* Tuner ABI v7 (NCCL 2.32): the functions and member order of v6; only the
 * constants differ: NCCL_NUM_COMPCAPS grows from 4 to 5, so each of the five
 * bandwidth tables is [5][3]. Checked against NVIDIA/nccl
 * src/include/plugin/tuner/tuner_v7.h. */
#ifndef PCIE_NCCL_TUNER_V7_H
#define PCIE_NCCL_TUNER_V7_H
#include "nccl/tuner_v6.h"

#define NCCL_NUM_COMPCAPS_V7 5

typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v7_t;

/* Latencies in us, bandwidths in GB/s (1e9 B). NCCL reads it back once,
 * right after init. */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v7_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t *nvlDomainInfo,
                       ncclTunerConstants_v7_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
  ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t *chunkSize);
} ncclTuner_v7_t;

/* Offsets on LP64: 168 + 504 bytes of latencies, then five [5][3] doubles. */
_Static_assert(sizeof(ncclNvlDomainInfo_v7_t) == 12, "nvl domain info is three ints");
_Static_assert(offsetof(ncclTunerConstants_v7_t, hwLatencies) == 168, "hwLatencies @168");
_Static_assert(offsetof(ncclTunerConstants_v7_t, llMaxBws) == 672, "llMaxBws @672");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxRingLL128Bws) == 792, "@792");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeLL128Bws) == 912, "@912");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxTreeBws) == 1032, "@1032");
_Static_assert(offsetof(ncclTunerConstants_v7_t, perChMaxNVLSTreeBws) == 1152, "@1152");
_Static_assert(sizeof(ncclTunerConstants_v7_t) == 1272, "v7 constants are 1272 bytes");
_Static_assert(sizeof(ncclTuner_v7_t) == 5 * sizeof(void *), "v7 has five members");
_Static_assert(offsetof(ncclTuner_v7_t, getChunkSize) == 4 * sizeof(void *),
               "getChunkSize is the last member");
#endif
