/* Net plugin types shared by ABI v8..v12, written from the layouts NCCL
 * documents in plugins/net (NCCL 2.20..2.30). Values and layouts are ABI:
 * never change them; a new NCCL release gets a new net_vN.h instead. */
#ifndef PCIE_NCCL_NET_COMMON_H
#define PCIE_NCCL_NET_COMMON_H
#include "nccl/common.h"

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
/* Requests each comm must accept in flight (every release since 2.12). */
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_MAX_NET_SIZE_BYTES (1ULL << 40)
/* v9+: *request holds this marker on irecv entry for LL/LL128 receives. */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)
#define NCCL_NET_ID_UNDEF (-1)
#define NCCL_NET_ATTR_UNDEF (-1)
#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8
#define NCCL_NET_DEVICE_INVALID_VERSION 0x0

typedef enum {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
} ncclNetDeviceType;

/* Same layout in v7..v12; host plugins never fill it. */
typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void *handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v12_t;

/* v10+: profiler hook; type is Start 0, Stop 1, Update 2, UpdateAndStop 3. */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
                                               int64_t pluginId, void *extData);

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V11];
} ncclNetVDeviceProps_v9_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v10_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v11_t;
typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

/* v10 gets it in connect, v11+ in init; NCCL owns the memory (a stack
 * temporary): copy the value, never keep the pointer. */
typedef struct {
  int trafficClass;
} ncclNetCommConfig_v10_t;
typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v11_t;
typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v12_t;

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetSGAttr_v11_t;

/* v11+ setNetAttr hints; every field NCCL_NET_ATTR_UNDEF when unset. */
typedef struct {
  ncclNetSGAttr_v11_t sendCommAttr;
  ncclNetSGAttr_v11_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
} ncclNetAttr_v11_t;
typedef ncclNetAttr_v11_t ncclNetAttr_v12_t;

_Static_assert(sizeof(ncclNetDeviceHandle_v8_t) == 32, "device handle is 32 bytes on LP64");
_Static_assert(offsetof(ncclNetDeviceHandle_v8_t, needsProxyProgress) == 24, "devhandle layout");
_Static_assert(sizeof(ncclNetVDeviceProps_v9_t) == 20, "v9..v11 vProps hold 4 devices");
_Static_assert(sizeof(ncclNetVDeviceProps_v12_t) == 36, "v12 vProps hold 8 devices");
_Static_assert(sizeof(ncclNetCommConfig_v10_t) == 4, "comm config is one int");
_Static_assert(sizeof(ncclNetAttr_v11_t) == 44, "net attributes are 44 bytes");
#endif
