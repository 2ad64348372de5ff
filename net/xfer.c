/* The data-path entry points: memory registration, isend, irecv, iflush
 * and test. isend/irecv fill a preallocated slot (a full ring answers a
 * NULL request), publish it with one release store and give the comm's
 * streams a bounded inline push; test is a flag check plus the same push.
 * No allocation, lock or log here except on the misuse/error paths. */
#include <stdlib.h>
#include "internal.h"

/* Registrations belong to the comm they were made on (regIsGlobal = 0, as
 * NCCL's own socket transport): deregMr then knows which requests to fence. */
struct pt_mr {
  uint32_t magic;
  const struct pt_comm *comm;
  char *base;
  size_t size;
};

static int is_comm(const void *p) {
  const struct pt_comm *c = p;
  return c && (c->magic == PT_MAGIC_SEND || c->magic == PT_MAGIC_RECV);
}

ncclResult_t pt_net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  if (!mhandle || !is_comm(comm)) return ncclInternalError;
  *mhandle = NULL;
  ncclDebugLogger_t log = ((struct pt_comm *)comm)->ctx->log;
  if (type != NCCL_PTR_HOST) {
    PT_WARN(log, "regMr: memory type %d unsupported (host memory only)", type);
    return ncclInvalidArgument;
  }
  struct pt_mr *mr = malloc(sizeof(*mr));
  if (!mr) {
    PT_WARN(log, "regMr: out of memory");
    return ncclSystemError;
  }
  *mr = (struct pt_mr){.magic = PT_MAGIC_MR, .comm = comm, .base = data, .size = size};
  *mhandle = mr;
  return ncclSuccess;
}

/* 1 when a request posted with mr is still in flight on c. Reads only the
 * slots' atomics: the progress thread may be posting other requests. */
static int mr_in_flight(const struct pt_comm *c, const struct pt_mr *mr) {
  for (int i = 0; c->sslots && i < PT_SEND_SLOTS; i++) {
    const struct pt_send_slot *m = &c->sslots[i];
    if (atomic_load_explicit(&m->h.state, memory_order_acquire) == PT_SLOT_POSTED &&
        atomic_load_explicit(&m->mr, memory_order_relaxed) == mr)
      return 1;
  }
  for (int i = 0; c->rslots && i < PT_RECV_SLOTS; i++) {
    const struct pt_recv_slot *r = &c->rslots[i];
    if (atomic_load_explicit(&r->h.state, memory_order_acquire) != PT_SLOT_POSTED) continue;
    for (int k = 0; k < PT_NET_MAX_RECVS; k++)
      if (atomic_load_explicit(&r->mr[k], memory_order_relaxed) == mr) return 1;
  }
  return 0;
}

/* A fence. NCCL tears a connection down as deregMr, free the buffers, then
 * close (net.cc, recvProxyFree/sendProxyFree), also with requests still in
 * flight (an abort, a dead peer). So before the handle goes, every request
 * using it is finished or cancelled and no thread touches its memory again:
 * requests in flight fail the comm (it is being torn down) and
 * pt__comm_quiesce waits out any step already inside the region. */
ncclResult_t pt_net_dereg_mr(void *comm, void *mhandle) {
  struct pt_comm *c = comm;
  struct pt_mr *mr = mhandle;
  if (!is_comm(comm) || !mr || mr->magic != PT_MAGIC_MR) return ncclInternalError;
  if (mr->comm != c) {
    PT_WARN(c->ctx->log, "deregMr: handle %p was registered on another comm", mhandle);
    return ncclInternalError;
  }
  if (mr_in_flight(c, mr)) {
    pt__comm_fail(c, ncclInternalError, PT_WHY_CANCELLED, 0);
    pt__comm_quiesce(c);
  }
  mr->magic = 0;
  free(mr);
  return ncclSuccess;
}

/* A NULL handle is accepted (NCCL's OOB bootstrap and older callers); a
 * handle must come from this comm's regMr. */
