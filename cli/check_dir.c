/*
 * pcie-tune check DIR, and check SPEC --nranks N [--nnodes M]: what the
 * plugin would do with PCIE_TUNER_PROFILE=SPEC. Both go through the tuner's
 * own selection code (tuner/select.c: the same directory listing, registry
 * reads and tie rules), so this report cannot disagree with the plugin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_dir.h"
#include "host_verdict.h"
#include "pcie/select.h"

int check_dir(const char *dir, int quiet, int json, int (*one)(const char *path, int quiet, int json)) {
  char *files[PT_SELECT_MAX_FILES];
  int n = pt_select_list(dir, files, PT_SELECT_MAX_FILES), bad = 0;
  if (n == -2) {
    fprintf(stderr, "%s: holds more than %d profiles, which the plugin refuses; split it\n", dir,
            PT_SELECT_MAX_FILES);
    return 1;
  }
  if (n < 0) {
    fprintf(stderr, "%s: cannot read the directory: %s\n", dir, strerror(errno));
    return 1;
  }
  if (n == 0) {
    fprintf(stderr, "%s: no *.cfg profile in this directory\n", dir);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    bad |= one(files[i], quiet, json);
    free(files[i]);
  }
  return bad;
}

static void match_text(char *buf, size_t len, const struct pt_profile *p) {
  int keys = (p->match_nranks != 0) + (p->match_nnodes != 0);
  if (!keys) snprintf(buf, len, "no match keys");
  else if (keys == 2)
    snprintf(buf, len, "match nranks = %d, nnodes = %d", p->match_nranks, p->match_nnodes);
  else if (p->match_nranks) snprintf(buf, len, "match nranks = %d", p->match_nranks);
  else snprintf(buf, len, "match nnodes = %d", p->match_nnodes);
}

struct report {
  int quiet, fitting;
};

static void on_note(void *arg, const struct pt_select_note *n) {
  struct report *r = arg;
  char m[96];
  if (n->verdict == PT_SEL_REFUSED) {
    printf("  refused:       %s\n", n->why);
    return;
  }
  match_text(m, sizeof m, &n->loaded->prof);
  if (n->verdict == PT_SEL_FITS) r->fitting++;
  if (!r->quiet || n->verdict == PT_SEL_FITS)
    printf("  %-14s %s ('%s', %s)\n", n->verdict == PT_SEL_FITS ? "fits:" : "does not fit:",
           n->path, n->loaded->prof.name, m);
}

int check_select(const char *spec, size_t nranks, size_t nnodes, int quiet) {
  struct report r = {quiet, 0};
  struct pt_select_how how = {on_note, &r};
  const struct pt_loaded *l = NULL;
  char msg[1400], m[96];
  printf("PCIE_TUNER_PROFILE=%s, communicator nRanks=%zu nNodes=%zu:\n", spec, nranks, nnodes);
  int rc = pt_select_explain(spec, nranks, nnodes, &how, &l, msg, sizeof msg);
  if (rc) {
    /* A named profile or directory: every outcome but a choice is a WARN. */
    printf("result: no profile; the plugin logs a WARN and leaves this communicator to NCCL:\n"
           "  %s\n",
           msg);
    return 1;
  }
  match_text(m, sizeof m, &l->prof);
  printf("result: %s (name '%s', hash %016llx, %s)", l->prof.path, l->prof.name,
         (unsigned long long)l->prof.hash, m);
  if (r.fitting > 1) printf(": the most specific of %d fitting profiles", r.fitting);
  printf("\n");
  /* Then the plugin's init checks on this host (issue 26 §2): a chosen
   * profile it refuses leaves the communicator to NCCL. */
  char v[3000];
  int no = cli_host_verdict(&l->prof, nnodes, v, sizeof v);
  printf("%s\n", v);
  if (no) printf("result on this host: no profile; the plugin logs a WARN and leaves this communicator to NCCL\n");
  pt_registry_release(l);
  return no;
}
