/* The shared bodies of the net ABI shims (see shim.h): argument
 * translation only, the engine (include/pcie/net.h) does the work. */
#include "shim.h"

ncclResult_t pt_netshim_legacy_init(ncclDebugLogger_t log) { return pt_net_legacy_init(log, NULL); }

ncclResult_t pt_netshim_legacy_listen(int dev, void *handle, void **listenComm) {
  return pt_net_listen(pt_net_legacy_ctx(), dev, handle, listenComm);
}

ncclResult_t pt_netshim_legacy_connect(int dev, void *handle, void **sendComm,
                                       ncclNetDeviceHandle_v8_t **sendDevComm) {
  (void)sendDevComm; /* host device: NCCL ignores it */
  return pt_net_connect(pt_net_legacy_ctx(), dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, sendComm);
}

ncclResult_t pt_netshim_init(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)prof; /* no profiler events: NCCL's own proxy events cover us */
  int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return pt_net_init((struct pt_net_ctx **)ctx, commId, tc, log);
}

ncclResult_t pt_netshim_listen(void *ctx, int dev, void *handle, void **listenComm) {
  return pt_net_listen(ctx, dev, handle, listenComm);
}

ncclResult_t pt_netshim_connect(void *ctx, int dev, void *handle, void **sendComm,
                                ncclNetDeviceHandle_v11_t **sendDevComm) {
  (void)sendDevComm;
  return pt_net_connect(ctx, dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, sendComm);
}

ncclResult_t pt_netshim_finalize(void *ctx) { return pt_net_finalize(ctx); }

ncclResult_t pt_netshim_accept(void *listenComm, void **recvComm, ncclNetDeviceHandle_v8_t **recvDevComm) {
  (void)recvDevComm;
  return pt_net_accept(listenComm, recvComm);
}

ncclResult_t pt_netshim_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                               void **request) {
  (void)n, (void)data, (void)sizes, (void)mhandles;
  return pt_net_iflush(recvComm, request);
}

ncclResult_t pt_netshim_irecv_v9(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                                 void **mhandles, void **request) {
  return pt_net_irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t pt_netshim_isend_v10(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                                  void *phandle, void **request) {
  (void)phandle;
  return pt_net_isend(sendComm, data, size, tag, mhandle, request);
}

ncclResult_t pt_netshim_irecv_v10(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                                  void **mhandles, void **phandles, void **request) {
  (void)phandles;
  return pt_net_irecv(recvComm, n, data, sizes, tags, mhandles, request);
}
