/*
 * File input/output for profiles: whole-file reads and the atomic,
 * no-clobber write (temp file in the target's directory, fsync, rename or
 * link). Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/profile.h"
#include "profile_internal.h"

static int io_fail(struct pt_error_rec *e, const char *path, const char *what, int code) {
  return pt_error_set(e, PT_EIO, path, 0, "%s: %s", what, code ? strerror(code) : "failed");
}

int pt__read_file(const char *path, char **text, size_t *len, struct pt_error_rec *err) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  int rc = 0;
  memset(err, 0, sizeof *err);
  if (!f) return io_fail(err, path, "cannot open", errno);
  for (;;) {
    if (cap - n < 4096) {
      size_t ncap = cap ? cap * 2 : 8192;
      char *nb = ncap > (size_t)256 << 20 ? NULL : realloc(buf, ncap + 1);
      if (!nb) {
        rc = io_fail(err, path, ncap > (size_t)256 << 20 ? "file is larger than 256 MiB" : "out of memory", 0);
        break;
      }
      buf = nb;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) rc = io_fail(err, path, "cannot read", errno);
      break;
    }
  }
  fclose(f);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}

int pt_profile_write(const struct pt_profile *p, const char *path, unsigned flags,
                     struct pt_error_rec *err) {
  char *text = NULL, *dircopy = NULL, *tmp = NULL;
  int fd = -1, rc;
  struct stat st;
  memset(err, 0, sizeof *err);
  if ((rc = pt__validate(p, path, err))) return rc;
  if (!(flags & PT_WRITE_FORCE) && lstat(path, &st) == 0) {
    snprintf(err->file, sizeof err->file, "%s", path);
    snprintf(err->msg, sizeof err->msg, "already exists; pass --force to overwrite it");
    return PT_EEXIST;
  }
  if ((rc = pt_profile_render(p, &text))) goto out;
  dircopy = strdup(path);
  if (!dircopy || asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dircopy), strrchr(path, '/') ? strrchr(path, '/') + 1 : path) < 0) {
    tmp = NULL;
    rc = PT_ENOMEM;
    goto out;
  }
  fd = mkstemp(tmp);
  if (fd < 0) {
    rc = io_fail(err, path, "cannot create a temporary file beside it", errno);
    goto out;
  }
  size_t len = strlen(text), off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = io_fail(err, path, "cannot write", errno);
      goto out;
    }
    off += (size_t)w;
  }
  if (fchmod(fd, 0644) || fsync(fd)) {
    rc = io_fail(err, path, "cannot sync", errno);
    goto out;
  }
  close(fd);
  fd = -1;
  /* Without --force, link() fails if the target appeared meanwhile: no race
   * can clobber a file. With --force, rename() replaces atomically. */
  if (flags & PT_WRITE_FORCE ? rename(tmp, path) : link(tmp, path)) {
    rc = errno == EEXIST ? PT_EEXIST : PT_EIO;
    if (rc == PT_EEXIST) {
      snprintf(err->file, sizeof err->file, "%s", path);
      snprintf(err->msg, sizeof err->msg, "already exists; pass --force to overwrite it");
    } else {
      io_fail(err, path, "cannot move the new file into place", errno);
    }
    goto out;
  }
out:
  if (fd >= 0) close(fd);
  if (tmp) unlink(tmp); /* after rename it no longer exists; after link it is the extra name */
  free(tmp);
  free(dircopy);
  free(text);
  if (rc == PT_ENOMEM && !err->msg[0]) {
    pt_error_set(err, 0, path, 0, "out of memory");
  }
  return rc;
}
