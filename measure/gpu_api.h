/*
 * The CUDA runtime and NCCL as the GPU backend uses them, both opened with
 * dlopen at run time (docs/gpu.md, "Libraries"): pcie-tune builds without
 * CUDA headers and starts on machines without CUDA, and a user measures
 * with the very libnccl their inference stack loads (--nccl-lib) and the
 * libcudart beside it. Types and values are measure/gpu_abi.h's.
 *
 * The CUDA runtime is looked for, in order: --cudart-lib; libcudart.so* in
 * the directory of the chosen libnccl, or in ../../cuda_runtime/lib beside
 * it (the layout of NVIDIA's Python wheels); the libnccl itself when it
 * exports the runtime (the test double does); then libcudart.so.13, .12,
 * .11.0 and libcudart.so on the loader's path.
 *
 * Loading runs no CUDA code, so a process may load, then fork ranks.
 */
#ifndef PCIE_MEASURE_GPU_API_H
#define PCIE_MEASURE_GPU_API_H

#include <limits.h>

#include "gpu_abi.h"

struct pt_gpu_api {
  void *nccl, *cudart;
  char nccl_path[PATH_MAX];   /* the file actually loaded (realpath) */
  char cudart_path[PATH_MAX]; /* likewise */
  /* CUDA runtime */
  const char *(*GetErrorString)(pt_cuerr e);
  pt_cuerr (*DriverGetVersion)(int *v);
  pt_cuerr (*RuntimeGetVersion)(int *v);
  pt_cuerr (*GetDeviceCount)(int *n);
  pt_cuerr (*SetDevice)(int d);
  pt_cuerr (*GetDeviceProperties)(void *prop, int d);
  pt_cuerr (*DeviceGetAttribute)(int *v, int attr, int d);
  pt_cuerr (*DeviceGetPCIBusId)(char *out, int len, int d);
  pt_cuerr (*DeviceCanAccessPeer)(int *can, int a, int b);
  pt_cuerr (*Malloc)(void **p, size_t n);
  pt_cuerr (*Free)(void *p);
  pt_cuerr (*Memcpy)(void *dst, const void *src, size_t n, int kind);
  pt_cuerr (*MemcpyAsync)(void *dst, const void *src, size_t n, int kind, pt_cu_stream s);
  pt_cuerr (*MemsetAsync)(void *dst, int v, size_t n, pt_cu_stream s);
  pt_cuerr (*StreamCreateWithFlags)(pt_cu_stream *s, unsigned flags);
  pt_cuerr (*StreamDestroy)(pt_cu_stream s);
  pt_cuerr (*StreamSynchronize)(pt_cu_stream s);
  pt_cuerr (*EventCreate)(pt_cu_event *e);
  pt_cuerr (*EventDestroy)(pt_cu_event e);
  pt_cuerr (*EventRecord)(pt_cu_event e, pt_cu_stream s);
  pt_cuerr (*EventSynchronize)(pt_cu_event e);
  pt_cuerr (*EventElapsedTime)(float *ms, pt_cu_event a, pt_cu_event b);
  pt_cuerr (*StreamBeginCapture)(pt_cu_stream s, int mode);
  pt_cuerr (*StreamEndCapture)(pt_cu_stream s, pt_cu_graph *g);
  pt_cuerr (*GraphInstantiateWithFlags)(pt_cu_exec *x, pt_cu_graph g, unsigned long long flags);
  pt_cuerr (*GraphUpload)(pt_cu_exec x, pt_cu_stream s);
  pt_cuerr (*GraphLaunch)(pt_cu_exec x, pt_cu_stream s);
  pt_cuerr (*GraphDestroy)(pt_cu_graph g);
  pt_cuerr (*GraphExecDestroy)(pt_cu_exec x);
  /* CUDA driver, for the gap kernel (measure/gpu_gap.h): from the runtime
   * library when it exports them (the test double does), else from
   * libcuda.so.1; all NULL when neither has them (then only --gap 0 runs). */
  void *driver;
  pt_cu_res (*ModuleLoadData)(pt_cu_module *m, const void *image);
  pt_cu_res (*ModuleGetFunction)(pt_cu_function *f, pt_cu_module m, const char *name);
  pt_cu_res (*ModuleUnload)(pt_cu_module m);
  pt_cu_res (*LaunchKernel)(pt_cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shmem, pt_cu_stream s, void **params, void **extra);
  pt_cu_res (*DrvErrorString)(pt_cu_res r, const char **s);
  /* NCCL */
  ncclResult_t (*GetVersion)(int *v);
  ncclResult_t (*GetUniqueId)(pt_nccl_uid *id);
  ncclResult_t (*CommInitRank)(pt_nccl_comm *c, int nranks, pt_nccl_uid id, int rank);
  ncclResult_t (*CommDestroy)(pt_nccl_comm c);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  ncclResult_t (*GroupSimulateEnd)(pt_nccl_siminfo *info); /* NULL before NCCL 2.22 */
  ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, int dtype, int op,
                            pt_nccl_comm c, pt_cu_stream s);
  /* NCCL >= 2.19: buffers from cuMem, so graph registration works as it
   * does for cuMem allocators (torch's expandable segments); NULL before. */
  ncclResult_t (*MemAlloc)(void **p, size_t n);
  ncclResult_t (*MemFree)(void *p);
  const char *(*NcclErrorString)(ncclResult_t r);
  const char *(*NcclLastError)(pt_nccl_comm c);
};

/* Opens NCCL (nccl_lib, or libnccl.so.2 on the loader's path, then the one
 * PT_NCCL_LIB names) and the CUDA runtime (cudart_lib or the search
 * above). Returns 0, or -1 with why[] saying which library or symbol is
 * missing and what to give instead. */
int pt_gpu_api_load(struct pt_gpu_api *a, const char *nccl_lib, const char *cudart_lib, char *why,
                    size_t whylen);
void pt_gpu_api_unload(struct pt_gpu_api *a);

/* "13.0" from 13000: CUDA encodes versions as 1000*major + 10*minor. */
void pt_cuda_version_text(int v, char *out, size_t len);

#endif
