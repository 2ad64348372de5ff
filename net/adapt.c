/* How many of a send comm's streams carry new messages, decided from what
 * the link shows while it runs (issue 29). A comm whose stream count came
 * from the NIC (not from a setting) starts on one stream: on a plain veth
 * pair with 2 cores extra streams only cost (bench/net ring mode: four
 * streams without helper threads moved 0.71-0.96x of NCCL's one socket). Where
 * a network caps each flow, one stream is stuck at the cap and the others
 * multiply it (bench/net's capped link: ~4x with four).
 *
 * So the sender measures: once PT_ADAPT_BYTES were posted and at least
 * PT_ADAPT_MIN_NS passed since the last look, it reads the bytes its
 * streams had acknowledged (TCP_INFO) and the clock. A flow that moves
 * less than half the link's speed although its socket filled up (so the
 * sender was not the limit) may be capped: after two such looks it
 * tries every stream for two looks, then one stream again for one more
 * look, and keeps every stream only if the flow behaved as a capped one
 * does: the two slow looks agreed (within PT_ADAPT_SPREAD), every stream
 * moved at least PT_ADAPT_GAIN times as much but not more than each
 * stream at that rate could (n streams x the slow rate x the spread), and
 * the last look on one stream came back to the slow rate. Otherwise it goes
 * back to one and waits twice as long as last time before trying again
 * (a starved CPU also makes one flow slow, and there more streams do not
 * help). A flow held back by its shaper moves the same in every look; a
 * fast one that dipped does not: on a plain veth pair in bench/net's ring
 * mode, 1 ms looks read 0.6-3 Gbit/s on one stream, 6-38 Gbit/s on four
 * and 0.03-9 Gbit/s on one again (ACKs come in bursts, and both
 * directions share two cores), and a test on the gain alone kept four
 * streams for good in a third of the runs, which then moved about two
 * thirds of what the others did. A look spans at least 1 ms (a plain veth
 * pair moves 512 KiB in a fraction of that), and a flow capped at 1 Gbit/s
 * needs ~4 ms per look, so it widens after ~20 ms at the earliest (five
 * looks, about 2.5 MiB; bench/net's capped link: 2-10 MiB). The receiver
 * takes chunks on any stream, so nothing needs to be agreed on the wire.
 * Progress thread
 * only (isend); no allocation, no lock, no log. */
#include <linux/tcp.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include "internal.h"

#define PT_ADAPT_BYTES (512u << 10)
#define PT_ADAPT_MIN_NS 1000000
#define PT_ADAPT_LOOKS 2
#define PT_ADAPT_GAIN 2.0
#define PT_ADAPT_SPREAD 1.5
#define PT_ADAPT_BACKOFF_MAX 10

enum { PT_ADAPT_NARROW = 0, PT_ADAPT_PROBE = 1, PT_ADAPT_CONFIRM = 2 };

/* Bytes stream i had acknowledged by the peer; 0 on failure. */
static uint64_t acked(const struct pt_comm *c, int i) {
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(c->streams[i].fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
    return 0;
  return ti.tcpi_bytes_acked;
}

/* Mbit/s moved by the active streams since the last look; -1 at the first. */
static double measure(struct pt_comm *c, int64_t now) {
  struct pt_adapt *a = &c->adapt;
  int64_t dt = now - a->t_ns;
  uint64_t moved = 0;
  for (int i = 0; i < atomic_load_explicit(&c->active, memory_order_relaxed); i++) {
    uint64_t v = acked(c, i);
    if (v > a->acked[i]) moved += v - a->acked[i];
    a->acked[i] = v;
  }
  int first = a->t_ns == 0;
  a->t_ns = now;
  return first || dt <= 0 ? -1 : (double)moved * 8 * 1e3 / (double)dt;
}

/* Streams beyond n finish the chunk they hold and then claim no more
 * (stream.c, send_step); xfer.c's push still runs them until then. */
static void set_active(struct pt_comm *c, int n) {
  atomic_store_explicit(&c->active, n, memory_order_relaxed);
  c->send_first = 0;
  for (int i = 0; i < n; i++) c->adapt.acked[i] = acked(c, i);
}

/* Adds a look to the current phase; 1 once it has PT_ADAPT_LOOKS. */
static int record(struct pt_adapt *a, double mbps) {
  a->lo = a->looks == 0 || mbps < a->lo ? mbps : a->lo;
  a->hi = a->looks == 0 || mbps > a->hi ? mbps : a->hi;
  a->sum += mbps;
  return ++a->looks >= PT_ADAPT_LOOKS;
}

/* No gain: one stream, and a longer wait before the next try. */
static void back_off(struct pt_adapt *a) {
  a->state = PT_ADAPT_NARROW;
  a->wait = 4 << a->backoff;
  if (a->backoff < PT_ADAPT_BACKOFF_MAX) a->backoff++;
}

void pt__adapt_look(struct pt_comm *c, size_t size) {
  struct pt_adapt *a = &c->adapt;
  a->bytes += size;
  if (a->bytes < PT_ADAPT_BYTES) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  if (a->t_ns && now - a->t_ns < PT_ADAPT_MIN_NS) return;
  a->bytes = 0;
  double mbps = measure(c, now);
  /* a flow whose socket never filled was not held back by anything on
   * the way: latency-bound traffic (round trips) proves no cap */
  int backlogged = atomic_exchange_explicit(&c->send_full, 0, memory_order_relaxed);
  if (mbps < 0) return;
  if (a->state == PT_ADAPT_NARROW) {
    if (a->wait) {
      a->wait--;
      return;
    }
    if (!backlogged || mbps >= (double)a->link_mbps / 2) {
      a->looks = 0;
      a->sum = 0;
      return;
    }
    if (!record(a, mbps)) return;
    if (a->hi > PT_ADAPT_SPREAD * a->lo) {
      a->looks = 0; /* the slow looks disagree: a dip, not a cap */
      a->sum = 0;
      return;
    }
    a->narrow_mbps = a->sum / a->looks;
    a->state = PT_ADAPT_PROBE;
    set_active(c, c->nstreams);
  } else if (a->state == PT_ADAPT_PROBE) {
    if (!record(a, mbps)) return;
    /* the better look: streams idle until now start slow (cwnd, buffers) */
    a->wide_mbps = a->hi;
    if (a->wide_mbps >= PT_ADAPT_GAIN * a->narrow_mbps &&
        a->wide_mbps <= PT_ADAPT_SPREAD * c->nstreams * a->narrow_mbps)
      a->state = PT_ADAPT_CONFIRM;
    else
      back_off(a);
    set_active(c, 1);
  } else {
    /* an idle sender's look says nothing about the link */
    if (backlogged && mbps * PT_ADAPT_SPREAD >= a->narrow_mbps && mbps <= PT_ADAPT_SPREAD * a->narrow_mbps &&
        a->wide_mbps >= PT_ADAPT_GAIN * mbps) {
      set_active(c, c->nstreams);
      a->link_mbps = 0; /* decided: every stream from now on */
      return;
    }
    back_off(a);
  }
  a->looks = 0;
  a->sum = 0;
}
