/* Stream progress: moving chunks between a TCP stream and the posted
 * buffers. Whoever owns a stream (a helper thread woken by epoll, or the
 * progress thread inside isend/irecv/test) runs its state machine for a
 * bounded number of bytes, then re-arms its epoll interest; ownership is a
 * lock-free try-acquire so no caller ever waits. Never allocates or logs:
 * failures are recorded in the comm and reported by test. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "internal.h"

/* Checked before every step that touches a request's memory. Sequentially
 * consistent on purpose: with the busy flag's exchange it forms the
 * handshake pt__comm_quiesce relies on (a step that took a stream after
 * the fence looked at busy sees the failure and touches nothing). */
static int failed(struct pt_comm *c) { return atomic_load(&c->err) != 0; }

static void fail_errno(struct pt_comm *c, int err) {
  if (err == ECONNRESET || err == EPIPE || err == ETIMEDOUT)
    pt__comm_fail(c, ncclRemoteError, PT_WHY_PEER_CLOSED, err);
  else
    pt__comm_fail(c, ncclSystemError, PT_WHY_SOCKET, err);
}

/* Takes the next unsent chunk of the oldest message with one; the cursor
 * never passes send_tail and skips to the next message when it hands out
 * the last chunk, so a successful CAS proves the slot still holds seq. */
static int claim(struct pt_comm *c, struct pt_send_slot **slot, uint32_t *chunk) {
  uint64_t cur = atomic_load(&c->cursor);
  for (;;) {
    uint32_t seq = (uint32_t)(cur >> 32), k = (uint32_t)cur;
    if (seq == atomic_load_explicit(&c->send_tail, memory_order_acquire)) return 0;
    struct pt_send_slot *m = &c->sslots[seq % PT_SEND_SLOTS];
    uint32_t n = atomic_load_explicit(&m->nchunks, memory_order_relaxed);
    uint64_t next = k + 1 < n ? cur + 1 : (uint64_t)(uint32_t)(seq + 1) << 32;
    if (atomic_compare_exchange_weak(&c->cursor, &cur, next)) {
      *slot = m;
      *chunk = k;
      return 1;
    }
  }
}

static int send_pending(struct pt_comm *c) {
  uint32_t seq = (uint32_t)(atomic_load(&c->cursor) >> 32);
  return seq != atomic_load_explicit(&c->send_tail, memory_order_acquire);
}

static void start_chunk(struct pt_stream *s, struct pt_send_slot *m, uint32_t k) {
  size_t off = (size_t)k * m->chunk;
  size_t len = m->size - off < m->chunk ? m->size - off : m->chunk;
  /* a message below PT_PAD_PAYLOAD is one chunk (chunks are >= 64 KiB) */
  int pad = s->comm->pad_small && m->size < PT_PAD_PAYLOAD;
  s->cur = m;
  s->hdr = (struct pt_chunk_hdr){.magic = pad ? PT_CHUNK_MAGIC_PAD : PT_CHUNK_MAGIC,
                                 .seq = m->seq,
                                 .tag = m->tag,
                                 .len = (uint32_t)len,
                                 .offset = off,
                                 .total = m->size};
  s->hdr_done = 0;
  s->data_done = 0;
  s->pad_len = pad ? PT_PAD_PAYLOAD - len : 0;
  s->pad_done = 0;
}

static void end_chunk(struct pt_stream *s) {
  struct pt_send_slot *m = s->cur;
  s->cur = NULL;
  if (atomic_fetch_add(&m->chunks_sent, 1) + 1 == atomic_load(&m->nchunks))
    atomic_store_explicit(&m->h.state, PT_SLOT_DONE, memory_order_release);
}

/* The receiver never writes on a data stream: readable means it closed or
 * reset (or is not our peer). */
