/* Test harness for the net plugin: opens the built library the way NCCL
 * does (dlopen RTLD_NOW|RTLD_LOCAL, dlsym ncclNetPlugin_vN) and drives any
 * exported ABI version through one version-neutral set of calls, so every
 * conformance test runs unchanged against v8..v12. Also: a single-thread
 * NCCL-like connection driver, payload patterns, fd/thread counters and a
 * logger that remembers the last WARN. Not thread-safe per nh_net except
 * where noted (each test thread drives its own comms). */
#ifndef PCIE_TEST_NET_HARNESS_H
#define PCIE_TEST_NET_HARNESS_H
#include <stddef.h>
#include <stdint.h>
#include "nccl/net_common.h"

#define NH_NVERSIONS 5
#define PT_NH_MAXN 64 /* NCCL passes a 64-entry sizes array to test */
extern const int nh_versions[NH_NVERSIONS]; /* 8, 9, 10, 11, 12 */

struct nh_net {
  int version;
  void *lib;
  const void *plugin;
};

struct nh_props {
  const char *name;
  const char *pci_path;
  int ptr_support, reg_is_global, speed, max_comms, max_recvs, dev_type, dev_version;
  float latency;
  int vdevs, vdev0; /* v9+ */
  size_t max_p2p;   /* v9+ */
  int max_multi;    /* v11+ */
  int rail, plane;  /* v12 */
};

/* dlopen $PCIE_TUNER_SO and look up ncclNetPlugin_v<version>; 0 on success. */
int nh_open(struct nh_net *n, int version);
void nh_close(struct nh_net *n);
const char *nh_name(const struct nh_net *n);
/* Non-NULL checks of the mandatory slots; returns the first missing name. */
const char *nh_missing_slot(const struct nh_net *n);

ncclResult_t nh_init(struct nh_net *n, void **ctx); /* ctx NULL for v8..v10 */
ncclResult_t nh_finalize(struct nh_net *n, void *ctx);
ncclResult_t nh_devices(struct nh_net *n, int *ndev);
ncclResult_t nh_props(struct nh_net *n, int dev, struct nh_props *p);
ncclResult_t nh_listen(struct nh_net *n, void *ctx, int dev, void *handle, void **lc);
ncclResult_t nh_connect(struct nh_net *n, void *ctx, int dev, void *handle, void **sc);
ncclResult_t nh_accept(struct nh_net *n, void *lc, void **rc);
ncclResult_t nh_reg(struct nh_net *n, void *comm, void *data, size_t size, int type, void **mh);
ncclResult_t nh_dereg(struct nh_net *n, void *comm, void *mh);
ncclResult_t nh_isend(struct nh_net *n, void *sc, void *data, size_t size, int tag, void *mh,
                      void **req);
ncclResult_t nh_irecv(struct nh_net *n, void *rc, int cnt, void **data, size_t *sizes,
                      int *tags, void **mhs, void **req);
ncclResult_t nh_iflush(struct nh_net *n, void *rc, void *data, int size, void *mh, void **req);
ncclResult_t nh_test(struct nh_net *n, void *req, int *done, int *sizes);
ncclResult_t nh_close_send(struct nh_net *n, void *sc);
ncclResult_t nh_close_recv(struct nh_net *n, void *rc);
ncclResult_t nh_close_listen(struct nh_net *n, void *lc);

/* listen + connect + accept from one thread, alternating as NCCL's proxy
 * does; fails the connection (returns non-zero) if any call took longer
 * than max_call_ms or nothing completes within timeout_ms. Closes the
 * listen comm. *calls gets the number of connect+accept calls made. */
int nh_pair(struct nh_net *n, void *ctx, int dev, void **sc, void **rc, int *calls);
/* Polls test until done or error or timeout_ms; returns the result (and
 * ncclInternalError on timeout, with *timed_out set if non-NULL). */
ncclResult_t nh_wait(struct nh_net *n, void *req, int *sizes, int timeout_ms, int *timed_out);
/* Sends buf and receives into rbuf (capacity rcap) on one thread. */
ncclResult_t nh_xfer(struct nh_net *n, void *sc, void *rc, void *sbuf, size_t size, void *rbuf,
                     size_t rcap, int *got);

void nh_fill(void *buf, size_t size, uint64_t seed);
/* Offset of the first byte differing from the pattern, or -1. */
long nh_check(const void *buf, size_t size, uint64_t seed);
int nh_count_fds(void);
int nh_count_threads(void);
/* The thread count once it is no longer above want, or after 2 s: a thread
 * that has returned may stay listed in /proc/self/task for a moment after
 * it was joined, so a count taken right after a close can be one too high;
 * a thread that was really left behind still shows. */
int nh_settled_threads(int want);
/* Starts and joins one thread, so that runtimes that add a thread of their
 * own on first use (TSan) have done so before a baseline is taken. */
void nh_warm_threads(void);
double nh_now_ms(void);

/* Logger handed to init: thread-safe; keeps the last WARN and a count. */
void nh_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int nh_warn_count(void);
const char *nh_last_warn(void);
#endif
