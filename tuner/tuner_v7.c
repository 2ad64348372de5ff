/* Tuner ABI v7 (NCCL 2.32): v6's functions with the larger v7 constants. */
#include "nccl/tuner_v7.h"
#include "shim.h"

PCIE_EXPORT const ncclTuner_v7_t ncclTunerPlugin_v7 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v7,
    .getCollInfo = pt_shim_get_coll_info_v4,
    .finalize = pt_shim_finalize,
    .getChunkSize = pt_shim_get_chunk_size,
};
