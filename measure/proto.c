/*
 * Worker protocol framing and payload codecs (measure/proto.h). Knows nothing
 * about processes: measure/isolate.c and cli/worker.c own those.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#define HDR 12u

int64_t pt_proto_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int bad(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
  return PT_PROTO_BAD;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    /* send() with MSG_NOSIGNAL: a dead peer is an error to report, not a
     * SIGPIPE that kills the profiler. Plain write() for non-sockets (a
     * worker run by hand with a pipe). */
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == ENOTSOCK) k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return PT_PROTO_EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int pt_proto_write(int fd, uint32_t type, const void *payload, uint32_t len) {
  unsigned char hdr[HDR];
  uint32_t magic = PT_PROTO_MAGIC;
  memcpy(hdr, &magic, 4);
  memcpy(hdr + 4, &type, 4);
  memcpy(hdr + 8, &len, 4);
  int rc = write_all(fd, hdr, HDR);
  if (!rc && len) rc = write_all(fd, payload, len);
  return rc;
}

/* Reads exactly n bytes before the deadline. *got counts what arrived, so
 * the caller can tell a clean EOF from one inside a frame. */
static int read_exact(int fd, int64_t deadline, unsigned char *p, size_t n, size_t *got) {
  *got = 0;
  while (*got < n) {
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - pt_proto_now_ms();
      if (left <= 0) return PT_PROTO_TIMEOUT;
      wait = left > 60000 ? 60000 : (int)left;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = poll(&pfd, 1, wait);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return PT_PROTO_EIO;
    if (r == 0) continue; /* the loop re-checks the deadline */
    ssize_t k = read(fd, p + *got, n - *got);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) return errno == ECONNRESET ? PT_PROTO_EOF : PT_PROTO_EIO;
    if (k == 0) return PT_PROTO_EOF;
    *got += (size_t)k;
  }
  return 0;
}

int pt_proto_read(int fd, int64_t deadline_ms, unsigned char *buf, size_t cap,
                  struct pt_frame *f, char *why, size_t whylen) {
  unsigned char hdr[HDR];
  uint32_t magic;
  size_t got;
  int rc = read_exact(fd, deadline_ms, hdr, HDR, &got);
  if (rc == PT_PROTO_EOF && got)
    return bad(why, whylen, "stream closed inside a frame header (%zu of %u bytes)", got, HDR);
  if (rc) return rc;
  memcpy(&magic, hdr, 4);
  memcpy(&f->type, hdr + 4, 4);
  memcpy(&f->len, hdr + 8, 4);
  if (magic != PT_PROTO_MAGIC)
    return bad(why, whylen, "bad frame magic 0x%08x (bytes \"%.4s\")", magic,
               (const char *)hdr);
  if (f->type < PT_MSG_HELLO || f->type > PT_MSG_BEAT)
    return bad(why, whylen, "unknown frame type %u", f->type);
  if (f->len > PT_PROTO_MAX_PAYLOAD || f->len > cap)
    return bad(why, whylen, "frame payload of %u bytes exceeds %u", f->len, PT_PROTO_MAX_PAYLOAD);
  f->payload = buf;
  rc = read_exact(fd, deadline_ms, buf, f->len, &got);
  if (rc == PT_PROTO_EOF)
    return bad(why, whylen, "stream closed inside a frame (%zu of %u payload bytes)", got, f->len);
  return rc;
}

/* ---- payload cursor: bounds-checked puts and gets ---- */

struct cur {
  unsigned char *p;
  size_t len, off;
  int fail;
};

static void put(struct cur *c, const void *v, size_t n) {
  if (c->fail || c->len - c->off < n) {
    c->fail = 1;
    return;
  }
  memcpy(c->p + c->off, v, n);
  c->off += n;
}

static void put_i32(struct cur *c, int32_t v) { put(c, &v, 4); }
static void put_u32(struct cur *c, uint32_t v) { put(c, &v, 4); }

/* A fixed field of n bytes holding a NUL-terminated string. */
static void put_str(struct cur *c, const char *s, size_t n) {
  unsigned char field[512] = {0};
  size_t k = strlen(s);
  if (n > sizeof field) {
    c->fail = 1;
    return;
  }
  memcpy(field, s, k < n - 1 ? k : n - 1);
  put(c, field, n);
}

static void get(struct cur *c, void *v, size_t n) {
  if (c->fail || c->len - c->off < n) {
    if (!c->fail) c->fail = 1; /* keep the first reason */
    memset(v, 0, n);
    return;
  }
  memcpy(v, c->p + c->off, n);
  c->off += n;
}

