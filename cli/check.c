/*
 * pcie-tune check: validates profiles exactly as the plugin loads them and
 * reports every file's first error as file:line: reason.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cmds.h"
#include "pcie/profile.h"
#include "pcie/table.h"

static const char usage[] =
    "usage: pcie-tune check [--quiet] PROFILE...\n"
    "\n"
    "Validates each profile as the plugin would load it (docs/profile-format.md).\n"
    "Prints 'FILE: ok' with the profile's name, hash and decision intervals, or\n"
    "'FILE:LINE: reason' on stderr. Exit status: 0 all valid, 1 any invalid,\n"
    "2 bad usage.\n"
    "\n"
    "  -q, --quiet   print nothing for valid profiles\n";

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

int cmd_check(int argc, char **argv) {
  int quiet = 0, bad = 0, files = 0, i = 1;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    if (!strcmp(argv[i], "--")) {
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
  for (; i < argc; i++, files++) bad |= check_one(argv[i], quiet);
  if (!files) {
    return cli_usage_error("check", "no profile given");
  }
  return bad;
}
