/*
 * The part of the CUDA runtime and NCCL C APIs the GPU backend calls, declared
 * here from their documented ABI (cuda_runtime_api.h, driver_types.h and
 * nccl.h of CUDA 11.4-13 and NCCL 2.19-2.30) so that nothing is compiled
 * against CUDA's or NCCL's headers: both libraries are opened with dlopen at
 * run time (measure/gpu_api.c). Handles are opaque pointers; error codes are
 * ints; only the values used are named. test/double/ implements the same
 * declarations on host memory, so both sides agree by construction; the
 * values themselves are the libraries' (never change them).
 */
#ifndef PCIE_MEASURE_GPU_ABI_H
#define PCIE_MEASURE_GPU_ABI_H

#include <stddef.h>

#include "nccl/common.h" /* ncclResult_t */

/* ---- CUDA runtime ---- */
typedef int pt_cuerr;                  /* cudaError_t */
typedef struct pt_cu_stream_s *pt_cu_stream; /* cudaStream_t */
typedef struct pt_cu_event_s *pt_cu_event;   /* cudaEvent_t */
typedef struct pt_cu_graph_s *pt_cu_graph;   /* cudaGraph_t */
typedef struct pt_cu_exec_s *pt_cu_exec;     /* cudaGraphExec_t */

#define PT_CU_SUCCESS 0
#define PT_CU_ERR_INVALID_VALUE 1
#define PT_CU_ERR_MEMORY 2            /* cudaErrorMemoryAllocation */
#define PT_CU_ERR_INSUFFICIENT_DRIVER 35
#define PT_CU_ERR_DEVICES_UNAVAILABLE 46
#define PT_CU_ERR_NO_DEVICE 100
#define PT_CU_ERR_LAUNCH_FAILURE 719
#define PT_CU_STREAM_NON_BLOCKING 0x01 /* cudaStreamNonBlocking */
#define PT_CU_CAPTURE_THREAD_LOCAL 1   /* cudaStreamCaptureModeThreadLocal */
#define PT_CU_H2D 1                    /* cudaMemcpyHostToDevice */
#define PT_CU_D2H 2                    /* cudaMemcpyDeviceToHost */
#define PT_CU_D2D 3                    /* cudaMemcpyDeviceToDevice */
#define PT_CU_ATTR_CC_MAJOR 75         /* cudaDevAttrComputeCapabilityMajor */
#define PT_CU_ATTR_CC_MINOR 76
#define PT_CU_ATTR_SM_COUNT 16         /* cudaDevAttrMultiProcessorCount */

/* ---- CUDA driver (only the gap kernel's module and launch) ---- */
typedef int pt_cu_res;                            /* CUresult */
typedef struct pt_cu_module_s *pt_cu_module;      /* CUmodule */
typedef struct pt_cu_function_s *pt_cu_function;  /* CUfunction */
/* A CUstream is a cudaStream_t: the same handle in both APIs. */
/* cudaDeviceProp is versioned and large; its first member is char name[256]
 * in every version. The backend hands over a buffer this big. */
#define PT_CU_PROP_BYTES 8192

/* ---- NCCL ---- */
typedef struct {
  char internal[128];
} pt_nccl_uid;                          /* ncclUniqueId */
typedef struct pt_nccl_comm_s *pt_nccl_comm; /* ncclComm_t */
#define PT_NCCL_FLOAT32 7               /* ncclFloat32 */
#define PT_NCCL_SUM 0                   /* ncclSum */

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} pt_nccl_siminfo; /* ncclSimInfo_t (struct version 22200) */
#define PT_NCCL_SIMINFO_MAGIC 0x74685283u
#define PT_NCCL_SIMINFO_VERSION 22200u

#endif
