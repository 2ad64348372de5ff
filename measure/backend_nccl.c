/*
 * The nccl backend as the profiler opens it (measure/backend_nccl.h): option
 * checks and the worker's process. Nothing here touches CUDA.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_nccl.h"
#include "gpu_nccl.h"
#include "isolate.h"

void pt_nccl_opts_default(struct pt_nccl_opts *o) {
  memset(o, 0, sizeof *o);
  o->timeout_s = 60;
  o->start_timeout_s = 120;
  o->stderr_fd = -1;
}

static int parse_uint(const char **p, int *out) {
  char *end;
  if (**p < '0' || **p > '9') return -1;
  long v = strtol(*p, &end, 10);
  if (v > 1023) return -1;
  *out = (int)v;
  *p = end;
  return 0;
}

int pt_nccl_parse_gpus(const char *s, int *out, int max, int repeat) {
  int n = 0;
  if (!s || !*s) return -1;
  for (const char *p = s;;) {
    int lo, hi;
    if (parse_uint(&p, &lo)) return -1;
    hi = lo;
    if (*p == '-') {
      p++;
      if (parse_uint(&p, &hi) || hi < lo) return -1;
    }
    for (int d = lo; d <= hi; d++) {
      for (int k = 0; k < n && !repeat; k++)
        if (out[k] == d) return -1;
      if (n == max) return -1;
      out[n++] = d;
    }
    if (!*p) return n;
    if (*p++ != ',') return -1;
  }
}

int pt_backend_nccl_built(void) { return pt_gpu_built(); }

/* The workers' scratch directory (NCCL logs, the empty profile directory),
 * made here and removed by the isolated backend at close, so a killed
 * worker leaves nothing behind. */
static int make_scratch(char *out, size_t len, struct pt_error_rec *err) {
  const char *tmp = getenv("TMPDIR");
  snprintf(out, len, "%s/pcie-tune-scratch.XXXXXX", tmp && *tmp && strlen(tmp) < len - 40 ? tmp : "/tmp");
  if (mkdtemp(out)) return 0;
  snprintf(err->msg, sizeof err->msg, "cannot create a scratch directory %.300s: %s", out, strerror(errno));
  return PT_EIO;
}

int pt_backend_nccl_open(struct pt_backend *b, const struct pt_nccl_opts *o,
                         struct pt_error_rec *err) {
  int gpus[PT_GPU_MAX];
  char scratch[400];
  const char *args[64];
  size_t k = 0;
  memset(b, 0, sizeof *b);
  snprintf(err->file, sizeof err->file, "nccl backend"); /* printed after "pcie-tune profile: " */
  err->line = 0;
  int n = pt_nccl_parse_gpus(o->gpus, gpus, PT_GPU_MAX, o->same_gpu);
  if (n < 0 && pt_nccl_parse_gpus(o->gpus, gpus, PT_GPU_MAX, 1) > 0) {
    snprintf(err->msg, sizeof err->msg,
             "--gpus '%s' lists a GPU twice; NCCL refuses two ranks on one GPU of one host. To run "
             "them as two nodes over sockets (a one-GPU machine testing the forcing path) add "
             "--same-gpu-ranks", o->gpus);
    return PT_EINVAL;
  }
  if (n < 0) {
    snprintf(err->msg, sizeof err->msg, "bad --gpus '%s' (e.g. 0-7 or 0,2,4,6; each GPU once, at most %d)",
             o->gpus ? o->gpus : "", PT_GPU_MAX);
    return PT_EINVAL;
  }
  /* The worker's options come from cli/'s option table (cli/measure_opts.h):
   * this backend adds only what it owns, the backend and the scratch. */
  args[k++] = "--backend";
  args[k++] = "nccl";
  for (size_t i = 0; o->args && o->args[i]; i++) {
    if (k + 3 >= sizeof args / sizeof args[0]) {
      snprintf(err->msg, sizeof err->msg, "more than %zu worker arguments", sizeof args / sizeof args[0] - 3);
      return PT_EINVAL;
    }
    args[k++] = o->args[i];
  }
  int rc = make_scratch(scratch, sizeof scratch, err);
  if (rc) return rc;
  args[k++] = "--scratch";
  args[k++] = scratch;
  args[k] = NULL;
  struct pt_isolate_opts io = {o->exe, args, o->timeout_s, o->start_timeout_s, o->stderr_fd, o->stop,
                               o->ops, o->warmup, o->warmup_ms, scratch, o->gap_us};
  rc = pt_backend_isolated_open(b, &io, err);
  if (rc) rmdir(scratch); /* the isolated backend removed what the worker wrote */
  return rc;
}
