/*
 * Edits provenance.extra of a profile held in memory: the free-form group
 * that sweeps and the LL128 screen record their settings in, kept as its
 * rendered text (tuner/profile_load.c, load_extra). Re-recording a setting
 * must replace it, not add a second one of the same name (libconfig
 * refuses a duplicate, and the file would no longer load), so the text is
 * parsed, the setting removed and the rest rendered again. Never prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_internal.h"

int pt_profile_extra_put(struct pt_profile *p, const char *name, const char *setting) {
  config_t cfg;
  char *wrapped = NULL, *rest = NULL, *joined = NULL;
  int rc = PT_ENOMEM;
  config_init(&cfg);
  if (asprintf(&wrapped, "extra = {\n%s};\n", p->prov.extra ? p->prov.extra : "") < 0) {
    wrapped = NULL;
    goto out;
  }
  /* The text was rendered from a loaded group or written by our own
   * writers: it parses, unless a caller broke it. */
  if (config_read_string(&cfg, wrapped) != CONFIG_TRUE) {
    rc = PT_EINVAL;
    goto out;
  }
  config_setting_t *g = config_lookup(&cfg, "extra");
  if (config_setting_get_member(g, name)) config_setting_remove(g, name);
  if ((rc = pt__render_setting_body(g, &rest))) goto out;
  rc = PT_ENOMEM;
  if (asprintf(&joined, "%s%s", rest, setting) < 0) {
    joined = NULL;
    goto out;
  }
  free(p->prov.extra);
  p->prov.extra = joined;
  joined = NULL;
  rc = 0;
out:
  config_destroy(&cfg);
  free(wrapped);
  free(rest);
  free(joined);
  return rc;
}
