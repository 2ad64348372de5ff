/*
 * pcie-tune check: validates profiles exactly as the plugin loads them and
 * reports every file's first error as file:line: reason, a partial sweep (the
 * plugin refuses it) and a profile without NCCL's default (the plugin uses it
 * but cannot tell where NCCL's own choice is faster).
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "pcie/profile.h"
#include "pcie/table.h"

static const char usage[] =
    "usage: pcie-tune check [--quiet] [--json] PROFILE...\n"
    "\n"
    "Validates each profile as the plugin would load it (docs/profile-format.md).\n"
    "Prints 'FILE: ok' with the profile's name, hash and decision intervals (all\n"
    "collectives and modes, as the plugin's init line counts them), or\n"
    "'FILE:LINE: reason' on stderr. A partial sweep is reported with how much of\n"
    "it is measured: the plugin refuses it until 'pcie-tune profile --resume'\n"
    "finishes it. Exit status: 0 all usable, 1 any invalid or partial, 2 bad usage.\n"
    "\n"
    "  -q, --quiet   print nothing for usable profiles (warnings still go to stderr)\n"
    "  --json        one JSON object per profile on stdout instead of text\n";

static void json_str(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

static void json_line(const char *path, const char *status, const char *msg,
                      const struct pt_profile *p, const struct pt_table *t) {
  printf("{\"file\": ");
  json_str(path);
  printf(", \"status\": \"%s\"", status);
  if (msg) {
    printf(", \"message\": ");
    json_str(msg);
  }
  if (p && t) {
    printf(", \"name\": ");
    json_str(p->name);
    printf(", \"hash\": \"%016llx\", \"decision_intervals\": %zu, \"tables\": %zu",
           (unsigned long long)p->hash, t->ninterval, t->nsets);
    printf(", \"comm_channels\": %d, \"nccl_default\": %s", p->comm_channels,
           pt_profile_lacks_default(p) ? "false" : "true");
  }
  printf("}\n");
}

static int check_one(const char *path, int quiet, int json) {
  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  char line[1200];
  int rc = pt_profile_load(&p, path, &e);
  if (rc) {
    pt_error_format(&e, line, sizeof line);
    if (json) json_line(path, "invalid", line, NULL, NULL);
    else fprintf(stderr, "%s\n", line);
    return 1;
  }
  rc = pt_table_build(&t, &p);
  if (rc) {
    if (json) json_line(path, "error", pt_strerror(rc), NULL, NULL);
    else fprintf(stderr, "%s: %s\n", path, pt_strerror(rc));
    pt_profile_release(&p);
    return 1;
  }
  int status = 0;
  if (pt_profile_partial(&p, line, sizeof line)) {
    /* The plugin refuses it: not usable until finished. */
    if (json) json_line(path, "partial", line, &p, &t);
    else fprintf(stderr, "%s: %s; the plugin leaves every decision to NCCL until then\n", path, line);
    status = 1;
  } else if (pt_profile_lacks_default(&p)) {
    snprintf(line, sizeof line,
             "warning: a series has candidates but no nccl_default, so the plugin cannot tell "
             "where it helps: it ranks candidates there as if NCCL's own choice were slower");
    if (json) json_line(path, "ok", line, &p, &t);
    else {
      fprintf(stderr, "%s: %s\n", path, line);
      if (!quiet)
        printf("%s: ok (name '%s', hash %016llx, %zu decision intervals in %zu collective/mode "
               "tables)\n",
               path, p.name, (unsigned long long)p.hash, t.ninterval, t.nsets);
    }
  } else if (json) {
    json_line(path, "ok", NULL, &p, &t);
  } else if (!quiet) {
    printf("%s: ok (name '%s', hash %016llx, %zu decision intervals in %zu collective/mode "
           "tables)\n",
           path, p.name, (unsigned long long)p.hash, t.ninterval, t.nsets);
  }
  pt_table_release(&t);
  pt_profile_release(&p);
  return status;
}

int cmd_check(int argc, char **argv) {
  int quiet = 0, json = 0, bad = 0, files = 0, i = 1;
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
    if (!strcmp(argv[i], "--json")) {
      json = 1;
      continue;
    }
    fprintf(stderr, "pcie-tune check: unknown option '%s'\n\n%s", argv[i], usage);
    return 2;
  }
  for (; i < argc; i++, files++) bad |= check_one(argv[i], quiet, json);
  if (!files) {
    fprintf(stderr, "pcie-tune check: no profile given\n\n%s", usage);
    return 2;
  }
  return bad;
}
