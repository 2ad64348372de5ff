/* ABI v10 shim (NCCL 2.26, 2.27): one process-wide context, the traffic
 * class arrives per connect; only translates to the engine. */
#include "nccl/net_v10.h"
#include "pcie/net.h"

static ncclResult_t init_v10(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
  (void)prof;
  return pt_net_legacy_init(log, NULL);
}

static ncclResult_t get_properties_v10(int dev, ncclNetProperties_v10_t *props)
{
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props)
    return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v10_t){
      .name = (char *)p.name,
      .pciPath = (char *)p.pci_path,
      .guid = p.guid,
      .ptrSupport = NCCL_PTR_HOST,
      .regIsGlobal = 1,
      .forceFlush = 0,
      .speed = p.speed_mbps,
      .port = 0,
      .latency = p.latency_us,
      .maxComms = p.max_comms,
      .maxRecvs = p.max_recvs,
      .netDeviceType = NCCL_NET_DEVICE_HOST,
      .netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION,
      .vProps = {.ndevs = 1, .devs = {dev}},
      .maxP2pBytes = p.max_p2p_bytes,
      .maxCollBytes = p.max_coll_bytes,
  };
  return ncclSuccess;
}

static ncclResult_t listen_v10(int dev, void *handle, void **listenComm)
{
  return pt_net_listen(pt_net_legacy_ctx(), dev, handle, listenComm);
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle,
                                void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm)
{
  (void)sendDevComm;
  int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return pt_net_connect(pt_net_legacy_ctx(), dev, tc, handle, sendComm);
}

static ncclResult_t accept_v10(void *listenComm, void **recvComm,
                               ncclNetDeviceHandle_v10_t **recvDevComm)
{
  (void)recvDevComm;
  return pt_net_accept(listenComm, recvComm);
}

static ncclResult_t isend_v10(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request)
{
  (void)phandle;
  return pt_net_isend(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v10(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request)
{
  (void)phandles;
  return pt_net_irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

static ncclResult_t iflush_v10(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                               void **request)
{
  (void)n, (void)data, (void)sizes, (void)mhandles;
  return pt_net_iflush(recvComm, request);
}

PCIE_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = PT_NET_NAME,
    .init = init_v10,
    .devices = pt_net_devices,
    .getProperties = get_properties_v10,
    .listen = listen_v10,
    .connect = connect_v10,
    .accept = accept_v10,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = iflush_v10,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