static void check_hangup(struct pt_stream *s) {
  char b;
  ssize_t n = recv(s->fd, &b, 1, MSG_DONTWAIT);
  if (n == 0)
    pt__comm_fail(s->comm, ncclRemoteError, PT_WHY_PEER_CLOSED, 0);
  else if (n > 0)
    pt__comm_fail(s->comm, ncclRemoteError, PT_WHY_UNEXPECTED_DATA, 0);
  else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    fail_errno(s->comm, errno);
}

static uint32_t send_step(struct pt_stream *s, size_t budget, uint32_t fired) {
  struct pt_comm *c = s->comm;
  size_t moved = 0;
  int want_out = 0;
  if (fired & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) check_hangup(s);
  while (!failed(c)) {
    if (moved >= budget) {
      want_out = s->cur || send_pending(c);
      break;
    }
    if (!s->cur) {
      struct pt_send_slot *m;
      uint32_t k;
      if (s->index >= atomic_load_explicit(&c->active, memory_order_relaxed) || !claim(c, &m, &k)) break;
      start_chunk(s, m, k);
    }
    /* padding: its bytes are never read, any memory of that size will do */
    static const char pad[PT_PAD_PAYLOAD];
    struct iovec iov[3];
    int niov = 0;
    size_t hdr_left = sizeof(s->hdr) - s->hdr_done, data_left = s->hdr.len - s->data_done;
    if (hdr_left) iov[niov++] = (struct iovec){(char *)&s->hdr + s->hdr_done, hdr_left};
    if (data_left) iov[niov++] = (struct iovec){s->cur->data + s->hdr.offset + s->data_done, data_left};
    if (s->pad_done < s->pad_len) iov[niov++] = (struct iovec){(char *)pad, s->pad_len - s->pad_done};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t n = sendmsg(s->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        want_out = 1;
        atomic_store_explicit(&c->send_full, 1, memory_order_relaxed);
      } else
        fail_errno(c, errno);
      break;
    }
    size_t sent = (size_t)n, k = sent < hdr_left ? sent : hdr_left;
    s->hdr_done += k;
    sent -= k;
    k = sent < data_left ? sent : data_left;
    s->data_done += k;
    moved += k;
    s->pad_done += sent - k;
    if (s->hdr_done == sizeof(s->hdr) && s->data_done == s->hdr.len && s->pad_done == s->pad_len)
      end_chunk(s);
  }
  if (atomic_load_explicit(&c->err, memory_order_relaxed)) return 0;
  return want_out ? PT_SEND_BUSY : PT_SEND_IDLE;
}

/* Without helper threads a bulk stream is read only inside test, each
 * recv taking whatever has arrived. With the receive low-water mark at
 * PT_RX_LOWAT the kernel ACKs such a stream at once while less than that
 * is queued (net/ipv4/tcp_input.c, __tcp_ack_snd_check) and sizes its
 * buffer for the mark up front (tcp.c, tcp_set_rcvlowat). bench/net,
 * interleaved with the build before it (docs/performance.md): ring mode
 * 1.0-1.3x, p2p 1.6-2.2x as fast on veth at 256 KiB-64 MiB; a flow capped
 * at 1 Gbit/s unchanged. A non-blocking recv returns what is there
 * whatever the mark, so it holds no read back; a stream back on small
 * messages drops it all the same, leaving their ACKs to the kernel's
 * defaults. Never with helpers: epoll reports a socket readable only
 * above the mark, and a helper would sleep through a chunk's last bytes.
 * A kernel that refuses it costs nothing but the gain. */
#define PT_RX_LOWAT (512 * 1024)

static void set_lowat(struct pt_stream *s) {
  int mark = s->bulk ? PT_RX_LOWAT : 1;
  (void)setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof(mark));
  s->lowat = s->bulk;
}

/* Adds stream i to a set; the read first spares the cache line a write
 * once it is in. */
static void mark(atomic_uint *set, int i) {
  if (!(atomic_load_explicit(set, memory_order_relaxed) >> i & 1))
    atomic_fetch_or_explicit(set, 1U << i, memory_order_relaxed);
}

