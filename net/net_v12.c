/* ABI v12 shim (NCCL 2.30): per-communicator contexts; only translates
 * structs and arguments to the engine (include/pcie/net.h). */
#include "nccl/net_v12.h"
#include "pcie/net.h"

static ncclResult_t init_v12(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
                             ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
  (void)prof; /* no profiler events: NCCL's own proxy events cover us */
  int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return pt_net_init((struct pt_net_ctx **)ctx, commId, tc, log);
}

static ncclResult_t get_properties_v12(int dev, ncclNetProperties_v12_t *props)
{
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props)
    return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v12_t){
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
      .maxMultiRequestSize = 1,
      .railId = NCCL_NET_ID_UNDEF,
      .planeId = NCCL_NET_ID_UNDEF,
  };
  return ncclSuccess;
}

static ncclResult_t listen_v12(void *ctx, int dev, void *handle, void **listenComm)
{
  return pt_net_listen(ctx, dev, handle, listenComm);
}

static ncclResult_t connect_v12(void *ctx, int dev, void *handle, void **sendComm,
                                ncclNetDeviceHandle_v12_t **sendDevComm)
{
  (void)sendDevComm; /* host device: NCCL ignores it */
  return pt_net_connect(ctx, dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, sendComm);
}

static ncclResult_t accept_v12(void *listenComm, void **recvComm,
                               ncclNetDeviceHandle_v12_t **recvDevComm)
{
  (void)recvDevComm;
  return pt_net_accept(listenComm, recvComm);
}

static ncclResult_t isend_v12(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request)
{
  (void)phandle;
  return pt_net_isend(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t irecv_v12(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request)
{
  (void)phandles;
  return pt_net_irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

static ncclResult_t iflush_v12(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                               void **request)
{
  (void)n, (void)data, (void)sizes, (void)mhandles;
  return pt_net_iflush(recvComm, request);
}

static ncclResult_t finalize_v12(void *ctx)
{
  return pt_net_finalize(ctx);
}

PCIE_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = PT_NET_NAME,
    .init = init_v12,
    .devices = pt_net_devices,
    .getProperties = get_properties_v12,
    .listen = listen_v12,
    .connect = connect_v12,
    .accept = accept_v12,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = isend_v12,
    .irecv = irecv_v12,
    .iflush = iflush_v12,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = finalize_v12,
    .setNetAttr = NULL,
};
