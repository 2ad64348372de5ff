/* The sending end of connection setup: connect opens the handle's number
 * of TCP streams without waiting, says hello on each and returns a send
 * comm once the acceptor acknowledged all of them. Every call does what it
 * can without blocking and returns NULL until then; the progress object
 * lives in the handle buffer NCCL passes back on each retry.
 *
 * How long to wait. Ranks of one job start minutes apart (model loading),
 * and NCCL's own transports keep waiting for a peer that is there but not
 * accepting yet (its socket transport's connect completes once the kernel
 * took the connection, transport/net_socket.cc; IB's waits for the peer's
 * answer with no deadline). So the deadline (PCIE_NET_CONNECT_TIMEOUT_MS)
 * bounds only the TCP handshake, i.e. an address nobody answers; once the
 * peer's kernel has accepted every stream, connect waits for the receiver's
 * accept for as long as the connections live. A dead listener is no wait:
 * its kernel refuses or resets them, and that fails at once. */
#include <errno.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

enum pt_conn_phase { PT_C_CONNECTING, PT_C_HELLO, PT_C_ACK, PT_C_DONE };

struct pt_connect {
  uint32_t magic;
  uint64_t id; /* what the handle holds: never a pointer, see pt__connects_sweep */
  struct pt_net_ctx *ctx;
  struct pt_connect *next, **pprev; /* ctx->connects, under connects_mu */
  int n;
  int adapt_mbps; /* for the comm: the handle asked to adapt, judged by our link's speed */
  int pad;        /* the handle's PT_HANDLE_PAD */
  int64_t deadline_ns;
  char peer[80];
  struct pt_hello hello;
  int fds[PT_MAX_STREAMS];
  int phase[PT_MAX_STREAMS];
  size_t done[PT_MAX_STREAMS];
  struct pt_ack ack[PT_MAX_STREAMS];
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Ids of connects, process-wide and never reused: a handle whose connect
 * was freed by a sweep finds nothing instead of freed memory. */
static atomic_ullong next_id = 1;

/* The list functions below run under ctx->connects_mu. */
static void link_locked(struct pt_net_ctx *ctx, struct pt_connect *st) {
  st->ctx = ctx;
  st->next = ctx->connects;
  if (st->next) st->next->pprev = &st->next;
  st->pprev = &ctx->connects;
  ctx->connects = st;
}

static void unlink_locked(struct pt_connect *st) {
  if (!st->ctx) return;
  *st->pprev = st->next;
  if (st->next) st->next->pprev = st->pprev;
  st->ctx = NULL;
}

static struct pt_connect *find_locked(struct pt_net_ctx *ctx, uint64_t id) {
  struct pt_connect *st = ctx->connects;
  while (st && st->id != id) st = st->next;
  return st;
}

/* st is unlinked (or was never linked). */
static void connect_free(struct pt_connect *st) {
  for (int i = 0; i < st->n; i++)
    if (st->fds[i] >= 0) close(st->fds[i]);
  st->magic = 0;
  free(st);
}

static ncclResult_t refused(ncclDebugLogger_t log, struct pt_connect *st, int err) {
  if (err == ECONNREFUSED || err == ECONNRESET || err == EHOSTUNREACH || err == ENETUNREACH ||
      err == ETIMEDOUT) {
    PT_WARN(log, "connect to %s failed: %s", st->peer, strerror(err));
    return ncclRemoteError;
  }
  PT_WARN(log, "connect to %s failed: %s", st->peer, strerror(err));
  return ncclSystemError;
}

static ncclResult_t connect_start(struct pt_net_ctx *ctx, int tc, const struct pt_handle *h,
                                  struct pt_connect **out) {
  struct pt_connect *st = calloc(1, sizeof(*st));
  ncclResult_t res = ncclSystemError;
  if (!st) {
    PT_WARN(ctx->log, "out of memory in connect");
    return ncclSystemError;
  }
  st->magic = PT_MAGIC_CONNECT;
  st->id = atomic_fetch_add(&next_id, 1);
  st->n = h->nstreams;
  st->deadline_ns = now_ns() + (int64_t)pt__cfg()->connect_timeout_ms * 1000000;
  pt__addr_str(&h->addr, st->peer, sizeof(st->peer));
  for (int i = 0; i < st->n; i++) st->fds[i] = -1;
  st->hello = (struct pt_hello){
      .magic = PT_WIRE_MAGIC, .version = PT_WIRE_VERSION, .nstreams = h->nstreams, .nonce = h->nonce};
  if (pt__random64(&st->hello.conn_id) != 0) {
    PT_WARN(ctx->log, "getrandom failed: %s", strerror(errno));
    goto fail;
  }
  for (int i = 0; i < st->n; i++) {
    int fd = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    st->fds[i] = fd;
    if (fd < 0 || pt__sock_tune(fd, tc, h->addr.sa.sa_family) != 0) {
      PT_WARN(ctx->log, "socket for %s: %s", st->peer, strerror(errno));
      goto fail;
    }
    if (connect(fd, &h->addr.sa, pt__addr_len(&h->addr)) != 0 && errno != EINPROGRESS) {
      res = refused(ctx->log, st, errno);
      goto fail;
    }
  }
  *out = st;
  return ncclSuccess;
fail:
  connect_free(st);
  return res;
}

static const char *ack_reason(uint32_t status) {
  switch (status) {
  case PT_ACK_VERSION: return "it runs another protocol version";
  case PT_ACK_NONCE: return "the handle belongs to another (stale) listener";
  default: return "it is assembling another connection or the stream count differs";
  }
}

/* Advances stream i as far as it goes; 0 ok (maybe unfinished), else the
 * error to return. */
static ncclResult_t step(ncclDebugLogger_t log, struct pt_connect *st, int i) {
  int fd = st->fds[i];
  if (st->phase[i] == PT_C_CONNECTING) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (poll(&p, 1, 0) <= 0) return ncclSuccess;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err) return refused(log, st, err);
    st->phase[i] = PT_C_HELLO;
    st->hello.index = (uint16_t)i;
  }
  if (st->phase[i] == PT_C_HELLO) {
    struct pt_hello hello = st->hello;
    hello.index = (uint16_t)i;
    ssize_t n =
        send(fd, (char *)&hello + st->done[i], sizeof(hello) - st->done[i], MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ncclSuccess
                                                                       : refused(log, st, errno);
    st->done[i] += (size_t)n;
    if (st->done[i] < sizeof(hello)) return ncclSuccess;
    st->phase[i] = PT_C_ACK;
    st->done[i] = 0;
  }
  if (st->phase[i] == PT_C_ACK) {
    ssize_t n = recv(fd, (char *)&st->ack[i] + st->done[i], sizeof(st->ack[i]) - st->done[i], MSG_DONTWAIT);
    if (n == 0) {
      PT_WARN(log,
              "%s closed the connection during the handshake (not a " PT_NET_NAME
              " listener, or one that refused us)",
              st->peer);
      return ncclRemoteError;
    }
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ncclSuccess
                                                                       : refused(log, st, errno);
    st->done[i] += (size_t)n;
    if (st->done[i] < sizeof(st->ack[i])) return ncclSuccess;
    if (st->ack[i].magic != PT_WIRE_MAGIC) {
      PT_WARN(log, "%s answered the handshake with garbage", st->peer);
      return ncclRemoteError;
    }
    if (st->ack[i].status != PT_ACK_OK) {
      PT_WARN(log, "%s refused the connection: %s (peer protocol version %u, ours %u)", st->peer,
              ack_reason(st->ack[i].status), st->ack[i].version, PT_WIRE_VERSION);
      return ncclRemoteError;
    }
    st->phase[i] = PT_C_DONE;
  }
  return ncclSuccess;
}

