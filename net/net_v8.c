/* ABI v8 shim (NCCL 2.20..2.23): one process-wide context, int message
 * sizes (negative ones are rejected); only translates to the engine. */
#include "nccl/net_v8.h"
#include "pcie/net.h"

static ncclResult_t init_v8(ncclDebugLogger_t log)
{
  return pt_net_legacy_init(log, NULL);
}

static ncclResult_t get_properties_v8(int dev, ncclNetProperties_v8_t *props)
{
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props)
    return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v8_t){
      .name = (char *)p.name,
      .pciPath = (char *)p.pci_path,
      .guid = p.guid,
      .ptrSupport = NCCL_PTR_HOST,
      .regIsGlobal = 1,
      .speed = p.speed_mbps,
      .port = 0,
      .latency = p.latency_us,
      .maxComms = p.max_comms,
      .maxRecvs = p.max_recvs,
      .netDeviceType = NCCL_NET_DEVICE_HOST,
      .netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION,
  };
  return ncclSuccess;
}

static ncclResult_t listen_v8(int dev, void *handle, void **listenComm)
{
  return pt_net_listen(pt_net_legacy_ctx(), dev, handle, listenComm);
}

static ncclResult_t connect_v8(int dev, void *handle, void **sendComm,
                               ncclNetDeviceHandle_v8_t **sendDevComm)
{
  (void)sendDevComm;
  return pt_net_connect(pt_net_legacy_ctx(), dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle,
                        sendComm);
}

static ncclResult_t accept_v8(void *listenComm, void **recvComm,
                              ncclNetDeviceHandle_v8_t **recvDevComm)
{
  (void)recvDevComm;
  return pt_net_accept(listenComm, recvComm);
}

static ncclResult_t isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle,
                             void **request)
{
  if (size < 0) {
    if (request)
      *request = NULL;
    return ncclInvalidArgument;
  }
  return pt_net_isend(sendComm, data, (size_t)size, tag, mhandle, request);
}

static ncclResult_t irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request)
{
  size_t wide[PT_NET_MAX_RECVS];
  if (request)
    *request = NULL;
  if (n < 1 || n > PT_NET_MAX_RECVS || !sizes)
    return ncclInternalError;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0)
      return ncclInvalidArgument;
    wide[i] = (size_t)sizes[i];
  }
  return pt_net_irecv(recvComm, n, data, wide, tags, mhandles, request);
}

static ncclResult_t iflush_v8(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                              void **request)
{
  (void)n, (void)data, (void)sizes, (void)mhandles;
  return pt_net_iflush(recvComm, request);
}

PCIE_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = PT_NET_NAME,
    .init = init_v8,
    .devices = pt_net_devices,
    .getProperties = get_properties_v8,
    .listen = listen_v8,
    .connect = connect_v8,
    .accept = accept_v8,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = isend_v8,
    .irecv = irecv_v8,
    .iflush = iflush_v8,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
