/* ABI v9 shim (NCCL 2.24, 2.25): one process-wide context, size_t message
 * sizes; only translates to the engine (shared bodies in shim.c). */
#include "nccl/net_v9.h"
#include "shim.h"

static ncclResult_t get_properties_v9(int dev, ncclNetProperties_v9_t *props) {
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props) return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v9_t){PT_NETSHIM_PROPS_V9(p, dev)};
  return ncclSuccess;
}

PCIE_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = PT_NET_NAME,
    .init = pt_netshim_legacy_init,
    .devices = pt_net_devices,
    .getProperties = get_properties_v9,
    .listen = pt_netshim_legacy_listen,
    .connect = pt_netshim_legacy_connect,
    .accept = pt_netshim_accept,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = pt_net_isend,
    .irecv = pt_netshim_irecv_v9,
    .iflush = pt_netshim_iflush,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};