static int finished(const struct pt_connect *st) {
  for (int i = 0; i < st->n; i++)
    if (st->phase[i] != PT_C_DONE) return 0;
  return 1;
}

/* Advances every stream as far as it goes without blocking; 0 while the
 * handshake is fine (finished or not), else the error. */
static ncclResult_t advance(ncclDebugLogger_t log, struct pt_connect *st) {
  ncclResult_t res = ncclSuccess;
  int unanswered = 0;
  for (int i = 0; i < st->n && res == ncclSuccess; i++) {
    res = step(log, st, i);
    unanswered += st->phase[i] == PT_C_CONNECTING;
  }
  if (res != ncclSuccess || !unanswered || now_ns() < st->deadline_ns) return res;
  PT_WARN(log,
          "connect to %s: no answer to the TCP handshake after %d ms (address "
          "unreachable, or its listen queue stays full)",
          st->peer, pt__cfg()->connect_timeout_ms);
  return ncclRemoteError;
}

ncclResult_t pt_net_connect(struct pt_net_ctx *ctx, int dev, int traffic_class, void *handle,
                            void **send_comm) {
  struct pt_handle *h = handle;
  if (!send_comm || !h || !ctx || ctx->magic != PT_MAGIC_CTX) return ncclInternalError;
  *send_comm = NULL;
  if (!pt__dev(dev)) {
    PT_WARN(ctx->log, "connect from device %d: no such device", dev);
    return ncclInternalError;
  }
  if (h->magic != PT_WIRE_MAGIC || h->nstreams < 1 || h->nstreams > PT_MAX_STREAMS ||
      pt__addr_len(&h->addr) == 0) {
    PT_WARN(ctx->log, "connect: the handle was not made by this plugin's listen");
    return ncclInternalError;
  }
  if (h->version != PT_WIRE_VERSION) {
    PT_WARN(ctx->log, "connect: handle from protocol version %u, this plugin speaks %u", h->version,
            PT_WIRE_VERSION);
    return ncclInvalidUsage;
  }
  struct pt_connect *st = NULL;
  ncclResult_t res = ncclSuccess;
  if (!h->connect_state) {
    int tc = traffic_class >= 0 ? traffic_class : ctx->traffic_class;
    res = connect_start(ctx, tc, h, &st);
    if (res != ncclSuccess) return res;
    if (h->flags & PT_HANDLE_ADAPT) st->adapt_mbps = pt__dev(dev)->speed_mbps;
    st->pad = (h->flags & PT_HANDLE_PAD) != 0;
    h->connect_state = st->id;
    pthread_mutex_lock(&ctx->connects_mu);
    link_locked(ctx, st);
  } else {
    pthread_mutex_lock(&ctx->connects_mu);
    st = find_locked(ctx, h->connect_state);
    if (!st) {
      pthread_mutex_unlock(&ctx->connects_mu);
      h->connect_state = 0;
      PT_WARN(ctx->log, "connect: this connection failed during setup (the peer closed or reset "
                        "it, see the earlier WARN) and was released");
      return ncclRemoteError;
    }
  }
  res = advance(ctx->log, st);
  if (res == ncclSuccess && !finished(st)) {
    pthread_mutex_unlock(&ctx->connects_mu);
    return ncclSuccess;
  }
  unlink_locked(st);
  pthread_mutex_unlock(&ctx->connects_mu);
  h->connect_state = 0;
  if (res == ncclSuccess) {
    struct pt_comm *c;
    res = pt__comm_create(ctx, PT_MAGIC_SEND, st->fds, st->n, st->adapt_mbps, st->peer, &c);
    for (int i = 0; i < st->n; i++) st->fds[i] = -1; /* owned (or closed) by the comm now */
    if (res == ncclSuccess) {
      /* before any isend: start_chunk reads it after claim's acquire of send_tail */
      c->pad_small = st->pad;
      *send_comm = c;
    }
  }
  connect_free(st);
  return res;
}

