/* Conformance of the net plugin over loopback, through every exported ABI
 * version (each test is a loop test over v8..v12, in its own process):
 * setup without blocking, data of every size, many requests in flight,
 * tags and grouped receives, truncation, closing idle and busy comms, bad
 * handles, connection churn without leaked fds or threads, unload. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "support/net_harness.h"
#include "support/net_wire.h"

static struct nh_net net;
static void *ctx;

static void open_version(int i)
{
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  setenv("PCIE_NET_NSTREAMS", "4", 1);
  /* helper threads whatever the box (a 2-core one has none by default);
   * a test of the caller-only path sets 0 first */
  setenv("PCIE_NET_NTHREADS", "2", 0);
  setenv("PCIE_NET_CONNECT_TIMEOUT_MS", "3000", 1);
  ck_assert_msg(nh_open(&net, nh_versions[i]) == 0, "dlopen/dlsym of v%d", nh_versions[i]);
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
}

static void pair(void **sc, void **rc)
{
  int calls;
  ck_assert_msg(nh_pair(&net, ctx, 0, sc, rc, &calls) == 0,
                "single-thread connect/accept must complete without blocking (%s)",
                nh_last_warn());
}

START_TEST(abi_and_properties)
{
  open_version(_i);
  ck_assert_ptr_null(nh_missing_slot(&net));
  ck_assert_str_eq(nh_name(&net), "pcie");
  int nd = 0;
  ck_assert_int_eq(nh_devices(&net, &nd), ncclSuccess);
  ck_assert_int_eq(nd, 1);
  struct nh_props p;
  ck_assert_int_eq(nh_props(&net, 0, &p), ncclSuccess);
  ck_assert_str_eq(p.name, "lo");
  ck_assert_int_eq(p.ptr_support, NCCL_PTR_HOST);
  ck_assert_int_gt(p.speed, 0);
  ck_assert_int_gt(p.max_comms, 0);
  ck_assert_int_eq(p.max_recvs, 1); /* no NCCL grouped receives (docs/net.md) */
  ck_assert_int_eq(p.reg_is_global, 0); /* registrations are per comm: deregMr fences them */
  ck_assert_int_eq(p.dev_type, NCCL_NET_DEVICE_HOST);
  ck_assert_int_eq(p.vdevs, 1);
  ck_assert_int_eq(p.vdev0, 0);
  ck_assert(p.max_p2p > 0 && p.max_p2p <= NCCL_MAX_NET_SIZE_BYTES);
  ck_assert_int_eq(p.max_multi, 1);
  ck_assert_int_eq(p.rail, -1);
  ck_assert_int_eq(p.plane, -1);
  ck_assert_int_ne(nh_props(&net, 1, &p), ncclSuccess);
  ck_assert_int_ne(nh_props(&net, -1, &p), ncclSuccess);

  /* listen writes at most NCCL_NET_HANDLE_MAXSIZE bytes */
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE + 64];
  memset(handle, 0xa5, sizeof(handle));
  void *lc = NULL;
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  ck_assert_ptr_nonnull(lc);
  for (size_t i = NCCL_NET_HANDLE_MAXSIZE; i < sizeof(handle); i++)
    ck_assert_int_eq(handle[i], 0xa5);
  ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
  ck_assert_int_ne(nh_listen(&net, ctx, 3, handle, &lc), ncclSuccess);
  ck_assert_int_eq(nh_finalize(&net, ctx), ncclSuccess);
}
END_TEST

START_TEST(setup_never_blocks)
{
  open_version(_i);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc, *sc = NULL, *rc = NULL;
  /* accept long before anyone connects, then connect many times before
   * the next accept: every call returns at once with NULL */
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  for (int k = 0; k < 50; k++) {
    double t0 = nh_now_ms();
    ck_assert_int_eq(nh_accept(&net, lc, &rc), ncclSuccess);
    ck_assert_ptr_null(rc);
    ck_assert(nh_now_ms() - t0 < 200);
  }
  for (int k = 0; k < 50; k++) {
    double t0 = nh_now_ms();
    ck_assert_int_eq(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
    ck_assert_msg(!sc, "connect cannot finish before the acceptor acknowledged");
    ck_assert(nh_now_ms() - t0 < 200);
  }
  double end = nh_now_ms() + 5000;
  while ((!sc || !rc) && nh_now_ms() < end) {
    if (!rc)
      ck_assert_int_eq(nh_accept(&net, lc, &rc), ncclSuccess);
    if (!sc)
      ck_assert_int_eq(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
  }
  ck_assert(sc && rc);
  nh_close_listen(&net, lc);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);

  int calls = 0;
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &sc, &rc, &calls), 0);
  ck_assert_int_ge(calls, 2);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

/* Canaries on both sides of every receive buffer; receive capacity larger
 * than the message; test must report the sent size. */
static void check_size(void *sc, void *rc, size_t size, size_t extra, uint64_t seed)
{
  size_t cap = size + extra;
  unsigned char *s = malloc(size + 1), *r = malloc(cap + 128);
  ck_assert(s && r);
  nh_fill(s, size, seed);
  memset(r, 0x5c, cap + 128);
  int got = -1;
  ck_assert_int_eq(nh_xfer(&net, sc, rc, s, size, r + 64, cap, &got), ncclSuccess);
  ck_assert_int_eq(got, (int)size);
  ck_assert_msg(nh_check(r + 64, size, seed) < 0, "payload of %zu bytes differs at %ld", size,
                nh_check(r + 64, size, seed));
  for (size_t i = 0; i < 64; i++)
    ck_assert_int_eq(r[i], 0x5c);
  for (size_t i = 64 + size; i < cap + 128; i++)
    ck_assert_msg(r[i] == 0x5c, "byte %zu past a %zu-byte message was written", i - 64, size);
  free(s);
  free(r);
}

START_TEST(sizes_small_to_large)
{
  static const size_t sizes[] = {0, 1, 127, 128, 129, 4095, 4096, 65535, 65536, 65537,
                                 4 * 65536 - 1, 4 * 65536 + 1, 1 << 20, (4 << 20) + 13,
                                 (16 << 20) + 7};
  void *sc, *rc;
  open_version(_i);
  pair(&sc, &rc);
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
    check_size(sc, rc, sizes[k], k % 2 ? 4096 : 0, k + 1);
  ck_assert_int_eq(nh_close_send(&net, sc), ncclSuccess);
  ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
  nh_finalize(&net, ctx);
}
END_TEST

