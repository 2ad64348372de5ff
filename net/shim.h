/* The shared bodies of the net ABI shims (net/net_vN.c): one function per
 * signature, used by every version whose slot has that signature (the
 * per-version typedefs of device handles and comm configs are one type).
 * Each net_vN.c keeps only its exported table and what differs. */
#ifndef PCIE_NET_SHIM_H
#define PCIE_NET_SHIM_H
#include "nccl/net_common.h"
#include "pcie/net.h"

/* v8..v10: one process-wide context, no ctx argument. */
ncclResult_t pt_netshim_legacy_init(ncclDebugLogger_t log);
ncclResult_t pt_netshim_legacy_listen(int dev, void *handle, void **listenComm);
ncclResult_t pt_netshim_legacy_connect(int dev, void *handle, void **sendComm,
                                       ncclNetDeviceHandle_v8_t **sendDevComm);
/* v11, v12: per-communicator contexts. */
ncclResult_t pt_netshim_init(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof);
ncclResult_t pt_netshim_listen(void *ctx, int dev, void *handle, void **listenComm);
ncclResult_t pt_netshim_connect(void *ctx, int dev, void *handle, void **sendComm,
                                ncclNetDeviceHandle_v11_t **sendDevComm);
ncclResult_t pt_netshim_finalize(void *ctx);
/* every version */
ncclResult_t pt_netshim_accept(void *listenComm, void **recvComm, ncclNetDeviceHandle_v8_t **recvDevComm);
ncclResult_t pt_netshim_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                               void **request);
/* v9 (no profiler handles) and v10+ (profiler handles, ignored) */
ncclResult_t pt_netshim_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                                 void **mhandles, void **request);
ncclResult_t pt_netshim_isend_v10(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                                  void *phandle, void **request);
ncclResult_t pt_netshim_irecv_v10(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                                  void **mhandles, void **phandles, void **request);

/* Designated initializers of the property fields shared by the versions
 * that have them (p: a struct pt_net_props). */
#define PT_NETSHIM_PROPS_V8(p)                                                                               \
  .name = (char *)(p).name, .pciPath = (char *)(p).pci_path, .guid = (p).guid, .ptrSupport = NCCL_PTR_HOST,  \
  .regIsGlobal = 0, .speed = (p).speed_mbps, .port = 0, .latency = (p).latency_us,                           \
  .maxComms = (p).max_comms, .maxRecvs = (p).max_recvs, .netDeviceType = NCCL_NET_DEVICE_HOST,               \
  .netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION
#define PT_NETSHIM_PROPS_V9(p, dev)                                                                          \
  PT_NETSHIM_PROPS_V8(p), .forceFlush = 0, .vProps = {.ndevs = 1, .devs = {(dev)}},                          \
                          .maxP2pBytes = (p).max_p2p_bytes, .maxCollBytes = (p).max_coll_bytes
#endif
