/*
 * pcie-tune worker (hidden): the measuring process that `pcie-tune
 * profile` starts through measure/isolate.c. Serves the protocol of
 * measure/proto.h on stdin/stdout: HELLO once, then one RES per REQ until the
 * parent closes the stream. The backend is the simulated box (for tests,
 * with --inject faults) or the GPUs (measure/gpu_nccl.h).
 *
 * stdout carries only frames: the protocol descriptors are moved aside at
 * start and fd 1 is pointed at stderr, so printf, NCCL_DEBUG output and any
 * library chatter end up on stderr, where the parent never looks.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "measure/backend_isolated_faults.h"
#include "measure/backend_nccl.h"
#include "measure/backends.h"
#include "cmds.h"
#include "measure/gpu_nccl.h"
#include "measure/proto.h"

static const char usage_text[] =
    "usage: pcie-tune worker --backend sim --box NAME|FILE [--seed N] [--inject FAULT ...]\n"
    "       pcie-tune worker --backend nccl --gpus LIST [--ops N] [--warmup N]\n"
    "                        [--plugin PATH] [--nccl-lib PATH] [--cudart-lib PATH]\n"
    "                        [--process-model per-gpu|single] [--scratch DIR]\n"
    "                        [--placement out-of-place|in-place] [--warmup-ms MS]\n"
    "                        [--buffers cudaMalloc|ncclMemAlloc]\n"
    "Started by 'pcie-tune profile'; speaks a binary protocol on stdin/stdout.\n"
    "FAULT (tests only): crash|abort|hang|wrong|exit|garbage:ALGO/PROTO/CHANNELS[@MINBYTES]\n";

struct wopts {
  const char *backend, *box, *gpus, *plugin, *nccl_lib, *cudart_lib, *scratch;
  int single, in_place, nccl_mem, same_gpu;
  unsigned long long seed;
  unsigned ops, warmup, warmup_ms;
  struct pt_fault faults[PT_MAX_FAULTS];
  size_t nfaults;
};

/* Reports a failure: a FAIL frame for the parent, which decides by it and
 * prints it (so the user reads it once), and a line on stderr only for a
 * person running the worker by hand (the parent's channel is a socket,
 * measure/isolate.c) or when the frame could not be sent. */
static int fail(int out, int code, int status, const char *msg) {
  unsigned char buf[600];
  struct stat st;
  size_t n = pt_proto_enc_fail(buf, sizeof buf, code < 0 ? code : PT_EIO, msg);
  int to_parent = out >= 0 && fstat(out, &st) == 0 && S_ISSOCK(st.st_mode);
  if (!(to_parent && n && pt_proto_write(out, PT_MSG_FAIL, buf, (uint32_t)n) == 0)) {
    fprintf(stderr, "pcie-tune worker: %s\n", msg);
    if (!to_parent && out >= 0 && n) pt_proto_write(out, PT_MSG_FAIL, buf, (uint32_t)n);
  }
  return status;
}

static int parse_u(const char *v, unsigned long long max, unsigned long long *out) {
  char *end;
  if (!v || *v < '0' || *v > '9') return -1;
  *out = strtoull(v, &end, 10);
  return *end || *out > max ? -1 : 0;
}

static int uerr(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int uerr(char *msg, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, len, fmt, ap);
  va_end(ap);
  return -1;
}

