/*
 * File input/output for profiles: the whole-file read the loader uses (a
 * regular file of sane size, no NUL byte, no @include) and the atomic,
 * no-clobber write. The file rules themselves are tuner/files.c. Never
 * prints.
 */
#include <stdlib.h>
#include <string.h>

#include "pcie/files.h"
#include "pcie/profile.h"
#include "profile_internal.h"

_Static_assert((unsigned)PT_WRITE_FORCE == (unsigned)PT_OUT_FORCE, "one force flag");

int pt__read_file(const char *path, char **text, size_t *len, struct pt_error_rec *err) {
  int rc = pt_file_read(path, PT_MAX_PROFILE_BYTES, PT_READ_TEXT, text, len, err);
  if (!rc) rc = pt_text_refuse_include(*text, path, err);
  if (!rc) rc = pt_text_prescan(*text, *len, path, err); /* before libconfig allocates */
  if (rc) {
    free(*text);
    *text = NULL;
  }
  return rc;
}

int pt_profile_write(const struct pt_profile *p, const char *path, unsigned flags,
                     struct pt_error_rec *err) {
  char *text = NULL;
  int rc;
  memset(err, 0, sizeof *err);
  if ((rc = pt__validate(p, path, err))) return rc;
  if ((rc = pt_profile_render(p, &text)))
    return pt_error_set(err, rc, path, 0, "out of memory");
  rc = pt_output_write(path, text, strlen(text), flags & PT_WRITE_FORCE ? PT_OUT_FORCE : 0, err);
  free(text);
  return rc;
}
