/* Tuner ABI v3 (NCCL 2.22.3): cost table, no regBuff (eager data serve it). */
#include "nccl/tuner_v3.h"
#include "shim.h"

PCIE_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v3,
    .getCollInfo = pt_shim_get_coll_info_v3,
    .destroy = pt_shim_finalize,
};