START_TEST(size_256mb)
{
  void *sc, *rc;
  open_version(4);
  pair(&sc, &rc);
  check_size(sc, rc, 256u << 20, 1, 99);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

#define INFL NCCL_NET_MAX_REQUESTS
#define INFL_SIZE 70000

/* 32 sends posted before any receive, then 32 receives before any send;
 * the 33rd post must answer a NULL request, never block or fail. */
START_TEST(many_in_flight)
{
  void *sc, *rc, *sreq[INFL], *rreq[INFL], *extra;
  unsigned char *sb = malloc(INFL * INFL_SIZE), *rb = malloc(INFL * INFL_SIZE);
  int tag = 1;
  open_version(_i);
  pair(&sc, &rc);
  for (int round = 0; round < 2; round++) {
    memset(rb, 0, INFL * INFL_SIZE);
    for (int k = 0; k < INFL; k++)
      nh_fill(sb + k * INFL_SIZE, INFL_SIZE, round * 100 + k);
    for (int phase = 0; phase < 2; phase++) {
      int sends = (phase == 0) == (round == 0);
      for (int k = 0; k < INFL; k++) {
        void **req = sends ? &sreq[k] : &rreq[k];
        void *data = (sends ? sb : rb) + k * INFL_SIZE;
        size_t size = INFL_SIZE;
        *req = NULL;
        if (sends)
          ck_assert_int_eq(nh_isend(&net, sc, data, size, tag, NULL, req), ncclSuccess);
        else
          ck_assert_int_eq(nh_irecv(&net, rc, 1, &data, &size, &tag, NULL, req), ncclSuccess);
        ck_assert_ptr_nonnull(*req);
      }
    }
    /* every slot is busy now (receives are too, the data fills them) */
    size_t one = 1;
    void *d = rb;
    extra = (void *)0x1; /* NCCL's optional-completion marker */
    ck_assert_int_eq(nh_irecv(&net, rc, 1, &d, &one, &tag, NULL, &extra), ncclSuccess);
    ck_assert_ptr_null(extra);
    /* complete in reverse order on round 0, NCCL's oldest-first on 1 */
    for (int k = 0; k < INFL; k++) {
      int j = round == 0 ? INFL - 1 - k : k, sizes[PT_NH_MAXN];
      ck_assert_int_eq(nh_wait(&net, rreq[j], sizes, 20000, NULL), ncclSuccess);
      ck_assert_int_eq(sizes[0], INFL_SIZE);
      ck_assert_int_eq(nh_wait(&net, sreq[j], NULL, 20000, NULL), ncclSuccess);
    }
    for (int k = 0; k < INFL; k++)
      ck_assert_msg(nh_check(rb + k * INFL_SIZE, INFL_SIZE, round * 100 + k) < 0,
                    "message %d landed in the wrong buffer or was corrupted", k);
  }
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
  free(sb);
  free(rb);
}
END_TEST

/* Small messages queued behind and around large ones on the same comm: a
 * small one rides on whichever stream is free while a large one is still
 * moving on the others, and the inline receive path stops on short reads.
 * Round 0 posts every receive first (data lands while later receives
 * wait), round 1 every send first (data parks until its receive). Each
 * message must land whole, in its own buffer, with its real size. */
#define MIX_N 12
START_TEST(small_and_large_interleaved)
{
  static const size_t sz[MIX_N] = {8 << 20, 8,   1, 0, 4096,  65536,
                                   3 << 20, 100, (1 << 20) + 7, 8, 65537, 16 << 20};
  void *sc, *rc, *sreq[MIX_N], *rreq[MIX_N];
  unsigned char *sb[MIX_N], *rb[MIX_N];
  open_version(_i);
  pair(&sc, &rc);
  for (int k = 0; k < MIX_N; k++) {
    sb[k] = malloc(sz[k] + 1);
    rb[k] = malloc(sz[k] + 64);
    ck_assert(sb[k] && rb[k]);
  }
  for (int round = 0; round < 2; round++) {
    for (int k = 0; k < MIX_N; k++) {
      nh_fill(sb[k], sz[k], round * 1000 + k);
      memset(rb[k], 0xee, sz[k] + 64);
    }
    for (int phase = 0; phase < 2; phase++) {
      int sends = (phase == 0) == (round == 1);
      for (int k = 0; k < MIX_N; k++) {
        int tag = 100 + k;
        size_t cap = sz[k] + 64;
        void *d = rb[k];
        void **req = sends ? &sreq[k] : &rreq[k];
        *req = NULL;
        if (sends)
          ck_assert_int_eq(nh_isend(&net, sc, sb[k], sz[k], tag, NULL, req), ncclSuccess);
        else
          ck_assert_int_eq(nh_irecv(&net, rc, 1, &d, &cap, &tag, NULL, req), ncclSuccess);
        ck_assert_ptr_nonnull(*req);
      }
    }
    for (int k = 0; k < MIX_N; k++) {
      int sizes[PT_NH_MAXN];
      ck_assert_int_eq(nh_wait(&net, rreq[k], sizes, 20000, NULL), ncclSuccess);
      ck_assert_int_eq(sizes[0], (int)sz[k]);
      ck_assert_int_eq(nh_wait(&net, sreq[k], NULL, 20000, NULL), ncclSuccess);
      ck_assert_msg(nh_check(rb[k], sz[k], round * 1000 + k) < 0,
                    "round %d: message %d (%zu B) corrupted or misplaced", round, k, sz[k]);
      ck_assert_msg(rb[k][sz[k]] == 0xee, "round %d: message %d overran its size", round, k);
    }
  }
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
  for (int k = 0; k < MIX_N; k++) {
    free(sb[k]);
    free(rb[k]);
  }
}
END_TEST

/* A grouped receive takes the next n messages; each lands in the buffer
 * whose tag it carries, whatever order they were sent in. */
START_TEST(tags_and_grouped_receives)
{
  enum { N = 8 };
  void *sc, *rc, *rreq = NULL, *sreq[N];
  void *bufs[N];
  size_t caps[N];
  int tags[N], order[N] = {5, 2, 7, 0, 3, 6, 1, 4}, sizes[PT_NH_MAXN];
  unsigned char *sb[N];
  open_version(_i);
  pair(&sc, &rc);
  for (int g = 2; g <= N; g += 3) {
    for (int i = 0; i < g; i++) {
      tags[i] = 100 + i;
      caps[i] = 300000;
      bufs[i] = calloc(1, caps[i]);
    }
    ck_assert_int_eq(nh_irecv(&net, rc, g, bufs, caps, tags, NULL, &rreq), ncclSuccess);
    ck_assert_ptr_nonnull(rreq);
    for (int k = 0, i; k < N; k++) {
      if ((i = order[k]) >= g)
        continue;
      size_t size = 1000 + 37000 * (size_t)i; /* 0..7 chunks, different per tag */
      sb[i] = malloc(size);
      nh_fill(sb[i], size, 1000 + i);
      sreq[i] = NULL;
      ck_assert_int_eq(nh_isend(&net, sc, sb[i], size, tags[i], NULL, &sreq[i]), ncclSuccess);
      ck_assert_ptr_nonnull(sreq[i]);
    }
    memset(sizes, 0xff, sizeof(sizes));
    ck_assert_int_eq(nh_wait(&net, rreq, sizes, 20000, NULL), ncclSuccess);
    for (int i = 0; i < g; i++) {
      ck_assert_int_eq(nh_wait(&net, sreq[i], NULL, 20000, NULL), ncclSuccess);
      ck_assert_int_eq(sizes[i], 1000 + 37000 * i);
      ck_assert_msg(nh_check(bufs[i], (size_t)sizes[i], 1000 + i) < 0, "tag %d's buffer", tags[i]);
      free(bufs[i]);
      free(sb[i]);
    }
  }
  /* a tag no posted buffer carries fails the receive, it never hangs */
  int tag = 1, bad = 2, got;
  char b[16] = {0}, r[16];
  void *rp = r, *req = NULL, *sr = NULL;
  size_t cap = sizeof(r);
  ck_assert_int_eq(nh_irecv(&net, rc, 1, &rp, &cap, &tag, NULL, &req), ncclSuccess);
  ck_assert_int_eq(nh_isend(&net, sc, b, sizeof(b), bad, NULL, &sr), ncclSuccess);
  ck_assert_int_eq(nh_wait(&net, req, &got, 5000, NULL), ncclInvalidUsage);
  ck_assert_msg(strstr(nh_last_warn(), "tag 2"), "WARN names the tag: %s", nh_last_warn());
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

START_TEST(send_larger_than_receive_fails)
{
  void *sc, *rc;
  unsigned char s[5000], r[4000 + 64];
  int got;
  open_version(_i);
  pair(&sc, &rc);
  memset(r, 0x77, sizeof(r));
  nh_fill(s, sizeof(s), 3);
  ck_assert_int_eq(nh_xfer(&net, sc, rc, s, sizeof(s), r, 4000, &got), ncclInvalidUsage);
  ck_assert_msg(strstr(nh_last_warn(), "truncated"), "WARN says why: %s", nh_last_warn());
  for (int i = 4000; i < 4064; i++)
    ck_assert_int_eq(r[i], 0x77);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

START_TEST(close_idle_in_every_order)
{
  open_version(_i);
  for (int order = 0; order < 2; order++) {
    void *sc, *rc;
    pair(&sc, &rc);
    if (order == 0) {
      ck_assert_int_eq(nh_close_send(&net, sc), ncclSuccess);
      ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
    } else {
      ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
      ck_assert_int_eq(nh_close_send(&net, sc), ncclSuccess);
    }
  }
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc;
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess); /* never accepted */
  nh_finalize(&net, ctx);
}
END_TEST

/* NCCL's abort path: dereg and close with requests in flight, both ends,
 * must return at once and release everything. */
START_TEST(close_while_busy)
{
  enum { SZ = 4 << 20 };
  void *sc, *rc, *req, *smh, *rmh;
  char *sb = malloc(SZ), *rb = malloc(SZ);
  int tag = 0, fds = nh_count_fds();
  open_version(_i);
  pair(&sc, &rc);
  ck_assert_int_eq(nh_reg(&net, sc, sb, SZ, NCCL_PTR_HOST, &smh), ncclSuccess);
  ck_assert_int_eq(nh_reg(&net, rc, rb, SZ, NCCL_PTR_HOST, &rmh), ncclSuccess);
  for (int k = 0; k < NCCL_NET_MAX_REQUESTS; k++) {
    req = NULL;
    ck_assert_int_eq(nh_isend(&net, sc, sb, SZ, tag, smh, &req), ncclSuccess);
  }
  void *d = rb;
  size_t cap = SZ;
  ck_assert_int_eq(nh_irecv(&net, rc, 1, &d, &cap, &tag, &rmh, &req), ncclSuccess);
  double t0 = nh_now_ms();
  ck_assert_int_eq(nh_dereg(&net, sc, smh), ncclSuccess);
  ck_assert_int_eq(nh_dereg(&net, rc, rmh), ncclSuccess);
  ck_assert_int_eq(nh_close_send(&net, sc), ncclSuccess);
  ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
  ck_assert_msg(nh_now_ms() - t0 < 1000, "close with requests in flight took %.0f ms",
                nh_now_ms() - t0);
  nh_finalize(&net, ctx);
  free(sb);
  free(rb);
  ck_assert_int_eq(nh_count_fds(), fds);
}
END_TEST

START_TEST(bad_handles)
{
  void *sc, *rc, *req = (void *)0x1, *mh;
  int done = 0, tag = 0;
  char buf[64], junk[NCCL_NET_HANDLE_MAXSIZE];
  open_version(_i);
  pair(&sc, &rc);
  ck_assert_int_eq(nh_test(&net, NULL, &done, NULL), ncclInternalError);
  ck_assert_int_eq(nh_test(&net, junk, &done, NULL), ncclInternalError);
  ck_assert_int_ne(nh_isend(&net, NULL, buf, 8, tag, NULL, &req), ncclSuccess);
  ck_assert_int_ne(nh_isend(&net, rc, buf, 8, tag, NULL, &req), ncclSuccess);
  ck_assert_ptr_null(req);
  void *d = buf;
  size_t cap = 8;
  ck_assert_int_ne(nh_irecv(&net, sc, 1, &d, &cap, &tag, NULL, &req), ncclSuccess);
  ck_assert_int_ne(nh_irecv(&net, rc, 0, &d, &cap, &tag, NULL, &req), ncclSuccess);
  ck_assert_int_ne(nh_close_send(&net, rc), ncclSuccess);
  ck_assert_int_ne(nh_close_recv(&net, sc), ncclSuccess);
  ck_assert_int_ne(nh_close_listen(&net, sc), ncclSuccess);
  ck_assert_int_ne(nh_reg(&net, sc, buf, sizeof(buf), NCCL_PTR_CUDA, &mh), ncclSuccess);
  ck_assert_int_ne(nh_reg(&net, NULL, buf, sizeof(buf), NCCL_PTR_HOST, &mh), ncclSuccess);
  ck_assert_int_ne(nh_dereg(&net, sc, junk), ncclSuccess);
  /* a buffer outside its registration */
  ck_assert_int_eq(nh_reg(&net, sc, buf, 16, NCCL_PTR_HOST, &mh), ncclSuccess);
  ck_assert_int_ne(nh_isend(&net, sc, buf + 8, 16, tag, mh, &req), ncclSuccess);
  ck_assert_int_eq(nh_dereg(&net, sc, mh), ncclSuccess);
  /* iflush of host memory: nothing to do, NULL request */
  req = (void *)0x1;
  ck_assert_int_eq(nh_iflush(&net, rc, buf, 8, NULL, &req), ncclSuccess);
  ck_assert_ptr_null(req);
  /* a test after done is misuse, not a second completion */
  int got;
  ck_assert_int_eq(nh_xfer(&net, sc, rc, buf, 8, buf + 32, 16, &got), ncclSuccess);
  /* a random handle is refused, never dereferenced */
  void *s2 = NULL;
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (char)(i * 37 + 11);
  ck_assert_int_ne(nh_connect(&net, ctx, 0, junk, &s2), ncclSuccess);
  ck_assert_ptr_null(s2);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

START_TEST(connect_to_closed_listener_fails)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc, *sc = NULL;
  ncclResult_t r = ncclSuccess;
  open_version(_i);
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
  double t0 = nh_now_ms();
  while (r == ncclSuccess && !sc && nh_now_ms() - t0 < 5000)
    r = nh_connect(&net, ctx, 0, handle, &sc);
  ck_assert_int_eq(r, ncclRemoteError);
  ck_assert_ptr_null(sc);
  nh_finalize(&net, ctx);
}
END_TEST

/* 150 connect/transfer/close cycles leave fds and threads as they were;
 * after the last comm closes no helper thread is left. */
START_TEST(churn_without_leaks)
{
  char s[1024], r[1024];
  int got;
  open_version(_i);
  nh_warm_threads();
  int fds = nh_count_fds(), threads = nh_count_threads();
  for (int k = 0; k < 150; k++) {
    void *sc, *rc;
    pair(&sc, &rc);
    nh_fill(s, sizeof(s), k);
    ck_assert_int_eq(nh_xfer(&net, sc, rc, s, sizeof(s), r, sizeof(r), &got), ncclSuccess);
    ck_assert(nh_check(r, sizeof(r), k) < 0);
    ck_assert_int_eq(nh_close_send(&net, sc), ncclSuccess);
    ck_assert_int_eq(nh_close_recv(&net, rc), ncclSuccess);
  }
  ck_assert_int_eq(nh_count_fds(), fds);
  ck_assert_int_eq(nh_settled_threads(threads), threads);
  nh_finalize(&net, ctx);
}
END_TEST

/* Two ranks of a ring all-reduce in two processes (issue 29): each drives
 * a send comm to the other and a receive comm from it per channel, two
 * channels, all four from one thread as NCCL's proxy does, in Simple's
 * ring all-reduce shape (2 steps of 512 KiB per isend, 4 in flight, slots
 * reused as soon as their request completes). Every byte of both
 * directions is checked against its own pattern (rank, channel, step). */
#define RING_CH 2
#define RING_SLICE (1 << 20)
#define RING_INFLIGHT 4
#define RING_BYTES ((9u << 20) + 4096 + 24)

struct ring_dir {
  void *comm, *mh, *req[RING_INFLIGHT];
  char *buf;
  int send;
  uint64_t seed;
  long posted, done;
};

/* Both ranks exchange handles and connect a send and a receive comm per
 * channel, then register the buffers; 0, or a message in err. */
static int ring_connect(int side, int to, int from, struct ring_dir *d, char *err, size_t len)
{
  char mine[RING_CH][NCCL_NET_HANDLE_MAXSIZE], theirs[RING_CH][NCCL_NET_HANDLE_MAXSIZE];
  void *lc[RING_CH];
  for (int ch = 0; ch < RING_CH; ch++) {
    if (nh_listen(&net, ctx, 0, mine[ch], &lc[ch]) != ncclSuccess)
      return snprintf(err, len, "listen: %s", nh_last_warn()), 1;
    if (write(to, mine[ch], sizeof(mine[ch])) != (ssize_t)sizeof(mine[ch]))
      return snprintf(err, len, "pipe"), 1;
  }
  for (int ch = 0; ch < RING_CH; ch++)
    if (read(from, theirs[ch], sizeof(theirs[ch])) != (ssize_t)sizeof(theirs[ch]))
      return snprintf(err, len, "the other rank died during setup"), 1;
  for (int ch = 0; ch < RING_CH; ch++) {
    d[2 * ch] = (struct ring_dir){.send = 1, .seed = (uint64_t)(side * RING_CH + ch) << 20};
    d[2 * ch + 1] = (struct ring_dir){.seed = (uint64_t)((1 - side) * RING_CH + ch) << 20};
  }
  double end = nh_now_ms() + 10000;
  for (int ready = 0; ready < 2 * RING_CH;) {
    ready = 0;
    for (int ch = 0; ch < RING_CH; ch++) {
      if (!d[2 * ch].comm && nh_connect(&net, ctx, 0, theirs[ch], &d[2 * ch].comm) != ncclSuccess)
        return snprintf(err, len, "connect: %s", nh_last_warn()), 1;
      if (!d[2 * ch + 1].comm && nh_accept(&net, lc[ch], &d[2 * ch + 1].comm) != ncclSuccess)
        return snprintf(err, len, "accept: %s", nh_last_warn()), 1;
      ready += !!d[2 * ch].comm + !!d[2 * ch + 1].comm;
    }
    if (nh_now_ms() > end)
      return snprintf(err, len, "no ring after 10 s"), 1;
  }
  for (int ch = 0; ch < RING_CH; ch++)
    nh_close_listen(&net, lc[ch]);
  for (int i = 0; i < 2 * RING_CH; i++) {
    d[i].buf = malloc((size_t)RING_INFLIGHT * RING_SLICE);
    if (!d[i].buf || nh_reg(&net, d[i].comm, d[i].buf, (size_t)RING_INFLIGHT * RING_SLICE,
                            NCCL_PTR_HOST, &d[i].mh) != ncclSuccess)
      return snprintf(err, len, "regMr"), 1;
  }
  return 0;
}

/* One proxy turn on direction i: post its next step if the slot is free,
 * test the oldest, check a received step's every byte; 0, or a message. */
static int ring_turn(struct ring_dir *d, int i, int side, char *err, size_t len)
{
  struct ring_dir *r = &d[i];
  long nsteps = (long)((RING_BYTES + RING_SLICE - 1) / RING_SLICE);
  int k = (int)(r->posted % RING_INFLIGHT), tag = 0;
  char *slot = r->buf + (size_t)k * RING_SLICE;
  if (r->posted < nsteps && !r->req[k]) {
    size_t off = (size_t)r->posted * RING_SLICE;
    size_t n = RING_BYTES - off < RING_SLICE ? RING_BYTES - off : RING_SLICE, cap = RING_SLICE;
    void *data = slot;
    ncclResult_t res;
    if (r->send) {
      nh_fill(slot, n, r->seed + (uint64_t)r->posted);
      res = nh_isend(&net, r->comm, slot, n, tag, r->mh, &r->req[k]);
    } else {
      memset(slot, 0xee, RING_SLICE);
      res = nh_irecv(&net, r->comm, 1, &data, &cap, &tag, &r->mh, &r->req[k]);
    }
    if (res != ncclSuccess)
      return snprintf(err, len, "isend/irecv: %s", nh_last_warn()), 1;
    if (r->req[k])
      r->posted++;
  }
  int o = (int)(r->done % RING_INFLIGHT), fin = 0, sizes[64];
  if (!r->req[o])
    return 0;
  if (nh_test(&net, r->req[o], &fin, sizes) != ncclSuccess)
    return snprintf(err, len, "test: %s", nh_last_warn()), 1;
  if (!fin)
    return 0;
  r->req[o] = NULL;
  size_t off = (size_t)r->done * RING_SLICE;
  size_t n = RING_BYTES - off < RING_SLICE ? RING_BYTES - off : RING_SLICE;
  if (!r->send) {
    char *got = r->buf + (size_t)o * RING_SLICE;
    long bad = nh_check(got, n, r->seed + (uint64_t)r->done);
    if ((size_t)sizes[0] != n || bad >= 0)
      return snprintf(err, len, "rank %d channel %d step %ld: %d bytes (want %zu), first "
                      "bad byte %ld", side, i / 2, r->done, sizes[0], n, bad), 1;
  }
  r->done++;
  return 0;
}

/* 0, or a message in err. */
static int ring_rank(int side, int to, int from, char *err, size_t len)
{
  struct ring_dir d[2 * RING_CH];
  long nsteps = (long)((RING_BYTES + RING_SLICE - 1) / RING_SLICE);
  memset(d, 0, sizeof(d));
  if (ring_connect(side, to, from, d, err, len))
    return 1;
  double end = nh_now_ms() + 30000;
  for (int busy = 1; busy;) {
    busy = 0;
    for (int i = 0; i < 2 * RING_CH; i++) {
      if (d[i].done == nsteps)
        continue;
      busy = 1;
      if (ring_turn(d, i, side, err, len))
        return 1;
    }
    if (nh_now_ms() > end)
      return snprintf(err, len, "ring transfer unfinished after 30 s"), 1;
  }
  for (int i = 0; i < 2 * RING_CH; i++)
    if (nh_dereg(&net, d[i].comm, d[i].mh) != ncclSuccess)
      return snprintf(err, len, "deregMr"), 1;
  /* both ranks have everything before either closes */
  char c = 0;
  if (write(to, &c, 1) != 1 || read(from, &c, 1) != 1)
    return snprintf(err, len, "the other rank died at the end"), 1;
  for (int i = 0; i < 2 * RING_CH; i++) {
    if (d[i].send)
      nh_close_send(&net, d[i].comm);
    else
      nh_close_recv(&net, d[i].comm);
    free(d[i].buf);
  }
  return 0;
}

START_TEST(ring_both_directions_two_channels)
{
  int ab[2], ba[2];
  char err[512] = "";
  /* the last round: v12 with PCIE_NET_NTHREADS=0, where the proxy thread
   * alone moves every byte (no helper thread may exist) */
  int caller_only = _i == NH_NVERSIONS;
  if (caller_only) {
    setenv("PCIE_NET_NTHREADS", "0", 1);
    open_version(NH_NVERSIONS - 1);
    void *sc, *rc;
    int threads = nh_count_threads();
    pair(&sc, &rc);
    ck_assert_int_eq(nh_count_threads(), threads);
    nh_close_send(&net, sc);
    nh_close_recv(&net, rc);
    nh_finalize(&net, ctx);
  }
  ck_assert(pipe(ab) == 0 && pipe(ba) == 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  open_version(caller_only ? NH_NVERSIONS - 1 : _i);
  if (pid == 0) {
    int rc = ring_rank(1, ba[1], ab[0], err, sizeof(err));
    if (rc)
      fprintf(stderr, "ring rank 1: %s\n", err);
    _exit(rc);
  }
  close(ab[0]);
  close(ba[1]);
  int rc = ring_rank(0, ab[1], ba[0], err, sizeof(err));
  close(ab[1]); /* lets a waiting rank 1 fail instead of hanging */
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(rc == 0, "ring rank 0: %s", err);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ring rank 1 failed (see stderr)");
  nh_finalize(&net, ctx);
}
END_TEST

/* Out of descriptors (issue 30 §3). Under a limit of 128-135 open files,
 * connect/accept pairs as NCCL makes them (listen, connect and accept
 * alternated, listen closed after its accept) until one fails for want of
 * descriptors, then everything closed: every descriptor must be back and
 * the helper threads gone, before any finalize. Eight limits in a row put
 * the failure on every step (listen, each of connect's sockets, each of
 * accept's): with accept out of descriptors and the connector's handshake
 * already answered, the connect was left holding its 4 sockets (12 open
 * afterwards against 8 before). */
START_TEST(fd_exhaustion_returns_every_descriptor)
{
  enum { MAX = 64 };
  void *scs[MAX], *rcs[MAX];
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  struct rlimit lim, old;
  open_version(_i);
  nh_warm_threads();
  int fds = nh_count_fds(), threads = nh_count_threads();
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
  for (rlim_t limit = 128; limit < 136; limit++) {
    lim = old;
    lim.rlim_cur = limit;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &lim), 0);
    memset(scs, 0, sizeof(scs));
    memset(rcs, 0, sizeof(rcs));
    int k, failed = 0;
    for (k = 0; k < MAX && !failed; k++) {
      void *lc = NULL;
      if (nh_listen(&net, ctx, 0, handle, &lc) != ncclSuccess)
        break;
      double end = nh_now_ms() + 3000;
      while ((!scs[k] || !rcs[k]) && !failed && nh_now_ms() < end) {
        if (!scs[k] && nh_connect(&net, ctx, 0, handle, &scs[k]) != ncclSuccess)
          failed = 1;
        if (!rcs[k] && !failed && nh_accept(&net, lc, &rcs[k]) != ncclSuccess)
          failed = 1;
      }
      ck_assert_msg(failed || (scs[k] && rcs[k]), "pair %d neither connected nor failed in 3 s "
                    "(limit %d)", k, (int)limit);
      ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
    }
    ck_assert_msg(k < MAX, "%d descriptors must run out before %d connections", (int)limit, MAX);
    for (int i = 0; i < MAX; i++) {
      if (scs[i])
        ck_assert_int_eq(nh_close_send(&net, scs[i]), ncclSuccess);
      if (rcs[i])
        ck_assert_int_eq(nh_close_recv(&net, rcs[i]), ncclSuccess);
    }
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
    ck_assert_msg(nh_count_fds() == fds, "limit %d: %d descriptors open after closing everything, "
                  "%d before (%d pairs, last WARN: %s)", (int)limit, nh_count_fds(), fds, k,
                  nh_last_warn());
    ck_assert_int_eq(nh_settled_threads(threads), threads);
  }
  /* A connect given up on while its listener never accepts (as when the
   * acceptor is out of descriptors): closing the listener resets its
   * streams, and the connect's sockets come back without a finalize. A
   * later connect on the same handle fails instead of touching them. */
  void *lc, *sc = NULL;
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  ck_assert_int_eq(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
  ck_assert_ptr_null(sc);
  ck_assert_int_gt(nh_count_fds(), fds + 4);
  ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
  ck_assert_int_eq(nh_count_fds(), fds);
  ck_assert_int_ne(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
  ck_assert_ptr_null(sc);
  nh_finalize(&net, ctx);
}
END_TEST

/* NCCL >= 2.28 unloads the library after the last finalize and loads it
 * again for the next communicator. */
START_TEST(finalize_unload_reload)
{
  void *c2, *sc, *rc;
  nh_warm_threads();
  int threads = nh_count_threads(), fds = nh_count_fds();
  open_version(_i + 3); /* v11, v12: the versions with finalize */
  ck_assert_int_eq(nh_init(&net, &c2), ncclSuccess);
  ck_assert_ptr_ne(ctx, c2);
  pair(&sc, &rc);
  ck_assert_int_gt(nh_count_threads(), threads);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  ck_assert_int_eq(nh_finalize(&net, c2), ncclSuccess);
  ck_assert_int_eq(nh_finalize(&net, ctx), ncclSuccess);
  ck_assert_int_eq(nh_settled_threads(threads), threads);
  nh_close(&net);
  ck_assert_int_eq(nh_count_fds(), fds);
  open_version(_i + 3);
  pair(&sc, &rc);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  ck_assert_int_eq(nh_finalize(&net, ctx), ncclSuccess);
  nh_close(&net);
  ck_assert_int_eq(nh_settled_threads(threads), threads);
}
END_TEST

/* An abort during setup: NCCL stops calling connect for a handle it will
 * never finish, closes the listen comm and finalizes. The half-open
 * connect's sockets must not outlive finalize (the library is unloaded). */
START_TEST(finalize_frees_abandoned_connect)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc, *sc = NULL;
  int fds = nh_count_fds();
  open_version(_i + 3); /* v11, v12: the versions with finalize */
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  ck_assert_int_eq(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
  ck_assert_int_eq(nh_connect(&net, ctx, 0, handle, &sc), ncclSuccess);
  ck_assert_ptr_null(sc); /* never accepted: still in progress */
  ck_assert_int_gt(nh_count_fds(), fds + 4);
  ck_assert_int_eq(nh_close_listen(&net, lc), ncclSuccess);
  ck_assert_int_eq(nh_finalize(&net, ctx), ncclSuccess);
  nh_close(&net);
  ck_assert_int_eq(nh_count_fds(), fds);
}
END_TEST

START_TEST(interface_selection)
{
  struct nh_props p;
  int nd;
  ck_assert_int_eq(nh_open(&net, 12), 0);
  setenv("PCIE_NET_IFNAME", "nosuchif", 1);
  ck_assert_int_ne(nh_init(&net, &ctx), ncclSuccess);
  ck_assert_msg(strstr(nh_last_warn(), "nosuchif"), "WARN names the setting: %s", nh_last_warn());
  setenv("PCIE_NET_IFNAME", "^lo,nosuch", 1); /* excluding lo must never yield lo */
  if (nh_init(&net, &ctx) == ncclSuccess) {
    ck_assert_int_eq(nh_devices(&net, &nd), ncclSuccess);
    for (int d = 0; d < nd; d++) {
      ck_assert_int_eq(nh_props(&net, d, &p), ncclSuccess);
      ck_assert_str_ne(p.name, "lo");
    }
    nh_finalize(&net, ctx);
  }
  setenv("PCIE_NET_IFNAME", "l", 1); /* a prefix */
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
  ck_assert_int_eq(nh_props(&net, 0, &p), ncclSuccess);
  ck_assert_str_eq(p.name, "lo");
  nh_finalize(&net, ctx);
  setenv("PCIE_NET_IFNAME", "=l", 1); /* exact: "l" is not "lo" */
  ck_assert_int_ne(nh_init(&net, &ctx), ncclSuccess);
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  setenv("PCIE_NET_NSTREAMS", "0", 1); /* out of range: rejected, not defaulted */
  ck_assert_int_ne(nh_init(&net, &ctx), ncclSuccess);
  ck_assert_msg(strstr(nh_last_warn(), "PCIE_NET_NSTREAMS"), "%s", nh_last_warn());
  unsetenv("PCIE_NET_NSTREAMS");
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
  nh_finalize(&net, ctx);
}
END_TEST

/* The name of device 0 after an init under the current environment, or
 * "" when init fails. */
static const char *dev0_name(char *buf, size_t len)
{
  struct nh_props p;
  buf[0] = 0;
  if (nh_init(&net, &ctx) != ncclSuccess)
    return buf;
  if (nh_props(&net, 0, &p) == ncclSuccess)
    snprintf(buf, len, "%s", p.name);
  nh_finalize(&net, ctx);
  return buf;
}

/* NCCL's own variables (issue 21): NCCL_SOCKET_IFNAME picks the interfaces
 * when PCIE_NET_IFNAME is unset, with NCCL's syntax (prefix, '^', '=',
 * ":port" suffixes ignored, values under two characters ignored);
 * NCCL_SOCKET_FAMILY keeps only addresses of that family. */
START_TEST(nccl_socket_variables)
{
  char name[64];
  ck_assert_int_eq(nh_open(&net, 12), 0);
  unsetenv("PCIE_NET_IFNAME");
  unsetenv("NCCL_SOCKET_FAMILY");
  setenv("NCCL_SOCKET_IFNAME", "lo", 1); /* the probe's case: NCCL's transport picks lo */
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "lo");
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "lo");
  setenv("NCCL_SOCKET_IFNAME", "nosuch,lo:1", 1); /* second entry, port suffix */
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "lo");
  setenv("NCCL_SOCKET_IFNAME", "=l", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "");
  ck_assert_msg(strstr(nh_last_warn(), "NCCL_SOCKET_IFNAME='=l'"), "%s", nh_last_warn());
  setenv("NCCL_SOCKET_IFNAME", "^lo", 1);
  ck_assert_str_ne(dev0_name(name, sizeof(name)), "lo");
  /* the project's variable wins */
  setenv("PCIE_NET_IFNAME", "=nosuch", 1);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "");
  ck_assert_msg(strstr(nh_last_warn(), "PCIE_NET_IFNAME='=nosuch'"), "%s", nh_last_warn());
  setenv("PCIE_NET_IFNAME", "lo", 1);
  setenv("NCCL_SOCKET_IFNAME", "=nosuch", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "lo");
  /* lo's only IPv6 address is ::1, which NCCL skips too: nothing left */
  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "");
  ck_assert_msg(strstr(nh_last_warn(), "NCCL_SOCKET_FAMILY=AF_INET6"), "%s", nh_last_warn());
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "lo");
  setenv("NCCL_SOCKET_FAMILY", "inet6", 1);
  ck_assert_str_eq(dev0_name(name, sizeof(name)), "");
  ck_assert_msg(strstr(nh_last_warn(), "bad NCCL_SOCKET_FAMILY='inet6'"), "%s", nh_last_warn());
  unsetenv("NCCL_SOCKET_FAMILY");
  unsetenv("NCCL_SOCKET_IFNAME");
}
END_TEST

