/*
 * Reads NCCL's example tuner CSV (facts from plugins/tuner/example, README
 * and plugin.c, NCCL 2.30):
 *
 *   collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
 *
 * '#' lines and empty lines are skipped; fields are comma separated with
 * surrounding blanks ignored; channels -1 keeps NCCL's count; nNodes, nRanks
 * and numPipeOps -1 match any value; regBuff -1 any, 0 unregistered (eager
 * calls), 1 registered (CUDA-graph capture). The example tries its lines in
 * file order and skips one whose algorithm/protocol NCCL has disabled; the
 * profile's rules are tried the same way. Where the example silently guesses
 * (an unknown name becomes allreduce/ring/simple, a short line is dropped),
 * this reader refuses the line with its number instead.
 */
#include "nccl_example.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 10

struct reader {
  const char *file;
  int line;
  struct pt_error_rec *err;
};

__attribute__((format(printf, 2, 3))) static int fail(struct reader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(r->err, PT_EINVAL, r->file, r->line, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = '\0';
  return s;
}

/* A whole decimal integer, possibly negative; 0 on success. */
static int integer(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno) return -1;
  *out = v;
  return 0;
}

/* -1 (any) or a positive count; 0 or anything else never matches a
 * communicator in the example, so the line would be dead. */
static int any_or_positive(struct reader *r, const char *field, const char *what, int *out) {
  long long v;
  if (integer(field, &v) || v == 0 || v < -1 || v > (1 << 20))
    return fail(r, "%s '%s': expected -1 (any) or a positive count", what, field);
  *out = v < 0 ? 0 : (int)v;
  return 0;
}

static int parse_line(struct reader *r, char *line, struct pt_rule *rule) {
  char *f[MAX_FIELDS + 1];
  int n = 0;
  long long lo, hi, ch;
  for (char *p = line;; n++) {
    char *comma = strchr(p, ',');
    if (n == MAX_FIELDS)
      return fail(r, "more than %d fields (collective,minBytes,maxBytes,algorithm,protocol,"
                     "channels,nNodes,nRanks[,numPipeOps[,regBuff]])",
                  MAX_FIELDS);
    if (comma) *comma = '\0';
    f[n] = trim(p);
    if (!*f[n]) return fail(r, "field %d is empty", n + 1);
    if (!comma) {
      n++;
      break;
    }
    p = comma + 1;
  }
  if (n < 8)
    return fail(r, "%d fields; NCCL's example tuner needs 8 to 10 (collective,minBytes,maxBytes,"
                   "algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]])",
                n);
  memset(rule, 0, sizeof *rule);
  rule->line = r->line;
  if ((rule->coll = pt_coll_parse(f[0])) < 0)
    return fail(r, "unknown collective '%s' (broadcast, reduce, allgather, reducescatter, allreduce)",
                f[0]);
  if (integer(f[1], &lo) || lo < 0) return fail(r, "minBytes '%s' is not a byte count", f[1]);
  if (integer(f[2], &hi) || hi < 0) return fail(r, "maxBytes '%s' is not a byte count", f[2]);
  if (lo > hi) return fail(r, "minBytes %lld is above maxBytes %lld: the line never applies", lo, hi);
  if ((rule->algo = pt_algo_parse(f[3])) < 0)
    return fail(r, "unknown algorithm '%s' (tree, ring, collnet_direct, collnet_chain, nvls, "
                   "nvls_tree, pat)",
                f[3]);
  if ((rule->proto = pt_proto_parse(f[4])) < 0)
    return fail(r, "unknown protocol '%s' (ll, ll128, simple)", f[4]);
  /* channels: -1 keeps NCCL's count; 0 does too (NCCL reads a 0 as "none
   * set", enqueue.cc ncclGetAlgoInfo). */
  if (integer(f[5], &ch) || ch < -1 || ch > PT_MAX_CHANNELS)
    return fail(r, "channels '%s': expected -1 (NCCL's count) or 1..%d", f[5], PT_MAX_CHANNELS);
  rule->min_bytes = (uint64_t)lo;
  rule->max_bytes = (uint64_t)hi;
  rule->channels = ch < 0 ? 0 : (int)ch;
  rule->mode = -1;
  int rc;
  if ((rc = any_or_positive(r, f[6], "nNodes", &rule->nnodes)) ||
      (rc = any_or_positive(r, f[7], "nRanks", &rule->nranks)))
    return rc;
  if (n > 8) {
    int pipe;
    if ((rc = any_or_positive(r, f[8], "numPipeOps", &pipe))) return rc;
    rule->min_pipe_ops = rule->max_pipe_ops = pipe;
  }
  if (n > 9) {
    long long reg;
    if (integer(f[9], &reg) || reg < -1 || reg > 1)
      return fail(r, "regBuff '%s': expected -1 (any), 0 or 1", f[9]);
    /* NCCL passes regBuff = 1 for registered buffers and CUDA-graph capture:
     * the profile's graph mode; 0 is its eager mode. */
    rule->mode = reg < 0 ? -1 : reg ? PT_MODE_GRAPH : PT_MODE_EAGER;
  }
  return 0;
}

int imp_nccl_example(const char *text, size_t len, const char *file, struct pt_profile *p,
                     struct pt_error_rec *err) {
  struct reader r = {file, 0, err};
  const char *end = text + len;
  int rc = 0;
  memset(err, 0, sizeof *err);
  for (const char *s = text; s < end && !rc;) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t n = (size_t)((nl ? nl : end) - s);
    char *line = malloc(n + 1);
    r.line++;
    if (!line) return pt_error_set(err, PT_ENOMEM, file, r.line, "out of memory");
    memcpy(line, s, n);
    line[n] = '\0';
    s = nl ? nl + 1 : end;
    int has_nul = strlen(line) != n;
    char *t = trim(line);
    if (has_nul) {
      rc = fail(&r, "a NUL byte: not a text file");
    } else if (*t && *t != '#') {
      struct pt_rule *nr = realloc(p->rules, (p->nrules + 1) * sizeof *nr);
      if (!nr) {
        rc = pt_error_set(err, PT_ENOMEM, file, r.line, "out of memory");
      } else {
        p->rules = nr;
        rc = parse_line(&r, t, &p->rules[p->nrules]);
        if (!rc) p->nrules++;
      }
    }
    free(line);
  }
  if (!rc && !p->nrules)
    rc = pt_error_set(err, PT_EINVAL, file, 0, "no configuration lines (only comments or blanks)");
  return rc;
}
