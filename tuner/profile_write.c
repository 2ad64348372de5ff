/*
 * Renders a struct pt_profile as libconfig text in the documented layout
 * (docs/profile-format.md). Every float is printed with enough digits that a
 * reload compiles to the same decisions. Never prints to a stream itself.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/profile.h"
#include "profile_internal.h"

static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch == '\n') fputs("\\n", f);
    else if (ch == '\t') fputs("\\t", f);
    else if (ch < 0x20) fprintf(f, "\\x%02x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

/* A float that libconfig reads back as a float: always has '.' or 'e'. */
static void put_double(FILE *f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", v);
  fputs(buf, f);
  if (!strpbrk(buf, ".eEn")) fputs(".0", f);
}

static void put_points(FILE *f, const char *key, const struct pt_point *pts, size_t n,
                       int spread) {
  fprintf(f, "%s = ( ", key);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    if (spread) put_double(f, pts[i].spread);
    else if (pts[i].state == PT_PT_OK) put_double(f, pts[i].lat_us);
    else put_string(f, pt_point_state_name(pts[i].state));
  }
  fputs(" );", f);
}

static int has_spread(const struct pt_point *pts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (pts[i].spread > 0) return 1;
  return 0;
}

static void put_series(FILE *f, const struct pt_series *s, int mode) {
  fprintf(f, "  %s = {\n    sizes = [ ", pt_mode_name(mode));
  for (size_t i = 0; i < s->nsizes; i++) fprintf(f, "%s%" PRIu64 "L", i ? ", " : "", s->sizes[i]);
  fputs(" ];\n", f);
  if (s->nccl_default) {
    fputs("    ", f);
    put_points(f, "nccl_default", s->nccl_default, s->nsizes, 0);
    fputc('\n', f);
  }
  fputs("    candidates = (\n", f);
  for (size_t i = 0; i < s->ncand; i++) {
    const struct pt_candidate *c = &s->cand[i];
    fprintf(f, "      { algo = \"%s\"; proto = \"%s\"; channels = %d;", pt_algo_name(c->algo),
            pt_proto_name(c->proto), c->channels);
    if (c->chunk) fprintf(f, " chunk = %zuL;", c->chunk);
    fputs("\n        ", f);
    put_points(f, "latency", c->points, s->nsizes, 0);
    if (has_spread(c->points, s->nsizes)) {
      fputs("\n        ", f);
      put_points(f, "spread", c->points, s->nsizes, 1);
    }
    fprintf(f, " }%s\n", i + 1 < s->ncand ? "," : "");
  }
  fputs("    );\n  };\n", f);
}

static void put_opt(FILE *f, const char *key, const char *v) {
  if (!v) return;
  fprintf(f, "  %s = ", key);
  put_string(f, v);
  fputs(";\n", f);
}