static int covered(const struct pt_comm *c, const void *mhandle, const char *data, size_t size) {
  const struct pt_mr *mr = mhandle;
  if (!mr) return 1;
  return mr->magic == PT_MAGIC_MR && mr->comm == c && data >= mr->base && size <= mr->size &&
         (size_t)(data - mr->base) <= mr->size - size;
}

/* Gives the comm's streams a bounded inline turn after isend/irecv, so a
 * small message moves without waiting for a helper thread; a send push
 * stops once every chunk is claimed (chunks already on a stream finish on
 * their own: an owner that met a full socket armed it for the helpers). */
static void push(struct pt_comm *c) {
  /* Starting at the stream after the one the previous message started on
   * spreads messages of one chunk over the streams, as NCCL's transport
   * sends each task on its next socket (net_socket.cc, nextSock): where
   * each flow is capped, every stream's share of the cap serves a message
   * in turn instead of all queuing behind one flow. */
  int active = atomic_load_explicit(&c->active, memory_order_relaxed);
  for (int k = 0; k < active; k++) {
    if (!c->caller_only && (uint32_t)(atomic_load(&c->cursor) >> 32) == atomic_load(&c->send_tail)) return;
    pt__stream_run(&c->streams[(c->send_first + k) % active], PT_INLINE_BUDGET);
  }
  /* Streams the sender stopped using (adapt.c) may still hold a chunk;
   * with no helper thread nobody else finishes it. Only this thread owns
   * streams then, so their cur is ours to read. */
  for (int k = active; c->caller_only && k < c->nstreams; k++)
    if (c->streams[k].cur) pt__stream_run(&c->streams[k], PT_INLINE_BUDGET);
}

/* 1 when a chunk of the request's message has arrived (it is in progress,
 * possibly on several streams). */
static int started(const struct pt_recv_slot *r) {
  for (int i = 0; i < r->n; i++)
    if (atomic_load_explicit(&r->owner[i], memory_order_relaxed)) return 1;
  return 0;
}

/* With no helper thread, the streams test polls on every call while a
 * message is in progress, when the sender adapts (adapt.c): those that
 * carried a chunk in the last PT_RX_LIVE_CALLS calls or are inside one.
 * A sender that tried every stream and went back to one leaves the others
 * silent, and polling them on every call cost three wasted recvs per test
 * for the rest of the connection; once silent for an epoch they are
 * looked at in the slow rotation again (every 256th call), like streams
 * never used. */
#define PT_RX_LIVE_CALLS 4096

static unsigned live_streams(struct pt_comm *c) {
  if (++c->rx_epoch >= PT_RX_LIVE_CALLS) {
    c->rx_epoch = 0;
    c->rx_live = atomic_exchange_explicit(&c->rx_recent, 0, memory_order_relaxed);
  }
  unsigned live = c->rx_live | atomic_load_explicit(&c->rx_recent, memory_order_relaxed);
  for (int i = 0; i < c->nstreams; i++)
    if (c->streams[i].phase == PT_RX_DATA) live |= 1U << i;
  return live;
}

/* test's turn is cheaper still, since NCCL calls it in a tight loop: the
 * stream that delivered last, where the next message most likely starts
 * (isend's inline push hands a small message to stream 0 every time), and
 * one other in rotation: on every call once the message is in progress
 * (its other chunks travel elsewhere), else on every 4th call only. A
 * wasted recv on another stream is a syscall during which the reply that
 * lands on the hint stream waits: on the 8 B round trip that showed. */
