/* The TCP transport engine behind every net plugin ABI shim (net/net_vN.c).
 *
 * One engine, version-neutral: sizes are size_t, the traffic class and the
 * context are optional. The shims translate NCCL's structs to these calls
 * and nothing else; only they know the ABI layouts.
 *
 * Threads: init/devices/get_props/finalize may be called from any thread
 * (a mutex serialises init/finalize). listen/connect/accept/close/reg_mr run
 * on NCCL's proxy service thread, isend/irecv/test on its progress thread,
 * possibly concurrently for *different* comms; one comm is never closed
 * while another thread uses it (NCCL stops progress before teardown).
 * No call blocks: connect/accept return a NULL comm until the handshake is
 * complete, isend/irecv a NULL request when every slot is busy.
 *
 * Errors: ncclSystemError (a syscall failed), ncclRemoteError (peer closed,
 * reset, refused, or spoke garbage), ncclInternalError (misuse: bad handle,
 * bad device), ncclInvalidUsage (message larger than the posted receive,
 * tag matching no posted buffer), ncclInvalidArgument (bad size or type).
 * Every error is logged once through the logger passed to init.
 */
#ifndef PCIE_NET_H
#define PCIE_NET_H
#include <stddef.h>
#include <stdint.h>
#include "nccl/net_common.h"

/* The network's name, what NCCL_NET matches (case-insensitive). */
#define PT_NET_NAME "pcie"
/* Largest grouped receive (properties' maxRecvs): NCCL's IB transport
 * groups up to 8, so the proxy never asks for more. */
#define PT_NET_MAX_RECVS 8
/* Largest message: test() reports sizes as int, so stay below 2^31. */
#define PT_NET_MAX_BYTES (1UL << 30)
#define PT_NET_MAX_DEVS 16

struct pt_net_ctx;

/* Version-neutral device properties; strings point into the engine's
 * device table and live until the last finalize. */
struct pt_net_props {
  const char *name;
  const char *pci_path; /* NULL for virtual interfaces */
  uint64_t guid;
  int speed_mbps;
  float latency_us;
  int max_comms;
  int max_recvs;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
};

/* Creates a context (v11+: one per communicator). The first context of a
 * library load reads the environment (PCIE_NET_*) and discovers devices;
 * fails with ncclSystemError when no interface is usable. log may be NULL.
 * traffic_class is NCCL_NET_TRAFFIC_CLASS_UNDEF or an IP TOS value. */
ncclResult_t pt_net_init(struct pt_net_ctx **ctx, uint64_t comm_id, int traffic_class,
                         ncclDebugLogger_t log);
/* The process-wide context the v8..v10 shims share: created by their first
 * init (idempotent; NCCL calls it again after a reload) and kept for the
 * library's lifetime, since those ABIs have no finalize. It holds no thread
 * or fd: those belong to comms. */
ncclResult_t pt_net_legacy_init(ncclDebugLogger_t log, struct pt_net_ctx **ctx);
struct pt_net_ctx *pt_net_legacy_ctx(void);
/* Drops the caller's reference; when the last context goes, every helper
 * thread has already been joined (threads live only while comms do). */
ncclResult_t pt_net_finalize(struct pt_net_ctx *ctx);

ncclResult_t pt_net_devices(int *ndev);
ncclResult_t pt_net_get_props(int dev, struct pt_net_props *props);

/* handle: NCCL_NET_HANDLE_MAXSIZE bytes written by listen, copied to the
 * peer, then passed to every connect retry (connect keeps its progress
 * pointer inside it). traffic_class < 0 means the context's. */
ncclResult_t pt_net_listen(struct pt_net_ctx *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t pt_net_connect(struct pt_net_ctx *ctx, int dev, int traffic_class, void *handle,
                            void **send_comm);
ncclResult_t pt_net_accept(void *listen_comm, void **recv_comm);

/* Registration is global (regIsGlobal): the handle records the range and
 * is checked by isend/irecv; host memory only. */
ncclResult_t pt_net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t pt_net_dereg_mr(void *comm, void *mhandle);

/* Requests stay valid until test reports done (or an error). */
ncclResult_t pt_net_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                          void **request);
ncclResult_t pt_net_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
                          const int *tags, void **mhandles, void **request);
ncclResult_t pt_net_iflush(void *recv_comm, void **request);
ncclResult_t pt_net_test(void *request, int *done, int *sizes);

/* Return promptly even with requests in flight or a dead peer; every
 * request of the comm dies with it. */
ncclResult_t pt_net_close_send(void *send_comm);
ncclResult_t pt_net_close_recv(void *recv_comm);
ncclResult_t pt_net_close_listen(void *listen_comm);
#endif