static int32_t get_i32(struct cur *c) {
  int32_t v;
  get(c, &v, 4);
  return v;
}

static uint32_t get_u32(struct cur *c) {
  uint32_t v;
  get(c, &v, 4);
  return v;
}

static void get_str(struct cur *c, char *dst, size_t n) {
  get(c, dst, n);
  if (!memchr(dst, 0, n)) c->fail = 2; /* unterminated: refuse rather than truncate */
}

static size_t done(const struct cur *c) { return c->fail ? 0 : c->off; }

static int finish(const struct cur *c, const char *what, char *why, size_t whylen) {
  if (c->fail == 2) return bad(why, whylen, "%s: unterminated string field", what);
  if (c->fail) return bad(why, whylen, "%s: payload of %zu bytes is truncated", what, c->len);
  if (c->off != c->len)
    return bad(why, whylen, "%s: %zu trailing bytes", what, c->len - c->off);
  return 0;
}

static struct cur reader(const struct pt_frame *f) { return (struct cur){f->payload, f->len, 0, 0}; }

/* ---- messages ---- */

size_t pt_proto_enc_hello(unsigned char *out, size_t cap, const struct pt_backend_info *bi,
                          const char *prov) {
  struct cur c = {out, cap, 0, 0};
  size_t plen = prov ? strlen(prov) : 0;
  put_u32(&c, PT_PROTO_VERSION);
  put_i32(&c, bi->nranks);
  put_i32(&c, bi->nnodes);
  put_i32(&c, bi->max_channels);
  put_i32(&c, bi->comm_channels);
  put_str(&c, bi->name, sizeof bi->name);
  put_str(&c, bi->target, sizeof bi->target);
  put_str(&c, bi->nccl_version, sizeof bi->nccl_version);
  /* The box as raw GPU records: the worker is this same binary. */
  put_i32(&c, bi->box.ngpus);
  put_i32(&c, bi->box.host_gpus);
  put(&c, bi->box.gpu, (size_t)bi->box.ngpus * sizeof bi->box.gpu[0]);
  put_str(&c, bi->box.driver, sizeof bi->box.driver);
  put_u32(&c, (uint32_t)plen);
  if (plen) put(&c, prov, plen);
  return done(&c);
}

int pt_proto_dec_hello(const struct pt_frame *f, struct pt_backend_info *bi, char **prov,
                       char *why, size_t whylen) {
  struct cur c = reader(f);
  *prov = NULL;
  if (f->type != PT_MSG_HELLO) return bad(why, whylen, "expected HELLO, got frame type %u", f->type);
  uint32_t version = get_u32(&c);
  if (!c.fail && version != PT_PROTO_VERSION)
    return bad(why, whylen, "worker speaks protocol version %u, expected %u", version,
               PT_PROTO_VERSION);
  memset(bi, 0, sizeof *bi);
  bi->nranks = get_i32(&c);
  bi->nnodes = get_i32(&c);
  bi->max_channels = get_i32(&c);
  bi->comm_channels = get_i32(&c);
  get_str(&c, bi->name, sizeof bi->name);
  get_str(&c, bi->target, sizeof bi->target);
  get_str(&c, bi->nccl_version, sizeof bi->nccl_version);
  bi->box.ngpus = get_i32(&c);
  if (!c.fail && (bi->box.ngpus < 0 || bi->box.ngpus > PT_FP_MAX_GPUS))
    return bad(why, whylen, "HELLO: %d GPUs in the box", bi->box.ngpus);
  bi->box.host_gpus = get_i32(&c);
  get(&c, bi->box.gpu, (size_t)bi->box.ngpus * sizeof bi->box.gpu[0]);
  get_str(&c, bi->box.driver, sizeof bi->box.driver);
  uint32_t plen = get_u32(&c);
  if (c.fail) return finish(&c, "HELLO", why, whylen);
  if (plen > c.len - c.off)
    return bad(why, whylen, "HELLO: provenance of %u bytes exceeds the payload", plen);
  char *s = malloc((size_t)plen + 1);
  if (!s) return bad(why, whylen, "HELLO: out of memory");
  get(&c, s, plen);
  s[plen] = 0;
  int rc = finish(&c, "HELLO", why, whylen);
  if (!rc && (bi->nranks < 1 || bi->nnodes < 1 || bi->max_channels < 1 ||
              bi->max_channels > PT_MAX_CHANNELS || bi->comm_channels < 0 ||
              bi->comm_channels > PT_MAX_CHANNELS || memchr(s, 0, plen)))
    rc = bad(why, whylen, "HELLO: nonsense backend info (nranks %d nnodes %d channels %d)",
             bi->nranks, bi->nnodes, bi->max_channels);
  if (rc) free(s);
  else *prov = s;
  return rc;
}

