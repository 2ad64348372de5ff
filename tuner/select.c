/*
 * Chooses the profile for one communicator: expands PCIE_TUNER_PROFILE (a
 * file or a directory of *.cfg) or the default search path, keeps the
 * profiles whose match fits (nRanks, nNodes), and takes the most specific.
 * A tie or an invalid file makes the communicator passive: guessing could
 * make ranks with different files disagree, which hangs jobs.
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

#define MAX_FILES 256

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the .cfg files of dir, sorted by name (so every rank scans in the
 * same order). Returns the count, -1 when dir cannot be opened, -2 when it
 * holds more than max (a silently partial scan could pick differently). */
static int list_dir(const char *dir, char **files, int max) {
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

/* Picks among files; PT_ENOENT when none fits. */
static int pick(char **files, int n, size_t nranks, size_t nnodes, const struct pt_loaded **out,
                char *msg, size_t msglen) {
  const struct pt_loaded *best = NULL, *tie = NULL;
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    const struct pt_loaded *l;
    struct pt_error_rec err;
    rc = pt_registry_acquire(files[i], &l, &err);
    if (rc) {
      char line[1100];
      pt_error_format(&err, line, sizeof line);
      snprintf(msg, msglen, "%s", line);
      break;
    }
    if (!fits(&l->prof, nranks, nnodes) ||
        (best && specificity(&l->prof) < specificity(&best->prof))) {
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

/* Selects from one file or one directory; PT_ENOENT when the path is absent
 * (absent_ok) or holds no fitting profile. */
static int select_path(const char *path, int absent_ok, size_t nranks, size_t nnodes,
                       const struct pt_loaded **out, char *msg, size_t msglen) {
  struct stat st;
  char *files[MAX_FILES];
  int n, rc;
  if (stat(path, &st) != 0) {
    if (absent_ok) return PT_ENOENT;
    snprintf(msg, msglen, "PCIE_TUNER_PROFILE names %s, which cannot be opened (%s)", path,
             strerror(errno));
    return PT_EIO;
  }
  if (!S_ISDIR(st.st_mode)) {
    files[0] = (char *)path;
    rc = pick(files, 1, nranks, nnodes, out, msg, msglen);
    if (rc == PT_ENOENT)
      snprintf(msg, msglen, "profile %s does not match nRanks=%zu nNodes=%zu", path, nranks, nnodes);
    return rc;
  }
  errno = 0;
  n = list_dir(path, files, MAX_FILES);
  if (n < 0) {
    if (n == -2)
      snprintf(msg, msglen, "profile directory %s holds more than %d profiles; split it", path,
               MAX_FILES);
    else
      snprintf(msg, msglen, "cannot read profile directory %s (%s)", path, strerror(errno));
    return PT_EIO;
  }
  rc = pick(files, n, nranks, nnodes, out, msg, msglen);
  if (rc == PT_ENOENT)
    snprintf(msg, msglen, "no profile in %s matches nRanks=%zu nNodes=%zu", path, nranks, nnodes);
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

int pt_select_profile(const char *spec, size_t nranks, size_t nnodes,
                      const struct pt_loaded **out, char *msg, size_t msglen) {
  char installed[4200];
  int rc;
  *out = NULL;
  msg[0] = '\0';
  if (spec && spec[0]) return select_path(spec, 0, nranks, nnodes, out, msg, msglen);
  /* Installed profiles first, then ./profiles: the first directory with a
   * fitting profile decides. */
  installed_dir(installed, sizeof installed);
  rc = select_path(installed, 1, nranks, nnodes, out, msg, msglen);
  if (rc != PT_ENOENT) return rc;
  rc = select_path("profiles", 1, nranks, nnodes, out, msg, msglen);
  if (rc == PT_ENOENT)
    snprintf(msg, msglen,
             "no profile matches nRanks=%zu nNodes=%zu in %s or ./profiles; set "
             "PCIE_TUNER_PROFILE to a profile file or directory",
             nranks, nnodes, installed);
  return rc;
}
