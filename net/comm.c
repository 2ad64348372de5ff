/* Comm lifetime and failure bookkeeping: creating a send or receive comm
 * from handshaken sockets, tearing it down with requests in flight, and
 * the one-shot error record that test turns into a WARN. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "internal.h"

ncclResult_t pt__comm_create(struct pt_net_ctx *ctx, uint32_t magic, const int *fds, int n, int adapt_mbps,
                             const char *peer, struct pt_comm **out) {
  ncclResult_t res = ncclSystemError;
  int added = 0, pooled = 0;
  struct pt_comm *c = calloc(1, sizeof(*c));
  *out = NULL;
  if (!c) {
    PT_WARN(ctx->log, "out of memory creating a comm to %s", peer);
    goto fail;
  }
  c->magic = magic;
  c->ctx = ctx;
  c->nstreams = n;
  atomic_init(&c->active, adapt_mbps > 0 && n > 1 ? 1 : n);
  c->adapt.link_mbps = magic == PT_MAGIC_SEND && adapt_mbps > 0 && n > 1 ? adapt_mbps : 0;
  /* a sender that does not adapt uses every stream from its first
   * message: the receiver looks at all of them from the start */
  atomic_init(&c->rx_seen, adapt_mbps > 0 ? 0U : (1U << n) - 1);
  c->rx_adapt = adapt_mbps > 0;
  c->max_chunk = pt__cfg()->max_chunk;
  snprintf(c->peer, sizeof(c->peer), "%s", peer);
  if (magic == PT_MAGIC_SEND)
    c->sslots = calloc(PT_SEND_SLOTS, sizeof(*c->sslots));
  else
    c->rslots = calloc(PT_RECV_SLOTS, sizeof(*c->rslots));
  if (!c->sslots && !c->rslots) {
    PT_WARN(ctx->log, "out of memory creating a comm to %s", peer);
    goto fail;
  }
  for (int i = 0; i < PT_SEND_SLOTS && c->sslots; i++)
    c->sslots[i].h = (struct pt_req_head){.magic = PT_MAGIC_SREQ, .comm = c};
  for (int i = 0; i < PT_RECV_SLOTS && c->rslots; i++)
    c->rslots[i].h = (struct pt_req_head){.magic = PT_MAGIC_RREQ, .comm = c};
  for (int i = 0; i < n; i++) {
    c->streams[i].comm = c;
    c->streams[i].index = i;
    c->streams[i].fd = fds[i];
    c->streams[i].phase = PT_RX_HDR;
  }
  res = pt__pool_acquire(ctx->log);
  if (res != ncclSuccess) goto fail;
  pooled = 1;
  c->caller_only = pt__pool_threads() == 0;
  for (; added < n; added++) {
    uint32_t interest = magic == PT_MAGIC_SEND ? PT_SEND_IDLE : PT_RECV_IDLE;
    if (pt__pool_add(&c->streams[added], interest) != 0) {
      PT_WARN(ctx->log, "cannot watch a stream to %s: %s", peer, strerror(errno));
      res = ncclSystemError;
      goto fail;
    }
  }
  pt__ctx_ref(ctx);
  *out = c;
  return ncclSuccess;
fail:
  if (c && added) {
    c->nstreams = added;
    pt__pool_forget(c);
  }
  if (pooled) pt__pool_release();
  for (int i = 0; i < n; i++) close(fds[i]);
  if (c) {
    free(c->sslots);
    free(c->rslots);
  }
  free(c);
  return res;
}

void pt__comm_destroy(struct pt_comm *c) {
  /* Helpers first, so no thread touches the sockets or slots we free. A
   * send comm's close lets the kernel deliver what isend already queued. */
  pt__pool_forget(c);
  for (int i = 0; i < c->nstreams; i++) close(c->streams[i].fd);
  pt__pool_release();
  pt__connects_sweep(c->ctx);
  pt__ctx_unref(c->ctx);
  c->magic = 0;
  free(c->sslots);
  free(c->rslots);
  free(c);
}

void pt__comm_fail(struct pt_comm *c, ncclResult_t res, enum pt_why why, int err) {
  /* The first failure wins; its details are stored before the code is
   * published, so whoever sees the code also sees why. */
  if (atomic_exchange(&c->err_claimed, 1)) return;
  atomic_store_explicit(&c->err_why, (int)why, memory_order_relaxed);
  atomic_store_explicit(&c->err_errno, err, memory_order_relaxed);
  atomic_store_explicit(&c->err, (int)res, memory_order_release);
}

void pt__comm_quiesce(struct pt_comm *c) {
  /* Called after c->err is set. A step checks err (seq_cst) after taking
   * busy (seq_cst exchange) and before each buffer access, and each access
   * is one bounded recv/send/memcpy: so a stream seen idle here once is
   * done with every buffer for good, and a busy one finishes its current
   * access and stops. The wait is that one access, never a peer. */
  for (int i = 0; i < c->nstreams; i++)
    while (atomic_load(&c->streams[i].busy)) sched_yield();
}

ncclResult_t pt__comm_report(struct pt_comm *c) {
  ncclResult_t res = (ncclResult_t)atomic_load_explicit(&c->err, memory_order_acquire);
  if (res == ncclSuccess) return res;
  /* Before the caller hears of the failure: NCCL frees the buffers of a
   * failed connection right away (net.cc, recvProxyFree/sendProxyFree). */
  pt__comm_quiesce(c);
  if (atomic_exchange(&c->err_logged, 1)) return res;
  ncclDebugLogger_t log = c->ctx->log;
  int e = atomic_load(&c->err_errno);
  const char *dir = c->magic == PT_MAGIC_SEND ? "send" : "receive";
  switch ((enum pt_why)atomic_load(&c->err_why)) {
  case PT_WHY_PEER_CLOSED:
    PT_WARN(log,
            "%s connection with %s closed by the peer%s%s (remote process exited or "
            "network error)",
            dir, c->peer, e ? ": " : "", e ? strerror(e) : "");
    break;
  case PT_WHY_TRUNCATED_STREAM:
    PT_WARN(log, "stream from %s ended inside a chunk: the peer died mid-message", c->peer);
    break;
  case PT_WHY_SOCKET: PT_WARN(log, "%s connection with %s failed: %s", dir, c->peer, strerror(e)); break;
  case PT_WHY_BAD_MAGIC: PT_WARN(log, "garbage on a stream from %s (bad chunk magic)", c->peer); break;
  case PT_WHY_BAD_CHUNK: PT_WARN(log, "malformed chunk header from %s", c->peer); break;
  case PT_WHY_TRUNCATED_MSG:
    PT_WARN(log, "message from %s is larger than the posted receive buffer (truncated)", c->peer);
    break;
  case PT_WHY_NO_TAG:
    PT_WARN(log, "message from %s has tag %d, which matches no buffer of the posted receive", c->peer, e);
    break;
  case PT_WHY_UNEXPECTED_DATA: PT_WARN(log, "unexpected bytes from %s on a send connection", c->peer); break;
  case PT_WHY_CANCELLED:
    PT_WARN(log,
            "%s connection with %s: requests cancelled, their memory was deregistered "
            "while they were in flight",
            dir, c->peer);
    break;
  case PT_WHY_NONE: PT_WARN(log, "%s connection with %s failed", dir, c->peer); break;
  }
  return res;
}
