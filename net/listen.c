/* The receiving end of connection setup: listen publishes an address, a
 * stream count and a nonce in the handle; accept collects that many TCP
 * streams, each identified by a hello, acknowledges them and returns a
 * receive comm. Both return at once; accept hands out NULL until the set is
 * complete. Strangers (bad magic, silence, early close) are dropped without
 * disturbing the real connection; peers of another protocol version or
 * holding another listener's handle are told so before being dropped. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

/* A connector that opened a socket but sent no hello in this time is a
 * stranger (a port scanner, a dead peer). */
#define PT_HELLO_TIMEOUT_NS (10LL * 1000 * 1000 * 1000)
/* Connections waiting for their hello, at most. Every connection in the
 * kernel's backlog is accepted at once and judged on its own deadline, so a
 * flood of silent strangers never queues the real connector behind them
 * (its hello is usually there by the time accept returns it). Only beyond
 * this many the oldest is given up to make room; the table grows on
 * demand, so an idle listener costs nothing. */
#define PT_PENDING_MAX 4096
#define PT_PENDING_MIN 32
#define PT_LISTEN_BACKLOG 16384

struct pt_pending {
  int fd;
  size_t got;
  struct pt_hello hello;
  int64_t since_ns;
};

struct pt_listen {
  uint32_t magic;
  struct pt_net_ctx *ctx;
  int fd;
  int nstreams;
  int adapt; /* the handle asked the sender to start on one stream */
  uint64_t nonce;
  char addr[80];
  int npending, cap;
  struct pt_pending *pending; /* cap entries */
  struct pollfd *polls;       /* scratch for read_hellos, cap entries */
  /* the connection being assembled: one at a time */
  uint64_t conn_id;
  int have;
  int fds[PT_MAX_STREAMS];
};

static void reset_group(struct pt_listen *l, int close_fds);

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

ncclResult_t pt_net_listen(struct pt_net_ctx *ctx, int dev, void *handle, void **listen_comm) {
  ncclResult_t res = ncclSystemError;
  struct pt_listen *l = NULL;
  int fd = -1;
  if (!listen_comm || !handle || !ctx || ctx->magic != PT_MAGIC_CTX) return ncclInternalError;
  *listen_comm = NULL;
  const struct pt_dev *d = pt__dev(dev);
  if (!d) {
    PT_WARN(ctx->log, "listen on device %d: no such device", dev);
    return ncclInternalError;
  }
  union pt_addr addr = d->addr;
  socklen_t len = d->addrlen;
  if (addr.sa.sa_family == AF_INET)
    addr.in4.sin_port = 0;
  else
    addr.in6.sin6_port = 0;
  l = calloc(1, sizeof(*l));
  if (!l) {
    PT_WARN(ctx->log, "out of memory in listen");
    goto out;
  }
  fd = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, &addr.sa, len) != 0 || listen(fd, PT_LISTEN_BACKLOG) != 0 ||
      getsockname(fd, &addr.sa, &len) != 0 || pt__random64(&l->nonce) != 0) {
    PT_WARN(ctx->log, "listen on %s failed: %s", d->name, strerror(errno));
    goto out;
  }
  l->magic = PT_MAGIC_LISTEN;
  l->ctx = ctx;
  l->fd = fd;
  l->nstreams = d->nstreams;
  l->adapt = d->adapt;
  reset_group(l, 0);
  pt__addr_str(&addr, l->addr, sizeof(l->addr));
  struct pt_handle *h = handle;
  memset(h, 0, sizeof(*h));
  h->magic = PT_WIRE_MAGIC;
  h->version = PT_WIRE_VERSION;
  h->nstreams = (uint16_t)l->nstreams;
  h->flags = (uint16_t)(PT_HANDLE_PAD | (l->adapt ? PT_HANDLE_ADAPT : 0));
  h->nonce = l->nonce;
  h->addr = addr;
  pt__ctx_ref(ctx);
  *listen_comm = l;
  l = NULL;
  fd = -1;
  res = ncclSuccess;
out:
  if (fd >= 0) close(fd);
  free(l);
  return res;
}

static void drop_pending(struct pt_listen *l, int i) {
  close(l->pending[i].fd);
  l->pending[i] = l->pending[--l->npending];
}

