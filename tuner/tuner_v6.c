/* Tuner ABI v6 (NCCL 2.30.3): v5 plus getChunkSize (last member). */
#include "nccl/tuner_v6.h"
#include "shim.h"

PCIE_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v6,
    .getCollInfo = pt_shim_get_coll_info_v4,
    .finalize = pt_shim_finalize,
    .getChunkSize = pt_shim_get_chunk_size,
};
