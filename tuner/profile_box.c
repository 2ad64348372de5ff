/*
 * provenance.box of a profile (docs/profile-format.md, "provenance.box"):
 * read from libconfig with each setting's line, checked within fixed bounds
 * (it fills struct pt_box_fp's arrays, never more), and rendered back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/hostinfo.h"
#include "profile_internal.h"

__attribute__((format(printf, 4, 5))) static int fail(struct pt_error_rec *e, const char *file,
                                                      const config_setting_t *s, const char *fmt,
                                                      ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(e, PT_EINVAL, file, s ? config_setting_source_line(s) : 0, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

/* A string member no longer than max - 1; *out untouched when absent. */
static int get_str(const config_setting_t *g, const char *key, char *out, size_t max,
                   const char *file, struct pt_error_rec *e) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return 0;
  if (config_setting_type(s) != CONFIG_TYPE_STRING)
    return fail(e, file, s, "provenance.box: %s must be a string", key);
  const char *v = config_setting_get_string(s);
  if (strlen(v) >= max)
    return fail(e, file, s, "provenance.box: %s '%.40s...' is longer than %zu characters", key, v,
                max - 1);
  snprintf(out, max, "%s", v);
  return 0;
}

static int get_int(const config_setting_t *g, const char *key, int lo, int hi, int *out,
                   const char *file, struct pt_error_rec *e) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return 0;
  int t = config_setting_type(s);
  long long v = config_setting_get_int64(s);
  if ((t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) || v < lo || v > hi)
    return fail(e, file, s, "provenance.box: %s must be an integer in %d..%d", key, lo, hi);
  *out = (int)v;
  return 0;
}

static int load_gpu(const config_setting_t *s, struct pt_fp_gpu *g, const char *file,
                    struct pt_error_rec *e) {
  static const char *const keys[] = {"bus_id", "model", "name", "host", "link_gen", "link_width",
                                     "numa", "path", NULL};
  int rc;
  if (!config_setting_is_group(s))
    return fail(e, file, s, "provenance.box.gpus: each GPU must be a group { bus_id = ...; }");
  for (int i = 0; i < config_setting_length(s); i++) {
    const config_setting_t *c = config_setting_get_elem(s, (unsigned)i);
    const char *n = config_setting_name(c);
    int known = 0;
    for (const char *const *k = keys; *k; k++) known |= n && !strcmp(n, *k);
    if (!known) return fail(e, file, c, "unknown key '%s' in provenance.box.gpus", n ? n : "?");
  }
  g->numa = PT_FP_NUMA_UNKNOWN;
  if (!config_setting_get_member(s, "bus_id"))
    return fail(e, file, s, "provenance.box.gpus: a GPU needs bus_id (\"0000:17:00.0\")");
  if ((rc = get_str(s, "bus_id", g->bus_id, sizeof g->bus_id, file, e)) ||
      (rc = get_str(s, "model", g->model, sizeof g->model, file, e)) ||
      (rc = get_str(s, "name", g->name, sizeof g->name, file, e)) ||
      (rc = get_str(s, "host", g->host, sizeof g->host, file, e)) ||
      (rc = get_int(s, "link_gen", 1, 7, &g->link_gen, file, e)) ||
      (rc = get_int(s, "link_width", 1, 32, &g->link_width, file, e)) ||
      (rc = get_int(s, "numa", -1, 1023, &g->numa, file, e)))
    return rc;
  if (!pt_fp_bus_id_given_ok(g->bus_id))
    return fail(e, file, config_setting_get_member(s, "bus_id"),
                "provenance.box: bus_id '%s' is not in sysfs form dddd:bb:dd.f, nor as nccl-tests "
                "gives it (dddd:bb:dd, or 0xbb: the bus number alone; lower-case hex)",
                g->bus_id);
  const config_setting_t *p = config_setting_get_member(s, "path");
  if (!p) return 0;
  if (!config_setting_is_array(p) || config_setting_length(p) < 1 ||
      config_setting_length(p) > PT_FP_MAX_PATH)
    return fail(e, file, p, "provenance.box: path must be an array of 1..%d strings",
                PT_FP_MAX_PATH);
  for (int k = 0; k < config_setting_length(p); k++) {
    const config_setting_t *c = config_setting_get_elem(p, (unsigned)k);
    const char *v = config_setting_get_string(c);
    if (!v || !v[0] || strlen(v) >= PT_FP_ID_LEN || strchr(v, '/'))
      return fail(e, file, c, "provenance.box: path[%d] must be a bridge's sysfs name", k);
    snprintf(g->path[k], PT_FP_ID_LEN, "%s", v);
  }
  g->npath = config_setting_length(p);
  return 0;
}

