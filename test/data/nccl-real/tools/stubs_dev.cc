// What the dev harness needs beyond stubs.cc: the kernel-name lookup that
// ncclTuningCostModelInit prints when NCCL_PROTO/NCCL_ALGO is set (libnccl's
// sym_kernels.cc is not compiled here).
#include "core.h"
#include "sym_kernels.h"
const char* ncclSymkKernelIdToString(int kernelId) {
  if (kernelId < 0 || kernelId >= ncclSymkKernelId_Count) return "Unknown";
  return ncclSymKernelStr[kernelId];
}