int pt_profile_render(const struct pt_profile *p, char **out) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return PT_ENOMEM;
  fprintf(f, "# nccl-pcie-tuner profile; format: docs/profile-format.md\nversion = %d;\nname = ",
          p->version);
  put_string(f, p->name);
  fputs(";\n", f);
  if (p->match_nranks || p->match_nnodes) {
    fputs("match = {", f);
    if (p->match_nranks) fprintf(f, " nranks = %d;", p->match_nranks);
    if (p->match_nnodes) fprintf(f, " nnodes = %d;", p->match_nnodes);
    fputs(" };\n", f);
  }
  fputs("provenance = {\n", f);
  put_opt(f, "tool", p->prov.tool);
  put_opt(f, "backend", p->prov.backend);
  put_opt(f, "nccl_version", p->prov.nccl_version);
  put_opt(f, "date", p->prov.date);
  put_opt(f, "mode", p->prov.mode);
  put_opt(f, "note", p->prov.note);
  if (p->prov.box) pt__render_box(f, p->prov.box);
  put_opt(f, "buffers", p->prov.buffers);
  if (p->prov.has_graph_register) fprintf(f, "  graph_register = %d;\n", p->prov.graph_register);
  if (p->prov.extra) fprintf(f, "  extra = {\n%s  };\n", p->prov.extra);
  fputs("};\n", f);
  if (p->comm_channels) fprintf(f, "communicator = { channels = %d; };\n", p->comm_channels);
  if (p->env_recorded) {
    fputs("nccl_env = {", f);
    for (size_t i = 0; i < p->nenv; i++) {
      fprintf(f, " %s = ", p->env[i].name);
      put_string(f, p->env[i].value);
      fputc(';', f);
    }
    fputs(" };\n", f);
  }
  if (p->margin > 0) {
    fputs("margin = ", f);
    put_double(f, p->margin);
    fputs(";\n", f);
  }
  for (int c = 0; c < PT_NCOLL; c++) {
    if (!p->series[c][0] && !p->series[c][1]) continue;
    fprintf(f, "%s = {\n", pt_coll_name(c));
    for (int m = PT_NMODES - 1; m >= 0; m--)
      if (p->series[c][m]) put_series(f, p->series[c][m], m);
    fputs("};\n", f);
  }
  if (p->nrules) {
    fputs("rules = (\n", f);
    for (size_t i = 0; i < p->nrules; i++) {
      const struct pt_rule *r = &p->rules[i];
      fprintf(f,
              "  { collective = \"%s\"; min_bytes = %" PRIu64 "L; max_bytes = %" PRIu64
              "L; algo = \"%s\"; proto = \"%s\";",
              pt_coll_name(r->coll), r->min_bytes, r->max_bytes, pt_algo_name(r->algo),
              pt_proto_name(r->proto));
      if (r->channels) fprintf(f, " channels = %d;", r->channels);
      if (r->chunk) fprintf(f, " chunk = %zuL;", r->chunk);
      if (r->nranks) fprintf(f, " nranks = %d;", r->nranks);
      if (r->nnodes) fprintf(f, " nnodes = %d;", r->nnodes);
      if (r->min_pipe_ops) fprintf(f, " min_pipe_ops = %d;", r->min_pipe_ops);
      if (r->max_pipe_ops) fprintf(f, " max_pipe_ops = %d;", r->max_pipe_ops);
      if (r->mode >= 0) fprintf(f, " mode = \"%s\";", pt_mode_name(r->mode));
      fprintf(f, " }%s\n", i + 1 < p->nrules ? "," : "");
    }
    fputs(");\n", f);
  }
  if (fclose(f)) {
    free(buf);
    return PT_ENOMEM;
  }
  *out = buf;
  return 0;
}

static void render_value(FILE *f, const config_setting_t *s, int depth);

static void render_children(FILE *f, const config_setting_t *g, int depth, int named) {
  int n = config_setting_length(g);
  for (int i = 0; i < n; i++) {
    const config_setting_t *c = config_setting_get_elem(g, (unsigned)i);
    if (named) {
      fprintf(f, "%*s%s = ", 2 * depth, "", config_setting_name(c));
      render_value(f, c, depth);
      fputs(";\n", f);
    } else {
      if (i) fputs(", ", f);
      render_value(f, c, depth);
    }
  }
}

static void render_value(FILE *f, const config_setting_t *s, int depth) {
  switch (config_setting_type(s)) {
  case CONFIG_TYPE_GROUP:
    fputs("{\n", f);
    render_children(f, s, depth + 1, 1);
    fprintf(f, "%*s}", 2 * depth, "");
    break;
  case CONFIG_TYPE_ARRAY:
    fputs("[ ", f);
    render_children(f, s, depth, 0);
    fputs(" ]", f);
    break;
  case CONFIG_TYPE_LIST:
    fputs("( ", f);
    render_children(f, s, depth, 0);
    fputs(" )", f);
    break;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: fprintf(f, "%lldL", (long long)config_setting_get_int64(s)); break;
  case CONFIG_TYPE_FLOAT: put_double(f, config_setting_get_float(s)); break;
  case CONFIG_TYPE_BOOL: fputs(config_setting_get_bool(s) ? "true" : "false", f); break;
  case CONFIG_TYPE_STRING: put_string(f, config_setting_get_string(s)); break;
  default: fputs("\"\"", f); break;
  }
}

int pt__render_setting_body(const config_setting_t *g, char **out) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return PT_ENOMEM;
  render_children(f, g, 2, 1);
  if (fclose(f)) {
    free(buf);
    return PT_ENOMEM;
  }
  *out = buf;
  return 0;
}