static void poll_some(struct pt_comm *c, const struct pt_req_head *h) {
  if (c->magic == PT_MAGIC_SEND) {
    push(c);
    return;
  }
  int hint = atomic_load_explicit(&c->rx_hint, memory_order_relaxed);
  pt__stream_run(&c->streams[hint], PT_INLINE_BUDGET);
  if (c->nstreams == 1 || atomic_load_explicit(&h->state, memory_order_relaxed) == PT_SLOT_DONE) return;
  unsigned turn = c->poll_rr++;
  int in_progress = started((const struct pt_recv_slot *)h);
  /* Streams the sender has not used yet (it starts on one and widens only
   * where a flow is capped, adapt.c): one of them, in turn, every 256th
   * call, which finds a first chunk there within a few thousand calls
   * (once per stream: then it is seen). Every 16th call cost bench/net's
   * ring mode on veth 5-20% (BENCH_NET_ALT_SO, 3 runs). */
  unsigned seen = c->caller_only && c->rx_adapt ? live_streams(c)
                                                : atomic_load_explicit(&c->rx_seen, memory_order_relaxed);
  if ((turn & 255) == 0) {
    int p = (int)(c->probe_rr++ % (unsigned)c->nstreams);
    if (p != hint && !(seen >> p & 1)) pt__stream_run(&c->streams[p], PT_INLINE_BUDGET);
  }
  if (c->caller_only && in_progress) {
    /* no helper streams the rest: every stream in use, every call */
    for (int i = 0; i < c->nstreams; i++)
      if (i != hint && (seen >> i & 1)) pt__stream_run(&c->streams[i], PT_INLINE_BUDGET);
    return;
  }
  if (!in_progress && (turn & 3)) return;
  int other = (int)((turn >> 2) % (unsigned)c->nstreams);
  if (other == hint) other = (other + 1) % c->nstreams;
  if (seen >> other & 1) pt__stream_run(&c->streams[other], PT_INLINE_BUDGET);
}

static size_t chunk_for(const struct pt_comm *c, size_t size) {
  /* One chunk per stream up to PCIE_NET_CHUNKSIZE, more above it (fast
   * streams then take more of them). Splitting mid-size messages finer
   * only bought wake-ups and hand-offs: two chunks per stream cost 1 MiB
   * messages ~20% of their throughput in bench/net. */
  size_t n = (size_t)atomic_load_explicit(&c->active, memory_order_relaxed);
  size_t chunk = (size + n - 1) / n;
  chunk = (chunk + 4095) & ~(size_t)4095;
  if (chunk < PT_MIN_CHUNK) chunk = PT_MIN_CHUNK;
  return chunk > c->max_chunk ? c->max_chunk : chunk;
}

ncclResult_t pt_net_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void **request) {
  struct pt_comm *c = send_comm;
  if (!request) return ncclInternalError;
  *request = NULL;
  if (!c || c->magic != PT_MAGIC_SEND) return ncclInternalError;
  if (size > PT_NET_MAX_BYTES || (size && !data) || !covered(c, mhandle, data, size)) {
    PT_WARN(c->ctx->log,
            "isend to %s: bad buffer %p size %zu (limit %lu, or outside its "
            "registration)",
            c->peer, data, size, PT_NET_MAX_BYTES);
    return ncclInvalidArgument;
  }
  if (atomic_load_explicit(&c->err, memory_order_relaxed)) return pt__comm_report(c);
  struct pt_send_slot *m = &c->sslots[c->send_next % PT_SEND_SLOTS];
  if (atomic_load_explicit(&m->h.state, memory_order_acquire) != PT_SLOT_FREE) return ncclSuccess;
  m->data = data;
  m->size = size;
  m->tag = tag;
  m->seq = c->send_next;
  m->chunk = chunk_for(c, size);
  atomic_store_explicit(&m->nchunks, size ? (uint32_t)((size + m->chunk - 1) / m->chunk) : 1,
                        memory_order_relaxed);
  atomic_store_explicit(&m->chunks_sent, 0, memory_order_relaxed);
  atomic_store_explicit(&m->mr, mhandle, memory_order_relaxed);
  /* release: deregMr's scan, on another thread, pairs state with mr */
  atomic_store_explicit(&m->h.state, PT_SLOT_POSTED, memory_order_release);
  c->send_next++;
  atomic_store_explicit(&c->send_tail, c->send_next, memory_order_release);
  *request = m;
  push(c);
  c->send_first = (c->send_first + 1) % atomic_load_explicit(&c->active, memory_order_relaxed);
  if (c->adapt.link_mbps) pt__adapt_look(c, size);
  return ncclSuccess;
}

