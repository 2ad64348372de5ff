/*
 * Chooses the profile for one communicator: expands PCIE_TUNER_PROFILE (a
 * file or a directory of *.cfg) or, when it is unset, the installed
 * profiles directory; keeps the profiles whose match fits (nRanks, nNodes),
 * and takes the most specific. A tie or an invalid file makes the
 * communicator passive: guessing could make ranks with different files
 * disagree, which hangs jobs. `pcie-tune check DIR --nranks N` runs this
 * same code with a note callback, so it cannot explain a different choice.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pcie/core.h"
#include "pcie/select.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the .cfg files of dir, sorted by name (so every rank scans in the
 * same order). Returns the count, -1 when dir cannot be opened, -2 when it
 * holds more than max (a silently partial scan could pick differently). */
int pt_select_list(const char *dir, char **files, int max) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  if (!d) return -1;
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".cfg")) continue;
    if (n == max || asprintf(&files[n], "%s/%s", dir, de->d_name) < 0) {
      for (int i = 0; i < n; i++) free(files[i]);
      closedir(d);
      return -2;
    }
    n++;
  }
  closedir(d);
  qsort(files, (size_t)n, sizeof *files, cmp_str);
  return n;
}

static int fits(const struct pt_profile *p, size_t nranks, size_t nnodes) {
  return (!p->match_nranks || (size_t)p->match_nranks == nranks) &&
         (!p->match_nnodes || (size_t)p->match_nnodes == nnodes);
}

static int specificity(const struct pt_profile *p) {
  return (p->match_nranks != 0) + (p->match_nnodes != 0);
}

static void note(const struct pt_select_how *how, const char *path, int verdict,
                 const struct pt_loaded *l, const char *why) {
  if (!how || !how->note) return;
  struct pt_select_note n = {path, verdict, l, why};
  how->note(how->arg, &n);
}

/* Picks among files; PT_ENOENT when none fits. The first refused file
 * decides the result; with a note callback the others are still read, so
 * that the explanation lists every file. */
static int pick(char **files, int n, size_t nranks, size_t nnodes, const struct pt_select_how *how,
                const struct pt_loaded **out, char *msg, size_t msglen) {
  const struct pt_loaded *best = NULL, *tie = NULL;
  int rc = 0;
  for (int i = 0; i < n && (!rc || (how && how->note)); i++) {
    const struct pt_loaded *l;
    struct pt_error_rec err;
    int lrc = pt_registry_acquire(files[i], &l, &err);
    if (lrc) {
      char line[1100];
      pt_error_format(&err, line, sizeof line);
      note(how, files[i], PT_SEL_REFUSED, NULL, line);
      if (!rc) {
        snprintf(msg, msglen, "%s", line);
        rc = lrc;
      }
      continue;
    }
    if (!fits(&l->prof, nranks, nnodes)) {
      note(how, files[i], PT_SEL_NOFIT, l, NULL);
      pt_registry_release(l);
      continue;
    }
    note(how, files[i], PT_SEL_FITS, l, NULL);
    if (best && specificity(&l->prof) < specificity(&best->prof)) {
      pt_registry_release(l);
      continue;
    }
    if (best && specificity(&l->prof) == specificity(&best->prof)) {
      if (!tie) tie = l;
      else pt_registry_release(l);
      continue;
    }
    pt_registry_release(best);
    pt_registry_release(tie);
    tie = NULL;
    best = l;
  }
  if (!rc && tie) {
    snprintf(msg, msglen,
             "profiles %s and %s both match nRanks=%zu nNodes=%zu equally; remove one or add a "
             "'match' key to make one more specific",
             best->prof.path, tie->prof.path, nranks, nnodes);
    rc = PT_EAMBIG;
  }
  if (!rc && !best) rc = PT_ENOENT;
  if (rc) {
    pt_registry_release(best);
    pt_registry_release(tie);
    return rc;
  }
  pt_registry_release(tie);
  *out = best;
  return 0;
}

static void describe_match(char *buf, size_t len, const struct pt_profile *p) {
  if (p->match_nranks && p->match_nnodes)
    snprintf(buf, len, "nranks = %d, nnodes = %d", p->match_nranks, p->match_nnodes);
  else if (p->match_nranks)
    snprintf(buf, len, "nranks = %d", p->match_nranks);
  else
    snprintf(buf, len, "nnodes = %d", p->match_nnodes);
}