/* The stream count a listener puts in its handle under the current
 * environment (v12, device lo). */
static int handle_streams(void)
{
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc;
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  int n = ((const struct nw_handle *)handle)->nstreams;
  nh_close_listen(&net, lc);
  nh_finalize(&net, ctx);
  return n;
}

/* NCCL's conventions for its socket transport's socket count (issue 29):
 * with PCIE_NET_NSTREAMS unset, NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD
 * streams (the unset one at 1), at most 16; PCIE_NET_NSTREAMS wins; a bad
 * value fails init with the variable's name. */
START_TEST(stream_count_from_nccl_variables)
{
  ck_assert_int_eq(nh_open(&net, 12), 0);
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  unsetenv("PCIE_NET_NSTREAMS");
  unsetenv("NCCL_SOCKET_NTHREADS");
  unsetenv("NCCL_NSOCKS_PERTHREAD");
  ck_assert_int_eq(handle_streams(), 1); /* lo: never a capped flow, one stream as NCCL */
  setenv("NCCL_SOCKET_NTHREADS", "4", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  ck_assert_int_eq(handle_streams(), 8);
  unsetenv("NCCL_SOCKET_NTHREADS");
  ck_assert_int_eq(handle_streams(), 2);
  setenv("NCCL_NSOCKS_PERTHREAD", "8", 1);
  setenv("NCCL_SOCKET_NTHREADS", "2", 1); /* AWS's 16 */
  ck_assert_int_eq(handle_streams(), 16);
  setenv("NCCL_SOCKET_NTHREADS", "16", 1); /* 128 sockets: capped */
  ck_assert_int_eq(handle_streams(), 16);
  setenv("NCCL_SOCKET_NTHREADS", "0", 1); /* NCCL: one socket, the proxy thread's */
  ck_assert_int_eq(handle_streams(), 1);
  setenv("PCIE_NET_NSTREAMS", "3", 1);
  ck_assert_int_eq(handle_streams(), 3);
  unsetenv("PCIE_NET_NSTREAMS");
  setenv("NCCL_SOCKET_NTHREADS", "x", 1);
  ck_assert_int_ne(nh_init(&net, &ctx), ncclSuccess);
  ck_assert_msg(strstr(nh_last_warn(), "NCCL_SOCKET_NTHREADS"), "%s", nh_last_warn());
  unsetenv("NCCL_SOCKET_NTHREADS");
  unsetenv("NCCL_NSOCKS_PERTHREAD");
}
END_TEST

/* With no setting, a box below 3 cores gets no helper thread: the proxy
 * thread moves every byte, as NCCL's transport (on 2 cores helpers only
 * cost, bench/net ring mode); bigger boxes one per core up to 4. And a
 * comm to lo uses one stream and never adapts (no network to cap it). */
START_TEST(defaults_follow_cores_and_link)
{
  void *sc, *rc;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int want = ncpu < 3 ? 0 : ncpu > 4 ? 4 : (int)ncpu;
  unsetenv("PCIE_NET_NTHREADS");
  unsetenv("NCCL_SOCKET_NTHREADS");
  unsetenv("NCCL_NSOCKS_PERTHREAD");
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  unsetenv("PCIE_NET_NSTREAMS");
  nh_warm_threads();
  int threads = nh_count_threads();
  ck_assert_int_eq(nh_open(&net, 12), 0);
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc;
  ck_assert_int_eq(nh_listen(&net, ctx, 0, handle, &lc), ncclSuccess);
  const struct nw_handle *h = (const struct nw_handle *)handle;
  ck_assert_int_eq(h->nstreams, 1);
  ck_assert_int_eq(h->flags, NW_HANDLE_PAD); /* no NW_HANDLE_ADAPT on lo */
  nh_close_listen(&net, lc);
  ck_assert_int_eq(nh_pair(&net, ctx, 0, &sc, &rc, NULL), 0);
  ck_assert_int_eq(nh_count_threads() - threads, want);
  /* every byte over the pair's one stream, moved by the caller alone
   * where there is no helper */
  check_size(sc, rc, (3 << 20) + 5, 4096, 29);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

/* Context switches of the plugin's helper threads (named pcie-net) so far. */
static long helper_switches(void)
{
  long total = 0;
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], line[256];
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    int ours = f && fgets(line, sizeof(line), f) && strncmp(line, "pcie-net", 8) == 0;
    if (f)
      fclose(f);
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    if (!ours || !(f = fopen(path, "r")))
      continue;
    long v;
    while (fgets(line, sizeof(line), f))
      if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
          sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
        total += v;
    fclose(f);
  }
  if (d)
    closedir(d);
  return total;
}

