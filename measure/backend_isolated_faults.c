/*
 * Fault injection for the isolated backend's tests
 * (measure/backend_isolated_faults.h). Only `pcie-tune worker --inject` uses it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_isolated_faults.h"

static const char *const kind_names[] = {"crash", "abort", "hang", "wrong", "exit", "garbage"};

struct faulty {
  struct pt_backend inner;
  struct pt_fault f[PT_MAX_FAULTS];
  size_t n;
  int garbage_fd;
};

static int parse_field(const char *s, int (*name)(const char *), int max, int *out) {
  char *end;
  if (!strcmp(s, "*")) {
    *out = -1;
    return 0;
  }
  if (name && (*out = name(s)) >= 0) return 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < 0 || v > max) return -1;
  *out = (int)v;
  return 0;
}

int pt_fault_parse(const char *spec, struct pt_fault *out, char *why, size_t whylen) {
  char buf[128], *parts[3], *save = NULL, *at, *colon;
  size_t k;
  memset(out, 0, sizeof *out);
  if (strlen(spec) >= sizeof buf) goto bad; /* cut short, it could name another fault */
  snprintf(buf, sizeof buf, "%s", spec);
  if (!(colon = strchr(buf, ':'))) goto bad;
  *colon = 0;
  for (k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
    if (!strcmp(buf, kind_names[k])) break;
  if (k == sizeof kind_names / sizeof kind_names[0]) {
    snprintf(why, whylen, "unknown fault '%s' (crash, abort, hang, wrong, exit, garbage)", buf);
    return -1;
  }
  out->kind = (int)k;
  if ((at = strchr(colon + 1, '@'))) {
    char *end;
    *at = 0;
    errno = 0;
    /* strtoull() would take "-1" as 2^64-1: only digits. */
    unsigned long long v = at[1] >= '0' && at[1] <= '9' ? strtoull(at + 1, &end, 10) : 0;
    if (at[1] < '0' || at[1] > '9' || *end || errno) goto bad;
    out->min_bytes = v;
  }
  k = 0;
  for (char *t = strtok_r(colon + 1, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    if (k == 3) goto bad;
    parts[k++] = t;
  }
  if (k != 3 || parse_field(parts[0], pt_algo_parse, 6, &out->algo) ||
      parse_field(parts[1], pt_proto_parse, 2, &out->proto) ||
      parse_field(parts[2], NULL, PT_MAX_CHANNELS, &out->channels))
    goto bad;
  return 0;
bad:
  snprintf(why, whylen, "bad fault '%s' (KIND:ALGO/PROTO/CHANNELS[@MINBYTES], '*' for any)", spec);
  return -1;
}

static int matches(const struct pt_fault *f, const struct pt_measure_req *r) {
  return !r->is_default && (f->algo < 0 || f->algo == r->algo) &&
         (f->proto < 0 || f->proto == r->proto) && (f->channels < 0 || f->channels == r->channels) &&
         r->nbytes >= f->min_bytes;
}

/* Dies by sig even where a sanitizer or the CLI installed a handler, so
 * the parent sees the signal itself, as it would from a real crash. */
static void die_by(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(125); /* unreachable unless the signal is blocked */
}

static void hang(void) {
  for (;;) pause();
}

static int faulty_info(void *self, struct pt_backend_info *out) {
  struct faulty *fb = self;
  return fb->inner.info(fb->inner.self, out);
}

static int faulty_measure(void *self, const struct pt_measure_req *req, double *samples,
                          struct pt_measure_res *res, struct pt_error_rec *err) {
  static const char garbage[] = "NCCL INFO this is log text, not a frame\n";
  struct faulty *fb = self;
  for (size_t i = 0; i < fb->n; i++) {
    if (!matches(&fb->f[i], req)) continue;
    switch (fb->f[i].kind) {
    case PT_FAULT_CRASH: die_by(SIGSEGV); break;
    case PT_FAULT_ABORT: die_by(SIGABRT); break;
    case PT_FAULT_HANG: hang(); break;
    case PT_FAULT_EXIT: _exit(3);
    case PT_FAULT_GARBAGE:
      if (write(fb->garbage_fd, garbage, sizeof garbage - 1) < 0) _exit(4);
      hang();
      break;
    case PT_FAULT_WRONG:
      res->state = PT_PT_WRONG;
      snprintf(res->detail, sizeof res->detail, "injected: rank 0 element 0 got 0, want 36");
      return 0;
    }
  }
  return fb->inner.measure(fb->inner.self, req, samples, res, err);
}

static void faulty_close(void *self) {
  struct faulty *fb = self;
  if (fb->inner.close) fb->inner.close(fb->inner.self);
  free(fb);
}

int pt_backend_faulty_open(struct pt_backend *b, const struct pt_backend *inner,
                           const struct pt_fault *faults, size_t nfaults, int garbage_fd) {
  struct faulty *fb = nfaults <= PT_MAX_FAULTS ? calloc(1, sizeof *fb) : NULL;
  if (!fb) {
    if (inner->close) inner->close(inner->self);
    return nfaults > PT_MAX_FAULTS ? PT_EINVAL : PT_ENOMEM;
  }
  fb->inner = *inner;
  memcpy(fb->f, faults, nfaults * sizeof *faults);
  fb->n = nfaults;
  fb->garbage_fd = garbage_fd;
  b->self = fb;
  b->info = faulty_info;
  b->measure = faulty_measure;
  b->close = faulty_close;
  return 0;
}