static void nack(int fd, enum pt_ack_status status) {
  struct pt_ack a = {.magic = PT_WIRE_MAGIC, .version = PT_WIRE_VERSION, .status = status};
  (void)!send(fd, &a, sizeof(a), MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void reset_group(struct pt_listen *l, int close_fds) {
  for (int i = 0; i < l->nstreams; i++) {
    if (close_fds && l->fds[i] >= 0) close(l->fds[i]);
    l->fds[i] = -1;
  }
  l->have = 0;
  l->conn_id = 0;
}

/* Judges a complete hello; returns 1 when the socket joined the group. */
static int admit(struct pt_listen *l, int fd, const struct pt_hello *h) {
  ncclDebugLogger_t log = l->ctx->log;
  enum pt_ack_status why = PT_ACK_OK;
  if (h->magic != PT_WIRE_MAGIC) {
    PT_INFO(log, "listener %s: dropping a connection that is not ours (bad magic)", l->addr);
    return 0;
  }
  if (h->version != PT_WIRE_VERSION) {
    PT_WARN(log, "listener %s: refusing a peer speaking protocol version %u (this is %u)", l->addr,
            h->version, PT_WIRE_VERSION);
    why = PT_ACK_VERSION;
  } else if (h->nonce != l->nonce) {
    PT_WARN(log, "listener %s: refusing a peer holding another listener's handle", l->addr);
    why = PT_ACK_NONCE;
  } else if (h->nstreams != l->nstreams || h->index >= l->nstreams || (l->have && h->conn_id != l->conn_id) ||
             (l->have && l->fds[h->index] >= 0)) {
    PT_WARN(log, "listener %s: refusing stream %u/%u of connection %llx (assembling %llx)", l->addr, h->index,
            h->nstreams, (unsigned long long)h->conn_id, (unsigned long long)l->conn_id);
    why = PT_ACK_PROTO;
  }
  if (why != PT_ACK_OK) {
    nack(fd, why);
    return 0;
  }
  l->conn_id = h->conn_id;
  l->fds[h->index] = fd;
  l->have++;
  return 1;
}

static void drop_oldest(struct pt_listen *l) {
  int oldest = 0;
  for (int i = 1; i < l->npending; i++)
    if (l->pending[i].since_ns < l->pending[oldest].since_ns) oldest = i;
  drop_pending(l, oldest);
}

/* Room for one more pending connection: the table grows up to
 * PT_PENDING_MAX; beyond that (or without memory) the oldest entry is
 * given up, which has then seen thousands of newer connections arrive
 * while it stayed silent. 0 only when there is no room at all. */
static int make_room(struct pt_listen *l) {
  if (l->npending < l->cap) return 1;
  if (l->cap < PT_PENDING_MAX) {
    int cap = l->cap ? 2 * l->cap : PT_PENDING_MIN;
    struct pt_pending *p = realloc(l->pending, (size_t)cap * sizeof(*p));
    if (p) l->pending = p;
    struct pollfd *q = p ? realloc(l->polls, (size_t)cap * sizeof(*q)) : NULL;
    if (q) {
      l->polls = q;
      l->cap = cap;
      return 1;
    }
  }
  if (l->npending == 0) return 0;
  drop_oldest(l);
  return 1;
}

/* Reads what pending connection i has sent; 1 when it left the table
 * (joined the group, refused, silent past its own deadline, closed). */
static int hello_step(struct pt_listen *l, int i, int64_t now) {
  struct pt_pending *p = &l->pending[i];
  ssize_t n = recv(p->fd, (char *)&p->hello + p->got, sizeof(p->hello) - p->got, MSG_DONTWAIT);
  if (n > 0) p->got += (size_t)n;
  int blocked = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  if (p->got == sizeof(p->hello)) {
    int fd = p->fd;
    struct pt_hello hello = p->hello;
    l->pending[i] = l->pending[--l->npending];
    if (!admit(l, fd, &hello)) close(fd);
    return 1;
  }
  if (n == 0 || (n < 0 && !blocked) || now - p->since_ns > PT_HELLO_TIMEOUT_NS) {
    drop_pending(l, i);
    return 1;
  }
  return 0;
}

/* Accepts everything in the kernel's backlog (at most a table's worth per
 * call, so a stream of strangers cannot keep accept from returning) and
 * reads each newcomer's hello at once: a real connector sends it as soon as
 * its socket connects, so it is admitted here whatever else is pending. */
static ncclResult_t accept_new(struct pt_listen *l) {
  int64_t now = now_ns();
  for (int taken = 0; taken < PT_PENDING_MAX && make_room(l);) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return ncclSuccess;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        /* Out of descriptors (strangers may hold them): free the oldest
         * pending one so that the next call can take the next connection.
         * With none pending the process itself holds them all: waiting
         * would hang both ends (the connector's handshake is answered, it
         * has no deadline), so fail with the reason. */
        if (l->npending) {
          drop_oldest(l);
          return ncclSuccess;
        }
        PT_WARN(l->ctx->log,
                "accept on %s: %s (%d of %d streams of the connection taken; raise "
                "the descriptor limit, ulimit -n)",
                l->addr, strerror(errno), l->have, l->nstreams);
        return ncclSystemError;
      }
      PT_WARN(l->ctx->log, "accept on %s failed: %s", l->addr, strerror(errno));
      return ncclSystemError;
    }
    taken++;
    l->pending[l->npending++] = (struct pt_pending){.fd = fd, .since_ns = now};
    hello_step(l, l->npending - 1, now);
  }
  return ncclSuccess;
}