/* Small messages move on the caller's thread: isend writes header and
 * payload itself, test reads them, and no helper thread is woken (a
 * wake-up per message was a context switch on the round trip's critical
 * path). Large messages still go to the helpers. */
START_TEST(small_messages_wake_no_helper)
{
  enum { ROUNDS = 400 };
  void *sc, *rc;
  char sb[64], rb[64];
  int got;
  open_version(4);
  pair(&sc, &rc);
  ck_assert_int_eq(nh_xfer(&net, sc, rc, sb, 8, rb, sizeof(rb), &got), ncclSuccess);
  long before = helper_switches();
  for (int i = 0; i < ROUNDS; i++) {
    nh_fill(sb, 8, (uint64_t)i);
    ck_assert_int_eq(nh_xfer(&net, sc, rc, sb, 8, rb, sizeof(rb), &got), ncclSuccess);
    ck_assert_int_eq(got, 8);
    ck_assert_int_eq(nh_check(rb, 8, (uint64_t)i), -1);
  }
  long woken = helper_switches() - before;
  ck_assert_msg(woken < ROUNDS / 20, "helper threads switched %ld times for %d small messages",
                woken, ROUNDS);
  /* and a large one is carried (by helpers and caller together) */
  char *big = malloc(8 << 20), *dst = malloc(8 << 20);
  nh_fill(big, 8 << 20, 99);
  ck_assert_int_eq(nh_xfer(&net, sc, rc, big, 8 << 20, dst, 8 << 20, &got), ncclSuccess);
  ck_assert_int_eq(nh_check(dst, 8 << 20, 99), -1);
  free(big);
  free(dst);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

/* The largest SO_RCVLOWAT among this process's TCP sockets: the plugin's
 * streams, since the test opens no others. */
static int max_rcvlowat(void)
{
  int best = 0;
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  for (struct dirent *e; (e = readdir(d));) {
    int fd = atoi(e->d_name), type = 0, mark = 0;
    socklen_t len = sizeof(type);
    if (fd <= 2 || fd == dirfd(d) || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM)
      continue;
    len = sizeof(mark);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &mark, &len) == 0 && mark > best) best = mark;
  }
  closedir(d);
  return best;
}

