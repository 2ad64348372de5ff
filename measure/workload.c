/* Workload files (measure/workload.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pcie/files.h"
#include "workload.h"

int pt_size_parse(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  static const struct {
    const char *suffix;
    unsigned shift;
  } units[] = {{"", 0}, {"k", 10}, {"kib", 10}, {"m", 20}, {"mib", 20}, {"g", 30}, {"gib", 30}};
  char *end;
  if (!s || *s < '0' || *s > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix)) continue;
    if (v > (UINT64_MAX >> units[i].shift)) return -1;
    v <<= units[i].shift;
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
  }
  return -1;
}

int pt_sizes_add(uint64_t *sizes, size_t *n, size_t max, uint64_t v) {
  size_t i = 0;
  while (i < *n && sizes[i] < v) i++;
  if (i < *n && sizes[i] == v) return 0;
  if (*n == max) return -1;
  memmove(sizes + i + 1, sizes + i, (*n - i) * sizeof *sizes);
  sizes[i] = v;
  (*n)++;
  return 0;
}

/* One line without its comment into item; 1 = a workload line, 0 = blank,
 * -1 = bad with why filled in. */
static int parse_line(char *line, struct pt_workload_item *item, char *why, size_t len) {
  char step[64], coll[32], bytes[32], count[32], extra[8], *end;
  char *hash = strchr(line, '#');
  if (hash) *hash = 0;
  int k = sscanf(line, "%63s %31s %31s %31s %7s", step, coll, bytes, count, extra);
  if (k <= 0) return 0;
  if (k != 4) {
    snprintf(why, len, "expected 'STEP COLLECTIVE BYTES COUNT'");
    return -1;
  }
  if ((item->coll = pt_coll_parse(coll)) < 0) {
    int n = snprintf(why, len, "unknown collective '%s' (", coll);
    for (int c = 0; pt_coll_name(c) && n >= 0 && (size_t)n < len; c++)
      n += snprintf(why + n, len - (size_t)n, "%s%s", c ? ", " : "", pt_coll_name(c));
    if (n >= 0 && (size_t)n < len) snprintf(why + n, len - (size_t)n, ")");
    return -1;
  }
  if (pt_size_parse(bytes, 1, PT_WORKLOAD_MAX_BYTES, &item->bytes)) {
    snprintf(why, len, "BYTES must be 1..2^40 (K, M, G allowed)");
    return -1;
  }
  errno = 0;
  unsigned long long c = strtoull(count, &end, 10);
  if (*count < '0' || *count > '9' || *end || errno || !c || c > PT_WORKLOAD_MAX_COUNT) {
    snprintf(why, len, "COUNT must be 1..%lu", PT_WORKLOAD_MAX_COUNT);
    return -1;
  }
  item->count = (unsigned long)c;
  snprintf(item->step, sizeof item->step, "%s", step);
  return 1;
}

int pt_workload_read(const char *path, pt_workload_fn fn, void *ctx, struct pt_error_rec *err) {
  char *text = NULL, line[512], why[256];
  size_t len, found = 0;
  int lineno = 0, rc = pt_file_read(path, PT_MAX_SMALL_INPUT, PT_READ_TEXT, &text, &len, err);
  if (rc) return rc;
  rc = PT_EINVAL;
  for (char *p = text, *next; p < text + len; p = next) {
    struct pt_workload_item item;
    /* The reader refused NUL bytes (PT_READ_TEXT): strcspn would stop at
     * one, and the next line would start at that same NUL forever. */
    char *nl = memchr(p, '\n', (size_t)(text + len - p));
    size_t ll = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
    next = p + ll + (nl != NULL);
    lineno++;
    /* Named, not split: a split would turn a comment's tail into a line. */
    if (ll >= sizeof line - 1) {
      pt_error_set(err, PT_EINVAL, path, lineno, "line longer than 510 bytes");
      goto out;
    }
    memcpy(line, p, ll);
    line[ll] = 0;
    int k = parse_line(line, &item, why, sizeof why);
    if (k == 0) continue;
    if (k < 0 || fn(ctx, &item, why, sizeof why)) {
      pt_error_set(err, PT_EINVAL, path, lineno, "%s", why);
      goto out;
    }
    found++;
  }
  if (!found) {
    pt_error_set(err, PT_EINVAL, path, 0, "no workload lines");
    goto out;
  }
  rc = 0;
out:
  free(text);
  return rc;
}

struct sizes_ctx {
  uint64_t *sizes;
  size_t *n, max;
};

static int add_size(void *ctx, const struct pt_workload_item *item, char *why, size_t len) {
  struct sizes_ctx *s = ctx;
  if (!pt_sizes_add(s->sizes, s->n, s->max, item->bytes)) return 0;
  snprintf(why, len, "more than %zu distinct sizes; measure fewer", s->max);
  return -1;
}

int pt_workload_sizes(const char *path, uint64_t *sizes, size_t *n, size_t max, struct pt_error_rec *err) {
  struct sizes_ctx s = {sizes, n, max};
  return pt_workload_read(path, add_size, &s, err);
}
