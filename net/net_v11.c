/* ABI v11 shim (NCCL 2.28, 2.29): per-communicator contexts; only translates
 * structs and arguments to the engine (shared bodies in shim.c). */
#include "nccl/net_v11.h"
#include "shim.h"

static ncclResult_t get_properties_v11(int dev, ncclNetProperties_v11_t *props) {
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props) return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v11_t){PT_NETSHIM_PROPS_V9(p, dev), .maxMultiRequestSize = 1};
  return ncclSuccess;
}

PCIE_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = PT_NET_NAME,
    .init = pt_netshim_init,
    .devices = pt_net_devices,
    .getProperties = get_properties_v11,
    .listen = pt_netshim_listen,
    .connect = pt_netshim_connect,
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
    .finalize = pt_netshim_finalize,
    .setNetAttr = NULL,
};