int pt__load_box(const config_setting_t *s, const char *file, struct pt_box_fp **out,
                 struct pt_error_rec *e) {
  static const char *const keys[] = {"gpus", "driver", "host_gpus", NULL};
  int rc = 0;
  if (!config_setting_is_group(s))
    return fail(e, file, s, "provenance.box must be a group { gpus = ( ... ); }");
  for (int i = 0; i < config_setting_length(s); i++) {
    const config_setting_t *c = config_setting_get_elem(s, (unsigned)i);
    const char *n = config_setting_name(c);
    int known = 0;
    for (const char *const *k = keys; *k; k++) known |= n && !strcmp(n, *k);
    if (!known) return fail(e, file, c, "unknown key '%s' in provenance.box", n ? n : "?");
  }
  const config_setting_t *g = config_setting_get_member(s, "gpus");
  if (!g || !config_setting_is_list(g) || config_setting_length(g) < 1 ||
      config_setting_length(g) > PT_FP_MAX_GPUS)
    return fail(e, file, g ? g : s, "provenance.box.gpus must be a list of 1..%d GPUs",
                PT_FP_MAX_GPUS);
  struct pt_box_fp *fp = calloc(1, sizeof *fp);
  if (!fp) return PT_ENOMEM;
  fp->host_gpus = 1;
  const config_setting_t *hg = config_setting_get_member(s, "host_gpus");
  if (hg && config_setting_type(hg) != CONFIG_TYPE_BOOL) {
    rc = fail(e, file, hg, "provenance.box: host_gpus must be true or false");
    goto out;
  }
  if (hg) fp->host_gpus = config_setting_get_bool(hg);
  if ((rc = get_str(s, "driver", fp->driver, sizeof fp->driver, file, e))) goto out;
  for (int i = 0; i < config_setting_length(g) && !rc; i++) {
    rc = load_gpu(config_setting_get_elem(g, (unsigned)i), &fp->gpu[i], file, e);
    fp->ngpus = i + 1;
    for (int j = 0; j < i && !rc; j++)
      if (!strcmp(fp->gpu[j].bus_id, fp->gpu[i].bus_id))
        rc = fail(e, file, config_setting_get_elem(g, (unsigned)i),
                  "provenance.box: bus_id %s appears twice", fp->gpu[i].bus_id);
  }
  pt_fp_sort(fp);
out:
  if (rc) free(fp);
  else *out = fp;
  return rc;
}

int pt__check_box(const struct pt_box_fp *fp, const char *file, struct pt_error_rec *e) {
  if (fp->ngpus < 1 || fp->ngpus > PT_FP_MAX_GPUS)
    return pt_error_set(e, PT_EINVAL, file, 0, "provenance.box needs 1..%d GPUs", PT_FP_MAX_GPUS);
  for (int i = 0; i < fp->ngpus; i++)
    if (!pt_fp_bus_id_given_ok(fp->gpu[i].bus_id) || fp->gpu[i].npath < 0 ||
        fp->gpu[i].npath > PT_FP_MAX_PATH)
      return pt_error_set(e, PT_EINVAL, file, 0, "provenance.box: GPU %d has a bad bus_id or path",
                          i);
  return 0;
}

static void put_str(FILE *f, const char *key, const char *v) {
  fprintf(f, " %s = \"", key);
  for (; *v; v++) {
    if (*v == '"' || *v == '\\') fputc('\\', f);
    if ((unsigned char)*v >= 0x20) fputc(*v, f);
  }
  fputs("\";", f);
}

void pt__render_box(FILE *f, const struct pt_box_fp *fp) {
  fputs("  box = {\n", f);
  if (!fp->host_gpus) fputs("    host_gpus = false;\n", f);
  if (fp->driver[0]) {
    fputs("   ", f);
    put_str(f, "driver", fp->driver);
    fputc('\n', f);
  }
  fputs("    gpus = (\n", f);
  for (int i = 0; i < fp->ngpus; i++) {
    const struct pt_fp_gpu *g = &fp->gpu[i];
    fputs("      {", f);
    put_str(f, "bus_id", g->bus_id);
    if (g->model[0]) put_str(f, "model", g->model);
    if (g->name[0]) put_str(f, "name", g->name);
    if (g->host[0]) put_str(f, "host", g->host);
    if (g->link_gen) fprintf(f, " link_gen = %d;", g->link_gen);
    if (g->link_width) fprintf(f, " link_width = %d;", g->link_width);
    if (g->numa != PT_FP_NUMA_UNKNOWN) fprintf(f, " numa = %d;", g->numa);
    if (g->npath) {
      fputs("\n        path = [", f);
      for (int k = 0; k < g->npath; k++) fprintf(f, "%s \"%s\"", k ? "," : "", g->path[k]);
      fputs(" ];", f);
    }
    fprintf(f, " }%s\n", i + 1 < fp->ngpus ? "," : "");
  }
  fputs("    );\n  };\n", f);
}
