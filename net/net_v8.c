/* ABI v8 shim (NCCL 2.20..2.23): one process-wide context, int message
 * sizes (negative ones are rejected); only translates to the engine. The
 * bodies shared with other versions are in shim.c. */
#include "nccl/net_v8.h"
#include "shim.h"

static ncclResult_t get_properties_v8(int dev, ncclNetProperties_v8_t *props) {
  struct pt_net_props p;
  ncclResult_t res = pt_net_get_props(dev, &p);
  if (res != ncclSuccess || !props) return res != ncclSuccess ? res : ncclInternalError;
  *props = (ncclNetProperties_v8_t){PT_NETSHIM_PROPS_V8(p)};
  return ncclSuccess;
}

static ncclResult_t isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle, void **request) {
  if (size < 0) {
    if (request) *request = NULL;
    return ncclInvalidArgument;
  }
  return pt_net_isend(sendComm, data, (size_t)size, tag, mhandle, request);
}

static ncclResult_t irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                             void **request) {
  size_t wide[PT_NET_MAX_RECVS];
  if (request) *request = NULL;
  if (n < 1 || n > PT_NET_MAX_RECVS || !sizes) return ncclInternalError;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) return ncclInvalidArgument;
    wide[i] = (size_t)sizes[i];
  }
  return pt_net_irecv(recvComm, n, data, wide, tags, mhandles, request);
}

PCIE_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = PT_NET_NAME,
    .init = pt_netshim_legacy_init,
    .devices = pt_net_devices,
    .getProperties = get_properties_v8,
    .listen = pt_netshim_legacy_listen,
    .connect = pt_netshim_legacy_connect,
    .accept = pt_netshim_accept,
    .regMr = pt_net_reg_mr,
    .regMrDmaBuf = NULL,
    .deregMr = pt_net_dereg_mr,
    .isend = isend_v8,
    .irecv = irecv_v8,
    .iflush = pt_netshim_iflush,
    .test = pt_net_test,
    .closeSend = pt_net_close_send,
    .closeRecv = pt_net_close_recv,
    .closeListen = pt_net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