/* One poll over every pending connection, then a read only where data (or
 * a hang-up) arrived or the connection's own deadline passed. */
static void read_hellos(struct pt_listen *l) {
  int64_t now = now_ns();
  int n = l->npending;
  if (n <= 0 || !l->polls) return;
  for (int i = 0; i < n; i++) l->polls[i] = (struct pollfd){.fd = l->pending[i].fd, .events = POLLIN};
  if (poll(l->polls, (nfds_t)n, 0) < 0) return;
  /* Backwards: hello_step moves the last entry into the slot it frees. */
  for (int i = n - 1; i >= 0; i--)
    if (l->polls[i].revents || now - l->pending[i].since_ns > PT_HELLO_TIMEOUT_NS) hello_step(l, i, now);
}

ncclResult_t pt_net_accept(void *listen_comm, void **recv_comm) {
  struct pt_listen *l = listen_comm;
  if (!recv_comm || !l || l->magic != PT_MAGIC_LISTEN) return ncclInternalError;
  *recv_comm = NULL;
  read_hellos(l);
  ncclResult_t res = accept_new(l);
  if (res != ncclSuccess) return res;
  if (l->have < l->nstreams) return ncclSuccess;
  struct pt_ack ack = {.magic = PT_WIRE_MAGIC, .version = PT_WIRE_VERSION, .status = PT_ACK_OK};
  for (int i = 0; i < l->nstreams; i++) {
    /* 16 bytes into a fresh socket's empty buffer cannot block. */
    if (send(l->fds[i], &ack, sizeof(ack), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(ack)) {
      PT_WARN(l->ctx->log, "listener %s: acknowledging a stream failed: %s", l->addr, strerror(errno));
      reset_group(l, 1);
      return ncclRemoteError;
    }
  }
  char peer[80] = "?";
  union pt_addr pa;
  socklen_t plen = sizeof(pa);
  if (getpeername(l->fds[0], &pa.sa, &plen) == 0) pt__addr_str(&pa, peer, sizeof(peer));
  struct pt_comm *c;
  res = pt__comm_create(l->ctx, PT_MAGIC_RECV, l->fds, l->nstreams, l->adapt, peer, &c);
  reset_group(l, 0); /* the comm owns (or closed) the fds now */
  if (res == ncclSuccess) *recv_comm = c;
  return res;
}

ncclResult_t pt_net_close_listen(void *listen_comm) {
  struct pt_listen *l = listen_comm;
  if (!l || l->magic != PT_MAGIC_LISTEN) return ncclInternalError;
  while (l->npending) drop_pending(l, 0);
  free(l->pending);
  free(l->polls);
  reset_group(l, 1);
  close(l->fd);
  /* Our own connects to this listener (one process, as the tests and
   * NCCL's loopback comms) now see the reset: free the abandoned ones. */
  pt__connects_sweep(l->ctx);
  pt__ctx_unref(l->ctx);
  l->magic = 0;
  free(l);
  return ncclSuccess;
}