ncclResult_t pt_net_irecv(void *recv_comm, int n, void **data, const size_t *sizes, const int *tags,
                          void **mhandles, void **request) {
  struct pt_comm *c = recv_comm;
  if (!request) return ncclInternalError;
  *request = NULL; /* may hold NCCL's optional-completion marker */
  if (!c || c->magic != PT_MAGIC_RECV) return ncclInternalError;
  if (n < 1 || n > PT_NET_MAX_RECVS || !data || !sizes || !tags) {
    PT_WARN(c->ctx->log, "irecv from %s: %d buffers (1..%d allowed)", c->peer, n, PT_NET_MAX_RECVS);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    if ((sizes[i] && !data[i]) || !covered(c, mhandles ? mhandles[i] : NULL, data[i], sizes[i])) {
      PT_WARN(c->ctx->log, "irecv from %s: buffer %d (%p, %zu bytes) outside its registration", c->peer, i,
              data[i], sizes[i]);
      return ncclInvalidArgument;
    }
  }
  if (atomic_load_explicit(&c->err, memory_order_relaxed)) return pt__comm_report(c);
  uint32_t idx = c->recv_next_req % PT_RECV_SLOTS;
  struct pt_recv_slot *r = &c->rslots[idx];
  if (atomic_load_explicit(&r->h.state, memory_order_acquire) != PT_SLOT_FREE) return ncclSuccess;
  r->n = n;
  r->base_seq = c->recv_next_seq;
  atomic_store_explicit(&r->msgs_done, 0, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    r->data[i] = data[i];
    r->cap[i] = sizes[i];
    r->tags[i] = tags[i];
    atomic_store_explicit(&r->owner[i], 0, memory_order_relaxed);
    atomic_store_explicit(&r->total[i], 0, memory_order_relaxed);
    atomic_store_explicit(&r->got[i], 0, memory_order_relaxed);
    atomic_store_explicit(&c->seq_map[(r->base_seq + (uint32_t)i) % PT_SEQ_MAP], (unsigned char)idx,
                          memory_order_relaxed);
  }
  for (int i = 0; i < PT_NET_MAX_RECVS; i++)
    atomic_store_explicit(&r->mr[i], i < n && mhandles ? mhandles[i] : NULL, memory_order_relaxed);
  atomic_store_explicit(&r->h.state, PT_SLOT_POSTED, memory_order_release);
  c->recv_next_req++;
  c->recv_next_seq += (uint32_t)n;
  atomic_store_explicit(&c->recv_posted, c->recv_next_seq, memory_order_release);
  *request = r;
  /* Only a stream parked on a message waits for this post; the others are
   * polled by test (a stream that parks concurrently is found there too),
   * so a small receive costs no extra recv here. */
  for (int i = 0; i < c->nstreams; i++)
    if (atomic_load(&c->streams[i].parked)) pt__stream_run(&c->streams[i], PT_INLINE_BUDGET);
  return ncclSuccess;
}

ncclResult_t pt_net_iflush(void *recv_comm, void **request) {
  if (!request) return ncclInternalError;
  *request = NULL; /* host memory: nothing to flush, NULL means done */
  const struct pt_comm *c = recv_comm;
  return c && c->magic == PT_MAGIC_RECV ? ncclSuccess : ncclInternalError;
}