/* Without helper threads a stream that carries large messages raises its
 * receive low-water mark (stream.c, set_lowat: bench/net's ring and p2p
 * modes move more with it) and drops it again for small ones, whose ACKs
 * it would change; with helpers it is never raised, since epoll would then
 * hide a chunk's last bytes below the mark. Every byte checked. */
START_TEST(bulk_streams_raise_the_receive_mark)
{
  int helpers = _i == 1;
  void *sc, *rc;
  int got;
  setenv("PCIE_NET_IFNAME", "=lo", 1);
  setenv("PCIE_NET_NSTREAMS", "1", 1); /* every message on the one stream */
  setenv("PCIE_NET_NTHREADS", helpers ? "2" : "0", 1);
  ck_assert(nh_open(&net, nh_versions[NH_NVERSIONS - 1]) == 0);
  ck_assert_int_eq(nh_init(&net, &ctx), ncclSuccess);
  pair(&sc, &rc);
  size_t big = 4 << 20;
  char *sb = malloc(big), *rb = malloc(big);
  ck_assert(sb && rb);
  ck_assert_int_eq(max_rcvlowat(), 1);
  for (int round = 0; round < 2; round++) {
    nh_fill(sb, big, (uint64_t)round);
    ck_assert_int_eq(nh_xfer(&net, sc, rc, sb, big, rb, big, &got), ncclSuccess);
    ck_assert_int_eq(nh_check(rb, big, (uint64_t)round), -1);
    if (helpers)
      ck_assert_int_eq(max_rcvlowat(), 1);
    else
      ck_assert_int_gt(max_rcvlowat(), 64 << 10);
    nh_fill(sb, 8, 7);
    ck_assert_int_eq(nh_xfer(&net, sc, rc, sb, 8, rb, 64, &got), ncclSuccess);
    ck_assert_int_eq(got, 8);
    ck_assert_int_eq(nh_check(rb, 8, 7), -1);
    ck_assert_int_eq(max_rcvlowat(), 1);
  }
  free(sb);
  free(rb);
  nh_close_send(&net, sc);
  nh_close_recv(&net, rc);
  nh_finalize(&net, ctx);
}
END_TEST