/* Finds the posted buffer of the chunk in s->hdr: 1 found, 0 not posted yet
 * (the stream parks until irecv), -1 the comm failed. */
static int place(struct pt_stream *s) {
  struct pt_comm *c = s->comm;
  const struct pt_chunk_hdr *hd = &s->hdr;
  uint32_t posted = atomic_load_explicit(&c->recv_posted, memory_order_acquire);
  if ((int32_t)(hd->seq - posted) >= 0) return 0;
  struct pt_recv_slot *r =
      &c->rslots[atomic_load_explicit(&c->seq_map[hd->seq % PT_SEQ_MAP], memory_order_relaxed)];
  if (hd->seq - r->base_seq >= (uint32_t)r->n) {
    pt__comm_fail(c, ncclInternalError, PT_WHY_BAD_CHUNK, 0);
    return -1;
  }
  unsigned long long me = (unsigned long long)hd->seq + 1;
  int b = -1;
  for (int i = 0; i < r->n && b < 0; i++)
    if (atomic_load(&r->owner[i]) == me) b = i;
  for (int i = 0; i < r->n && b < 0; i++) {
    unsigned long long expect = 0;
    if (r->tags[i] != hd->tag) continue;
    if (atomic_compare_exchange_strong(&r->owner[i], &expect, me)) {
      atomic_store_explicit(&r->total[i], hd->total, memory_order_relaxed);
      b = i;
    } else if (expect == me) {
      b = i;
    }
  }
  if (b < 0) {
    pt__comm_fail(c, ncclInvalidUsage, PT_WHY_NO_TAG, hd->tag);
    return -1;
  }
  if (hd->total > r->cap[b]) {
    pt__comm_fail(c, ncclInvalidUsage, PT_WHY_TRUNCATED_MSG, 0);
    return -1;
  }
  if (hd->offset > hd->total || hd->len > hd->total - hd->offset || (hd->total && !hd->len)) {
    pt__comm_fail(c, ncclRemoteError, PT_WHY_BAD_CHUNK, 0);
    return -1;
  }
  mark(&c->rx_seen, s->index);
  mark(&c->rx_recent, s->index);
  s->rreq = r;
  s->rbuf = b;
  s->bulk = hd->total > PT_SMALL_MSG;
  if (c->caller_only && s->bulk != s->lowat) set_lowat(s);
  s->dst = r->data[b] + hd->offset;
  s->left = hd->len;
  return 1;
}

static void finish_recv_chunk(struct pt_stream *s) {
  struct pt_recv_slot *r = s->rreq;
  size_t len = s->hdr.len;
  if (atomic_fetch_add(&r->got[s->rbuf], len) + len == s->hdr.total &&
      atomic_fetch_add(&r->msgs_done, 1) + 1 == r->n)
    atomic_store_explicit(&r->h.state, PT_SLOT_DONE, memory_order_release);
  /* the sender starts each message on the stream after the previous
   * one's among those it uses (xfer.c, push: streams 0..n-1 once it has
   * used n): that is where the next one most likely is */
  struct pt_comm *c = s->comm;
  int used = __builtin_popcount(atomic_load_explicit(&c->rx_seen, memory_order_relaxed));
  atomic_store_explicit(&c->rx_hint, s->index + 1 < used ? s->index + 1 : 0, memory_order_relaxed);
  s->rreq = NULL;
  s->phase = PT_RX_HDR;
}

/* One recv call; returns bytes, or -1 after recording why it stopped
 * (0 = would block, with *eof set at end of stream). */
