/* ABI v10 shim (NCCL 2.26, 2.27): one process-wide context, the traffic
 * class arrives per connect; only translates to the engine (shared bodies
 * in shim.c). */
#include "nccl/net_v10.h"
#include "shim.h"

static ncclResult_t init_v10(ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  (void)prof;
  return pt_netshim_legacy_init(log);
}

static ncclResult_t get_properties_v10(int dev, ncclNetProperties_v10_t *props) {
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props) return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v10_t){PT_NETSHIM_PROPS_V9(p, dev)};
  return ncclSuccess;
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle, void **sendComm,
                                ncclNetDeviceHandle_v10_t **sendDevComm) {
  (void)sendDevComm;
  int tc = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return pt_net_connect(pt_net_legacy_ctx(), dev, tc, handle, sendComm);
}

PCIE_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = PT_NET_NAME,
    .init = init_v10,
    .devices = pt_net_devices,
    .getProperties = get_properties_v10,
    .listen = pt_netshim_legacy_listen,
    .connect = connect_v10,
    .accept = pt_netshim_accept,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = pt_netshim_isend_v10,
    .irecv = pt_netshim_irecv_v10,
    .iflush = pt_netshim_iflush,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
