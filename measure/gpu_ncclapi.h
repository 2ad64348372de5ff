/*
 * NCCL as the GPU backend uses it, loaded with dlopen rather than linked:
 * pcie-tune then starts on machines without NCCL (every other command
 * works there), and a user can measure with the very libnccl their
 * inference stack loads (e.g. the one in a Python wheel) through
 * --nccl-lib. Only compiled with PT_HAVE_GPU (mk/gpu.mk): needs nccl.h.
 */
#ifndef PCIE_CLI_GPU_NCCLAPI_H
#define PCIE_CLI_GPU_NCCLAPI_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

struct pt_nccl_api {
  void *lib;
  char path[512]; /* what was opened, for provenance */
  ncclResult_t (*GetVersion)(int *version);
  ncclResult_t (*CommInitAll)(ncclComm_t *comms, int ndev, const int *devlist);
  ncclResult_t (*CommDestroy)(ncclComm_t comm);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  ncclResult_t (*GroupSimulateEnd)(ncclSimInfo_t *info); /* NULL before NCCL 2.22 */
  ncclResult_t (*AllReduce)(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);
  const char *(*GetErrorString)(ncclResult_t result);
  const char *(*GetLastError)(ncclComm_t comm);
};

/* Opens path (NULL: "libnccl.so.2" on the loader's path, then the library
 * found at build time) and resolves the functions. Returns 0, or -1 with
 * why[] saying which library or symbol is missing. */
int pt_nccl_api_load(struct pt_nccl_api *a, const char *path, char *why, size_t whylen);
void pt_nccl_api_unload(struct pt_nccl_api *a);

#endif
