/* Internals of the TCP transport shared by the files of net/ (never
 * installed, never included outside net/). The public contract is
 * include/pcie/net.h; this header says who owns which field.
 *
 * Shape of a connection: the receiver's listen picks the stream count and
 * puts it, its address and a random nonce in the handle; the sender opens
 * that many TCP streams, each says hello (magic, version, index, nonce,
 * connection id) and waits for the acceptor's ack. Data then flows one way.
 * A message is cut into chunks; each chunk travels on whichever stream
 * claims it first (a stream claims the next chunk as soon as its previous
 * one is in the kernel, so fast streams carry more) behind a 32-byte
 * header naming its message, offset and length. The receiver places each
 * chunk straight into the posted buffer; there is no control stream.
 *
 * Who calls whom. Two loops are left in on purpose:
 *   comm -> pool -> stream -> comm: a comm registers its streams with the
 *     pool; the pool's threads run a stream (pt__stream_run); a stream
 *     that fails must mark its comm failed (pt__comm_fail) so that test()
 *     reports it, and re-arms itself in the pool (pt__pool_arm). Passing
 *     pt__comm_fail as a callback would hide the edge, not remove it: a
 *     stream is a part of its comm and shares its lifetime and lock.
 *   connect <-> ctx: connect makes comms under a ctx; ctx's finalize
 *     must free connects NCCL abandoned mid-handshake
 *     (pt__connects_abandon), which only connect.c knows how to do.
 * Everything else points one way: ctx/ifaces/sock/listen below, the ABI
 * shims (net_v*.c, shim.c) above.
 */
#ifndef PCIE_NET_INTERNAL_H
#define PCIE_NET_INTERNAL_H
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "pcie/net.h"

#define PT_MAX_STREAMS 16
#define PT_MAX_THREADS 16
#define PT_SEND_SLOTS (NCCL_NET_MAX_REQUESTS * PT_NET_MAX_RECVS)
#define PT_RECV_SLOTS NCCL_NET_MAX_REQUESTS
/* One entry per message that can be posted at once (32 requests x 8). */
#define PT_SEQ_MAP (NCCL_NET_MAX_REQUESTS * PT_NET_MAX_RECVS)
/* Chunks below 64 KiB cost more in headers and wake-ups than they gain in
 * balance (NCCL's NCCL_SOCKET_MIN_TASKSIZE uses the same floor). */
#define PT_MIN_CHUNK (64 * 1024)
/* Bytes a stream may move inside one isend/irecv/test call: small messages
 * go out (and come in) on the caller's thread without a helper wake-up;
 * anything larger is left to the helpers. */
#define PT_INLINE_BUDGET (64 * 1024)
/* Messages up to this size are received by the caller alone (no helper
 * watches a stream whose last message was this small): the latency-bound
 * sizes, every message of one chunk. Larger ones keep the helpers
 * streaming, since a receiver that drains only when the caller polls
 * leaves the sender's socket full and its helper waking on every bit of
 * room. At 16 KiB, round trips of 16 KiB + 1 B to 64 KiB paid a helper
 * wake-up: 0.86x and 0.92x of that time with 64 KiB (bench/net rtt). */
#define PT_SMALL_MSG (64 * 1024)
#define PT_RX_BOUNCE 4096

#define PT_WIRE_MAGIC 0x7063696574637031ULL /* "pcietcp1" */
#define PT_WIRE_VERSION 1U
#define PT_CHUNK_MAGIC 0x6b6e6863U /* "chnk" */
/* A chunk whose payload is followed by PT_PAD_PAYLOAD - len bytes of
 * padding, sent only to a receiver whose handle has PT_HANDLE_PAD. On this
 * project's box (Linux 6.18 guest) a round trip whose sendmsg carried up
 * to 264 bytes (header + 232 B) took ~5-7 us longer than one of 272 bytes
 * or more, on lo, veth and a capped veth alike, while the plugin's own
 * path is the same at both sizes: the wire size alone moves it (padding
 * removed the step; docs/net.md, "Small messages are padded"). */
#define PT_CHUNK_MAGIC_PAD 0x706e6863U /* "chnp" */
#define PT_PAD_PAYLOAD 240

