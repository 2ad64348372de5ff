/* The shared command-line convention; args.h says what each part does. */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pcie/profile.h"

/* The rewritten vector, kept reachable until exit like argv itself. */
static char **normalized;

int cli_normalize(int *argc, char ***argv) {
  int n = *argc, extra = 0, done = 0;
  for (int i = 1; i < n && strcmp((*argv)[i], "--"); i++)
    extra += !strncmp((*argv)[i], "--", 2) && strchr((*argv)[i], '=') != NULL;
  /* The pieces of a split "--opt=value" are copies: argv's strings stay
   * untouched, and the vector lives until exit like argv itself. */
  char **out = malloc((size_t)(n + extra + 1) * sizeof *out);
  if (!out) return -1;
  int k = 0;
  out[k++] = (*argv)[0];
  for (int i = 1; i < n; i++) {
    char *a = (*argv)[i], *eq = strchr(a, '=');
    if (done || strncmp(a, "-", 1)) {
      out[k++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      done = 1;
      out[k++] = a;
    } else if (!strcmp(a, "-q")) {
      out[k++] = (char *)"--quiet";
    } else if (!strncmp(a, "--", 2) && eq) {
      char *name = strndup(a, (size_t)(eq - a));
      if (!name) {
        free(out);
        return -1;
      }
      out[k++] = name;
      out[k++] = eq + 1;
    } else {
      out[k++] = a;
    }
  }
  out[k] = NULL;
  *argc = k;
  *argv = normalized = out;
  return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "pcie-tune %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'pcie-tune %s --help')\n", cmd);
  return 2;
}

int cli_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
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

const char *cli_coll_names(void) {
  static char buf[128];
  if (!buf[0])
    for (int c = 0; pt_coll_name(c); c++)
      snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", c ? ", " : "", pt_coll_name(c));
  return buf;
}
