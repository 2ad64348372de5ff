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
#include <stddef.h>
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
#include "measure_opts.h"

struct wopts {
  struct cli_measure m; /* first: cli_measure_rows' offsets are into it */
  const char *backend, *scratch;
  struct pt_fault faults[PT_MAX_FAULTS];
};

#define F(x) offsetof(struct wopts, x)

static const struct cli_opt worker_rows[] = {
    CLI_ROW("backend", 0, CLI_STR, "sim|nccl", F(backend), 0, 0, NULL, 0, 0, "what to measure: a simulated box or the GPUs"),
    CLI_ROW("scratch", 0, CLI_STR, "DIR", F(scratch), 0, 0, NULL, 0, CLI_NCCL, "nccl: where NCCL's logs go"),
    CLI_INCLUDE(cli_measure_rows),
    CLI_END_ROW,
};

const struct cli_cmd worker_cli = {
    "worker",
    "usage: pcie-tune worker --backend sim --box NAME|FILE [--seed N] [--inject FAULT ...]\n"
    "       pcie-tune worker --backend nccl --gpus LIST [options]\n"
    "\n"
    "Started by 'pcie-tune profile' with the options of its table that the worker\n"
    "receives; speaks a binary protocol on stdin/stdout.\n",
    NULL,
    worker_rows,
    NULL,
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

/* Returns 0, or fills msg with the usage error. */
static int parse(int argc, char **argv, struct wopts *o, char *msg, size_t len) {
  struct cli_state st;
  char why[200];
  if (cli_parse(&worker_cli, argc, argv, o, &st, 0)) {
    snprintf(msg, len, "%s", st.msg);
    return -1;
  }
  for (size_t i = 0; i < o->m.ninject; i++)
    if (pt_fault_parse(o->m.inject[i], &o->faults[i], why, sizeof why)) {
      snprintf(msg, len, "%s", why);
      return -1;
    }
  if (!o->backend) snprintf(msg, len, "missing --backend sim|nccl");
  else if (strcmp(o->backend, "sim") && strcmp(o->backend, "nccl"))
    snprintf(msg, len, "unknown backend '%s' (sim or nccl)", o->backend);
  else if (!strcmp(o->backend, "sim") && !o->m.box) snprintf(msg, len, "missing --box for the sim backend");
  else if (!strcmp(o->backend, "nccl") && !o->m.gpus) snprintf(msg, len, "missing --gpus for the nccl backend");
  else return 0;
  return -1;
}

/* Opens the backend named by o; *prov gets its provenance (malloc'ed). */
static int open_backend(const struct wopts *o, struct pt_backend *b, char **prov, int out,
                        struct pt_error_rec *e) {
  *prov = NULL;
  if (!strcmp(o->backend, "sim")) {
    struct pt_box box;
    int rc = pt_box_resolve(&box, o->m.box, e);
    if (rc) return rc;
    if ((rc = pt_backend_sim_open(b, &box, o->m.seed))) return rc;
    return (*prov = pt_strdup("")) ? 0 : PT_ENOMEM;
  }
  const struct cli_measure *m = &o->m;
  struct pt_gpu_opts g = {.plugin = m->plugin, .nccl_lib = m->nccl_lib, .cudart_lib = m->cudart_lib,
                          .scratch = o->scratch, .single = m->single, .same_gpu = m->same_gpu, .in_place = m->in_place,
                          .nccl_mem = m->nccl_mem, .warmup_ms = (unsigned)m->warmup_ms, .gap_us = (double)m->gap, .beat_fd = out,
                          .ops = (unsigned)m->ops, .warmup = (unsigned)m->warmup};
  if ((g.ngpus = pt_nccl_parse_gpus(m->gpus, g.gpus, PT_GPU_MAX, m->same_gpu)) < 0) {
    snprintf(e->file, sizeof e->file, "--gpus");
    e->line = 0;
    snprintf(e->msg, sizeof e->msg, "bad list '%s' (e.g. 0-7 or 0,2,4,6; each GPU once)", m->gpus);
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
  struct wopts o;
  struct pt_backend b = {0};
  struct pt_backend_info bi;
  struct pt_error_rec e = {"", 0, ""};
  char msg[1200], *prov = NULL;
  int status = 1, rc;
  memset(&o, 0, sizeof o);
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    cli_help(&worker_cli, stdout);
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
    cli_help(&worker_cli, stderr);
    status = fail(out, PT_EINVAL, 2, msg);
    goto out;
  }
  if ((rc = open_backend(&o, &b, &prov, out, &e))) {
    pt_error_format(&e, msg, sizeof msg);
    status = fail(out, rc, rc == PT_EINVAL ? 2 : 1, msg);
    goto out;
  }
  if (o.m.ninject && (rc = pt_backend_faulty_open(&b, &(struct pt_backend){b.self, b.info, b.measure, b.close},
                                                o.faults, o.m.ninject, out))) {
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
