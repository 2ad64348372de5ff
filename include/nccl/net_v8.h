/* Net ABI v8 (NCCL 2.20..2.23): int message sizes in isend/irecv, size_t in
 * regMr, regIsGlobal appears; 19 slots. */
#ifndef PCIE_NCCL_NET_V8_H
#define PCIE_NCCL_NET_V8_H
#include "nccl/net_common.h"

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed; /* Mbps */
  int port;
  float latency; /* us */
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v8_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_v8_t **recvDevComm);
  ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                              int fd, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                        void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
  ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

_Static_assert(sizeof(ncclNetProperties_v8_t) == 64, "v8 properties are 64 bytes");
_Static_assert(offsetof(ncclNetProperties_v8_t, regIsGlobal) == 28, "v8 regIsGlobal");
_Static_assert(offsetof(ncclNetProperties_v8_t, speed) == 32, "v8 speed");
_Static_assert(offsetof(ncclNetProperties_v8_t, latency) == 40, "v8 latency");
_Static_assert(offsetof(ncclNetProperties_v8_t, maxRecvs) == 48, "v8 maxRecvs");
_Static_assert(offsetof(ncclNetProperties_v8_t, netDeviceVersion) == 56, "v8 netDeviceVersion");
_Static_assert(sizeof(ncclNet_v8_t) == 19 * sizeof(void *), "v8 has 19 slots");
_Static_assert(offsetof(ncclNet_v8_t, test) == 13 * sizeof(void *), "v8 test is slot 14");
_Static_assert(offsetof(ncclNet_v8_t, irecvConsumed) == 18 * sizeof(void *), "v8 last slot");
#endif
