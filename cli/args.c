/* The shared command-line convention; args.h says what each part does. */
#include "args.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