size_t pt_proto_enc_req(unsigned char *out, size_t cap, const struct pt_measure_req *req) {
  struct cur c = {out, cap, 0, 0};
  put_i32(&c, req->coll);
  put_i32(&c, req->mode);
  put(&c, &req->nbytes, 8);
  put_i32(&c, req->is_default);
  put_i32(&c, req->algo);
  put_i32(&c, req->proto);
  put_i32(&c, req->channels);
  put_u32(&c, req->first_rep);
  put_u32(&c, req->reps);
  put_u32(&c, req->screen);
  put_u32(&c, req->chunk);
  return done(&c);
}

int pt_proto_dec_req(const struct pt_frame *f, struct pt_measure_req *req, char *why, size_t whylen) {
  struct cur c = reader(f);
  if (f->type != PT_MSG_REQ) return bad(why, whylen, "expected REQ, got frame type %u", f->type);
  req->coll = get_i32(&c);
  req->mode = get_i32(&c);
  get(&c, &req->nbytes, 8);
  req->is_default = get_i32(&c);
  req->algo = get_i32(&c);
  req->proto = get_i32(&c);
  req->channels = get_i32(&c);
  req->first_rep = get_u32(&c);
  req->reps = get_u32(&c);
  req->screen = get_u32(&c);
  req->chunk = get_u32(&c);
  int rc = finish(&c, "REQ", why, whylen);
  if (!rc && (req->coll < 0 || req->coll >= PT_NCOLL || req->mode < 0 || req->mode >= PT_NMODES ||
              !req->nbytes || req->reps < 1 || req->reps > PT_SWEEP_MAX_REPS ||
              (req->is_default != 0 && req->is_default != 1) || req->screen > 1))
    rc = bad(why, whylen, "REQ: out of range (coll %d mode %d bytes %llu reps %u)", req->coll,
             req->mode, (unsigned long long)req->nbytes, req->reps);
  return rc;
}

size_t pt_proto_enc_res(unsigned char *out, size_t cap, const struct pt_measure_res *res,
                        const double *samples, unsigned nsamples) {
  struct cur c = {out, cap, 0, 0};
  put_i32(&c, res->state);
  put_str(&c, res->detail, sizeof res->detail);
  put_u32(&c, nsamples);
  if (nsamples) put(&c, samples, nsamples * sizeof *samples);
  return done(&c);
}

int pt_proto_dec_res(const struct pt_frame *f, struct pt_measure_res *res, double *samples,
                     unsigned max, unsigned *nsamples, char *why, size_t whylen) {
  struct cur c = reader(f);
  if (f->type != PT_MSG_RES) return bad(why, whylen, "expected RES, got frame type %u", f->type);
  res->state = get_i32(&c);
  get_str(&c, res->detail, sizeof res->detail);
  *nsamples = get_u32(&c);
  if (!c.fail && *nsamples > max)
    return bad(why, whylen, "RES: %u samples, at most %u expected", *nsamples, max);
  if (!c.fail) get(&c, samples, *nsamples * sizeof *samples);
  int rc = finish(&c, "RES", why, whylen);
  if (!rc && (res->state < PT_PT_OK || res->state > PT_PT_HANG || res->state == PT_PT_MISSING))
    rc = bad(why, whylen, "RES: unknown point state %d", res->state);
  for (unsigned i = 0; !rc && res->state == PT_PT_OK && i < *nsamples; i++)
    if (!(samples[i] > 0) || samples[i] > 1e12)
      rc = bad(why, whylen, "RES: sample %u is not a latency (%g)", i, samples[i]);
  return rc;
}

size_t pt_proto_enc_fail(unsigned char *out, size_t cap, int code, const char *msg) {
  struct cur c = {out, cap, 0, 0};
  put_i32(&c, code);
  put_str(&c, msg, 512);
  return done(&c);
}

int pt_proto_dec_fail(const struct pt_frame *f, int *code, char *msg, size_t msglen, char *why,
                      size_t whylen) {
  char field[512];
  struct cur c = reader(f);
  if (f->type != PT_MSG_FAIL) return bad(why, whylen, "expected FAIL, got frame type %u", f->type);
  *code = get_i32(&c);
  get_str(&c, field, sizeof field);
  int rc = finish(&c, "FAIL", why, whylen);
  if (!rc && *code >= 0) rc = bad(why, whylen, "FAIL: code %d is not an error", *code);
  if (!rc) snprintf(msg, msglen, "%s", field);
  return rc;
}
