/* Tuner ABI v4 (NCCL 2.24.3): v3 plus regBuff (1 during graph capture). */
#include "nccl/tuner_v4.h"
#include "shim.h"

PCIE_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v4,
    .getCollInfo = pt_shim_get_coll_info_v4,
    .destroy = pt_shim_finalize,
};
