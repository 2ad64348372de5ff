/*
 * Profile selection with an explanation: the code the plugin runs at init
 * (pt_select_profile in pcie/core.h is this with no callback), reporting
 * each file it considers, so `pcie-tune check DIR --nranks N` says what the
 * plugin would choose and why (docs/profile-format.md, "Selection").
 */
#ifndef PCIE_SELECT_H
#define PCIE_SELECT_H

#include <stddef.h>

#include "pcie/core.h"

enum pt_select_verdict {
  PT_SEL_REFUSED = 0, /* could not be read, or invalid: the communicator stays passive */
  PT_SEL_NOFIT,       /* valid, but its match excludes this communicator */
  PT_SEL_FITS,        /* valid and fitting; the most specific one wins */
};

struct pt_select_note {
  const char *path;
  int verdict;                    /* enum pt_select_verdict */
  const struct pt_loaded *loaded; /* NULL when refused; valid only during the call */
  const char *why;               /* "file:line: reason" when refused, else NULL */
};

struct pt_select_how {
  void (*note)(void *arg, const struct pt_select_note *n); /* per file, in scan order */
  void *arg;
};

/* pt_select_profile's contract, plus one note per file considered. With a
 * callback, every file is read even after one is refused; the result is
 * the same as without. */
int pt_select_explain(const char *spec, size_t nranks, size_t nnodes,
                      const struct pt_select_how *how, const struct pt_loaded **out, char *msg,
                      size_t msglen);

/* The most profiles one directory may hold: a silently partial scan could
 * choose differently on different ranks. */
#define PT_SELECT_MAX_FILES 256

/* The *.cfg entries of dir the plugin considers, as malloc'ed "dir/name"
 * paths sorted by name. Returns their count, -1 when dir cannot be read
 * (errno set), -2 when it holds more than max. */
int pt_select_list(const char *dir, char **files, int max);

#endif
