/*
 * pcie-tune check: validates profiles exactly as the plugin loads them and
 * reports every file's first error as file:line: reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "check_dir.h"
#include "cmds.h"
#include "pcie/profile.h"
#include "pcie/table.h"

static const char usage[] =
    "usage: pcie-tune check [--quiet] PROFILE|DIR...\n"
    "       pcie-tune check PROFILE|DIR --nranks N [--nnodes M]\n"
    "\n"
    "Validates each profile as the plugin would load it (docs/profile-format.md).\n"
    "Prints 'FILE: ok' with the profile's name, hash and decision intervals, or\n"
    "'FILE:LINE: reason' on stderr. A DIR is checked as the plugin reads it:\n"
    "every *.cfg directly in it. With --nranks, says instead which profile the\n"
    "plugin would choose with PCIE_TUNER_PROFILE=PROFILE|DIR for that\n"
    "communicator, and why (each file's verdict, ties, refusals).\n"
    "Exit status: 0 all valid (or a profile chosen), 1 any invalid (or none\n"
    "chosen), 2 bad usage.\n"
    "\n"
    "  -q, --quiet   print nothing for valid profiles\n"
    "  --nranks N    the communicator's nRanks (1..1048576)\n"
    "  --nnodes M    the communicator's nNodes (default 1)\n";

static int check_one(const char *path, int quiet) {
  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  char line[1200];
  int rc = pt_profile_load(&p, path, &e);
  if (rc) {
    pt_error_format(&e, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    return 1;
  }
  rc = pt_table_build(&t, &p);
  if (rc) {
    fprintf(stderr, "%s: %s\n", path, pt_strerror(rc));
  } else {
    if (!quiet)
      printf("%s: ok (name '%s', hash %016llx, %zu decision intervals)\n", path, p.name,
             (unsigned long long)p.hash, t.ninterval);
    pt_table_release(&t);
  }
  pt_profile_release(&p);
  return rc ? 1 : 0;
}

/* --nranks/--nnodes N or =N at argv[*i]; 1 when taken, 0 when not this
 * option, -1 when its value is bad. */
static int comm_opt(int argc, char **argv, int *i, const char *name, long *out) {
  size_t n = strlen(name);
  const char *a = argv[*i], *v;
  if (strncmp(a, name, n) || (a[n] && a[n] != '=')) return 0;
  if (a[n]) v = a + n + 1;
  else if (*i + 1 < argc) v = argv[++*i];
  else v = "";
  char *end;
  errno = 0;
  *out = strtol(v, &end, 10);
  if (end == v || *end || errno || *out < 1 || *out > (1L << 20)) {
    cli_usage_error("check", "bad %s '%s' (1..1048576)", name, v);
    return -1;
  }
  return 1;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cmd_check(int argc, char **argv) {
  int quiet = 0, bad = 0, files = 0, i = 1, c, dashdash = 0;
  long nranks = 0, nnodes = 0;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    if ((c = comm_opt(argc, argv, &i, "--nranks", &nranks)) ||
        (c = comm_opt(argc, argv, &i, "--nnodes", &nnodes))) {
      if (c < 0) return 2;
      continue;
    }
    if (!strcmp(argv[i], "--")) {
      dashdash = 1;
      i++;
      break;
    }
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
      continue;
    }
    return cli_usage_error("check", "unknown option '%s'", argv[i]);
  }
  /* Options may also follow the profiles: check DIR --nranks 8. */
  char **paths = calloc((size_t)argc, sizeof *paths);
  if (!paths) return 1;
  for (; i < argc; i++) {
    if (dashdash || argv[i][0] != '-' || !argv[i][1]) {
      paths[files++] = argv[i];
    } else if ((c = comm_opt(argc, argv, &i, "--nranks", &nranks)) ||
        (c = comm_opt(argc, argv, &i, "--nnodes", &nnodes))) {
      if (c < 0) return free(paths), 2;
    } else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
    } else {
      free(paths);
      return cli_usage_error("check", "unknown option '%s'", argv[i]);
    }
  }
  if (!files || (nnodes && !nranks)) {
    free(paths);
    return cli_usage_error("check", "%s", files ? "--nnodes needs --nranks" : "no profile given");
  }
  for (int k = 0; k < files; k++) {
    if (nranks) bad |= check_select(paths[k], (size_t)nranks, nnodes ? (size_t)nnodes : 1, quiet);
    else if (is_dir(paths[k])) bad |= check_dir(paths[k], quiet, check_one);
    else bad |= check_one(paths[k], quiet);
  }
  free(paths);
  return bad;
}