static int complete(struct pt_req_head *h, int *sizes) {
  if (atomic_load_explicit(&h->state, memory_order_acquire) != PT_SLOT_DONE) return 0;
  if (sizes && h->magic == PT_MAGIC_SREQ) {
    sizes[0] = (int)((struct pt_send_slot *)h)->size;
  } else if (sizes) {
    struct pt_recv_slot *r = (struct pt_recv_slot *)h;
    for (int i = 0; i < r->n; i++) sizes[i] = (int)atomic_load_explicit(&r->total[i], memory_order_relaxed);
  }
  atomic_store_explicit(&h->state, PT_SLOT_FREE, memory_order_release);
  return 1;
}

/* 1 when every stream either ended (the peer closed it between chunks) or
 * is parked on a message that is not posted yet. A stream carries chunks in
 * increasing message order (the send cursor only moves forward), so one
 * parked beyond every posted receive can bring nothing for them, and a
 * posted receive still short then never completes: waiting would hang on a
 * dead peer whose last chunks went to a stream that is parked. Called by
 * the progress thread, which alone advances recv_next_seq. */
static int recv_stuck(const struct pt_comm *c) {
  for (int i = 0; i < c->nstreams; i++) {
    const struct pt_stream *s = &c->streams[i];
    if (atomic_load(&s->ended)) continue;
    uint64_t p = atomic_load_explicit(&s->parked, memory_order_acquire);
    if (!p || (int32_t)((uint32_t)p - c->recv_next_seq) < 0) return 0;
  }
  return 1;
}

/* The comm failed, maybe on another stream (a peer that closed once it had
 * everything) while the thread that moved this request's last bytes had
 * not marked it done yet. Once the fence has waited for every step, a
 * request that did complete is reported done; the failure comes with the
 * next one that cannot. */
static ncclResult_t done_or_report(struct pt_comm *c, struct pt_req_head *h, int *done, int *sizes) {
  pt__comm_quiesce(c);
  if ((*done = complete(h, sizes))) return ncclSuccess;
  return pt__comm_report(c);
}

ncclResult_t pt_net_test(void *request, int *done, int *sizes) {
  struct pt_req_head *h = request;
  if (!done || !h || (h->magic != PT_MAGIC_SREQ && h->magic != PT_MAGIC_RREQ)) return ncclInternalError;
  *done = 0;
  struct pt_comm *c = h->comm;
  if (atomic_load_explicit(&h->state, memory_order_relaxed) == PT_SLOT_FREE) {
    PT_WARN(c->ctx->log, "test: request %p already completed", request);
    return ncclInternalError;
  }
  if ((*done = complete(h, sizes))) return ncclSuccess;
  if (atomic_load_explicit(&c->err, memory_order_relaxed)) return done_or_report(c, h, done, sizes);
  poll_some(c, h);
  if ((*done = complete(h, sizes))) return ncclSuccess;
  /* The peer closed its side and this request is still short: fail once
   * no stream can bring it anything more. */
  if (h->magic == PT_MAGIC_RREQ && atomic_load_explicit(&c->eof_streams, memory_order_relaxed) &&
      recv_stuck(c)) {
    /* A helper may have placed the last chunk after the check above and
     * then met the end of its stream; what made the streams look stuck
     * (ended, parked) was published after that chunk, so this sees it. */
    if ((*done = complete(h, sizes))) return ncclSuccess;
    pt__comm_fail(c, ncclRemoteError, PT_WHY_PEER_CLOSED, 0);
    return pt__comm_report(c);
  }
  if (atomic_load_explicit(&c->err, memory_order_relaxed)) return done_or_report(c, h, done, sizes);
  return ncclSuccess;
}

ncclResult_t pt_net_close_send(void *send_comm) {
  struct pt_comm *c = send_comm;
  if (!c || c->magic != PT_MAGIC_SEND) return ncclInternalError;
  pt__comm_destroy(c);
  return ncclSuccess;
}

ncclResult_t pt_net_close_recv(void *recv_comm) {
  struct pt_comm *c = recv_comm;
  if (!c || c->magic != PT_MAGIC_RECV) return ncclInternalError;
  pt__comm_destroy(c);
  return ncclSuccess;
}