/* Returns 0 or fills msg with the usage error. */
static int parse(int argc, char **argv, struct wopts *o, char *msg, size_t len) {
  unsigned long long n;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return uerr(msg, len, "option '%s' needs a value", a);
    i++;
    if (!strcmp(a, "--backend")) o->backend = v;
    else if (!strcmp(a, "--box")) o->box = v;
    else if (!strcmp(a, "--gpus")) o->gpus = v;
    else if (!strcmp(a, "--plugin")) o->plugin = v;
    else if (!strcmp(a, "--nccl-lib")) o->nccl_lib = v;
    else if (!strcmp(a, "--cudart-lib")) o->cudart_lib = v;
    else if (!strcmp(a, "--scratch")) o->scratch = v;
    else if (!strcmp(a, "--placement")) {
      if (strcmp(v, "out-of-place") && strcmp(v, "in-place"))
        return uerr(msg, len, "bad --placement '%s' (out-of-place or in-place)", v);
      o->in_place = !strcmp(v, "in-place");
    }
    else if (!strcmp(a, "--buffers")) {
      if (strcmp(v, "cudaMalloc") && strcmp(v, "ncclMemAlloc"))
        return uerr(msg, len, "bad --buffers '%s' (cudaMalloc or ncclMemAlloc)", v);
      o->nccl_mem = !strcmp(v, "ncclMemAlloc");
    }
    else if (!strcmp(a, "--process-model")) {
      if (strcmp(v, "per-gpu") && strcmp(v, "single"))
        return uerr(msg, len, "bad --process-model '%s' (per-gpu or single)", v);
      o->single = !strcmp(v, "single");
    }
    else if (!strcmp(a, "--same-gpu-ranks")) {
      if (strcmp(v, "yes")) return uerr(msg, len, "bad --same-gpu-ranks '%s' (yes)", v);
      o->same_gpu = 1;
    }
    else if (!strcmp(a, "--seed")) {
      if (parse_u(v, ~0ULL, &o->seed)) return uerr(msg, len, "bad --seed '%s'", v);
    } else if (!strcmp(a, "--ops")) {
      if (parse_u(v, 1000, &n) || !n) return uerr(msg, len, "bad --ops '%s' (1..1000)", v);
      o->ops = (unsigned)n;
    } else if (!strcmp(a, "--warmup")) {
      if (parse_u(v, 1000, &n)) return uerr(msg, len, "bad --warmup '%s' (0..1000)", v);
      o->warmup = (unsigned)n;
    } else if (!strcmp(a, "--warmup-ms")) {
      if (parse_u(v, 10000, &n)) return uerr(msg, len, "bad --warmup-ms '%s' (0..10000)", v);
      o->warmup_ms = (unsigned)n;
    } else if (!strcmp(a, "--inject")) {
      char why[200];
      if (o->nfaults == PT_MAX_FAULTS) return uerr(msg, len, "more than %d --inject", PT_MAX_FAULTS);
      if (pt_fault_parse(v, &o->faults[o->nfaults++], why, sizeof why))
        return uerr(msg, len, "%s", why);
    } else {
      return uerr(msg, len, "unknown option '%s'", a);
    }
  }
  if (!o->backend) return uerr(msg, len, "missing --backend sim|nccl");
  if (!strcmp(o->backend, "sim") && !o->box) return uerr(msg, len, "missing --box for the sim backend");
  if (!strcmp(o->backend, "nccl") && !o->gpus) return uerr(msg, len, "missing --gpus for the nccl backend");
  if (strcmp(o->backend, "sim") && strcmp(o->backend, "nccl"))
    return uerr(msg, len, "unknown backend '%s' (sim or nccl)", o->backend);
  return 0;
}

/* Opens the backend named by o; *prov gets its provenance (malloc'ed). */
static int open_backend(const struct wopts *o, struct pt_backend *b, char **prov, int out,
                        struct pt_error_rec *e) {
  *prov = NULL;
  if (!strcmp(o->backend, "sim")) {
    struct pt_box box;
    int rc = pt_box_resolve(&box, o->box, e);
    if (rc) return rc;
    if ((rc = pt_backend_sim_open(b, &box, o->seed))) return rc;
    return (*prov = pt_strdup("")) ? 0 : PT_ENOMEM;
  }
  struct pt_gpu_opts g = {.plugin = o->plugin, .nccl_lib = o->nccl_lib, .cudart_lib = o->cudart_lib,
                          .scratch = o->scratch, .single = o->single, .same_gpu = o->same_gpu, .in_place = o->in_place, .nccl_mem = o->nccl_mem, .warmup_ms = o->warmup_ms, .beat_fd = out, .ops = o->ops,
                          .warmup = o->warmup};
  if ((g.ngpus = pt_nccl_parse_gpus(o->gpus, g.gpus, PT_GPU_MAX, o->same_gpu)) < 0) {
    snprintf(e->file, sizeof e->file, "--gpus");
    e->line = 0;
    snprintf(e->msg, sizeof e->msg, "bad list '%s' (e.g. 0-7 or 0,2,4,6; each GPU once)", o->gpus);
    return PT_EINVAL;
  }
  return pt_gpu_open(b, &g, prov, e);
}

