/* Helpers shared by the profile files of the tuner core; not installed. */
#ifndef PCIE_PROFILE_INTERNAL_H
#define PCIE_PROFILE_INTERNAL_H

#include <libconfig.h>
#include <stddef.h>
#include <stdio.h>

#include "pcie/profile.h"

/* Reads a whole profile into a NUL-terminated malloc'ed buffer (*len
 * bytes), refusing what tuner/files.c refuses, a NUL byte and @include. */
int pt__read_file(const char *path, char **text, size_t *len, struct pt_error_rec *err);
/* Cross-field rules of the format, reporting against file. */
int pt__validate(const struct pt_profile *p, const char *file, struct pt_error_rec *err);
/* Renders the children of a group as libconfig text (for provenance.extra). */
int pt__render_setting_body(const config_setting_t *g, char **out);

/* provenance.box (tuner/profile_box.c): load into a malloc'ed *out,
 * check one built in memory, render as the "  box = { ... };" member. */
struct pt_box_fp;
int pt__load_box(const config_setting_t *s, const char *file, struct pt_box_fp **out,
                 struct pt_error_rec *err);
int pt__check_box(const struct pt_box_fp *fp, const char *file, struct pt_error_rec *err);
void pt__render_box(FILE *f, const struct pt_box_fp *fp);

#endif
