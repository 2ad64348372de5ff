/*
 * The worker protocol: how `pcie-tune profile` (the parent, measure/isolate.c)
 * and `pcie-tune worker` (cli/worker.c) talk over one stream socket that the
 * worker sees as its stdin and stdout.
 *
 * Every message is a frame: magic "PTW1" (u32), type (u32), payload length
 * (u32), payload. Both ends are the same binary on the same machine (the
 * parent execs /proc/self/exe), so integers and doubles travel in host byte
 * order; the magic, the version in HELLO and strict length checks still
 * reject anything that is not this protocol. Fixed-size strings must hold a
 * NUL inside their field.
 *
 *   worker -> parent  HELLO  once at start: version, backend info, provenance
 *   parent -> worker  REQ    one measurement order (struct pt_measure_req)
 *   worker -> parent  RES    its outcome: state, detail, samples
 *   worker -> parent  FAIL   the backend can no longer measure (fatal)
 *   worker -> parent  BEAT   heartbeat: u32 repetitions of the current
 *                            request done on every rank; each one restarts
 *                            the parent's deadline (a slow run is not a hang)
 *
 * Failure is known from the frames, exit status and timeouts only; the
 * worker's stderr is never parsed. Nothing here keeps state or allocates
 * except pt_proto_read_hello (the provenance string). Thread-compatible.
 */
#ifndef PCIE_CLI_PROTO_H
#define PCIE_CLI_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/sweep.h"

#define PT_PROTO_MAGIC 0x31575450u /* "PTW1" in memory on little-endian hosts */
#define PT_PROTO_VERSION 2u
#define PT_PROTO_MAX_PAYLOAD (64u * 1024u)

enum pt_proto_type { PT_MSG_HELLO = 1, PT_MSG_REQ = 2, PT_MSG_RES = 3, PT_MSG_FAIL = 4, PT_MSG_BEAT = 5 };

/* Results of the read functions besides 0. */
enum pt_proto_status {
  PT_PROTO_EOF = -100,     /* the peer closed the stream cleanly between frames */
  PT_PROTO_TIMEOUT = -101, /* the deadline passed */
  PT_PROTO_BAD = -102,     /* bytes that are not this protocol; *why says what */
  PT_PROTO_EIO = -103,     /* read/write failed (errno kept) */
};

/* One frame as read: type and payload (payload points into the caller's buffer). */
struct pt_frame {
  uint32_t type;
  uint32_t len;
  unsigned char *payload;
};

/* Milliseconds on the monotonic clock, for deadlines. */
int64_t pt_proto_now_ms(void);

/* Writes one frame, retrying short writes and EINTR; never raises SIGPIPE
 * on a socket. Returns 0 or PT_PROTO_EIO. */
int pt_proto_write(int fd, uint32_t type, const void *payload, uint32_t len);

/* Reads one frame into buf (cap bytes, at least PT_PROTO_MAX_PAYLOAD),
 * waiting until deadline_ms (pt_proto_now_ms() scale; < 0 = forever).
 * Returns 0, PT_PROTO_EOF (closed before a frame began), PT_PROTO_TIMEOUT,
 * PT_PROTO_BAD with why[] filled (bad magic, unknown type, oversize
 * payload, stream closed inside a frame) or PT_PROTO_EIO. */
int pt_proto_read(int fd, int64_t deadline_ms, unsigned char *buf, size_t cap,
                  struct pt_frame *f, char *why, size_t whylen);

/* Payload encoders: write into out (cap bytes) and return the length, or 0
 * when it does not fit. */
size_t pt_proto_enc_hello(unsigned char *out, size_t cap, const struct pt_backend_info *bi,
                          const char *prov);
size_t pt_proto_enc_req(unsigned char *out, size_t cap, const struct pt_measure_req *req);
size_t pt_proto_enc_res(unsigned char *out, size_t cap, const struct pt_measure_res *res,
                        const double *samples, unsigned nsamples);
size_t pt_proto_enc_fail(unsigned char *out, size_t cap, int code, const char *msg);

/* Payload decoders: 0, or PT_PROTO_BAD with why[] filled. */
/* *prov is malloc'ed (caller frees), "" when the worker sent none. */
int pt_proto_dec_hello(const struct pt_frame *f, struct pt_backend_info *bi, char **prov,
                       char *why, size_t whylen);
int pt_proto_dec_req(const struct pt_frame *f, struct pt_measure_req *req, char *why, size_t whylen);
/* Writes at most max samples; *nsamples says how many the worker sent. */
int pt_proto_dec_res(const struct pt_frame *f, struct pt_measure_res *res, double *samples,
                     unsigned max, unsigned *nsamples, char *why, size_t whylen);
int pt_proto_dec_fail(const struct pt_frame *f, int *code, char *msg, size_t msglen, char *why,
                      size_t whylen);

#endif
