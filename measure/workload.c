/* Sizes of a workload file (measure/workload.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

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

int pt_workload_sizes(const char *path, uint64_t *sizes, size_t *n, size_t max, struct pt_error_rec *err) {
  FILE *f = fopen(path, "r");
  char line[512];
  int lineno = 0, rc = PT_EINVAL;
  size_t found = 0;
  if (!f) return pt_error_set(err, PT_EIO, path, 0, "%s", strerror(errno));
  while (fgets(line, sizeof line, f)) {
    char step[64], coll[32], bytes[32], count[32], extra[8], *end;
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      pt_error_set(err, PT_EINVAL, path, lineno, "line longer than %zu bytes", sizeof line - 2);
      goto out;
    }
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    int k = sscanf(line, "%63s %31s %31s %31s %7s", step, coll, bytes, count, extra);
    if (k <= 0) continue;
    errno = 0;
    unsigned long long b = strtoull(bytes, &end, 10);
    if (k != 4 || pt_coll_parse(coll) < 0 || *end || errno || bytes[0] == '-' || !b || b > (1ULL << 40)) {
      pt_error_set(err, PT_EINVAL, path, lineno, "expected 'STEP COLLECTIVE BYTES COUNT' with a known "
                                                 "collective and BYTES 1..2^40");
      goto out;
    }
    if (pt_sizes_add(sizes, n, max, b)) {
      pt_error_set(err, PT_EINVAL, path, lineno, "more than %zu distinct sizes; measure fewer", max);
      goto out;
    }
    found++;
  }
  if (!found) {
    pt_error_set(err, PT_EINVAL, path, lineno, "no workload lines");
    goto out;
  }
  rc = 0;
out:
  fclose(f);
  return rc;
}