/* The request loop. Returns the exit status. */
static int serve(int in, int out, const struct pt_backend *b) {
  static unsigned char buf[PT_PROTO_MAX_PAYLOAD];
  unsigned char res_buf[512 + PT_SWEEP_MAX_REPS * sizeof(double)];
  double samples[PT_SWEEP_MAX_REPS];
  char why[300], line[1200];
  for (;;) {
    struct pt_frame f;
    struct pt_measure_req req;
    struct pt_measure_res res = {PT_PT_OK, ""};
    struct pt_error_rec e = {"", 0, ""};
    int rc = pt_proto_read(in, -1, buf, sizeof buf, &f, why, sizeof why);
    if (rc == PT_PROTO_EOF) return 0; /* the parent is done with us */
    if (rc == 0) rc = pt_proto_dec_req(&f, &req, why, sizeof why);
    if (rc) {
      fprintf(stderr, "pcie-tune worker: bad request: %s\n", rc == PT_PROTO_BAD ? why : "read failed");
      return 1;
    }
    rc = b->measure(b->self, &req, samples, &res, &e);
    if (rc < 0) {
      pt_error_format(&e, line, sizeof line);
      return fail(out, rc, 1, line);
    }
    unsigned n = res.state == PT_PT_OK ? req.reps : 0;
    size_t len = pt_proto_enc_res(res_buf, sizeof res_buf, &res, samples, n);
    if (!len || pt_proto_write(out, PT_MSG_RES, res_buf, (uint32_t)len)) return 1;
    /* A crash the backend caught itself (a CUDA error) leaves the device
     * in an unknown state: report it, then leave for a fresh worker. */
    if (res.state == PT_PT_CRASH || res.state == PT_PT_HANG) return 1;
  }
}

int cmd_worker(int argc, char **argv) {
  struct wopts o = {.ops = 20, .warmup = 5};
  struct pt_backend b = {0};
  struct pt_backend_info bi;
  struct pt_error_rec e = {"", 0, ""};
  char msg[1200], *prov = NULL;
  int status = 1, rc;
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(usage_text, stdout);
    return 0;
  }
  /* Keep the protocol away from fds 0/1 so nothing else can touch it. */
  int in = fcntl(0, F_DUPFD_CLOEXEC, 3), out = fcntl(1, F_DUPFD_CLOEXEC, 3);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || out < 0 || devnull < 0 || dup2(2, 1) < 0 || dup2(devnull, 0) < 0) {
    fprintf(stderr, "pcie-tune worker: cannot set up its descriptors\n");
    goto out;
  }
  if (parse(argc, argv, &o, msg, sizeof msg)) {
    fputs(usage_text, stderr);
    status = fail(out, PT_EINVAL, 2, msg);
    goto out;
  }
  if ((rc = open_backend(&o, &b, &prov, out, &e))) {
    pt_error_format(&e, msg, sizeof msg);
    status = fail(out, rc, rc == PT_EINVAL ? 2 : 1, msg);
    goto out;
  }
  if (o.nfaults && (rc = pt_backend_faulty_open(&b, &(struct pt_backend){b.self, b.info, b.measure, b.close},
                                                o.faults, o.nfaults, out))) {
    b.close = NULL; /* closed by pt_backend_faulty_open */
    status = fail(out, rc, 1, "out of memory");
    goto out;
  }
  b.info(b.self, &bi);
  unsigned char *hello = malloc(PT_PROTO_MAX_PAYLOAD);
  size_t len = hello ? pt_proto_enc_hello(hello, PT_PROTO_MAX_PAYLOAD, &bi, prov) : 0;
  if (!len) {
    free(hello);
    status = fail(out, PT_ENOMEM, 1, "provenance too large for HELLO");
    goto out;
  }
  rc = pt_proto_write(out, PT_MSG_HELLO, hello, (uint32_t)len);
  free(hello);
  status = rc ? 1 : serve(in, out, &b);
out:
  if (b.close) b.close(b.self);
  free(prov);
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  if (devnull >= 0) close(devnull);
  return status;
}