/* A connect NCCL stops calling (an abort, a pair the caller gave up on)
 * holds its sockets until finalize; the v8-v10 ABIs have none, and its
 * peer is usually gone already (an acceptor out of descriptors, a
 * listener closed: the kernel then resets or ends every stream). So each
 * close on the ctx advances its connects as a connect call would and
 * frees the ones that failed: their descriptors come back at once. Safe
 * against a later connect on the same handle: the handle holds an id,
 * which then finds nothing and fails. */
void pt__connects_sweep(struct pt_net_ctx *ctx) {
  struct pt_connect *dead = NULL;
  pthread_mutex_lock(&ctx->connects_mu);
  for (struct pt_connect *st = ctx->connects, *next; st; st = next) {
    next = st->next;
    if (advance(ctx->log, st) == ncclSuccess) continue;
    unlink_locked(st);
    st->next = dead;
    dead = st;
  }
  pthread_mutex_unlock(&ctx->connects_mu);
  while (dead) {
    struct pt_connect *next = dead->next;
    connect_free(dead);
    dead = next;
  }
}

void pt__connects_abandon(struct pt_net_ctx *ctx) {
  pthread_mutex_lock(&ctx->connects_mu);
  struct pt_connect *st = ctx->connects;
  ctx->connects = NULL;
  for (struct pt_connect *p = st; p; p = p->next) p->ctx = NULL;
  pthread_mutex_unlock(&ctx->connects_mu);
  while (st) {
    struct pt_connect *next = st->next;
    connect_free(st); /* already unlinked */
    st = next;
  }
}