/* A named file that does not fit: say what it fits. */
static void explain_nofit(const char *path, size_t nranks, size_t nnodes, char *msg,
                          size_t msglen) {
  const struct pt_loaded *l;
  struct pt_error_rec err;
  char m[64] = "?";
  if (pt_registry_acquire(path, &l, &err) == 0) {
    describe_match(m, sizeof m, &l->prof);
    pt_registry_release(l);
  }
  snprintf(msg, msglen, "profile %s does not match nRanks=%zu nNodes=%zu (its match: %s)", path,
           nranks, nnodes, m);
}

/* Selects from one file or one directory; PT_ENOENT when the path is absent
 * (absent_ok) or holds no fitting profile. */
static int select_path(const char *path, int absent_ok, size_t nranks, size_t nnodes,
                       const struct pt_select_how *how, const struct pt_loaded **out, char *msg,
                       size_t msglen) {
  struct stat st;
  char *files[PT_SELECT_MAX_FILES];
  int n, rc;
  if (stat(path, &st) != 0) {
    if (absent_ok) return PT_ENOENT;
    snprintf(msg, msglen, "PCIE_TUNER_PROFILE names %s, which cannot be opened (%s)", path,
             strerror(errno));
    return PT_EIO;
  }
  if (!S_ISDIR(st.st_mode)) {
    /* Anything else (a FIFO, a device) is refused by the registry's read. */
    files[0] = (char *)path;
    rc = pick(files, 1, nranks, nnodes, how, out, msg, msglen);
    if (rc == PT_ENOENT) explain_nofit(path, nranks, nnodes, msg, msglen);
    return rc;
  }
  errno = 0;
  n = pt_select_list(path, files, PT_SELECT_MAX_FILES);
  if (n < 0) {
    if (n == -2)
      snprintf(msg, msglen, "%s: profile directory holds more than %d profiles; split it", path,
               PT_SELECT_MAX_FILES);
    else
      snprintf(msg, msglen, "%s: cannot read profile directory (%s)", path, strerror(errno));
    return PT_EIO;
  }
  rc = pick(files, n, nranks, nnodes, how, out, msg, msglen);
  if (rc == PT_ENOENT)
    snprintf(msg, msglen, "%s: no profile%s matches nRanks=%zu nNodes=%zu", path,
             n ? "" : " (no *.cfg file)", nranks, nnodes);
  for (int i = 0; i < n; i++) free(files[i]);
  return rc;
}

/* PREFIX/share/nccl-pcie-tuner/profiles for the PREFIX/lib this library
 * was loaded from, so `make install PREFIX=...` works without rebuilding;
 * the build-time PT_DATADIR when that cannot be found. */
static void installed_dir(char *out, size_t len) {
  Dl_info info;
  char copy[4096];
  if (dladdr((void *)installed_dir, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
    snprintf(copy, sizeof copy, "%s", info.dli_fname);
    snprintf(out, len, "%s/../share/nccl-pcie-tuner/profiles", dirname(copy));
  } else {
    snprintf(out, len, "%s", PT_DATADIR);
  }
}

int pt_select_explain(const char *spec, size_t nranks, size_t nnodes,
                      const struct pt_select_how *how, const struct pt_loaded **out, char *msg,
                      size_t msglen) {
  char installed[4200];
  int rc;
  *out = NULL;
  msg[0] = '\0';
  if (spec && spec[0]) return select_path(spec, 0, nranks, nnodes, how, out, msg, msglen);
  /* Only the installed directory: a relative ./profiles would depend on the
   * job's working directory (the same on every rank only by luck) and, in
   * a checkout, picks the synthetic example profile. */
  installed_dir(installed, sizeof installed);
  rc = select_path(installed, 1, nranks, nnodes, how, out, msg, msglen);
  if (rc == PT_ENOENT)
    snprintf(msg, msglen,
             "no profile matches nRanks=%zu nNodes=%zu in %s; set PCIE_TUNER_PROFILE to a "
             "profile file or directory",
             nranks, nnodes, installed);
  return rc;
}

int pt_select_profile(const char *spec, size_t nranks, size_t nnodes,
                      const struct pt_loaded **out, char *msg, size_t msglen) {
  return pt_select_explain(spec, nranks, nnodes, NULL, out, msg, msglen);
}
