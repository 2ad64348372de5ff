/* Tuner ABI v5 (NCCL 2.28.3): new init (context first, commId, NVLink domain
 * info, in/out model constants); destroy renamed finalize. */
#ifndef PCIE_NCCL_TUNER_V5_H
#define PCIE_NCCL_TUNER_V5_H
#include "nccl/common.h"

#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

/* Latencies in us, bandwidths in GB/s (1e9 B). NCCL reads it back once,
 * right after init. */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                       ncclTunerConstants_v5_t *constants);
  ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float **collCostTable, int numAlgo, int numProto, int regBuff,
                              int *nChannels);
  ncclResult_t (*finalize)(void *context);
} ncclTuner_v5_t;

/* Offsets measured from NCCL 2.28.3's layout on LP64. */
_Static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 12, "nvl domain info is three ints");
_Static_assert(sizeof(ncclTunerConstants_v5_t) == 1152, "v5 constants are 1152 bytes");
_Static_assert(offsetof(ncclTunerConstants_v5_t, hwLatencies) == 168, "hwLatencies @168");
_Static_assert(offsetof(ncclTunerConstants_v5_t, llMaxBws) == 672, "llMaxBws @672");
_Static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxRingLL128Bws) == 768, "@768");
_Static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxTreeLL128Bws) == 864, "@864");
_Static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxTreeBws) == 960, "@960");
_Static_assert(offsetof(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws) == 1056, "@1056");
_Static_assert(sizeof(ncclTuner_v5_t) == 4 * sizeof(void *), "v5 has four members");
#endif