static ssize_t rx(struct pt_stream *s, void *buf, size_t len, int *eof) {
  for (;;) {
    ssize_t n = recv(s->fd, buf, len, MSG_DONTWAIT);
    if (n > 0) return n;
    if (n == 0) {
      *eof = 1;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    fail_errno(s->comm, errno);
    return -1;
  }
}

/* Takes the chunk header at rx_off; -1 after recording a malformed one. */
static int take_header(struct pt_stream *s) {
  memcpy(&s->hdr, s->rxbuf + s->rx_off, sizeof(s->hdr));
  s->rx_off += sizeof(s->hdr);
  int padded = s->hdr.magic == PT_CHUNK_MAGIC_PAD;
  if (!padded && s->hdr.magic != PT_CHUNK_MAGIC) {
    pt__comm_fail(s->comm, ncclRemoteError, PT_WHY_BAD_MAGIC, 0);
    return -1;
  }
  if (padded && (s->hdr.len >= PT_PAD_PAYLOAD || s->hdr.len != s->hdr.total)) {
    pt__comm_fail(s->comm, ncclRemoteError, PT_WHY_BAD_CHUNK, 0);
    return -1;
  }
  /* dropped before the next header, once this chunk is placed */
  s->rx_skip = padded ? PT_PAD_PAYLOAD - s->hdr.len : 0;
  return 0;
}

/* Returns PT_RX_WATCH when a helper thread should watch the stream's data
 * (it stopped inside a chunk, or the stream carries large messages), plus
 * PT_RX_UNDRAINED when bytes may be left in the socket (budget spent), so
 * the edge-triggered registration needs a fresh edge. After a small
 * message with the socket drained it returns 0: the caller's test finds
 * the next header, so a small message never wakes a helper (PT_RECV_IDLE).
 *
 * A short read means the socket was empty at that moment (a TCP receive
 * queue gives all it has), so the stream stops there instead of paying a
 * second recv that could only answer EAGAIN: on a small message that call
 * sat on the round trip's critical path. The exception is a hang-up
 * reported by epoll (fired): the FIN may already sit behind the data, and
 * its event has been consumed, so read until EOF. */
#define PT_RX_WATCH 1
#define PT_RX_UNDRAINED 2

/* Moves the unread bytes of rxbuf to its start and reads behind them;
 * returns rx()'s answer, *short_read when it brought less than asked.
 * After a bulk message the next one is most likely bulk too: take its
 * header alone and its payload straight into the buffer, as NCCL's
 * transport reads its size first. Otherwise read ahead, so a small
 * message costs one recv. */
static ssize_t refill(struct pt_stream *s, int *eof, int *short_read) {
  size_t avail = s->rx_have - s->rx_off;
  memmove(s->rxbuf, s->rxbuf + s->rx_off, avail);
  s->rx_have = avail;
  s->rx_off = 0;
  size_t want = sizeof(s->rxbuf) - avail;
  if (s->bulk && s->rx_skip + sizeof(s->hdr) - avail < want) want = s->rx_skip + sizeof(s->hdr) - avail;
  ssize_t n = rx(s, s->rxbuf + avail, want, eof);
  if (n > 0) s->rx_have += (size_t)n;
  *short_read = n > 0 && (size_t)n < want;
  return n;
}

static int recv_step(struct pt_stream *s, size_t budget, uint32_t fired) {
  struct pt_comm *c = s->comm;
  size_t moved = 0;
  int eof = 0, drained = 0, empty = 0, finished = 0;
  int to_end = (fired & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  ssize_t n;
  while (!failed(c) && s->phase != PT_RX_DEAD) {
    size_t avail = s->rx_have - s->rx_off;
    if (s->phase == PT_RX_HDR) {
      if (s->rx_skip && avail) {
        size_t k = avail < s->rx_skip ? avail : s->rx_skip;
        s->rx_off += k;
        s->rx_skip -= k;
        avail -= k;
      }
      if (s->rx_skip || avail < sizeof(s->hdr)) {
        if (moved >= budget) break;
        /* A chunk just ended and no further header is buffered: on a
         * round trip the next one comes only after our reply, so a recv
         * now would only answer EAGAIN, on the critical path (bench/net
         * round trips of 4-16 KiB took 0.87-0.91x the time without it).
         * test looks again; with helpers a bulk stream keeps reading. */
        if (empty || (finished && !to_end && (c->caller_only || !s->bulk))) {
          drained = 1;
          break;
        }
        n = refill(s, &eof, &empty);
        if (n <= 0) {
          drained = 1;
          break;
        }
        empty &= !to_end;
        continue;
      }
      if (take_header(s) != 0) break;
      s->phase = PT_RX_PARKED;
    }
    if (s->phase == PT_RX_PARKED) {
      int placed = place(s);
      if (placed == 0)
        atomic_store_explicit(&s->parked, (1ULL << 32) | s->hdr.seq, memory_order_release);
      else if (atomic_load_explicit(&s->parked, memory_order_relaxed))
        atomic_store_explicit(&s->parked, 0, memory_order_relaxed);
      if (placed <= 0) break;
      s->phase = PT_RX_DATA;
    }
    if (s->left == 0) {
      finish_recv_chunk(s);
      finished = 1;
      continue;
    }
    avail = s->rx_have - s->rx_off;
    if (avail) {
      size_t k = avail < s->left ? avail : s->left;
      memcpy(s->dst, s->rxbuf + s->rx_off, k);
      s->rx_off += k;
      s->dst += k;
      s->left -= k;
      moved += k;
      continue;
    }
    if (moved >= budget) break;
    if (empty) {
      drained = 1;
      break;
    }
    n = rx(s, s->dst, s->left, &eof);
    if (n <= 0) {
      drained = 1;
      break;
    }
    empty = !to_end && (size_t)n < s->left;
    s->dst += n;
    s->left -= (size_t)n;
    moved += (size_t)n;
  }
  if (eof) {
    if (s->phase == PT_RX_HDR && s->rx_have == s->rx_off && !s->rx_skip) {
      /* A clean end: the peer closed between chunks. Only an error for
       * requests that can no longer complete (test decides). */
      s->phase = PT_RX_DEAD;
      atomic_store(&s->ended, 1);
      atomic_fetch_add(&c->eof_streams, 1);
    } else {
      pt__comm_fail(c, ncclRemoteError, PT_WHY_TRUNCATED_STREAM, 0);
    }
  }
  if (atomic_load_explicit(&c->err, memory_order_relaxed) || s->phase == PT_RX_DEAD ||
      s->phase == PT_RX_PARKED)
    return 0;
  if (!drained) return PT_RX_WATCH | PT_RX_UNDRAINED;
  return s->phase == PT_RX_DATA || s->bulk ? PT_RX_WATCH : 0;
}

static void step(struct pt_stream *s, size_t budget) {
  uint32_t fired = atomic_exchange(&s->fired, 0);
  if (s->comm->magic == PT_MAGIC_RECV) {
    /* Edge-triggered, so nothing to re-arm per event: only a change of
     * interest, or a fresh edge for bytes left unread. */
    int r = recv_step(s, budget, fired);
    int over = atomic_load_explicit(&s->comm->err, memory_order_relaxed) || s->phase == PT_RX_DEAD;
    uint32_t want = r & PT_RX_WATCH ? PT_RECV_BULK : over ? 0 : PT_RECV_IDLE;
    if (want != s->interest || (r & PT_RX_UNDRAINED)) pt__pool_arm(s, want);
    return;
  }
  uint32_t want = send_step(s, budget, fired);
  if (fired && want == 0)
    s->interest = 0; /* one-shot: already disarmed */
  else if (fired || want != s->interest)
    pt__pool_arm(s, want);
}

void pt__stream_run(struct pt_stream *s, size_t budget) {
  /* Announce first, then try to own: an owner that already cleared again
   * will see it before letting go, so no wake-up is ever lost. */
  atomic_store(&s->again, 1);
  if (atomic_exchange(&s->busy, 1)) return;
  do {
    atomic_store(&s->again, 0);
    step(s, budget);
    atomic_store(&s->busy, 0);
  } while (atomic_load(&s->again) && !atomic_exchange(&s->busy, 1));
}