static Suite *net_suite(void)
{
  Suite *s = suite_create("net");
  TCase *tc = tcase_create("conformance");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, abi_and_properties, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, setup_never_blocks, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, sizes_small_to_large, 0, NH_NVERSIONS);
  tcase_add_test(tc, defaults_follow_cores_and_link);
  tcase_add_test(tc, size_256mb);
  tcase_add_loop_test(tc, many_in_flight, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, small_and_large_interleaved, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, tags_and_grouped_receives, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, send_larger_than_receive_fails, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, close_idle_in_every_order, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, close_while_busy, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, bad_handles, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, connect_to_closed_listener_fails, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, churn_without_leaks, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, ring_both_directions_two_channels, 0, NH_NVERSIONS + 1);
  tcase_add_loop_test(tc, fd_exhaustion_returns_every_descriptor, 0, NH_NVERSIONS);
  tcase_add_loop_test(tc, finalize_unload_reload, 0, 2);
  tcase_add_loop_test(tc, finalize_frees_abandoned_connect, 0, 2);
  tcase_add_test(tc, interface_selection);
  tcase_add_test(tc, nccl_socket_variables);
  tcase_add_test(tc, stream_count_from_nccl_variables);
  tcase_add_test(tc, small_messages_wake_no_helper);
  tcase_add_loop_test(tc, bulk_streams_raise_the_receive_mark, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(net_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