enum pt_magic {
  PT_MAGIC_CTX = 0x43545821,
  PT_MAGIC_LISTEN = 0x4c53544e,
  PT_MAGIC_SEND = 0x53454e44,
  PT_MAGIC_RECV = 0x52454356,
  PT_MAGIC_SREQ = 0x53524551,
  PT_MAGIC_RREQ = 0x52524551,
  PT_MAGIC_MR = 0x4d524547,
  PT_MAGIC_CONNECT = 0x434f4e4e,
};

#define PT_WARN(log, fmt, ...)                                                                               \
  do {                                                                                                       \
    if (log)                                                                                                 \
      (log)(NCCL_LOG_WARN, NCCL_ALL | NCCL_NET, __FILE__, __LINE__, "NET/" PT_NET_NAME ": " fmt,             \
            ##__VA_ARGS__);                                                                                  \
  } while (0)
#define PT_INFO(log, fmt, ...)                                                                               \
  do {                                                                                                       \
    if (log)                                                                                                 \
      (log)(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, "NET/" PT_NET_NAME ": " fmt,            \
            ##__VA_ARGS__);                                                                                  \
  } while (0)

union pt_addr {
  struct sockaddr sa;
  struct sockaddr_in in4;
  struct sockaddr_in6 in6;
};

/* ---- wire formats (host byte order: a mixed-endian pair fails the magic) */

struct pt_handle {
  uint64_t magic;
  uint32_t version;
  uint16_t nstreams;
  uint16_t flags; /* PT_HANDLE_*; 0 from builds before it: all streams at once */
  uint64_t nonce;
  union pt_addr addr;
  /* The id of the connector's progress object (0 = none yet); listen
   * zeroes it and NCCL passes the same buffer to every connect retry. */
  uint64_t connect_state;
};
_Static_assert(sizeof(struct pt_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle fits NCCL's buffer");
/* The receiver's stream count came from its NIC, not from a setting: the
 * sender starts on one stream and widens to all of them once one flow
 * shows a cap (adapt.c). The receiver takes chunks on any stream,
 * so the sender's choice needs no agreement beyond this bit. */
#define PT_HANDLE_ADAPT 1U
/* The receiver skips the padding of PT_CHUNK_MAGIC_PAD chunks: the sender
 * may pad small messages (below PT_PAD_PAYLOAD). Builds before it write 0:
 * no padding is sent to them. */
#define PT_HANDLE_PAD 2U

struct pt_hello {
  uint64_t magic;
  uint32_t version;
  uint16_t index;
  uint16_t nstreams;
  uint64_t nonce;
  uint64_t conn_id;
};
_Static_assert(sizeof(struct pt_hello) == 32, "hello is 32 bytes on the wire");

enum pt_ack_status { PT_ACK_OK = 0, PT_ACK_VERSION = 1, PT_ACK_NONCE = 2, PT_ACK_PROTO = 3 };

struct pt_ack {
  uint64_t magic;
  uint32_t version;
  uint32_t status;
};
_Static_assert(sizeof(struct pt_ack) == 16, "ack is 16 bytes on the wire");

struct pt_chunk_hdr {
  uint32_t magic;
  uint32_t seq; /* message number on this connection, wraps */
  int32_t tag;
  uint32_t len;
  uint64_t offset;
  uint64_t total; /* the whole message's size */
};
_Static_assert(sizeof(struct pt_chunk_hdr) == 32, "chunk header is 32 bytes on the wire");

/* ---- configuration and devices (ctx.c, ifaces.c) */

struct pt_cfg {
  char ifname[256];         /* PCIE_NET_IFNAME, else NCCL_SOCKET_IFNAME; "" when neither */
  const char *ifname_var;   /* which of the two it came from, for messages */
  int family;               /* NCCL_SOCKET_FAMILY: AF_INET, AF_INET6, AF_UNSPEC when unset */
  int nstreams;             /* PCIE_NET_NSTREAMS, else NCCL's two socket variables, 0 = per device */
  const char *nstreams_var; /* which set it, for the INFO line; NULL = per device */
  int nthreads;             /* PCIE_NET_NTHREADS */
  size_t max_chunk;         /* PCIE_NET_CHUNKSIZE */
  int connect_timeout_ms;
  float latency_us;
};

struct pt_dev {
  char name[IF_NAMESIZE];
  char pci_path[256];
  int has_pci;
  union pt_addr addr;
  socklen_t addrlen;
  int speed_mbps;
  int loopback;
  int nstreams;
  int adapt; /* nstreams came from the NIC: the sender widens only where a flow is capped */
};

/* Fills devs (at most PT_NET_MAX_DEVS) from the interfaces that are up,
 * filtered by spec (NCCL_SOCKET_IFNAME syntax, "" = default policy), each
 * with its best address of family (AF_UNSPEC = any). */
int pt__ifaces_discover(const char *spec, int family, struct pt_dev *devs, int max);
/* 1 when name is selected by spec (prefix list, '^' excludes, '=' exact). */
int pt__ifname_match(const char *spec, const char *name);

/* The frozen configuration and device table; valid from the first init to
 * the last finalize, read without locks. */
const struct pt_cfg *pt__cfg(void);
const struct pt_dev *pt__dev(int dev);

struct pt_connect;

struct pt_net_ctx {
  uint32_t magic;
  atomic_int refs; /* the owner's plus one per live comm or listen comm */
  int legacy;
  uint64_t comm_id;
  int traffic_class;
  ncclDebugLogger_t log;
  /* connects in progress (their state lives behind NCCL's handle): the
   * ones NCCL abandons (an abort during setup) are freed by finalize */
  pthread_mutex_t connects_mu;
  struct pt_connect *connects;
};
void pt__ctx_ref(struct pt_net_ctx *ctx);
void pt__ctx_unref(struct pt_net_ctx *ctx);
/* Closes and frees every connect of ctx still in progress (connect.c). */
void pt__connects_abandon(struct pt_net_ctx *ctx);
/* Frees the connects of ctx whose handshake failed (peer closed or reset,
 * no answer by the deadline) although nobody called connect again. */
void pt__connects_sweep(struct pt_net_ctx *ctx);

/* ---- comms, streams, requests */

enum pt_slot_state { PT_SLOT_FREE = 0, PT_SLOT_POSTED = 1, PT_SLOT_DONE = 2 };

struct pt_comm;

/* A request is a slot; its first member tells send from receive. */
struct pt_req_head {
  uint32_t magic;
  atomic_int state;
  struct pt_comm *comm;
};

struct pt_send_slot {
  struct pt_req_head h;
  char *data;
  size_t size;
  size_t chunk;
  int tag;
  uint32_t seq;
  atomic_uint nchunks;     /* read by claimers that raced a recycle */
  atomic_uint chunks_sent; /* chunks wholly handed to the kernel */
  /* registration it was posted with, compared (never dereferenced) by
   * deregMr's fence, which reads it from another thread */
  _Atomic(const void *) mr;
};

struct pt_recv_slot {
  struct pt_req_head h;
  int n;
  uint32_t base_seq;
  atomic_int msgs_done;
  char *data[PT_NET_MAX_RECVS];
  size_t cap[PT_NET_MAX_RECVS];
  int tags[PT_NET_MAX_RECVS];
  /* seq + 1 of the message that landed in buffer i, 0 while unclaimed */
  atomic_ullong owner[PT_NET_MAX_RECVS];
  atomic_size_t total[PT_NET_MAX_RECVS];
  atomic_size_t got[PT_NET_MAX_RECVS];
  _Atomic(const void *) mr[PT_NET_MAX_RECVS]; /* as in pt_send_slot; NULL past n */
};

enum pt_rx_phase { PT_RX_HDR, PT_RX_PARKED, PT_RX_DATA, PT_RX_DEAD };

/* The send side's choice of active streams (adapt.c); progress thread only. */
struct pt_adapt {
  int link_mbps; /* the link's speed, a flow's rate is judged against it; 0 = decided */
  int state;     /* one stream, or trying all */
  int looks;     /* looks so far in this state */
  int wait;      /* looks to skip before the next try */
  int backoff;
  size_t bytes;  /* posted since the last look */
  int64_t t_ns;  /* clock at the last look, 0 before the first */
  double sum, lo, hi; /* of this phase's looks */
  double narrow_mbps, wide_mbps;
  uint64_t acked[PT_MAX_STREAMS]; /* each stream's acknowledged bytes at the last look */
};

struct pt_stream {
  struct pt_comm *comm;
  int index;
  int fd;
  int worker;
  /* ownership: whoever swaps busy 0->1 may touch the fields below */
  atomic_int busy;
  atomic_int again;  /* work arrived while another thread owned it */
  atomic_uint fired; /* events of the one-shot that fired (it is now off), or 0 */
  uint32_t interest;
  /* send side */
  struct pt_send_slot *cur;
  struct pt_chunk_hdr hdr;
  size_t hdr_done;
  size_t data_done;
  size_t pad_len, pad_done; /* padding after a small message's payload */
  /* receive side: small reads land in rxbuf first, so a header and a
   * small payload (or several small messages) cost one recv call */
  int phase;
  size_t rx_have, rx_off;
  size_t rx_skip; /* padding still to drop before the next header */
  char rxbuf[PT_RX_BOUNCE];
  struct pt_recv_slot *rreq;
  int rbuf;
  int bulk; /* the last chunk placed belonged to a message above PT_SMALL_MSG */
  int lowat; /* SO_RCVLOWAT raised for bulk (stream.c, set_lowat) */
  char *dst;
  size_t left;
  /* published for test's dead-peer check (written by the owner only):
   * (1 << 32) | seq while parked on a message not posted yet, else 0;
   * ended once the peer closed this stream at a chunk boundary */
  _Atomic uint64_t parked;
  atomic_int ended;
};

struct pt_comm {
  uint32_t magic; /* PT_MAGIC_SEND or PT_MAGIC_RECV */
  struct pt_net_ctx *ctx;
  int nstreams;
  int caller_only; /* no helper threads: isend/irecv/test move every byte */
  int pad_small;   /* send side: the receiver's handle has PT_HANDLE_PAD */
  /* send side: streams that claim chunks (the first `active` ones); all
   * of them unless the handle asked to adapt. Written by the progress
   * thread only; read by the streams' owners before they claim a chunk. */
  atomic_int active;
  atomic_int send_full; /* a stream found its socket full since adapt's last look */
  struct pt_adapt adapt;
  char peer[64];
  size_t max_chunk;
  atomic_int err;         /* first ncclResult_t failure, 0 while healthy */
  atomic_int err_claimed; /* set by the failure that gets recorded */
  atomic_int err_errno;   /* errno behind it (or the stray tag) */
  atomic_int err_why;     /* enum pt_why */
  atomic_int err_logged;
  atomic_int eof_streams; /* streams the peer closed at a chunk boundary */
  struct pt_stream streams[PT_MAX_STREAMS];
  /* send side: isend (single producer) posts, streams claim chunks */
  uint32_t send_next;          /* seq of the next isend; progress thread only */
  int send_first;              /* stream the next isend's push starts at; progress thread only */
  _Atomic uint32_t send_tail;  /* messages below this are posted */
  _Atomic uint64_t cursor;     /* (seq << 32) | next unclaimed chunk */
  struct pt_send_slot *sslots; /* PT_SEND_SLOTS */
  /* receive side: irecv (single producer) posts, streams place chunks */
  uint32_t recv_next_req;       /* progress thread only */
  uint32_t recv_next_seq;       /* progress thread only */
  _Atomic uint32_t recv_posted; /* messages below this seq have a buffer */
  atomic_uchar seq_map[PT_SEQ_MAP];
  atomic_int rx_hint;          /* stream where the next message most likely starts */
  atomic_uint rx_seen;         /* streams that have carried a chunk (bit per stream) */
  unsigned poll_rr;            /* progress thread only: rotation of test's polling */
  unsigned probe_rr;           /* progress thread only: rotation over streams not seen yet */
  /* receive side of a comm whose sender adapts (xfer.c, live_streams):
   * streams that placed a chunk since the last epoch, and the set test
   * polls on every call (progress thread only) */
  atomic_uint rx_recent;
  unsigned rx_live, rx_epoch;
  int rx_adapt;
  struct pt_recv_slot *rslots; /* PT_RECV_SLOTS */
};

enum pt_why {
  PT_WHY_NONE = 0,
  PT_WHY_PEER_CLOSED,
  PT_WHY_TRUNCATED_STREAM,
  PT_WHY_SOCKET,
  PT_WHY_BAD_MAGIC,
  PT_WHY_BAD_CHUNK,
  PT_WHY_TRUNCATED_MSG,
  PT_WHY_NO_TAG,
  PT_WHY_UNEXPECTED_DATA,
  PT_WHY_CANCELLED, /* deregMr of a region with requests in flight */
};

/* Takes ownership of fds (closed on failure too). */
/* adapt_mbps: 0 = the sender uses every stream from the start; else it
 * starts on one and widens when a flow moves less than half of this
 * (Mb/s; a receive comm only tests it for nonzero). */
ncclResult_t pt__comm_create(struct pt_net_ctx *ctx, uint32_t magic, const int *fds, int n, int adapt_mbps,
                             const char *peer, struct pt_comm **out);
void pt__comm_destroy(struct pt_comm *comm);
/* Records the first failure of a comm (cheap, lock-free, no logging). */
void pt__comm_fail(struct pt_comm *comm, ncclResult_t res, enum pt_why why, int err);
/* The fence behind deregMr and every reported failure: once the comm has
 * failed, waits until no thread is inside a step of its streams. Every
 * later step sees the failure before touching a buffer, so on return no
 * thread will read or write a request's memory again. */
void pt__comm_quiesce(struct pt_comm *comm);
/* Logs a comm's failure once, fences it (pt__comm_quiesce) and returns
 * its code: whoever gets an error may free the buffers at once. */
ncclResult_t pt__comm_report(struct pt_comm *comm);

/* Counts size bytes posted on a send comm with c->adapt.link_mbps set and,
 * every 512 KiB and 1 ms at most, decides how many streams new messages
 * use (adapt.c). */
void pt__adapt_look(struct pt_comm *comm, size_t size);

/* Progresses a stream if no other thread owns it, else leaves a note for
 * the owner. budget bounds the payload bytes moved by this call. */
void pt__stream_run(struct pt_stream *s, size_t budget);

/* ---- helper threads (pool.c): started with the first comm, joined with
 * the last, so nothing of ours runs once every comm is closed. */
ncclResult_t pt__pool_acquire(ncclDebugLogger_t log);
void pt__pool_release(void);
int pt__pool_add(struct pt_stream *s, uint32_t interest);
/* Helper threads running (0 with PCIE_NET_NTHREADS=0: callers carry all
 * progress); stable while the caller holds a pool reference. */
int pt__pool_threads(void);
/* Epoll interests. Send streams are one-shot: writable is almost always
 * true, so EPOLLOUT is asked for only while a chunk waits for room, and
 * the owner re-arms after every event. Receive streams are edge-triggered
 * (no syscall per message); a helper watches their data only while they
 * carry large messages (the last chunk belonged to one above PT_SMALL_MSG,
 * or one is in progress, or bytes were left unread). After a small
 * message only a hang-up wakes a helper and the caller's test reads the
 * next header itself, so small messages cost no helper wake-up (no
 * context switch on the critical path; NCCL's socket transport by
 * default moves everything on the proxy thread). Changing the interest
 * re-evaluates readiness, so data that arrived meanwhile is not lost. */
#define PT_SEND_IDLE (EPOLLIN | EPOLLRDHUP | EPOLLONESHOT)
#define PT_SEND_BUSY (EPOLLIN | EPOLLRDHUP | EPOLLOUT | EPOLLONESHOT)
#define PT_RECV_IDLE (EPOLLRDHUP | EPOLLET)
#define PT_RECV_BULK (EPOLLIN | EPOLLRDHUP | EPOLLET)
/* Changes a stream's epoll interest; only its owner may call it. */
void pt__pool_arm(struct pt_stream *s, uint32_t interest);
/* Removes the comm's streams and waits until no helper thread can still
 * hold one of them. */
void pt__pool_forget(struct pt_comm *comm);

/* ---- sockets (sock.c) */
void pt__addr_str(const union pt_addr *a, char *buf, size_t len);
socklen_t pt__addr_len(const union pt_addr *a);
int pt__sock_tune(int fd, int traffic_class, int family);
int pt__random64(uint64_t *out);
#endif
