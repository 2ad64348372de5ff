/* Tuner ABI v5 (NCCL 2.28.3): context first, commId, NVLink-domain info and
 * NCCL's model constants; destroy renamed finalize. */
#include "nccl/tuner_v5.h"
#include "shim.h"

PCIE_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = "PcieTuner",
    .init = pt_shim_init_v5,
    .getCollInfo = pt_shim_get_coll_info_v4,
    .finalize = pt_shim_finalize,
};
