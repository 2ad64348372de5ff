/*
 * Reads a profile from libconfig text into struct pt_profile. Owns the
 * mapping from settings to the model: every key, type and per-value rule
 * that can be checked on one setting is checked here with that setting's
 * line. Cross-field rules (ascending sizes, lengths, overlaps) are in
 * profile_validate.c, shared with writers. Never prints.
 */
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/files.h"
#include "pcie/profile.h"
#include "profile_internal.h"

struct loader {
  const char *file;
  struct pt_error_rec *err;
};

__attribute__((format(printf, 3, 4))) static int fail(struct loader *L, const config_setting_t *s,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(L->err, PT_EINVAL, L->file, s ? config_setting_source_line(s) : 0, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static const char *type_name(int t) {
  switch (t) {
  case CONFIG_TYPE_GROUP: return "a group";
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_INT64: return "an integer";
  case CONFIG_TYPE_FLOAT: return "a float";
  case CONFIG_TYPE_STRING: return "a string";
  case CONFIG_TYPE_BOOL: return "a boolean";
  case CONFIG_TYPE_ARRAY: return "an array";
  case CONFIG_TYPE_LIST: return "a list";
  default: return "an unknown type";
  }
}

/* Rejects any child of group whose name is not in the NULL-terminated list. */
static int only_keys(struct loader *L, const config_setting_t *g, const char *where,
                     const char *const *keys) {
  for (int i = 0; i < config_setting_length(g); i++) {
    const config_setting_t *c = config_setting_get_elem(g, (unsigned)i);
    const char *n = config_setting_name(c);
    int known = 0;
    for (const char *const *k = keys; *k; k++) known |= n && !strcmp(n, *k);
    if (!known) return fail(L, c, "unknown key '%s' in %s", n ? n : "?", where);
  }
  return 0;
}

static int want_type(struct loader *L, const config_setting_t *s, int t1, int t2,
                     const char *what) {
  int t = config_setting_type(s);
  if (t == t1 || t == t2) return 0;
  return fail(L, s, "%s must be %s, not %s", what, type_name(t1), type_name(t));
}

static int get_string(struct loader *L, const config_setting_t *g, const char *key, int required,
                      char **out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return required ? fail(L, g, "missing '%s'", key) : 0;
  if (want_type(L, s, CONFIG_TYPE_STRING, CONFIG_TYPE_STRING, key)) return PT_EINVAL;
  *out = pt_strdup(config_setting_get_string(s));
  return *out ? 0 : PT_ENOMEM;
}

/* An integer in [lo, hi]; *out unchanged when absent and not required. */
static int get_int(struct loader *L, const config_setting_t *g, const char *key, int required,
                   long long lo, long long hi, long long *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return required ? fail(L, g, "missing '%s'", key) : 0;
  if (want_type(L, s, CONFIG_TYPE_INT, CONFIG_TYPE_INT64, key)) return PT_EINVAL;
  long long v = config_setting_get_int64(s);
  if (v < lo || v > hi) return fail(L, s, "%s must be in %lld..%lld, not %lld", key, lo, hi, v);
  *out = v;
  return 0;
}

static int get_name(struct loader *L, const config_setting_t *g, const char *key,
                    int (*parse)(const char *), const char *expected, int *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return fail(L, g, "missing '%s'", key);
  if (want_type(L, s, CONFIG_TYPE_STRING, CONFIG_TYPE_STRING, key)) return PT_EINVAL;
  const char *v = config_setting_get_string(s);
  *out = parse(v);
  if (*out < 0) return fail(L, s, "unknown %s '%s' (expected %s)", key, v, expected);
  return 0;
}

#define ALGOS "tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree or pat"
#define PROTOS "ll, ll128 or simple"
#define COLLS "allreduce, allgather, reducescatter, broadcast or reduce"

static int is_seq(const config_setting_t *s) {
  return config_setting_is_array(s) || config_setting_is_list(s);
}

static int load_sizes(struct loader *L, const config_setting_t *s, struct pt_series **out) {
  if (!is_seq(s)) return fail(L, s, "sizes must be an array of integers");
  int n = config_setting_length(s);
  if (n < 1) return fail(L, s, "sizes must not be empty");
  uint64_t *v = malloc((size_t)n * sizeof *v);
  if (!v) return PT_ENOMEM;
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    int t = config_setting_type(e);
    if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
      rc = fail(L, e, "sizes[%d] must be an integer, not %s", i, type_name(t));
    else if (config_setting_get_int64(e) < 1)
      rc = fail(L, e, "sizes[%d] must be at least 1 byte, not %lld", i,
                (long long)config_setting_get_int64(e));
    else
      v[i] = (uint64_t)config_setting_get_int64(e);
  }
  if (!rc) {
    *out = pt_series_new(v, (size_t)n);
    if (!*out) rc = PT_ENOMEM;
  }
  free(v);
  if (!rc) (*out)->line = config_setting_source_line(s);
  return rc;
}

/* A latency list: numbers >= 0 or state strings. spread=1 reads a spread list
 * (numbers >= 0 only) into pts[].spread instead. */
static int load_points(struct loader *L, const config_setting_t *s, const char *key,
                       struct pt_point *pts, size_t n, int spread) {
  if (!is_seq(s)) return fail(L, s, "%s must be a list of values", key);
  if ((size_t)config_setting_length(s) != n)
    return fail(L, s, "%s has %d values but sizes has %zu", key, config_setting_length(s), n);
  for (size_t i = 0; i < n; i++) {
    const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    int t = config_setting_type(e);
    if (t == CONFIG_TYPE_STRING && !spread) {
      const char *v = config_setting_get_string(e);
      int st = -1;
      for (int k = PT_PT_MISSING; k <= PT_PT_HANG; k++)
        if (!strcmp(v, pt_point_state_name(k))) st = k;
      if (st < 0)
        return fail(L, e,
                    "%s[%zu]: unknown value '%s' (expected a latency in us, \"-\", "
                    "\"unsupported\", \"wrong\", \"crash\" or \"hang\")",
                    key, i, v);
      pts[i].state = st;
      continue;
    }
    double d;
    if (t == CONFIG_TYPE_FLOAT) d = config_setting_get_float(e);
    else if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) d = (double)config_setting_get_int64(e);
    else return fail(L, e, "%s[%zu] must be a number, not %s", key, i, type_name(t));
    if (!isfinite(d) || d < 0)
      return fail(L, e, "%s[%zu] must be a finite number >= 0, not %g", key, i, d);
    if (spread) {
      pts[i].spread = d;
    } else {
      pts[i].lat_us = d;
      pts[i].state = PT_PT_OK;
    }
  }
  return 0;
}

static int load_candidate(struct loader *L, const config_setting_t *g, struct pt_series *ser) {
  static const char *const keys[] = {"algo", "proto", "channels", "latency", "spread", "chunk", NULL};
  int algo, proto, rc;
  long long ch = 0, chunk = 0;
  if (!config_setting_is_group(g)) return fail(L, g, "each candidate must be a group { ... }");
  if ((rc = only_keys(L, g, "candidate", keys))) return rc;
  if ((rc = get_name(L, g, "algo", pt_algo_parse, ALGOS, &algo))) return rc;
  if ((rc = get_name(L, g, "proto", pt_proto_parse, PROTOS, &proto))) return rc;
  /* channels = 0: measured with NCCL's own count (docs/profile-format.md). */
  if ((rc = get_int(L, g, "channels", 1, 0, PT_MAX_CHANNELS, &ch))) return rc;
  if ((rc = get_int(L, g, "chunk", 0, 1, UINT32_MAX, &chunk))) return rc;
  const config_setting_t *lat = config_setting_get_member(g, "latency");
  if (!lat) return fail(L, g, "missing 'latency'");
  struct pt_candidate *c = pt_series_add_candidate(ser, algo, proto, (int)ch, (size_t)chunk);
  if (!c) return PT_ENOMEM;
  c->line = config_setting_source_line(g);
  if ((rc = load_points(L, lat, "latency", c->points, ser->nsizes, 0))) return rc;
  const config_setting_t *sp = config_setting_get_member(g, "spread");
  return sp ? load_points(L, sp, "spread", c->points, ser->nsizes, 1) : 0;
}

static int load_series(struct loader *L, const config_setting_t *g, struct pt_series **out) {
  static const char *const keys[] = {"sizes", "nccl_default", "candidates", NULL};
  int rc;
  if (!config_setting_is_group(g))
    return fail(L, g, "'%s' must be a group { sizes; candidates; }", config_setting_name(g));
  if ((rc = only_keys(L, g, config_setting_name(g), keys))) return rc;
  const config_setting_t *s = config_setting_get_member(g, "sizes");
  if (!s) return fail(L, g, "missing 'sizes'");
  if ((rc = load_sizes(L, s, out))) return rc;
  const config_setting_t *d = config_setting_get_member(g, "nccl_default");
  if (d) {
    struct pt_point *pts = pt_series_default(*out);
    if (!pts) return PT_ENOMEM;
    if ((rc = load_points(L, d, "nccl_default", pts, (*out)->nsizes, 0))) return rc;
  }
  const config_setting_t *cl = config_setting_get_member(g, "candidates");
  if (!cl) return fail(L, g, "missing 'candidates'");
  if (!config_setting_is_list(cl)) return fail(L, cl, "candidates must be a list ( {...}, ... )");
  if (config_setting_length(cl) < 1) return fail(L, cl, "candidates must not be empty");
  for (int i = 0; i < config_setting_length(cl); i++)
    if ((rc = load_candidate(L, config_setting_get_elem(cl, (unsigned)i), *out))) return rc;
  return 0;
}

static int load_collective(struct loader *L, const config_setting_t *g, int coll,
                           struct pt_profile *p) {
  static const char *const keys[] = {"graph", "eager", NULL};
  int rc;
  if (!config_setting_is_group(g))
    return fail(L, g, "'%s' must be a group { graph = {...}; eager = {...}; }", pt_coll_name(coll));
  if ((rc = only_keys(L, g, pt_coll_name(coll), keys))) return rc;
  if (config_setting_length(g) == 0)
    return fail(L, g, "'%s' has neither 'graph' nor 'eager' measurements", pt_coll_name(coll));
  for (int m = 0; m < PT_NMODES; m++) {
    const config_setting_t *s = config_setting_get_member(g, pt_mode_name(m));
    if (s && (rc = load_series(L, s, &p->series[coll][m]))) return rc;
  }
  return 0;
}

static int load_rule(struct loader *L, const config_setting_t *g, struct pt_rule *r) {
  static const char *const keys[] = {"collective", "min_bytes", "max_bytes", "algo", "proto",
                                     "channels", "chunk", "mode", "nranks", "nnodes",
                                     "min_pipe_ops", "max_pipe_ops", NULL};
  long long lo = 0, hi = 0, ch = 0, chunk = 0, nr = 0, nn = 0, plo = 0, phi = 0;
  int rc;
  if (!config_setting_is_group(g)) return fail(L, g, "each rule must be a group { ... }");
  if ((rc = only_keys(L, g, "rule", keys))) return rc;
  r->line = config_setting_source_line(g);
  if ((rc = get_name(L, g, "collective", pt_coll_parse, COLLS, &r->coll))) return rc;
  if ((rc = get_int(L, g, "min_bytes", 1, 0, INT64_MAX, &lo))) return rc;
  if ((rc = get_int(L, g, "max_bytes", 1, 0, INT64_MAX, &hi))) return rc;
  if ((rc = get_name(L, g, "algo", pt_algo_parse, ALGOS, &r->algo))) return rc;
  if ((rc = get_name(L, g, "proto", pt_proto_parse, PROTOS, &r->proto))) return rc;
  /* channels = 0 or omitted: keep NCCL's count (as NCCL's example tuner's -1). */
  if ((rc = get_int(L, g, "channels", 0, 0, PT_MAX_CHANNELS, &ch))) return rc;
  if ((rc = get_int(L, g, "chunk", 0, 1, UINT32_MAX, &chunk))) return rc;
  if ((rc = get_int(L, g, "nranks", 0, 1, 1 << 20, &nr))) return rc;
  if ((rc = get_int(L, g, "nnodes", 0, 1, 1 << 20, &nn))) return rc;
  if ((rc = get_int(L, g, "min_pipe_ops", 0, 1, 1 << 20, &plo))) return rc;
  if ((rc = get_int(L, g, "max_pipe_ops", 0, 1, 1 << 20, &phi))) return rc;
  r->min_bytes = (uint64_t)lo;
  r->max_bytes = (uint64_t)hi;
  r->channels = (int)ch;
  r->chunk = (size_t)chunk;
  r->nranks = (int)nr;
  r->nnodes = (int)nn;
  r->min_pipe_ops = (int)plo;
  r->max_pipe_ops = (int)phi;
  r->mode = -1;
  const config_setting_t *m = config_setting_get_member(g, "mode");
  if (m) {
    if ((rc = want_type(L, m, CONFIG_TYPE_STRING, CONFIG_TYPE_STRING, "mode"))) return rc;
    const char *v = config_setting_get_string(m);
    if (!strcmp(v, "graph")) r->mode = PT_MODE_GRAPH;
    else if (!strcmp(v, "eager")) r->mode = PT_MODE_EAGER;
    else return fail(L, m, "unknown mode '%s' (expected graph or eager)", v);
  }
  return 0;
}

/* communicator = { channels = N; }: comm->nChannels when measured. */
static int load_communicator(struct loader *L, const config_setting_t *g, struct pt_profile *p) {
  static const char *const keys[] = {"channels", NULL};
  long long ch = 0;
  int rc;
  if (!config_setting_is_group(g)) return fail(L, g, "communicator must be a group { channels; }");
  if ((rc = only_keys(L, g, "communicator", keys))) return rc;
  if ((rc = get_int(L, g, "channels", 0, 1, PT_MAX_CHANNELS, &ch))) return rc;
  p->comm_channels = (int)ch;
  return 0;
}

/* nccl_env = { NCCL_X = "value"; ... }: an empty group means none was set. */
static int load_env(struct loader *L, const config_setting_t *g, struct pt_profile *p) {
  if (!config_setting_is_group(g))
    return fail(L, g, "nccl_env must be a group { NCCL_PROTO = \"...\"; }");
  int n = config_setting_length(g);
  p->env_recorded = 1;
  p->env = calloc(n > 0 ? (size_t)n : 1, sizeof *p->env);
  if (!p->env) return PT_ENOMEM;
  for (int i = 0; i < n; i++) {
    const config_setting_t *v = config_setting_get_elem(g, (unsigned)i);
    const char *name = config_setting_name(v);
    if (!name || strncmp(name, "NCCL_", 5))
      return fail(L, v, "nccl_env: '%s' is not an NCCL_* variable", name ? name : "?");
    if (config_setting_type(v) != CONFIG_TYPE_STRING)
      return fail(L, v, "nccl_env.%s must be a string (the variable's value), not %s", name,
                  type_name(config_setting_type(v)));
    p->env[i].name = pt_strdup(name);
    p->env[i].value = pt_strdup(config_setting_get_string(v));
    p->nenv++;
    if (!p->env[i].name || !p->env[i].value) return PT_ENOMEM;
  }
  return 0;
}

static int load_margin(struct loader *L, const config_setting_t *s, struct pt_profile *p) {
  double v;
  int t = config_setting_type(s);
  if (t == CONFIG_TYPE_FLOAT) v = config_setting_get_float(s);
  else if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) v = (double)config_setting_get_int64(s);
  else return fail(L, s, "margin must be a number, not %s", type_name(t));
  if (!isfinite(v) || v < 0 || v >= 1)
    return fail(L, s, "margin must be in [0, 1) (0.02 = 2 %%), not %g", v);
  p->margin = v;
  return 0;
}

/* provenance.extra: free-form, kept as text, but a sweep records its
 * progress (measure/sweepfile.c) and the LL128 screen it ran
 * (measure/screen.c) there. */
static int load_extra(struct loader *L, const config_setting_t *x, struct pt_profile *p) {
  int rc;
  if (!config_setting_is_group(x)) return fail(L, x, "provenance.extra must be a group");
  if ((rc = pt__render_setting_body(x, &p->prov.extra))) return rc;
  const config_setting_t *sw = config_setting_get_member(x, "sweep");
  const config_setting_t *st = sw && config_setting_is_group(sw) ? config_setting_get_member(sw, "state") : NULL;
  if (sw) {
    p->sweep_state =
        pt_strdup(st && config_setting_type(st) == CONFIG_TYPE_STRING ? config_setting_get_string(st) : "unknown");
    if (!p->sweep_state) return PT_ENOMEM;
  }
  const config_setting_t *sc = config_setting_get_member(x, "ll128_screen");
  const char *res = NULL;
  if (sc && config_setting_is_group(sc)) config_setting_lookup_string(sc, "result", &res);
  p->ll128_screen = res && !strcmp(res, "pass")   ? PT_LL128_SCREENED
                    : res && !strcmp(res, "fail") ? PT_LL128_UNUSABLE
                                                  : PT_LL128_UNSCREENED;
  return 0;
}

static int load_header(struct loader *L, const config_setting_t *root, struct pt_profile *p) {
  static const char *const match_keys[] = {"nranks", "nnodes", NULL};
  static const char *const prov_keys[] = {"tool", "backend", "nccl_version", "date", "mode",
                                          "note", "extra", "box", "buffers", "graph_register",
                                          NULL};
  long long v = 0;
  int rc;
  const config_setting_t *ver = config_setting_get_member(root, "version");
  if (!ver) return fail(L, NULL, "missing 'version' (this reader understands version = %d)",
                        PT_PROFILE_VERSION);
  if (want_type(L, ver, CONFIG_TYPE_INT, CONFIG_TYPE_INT64, "version")) return PT_EINVAL;
  if (config_setting_get_int64(ver) != PT_PROFILE_VERSION)
    return fail(L, ver, "unsupported profile version %lld (this reader understands %d)",
                (long long)config_setting_get_int64(ver), PT_PROFILE_VERSION);
  p->version = PT_PROFILE_VERSION;
  if ((rc = get_string(L, root, "name", 1, &p->name))) return rc;
  const config_setting_t *m = config_setting_get_member(root, "match");
  if (m) {
    if (!config_setting_is_group(m)) return fail(L, m, "match must be a group { nranks; nnodes; }");
    if ((rc = only_keys(L, m, "match", match_keys))) return rc;
    if ((rc = get_int(L, m, "nranks", 0, 1, 1 << 20, &v))) return rc;
    p->match_nranks = (int)v;
    v = 0;
    if ((rc = get_int(L, m, "nnodes", 0, 1, 1 << 20, &v))) return rc;
    p->match_nnodes = (int)v;
  }
  const config_setting_t *pv = config_setting_get_member(root, "provenance");
  if (!pv) return fail(L, NULL, "missing 'provenance' (tool, backend, nccl_version, date, mode)");
  if (!config_setting_is_group(pv)) return fail(L, pv, "provenance must be a group");
  if ((rc = only_keys(L, pv, "provenance", prov_keys))) return rc;
  if ((rc = get_string(L, pv, "tool", 1, &p->prov.tool)) ||
      (rc = get_string(L, pv, "backend", 1, &p->prov.backend)) ||
      (rc = get_string(L, pv, "nccl_version", 1, &p->prov.nccl_version)) ||
      (rc = get_string(L, pv, "date", 1, &p->prov.date)) ||
      (rc = get_string(L, pv, "mode", 1, &p->prov.mode)) ||
      (rc = get_string(L, pv, "note", 0, &p->prov.note)) ||
      (rc = get_string(L, pv, "buffers", 0, &p->prov.buffers)))
    return rc;
  if (p->prov.buffers && strcmp(p->prov.buffers, "cudaMalloc") && strcmp(p->prov.buffers, "ncclMemAlloc"))
    return fail(L, config_setting_get_member(pv, "buffers"),
                "provenance.buffers must be \"cudaMalloc\" or \"ncclMemAlloc\", not \"%s\"", p->prov.buffers);
  if (config_setting_get_member(pv, "graph_register")) {
    long long gr = 0;
    if ((rc = get_int(L, pv, "graph_register", 1, 0, 1 << 30, &gr))) return rc;
    p->prov.graph_register = (int)gr;
    p->prov.has_graph_register = 1;
  }
  const config_setting_t *x = config_setting_get_member(pv, "box");
  if (x && (rc = pt__load_box(x, L->file, &p->prov.box, L->err))) return rc;
  x = config_setting_get_member(pv, "extra");
  return x ? load_extra(L, x, p) : 0;
}

static int load_root(struct loader *L, const config_setting_t *root, struct pt_profile *p) {
  static const char *const keys[] = {"version", "name", "match", "provenance", "allreduce",
                                     "allgather", "reducescatter", "broadcast", "reduce", "rules",
                                     "communicator", "nccl_env", "margin", NULL};
  int rc;
  /* Empty, blank or only comments (a truncated copy, a file created but
   * never written): say so, not which key comes first. */
  if (config_setting_length(root) == 0)
    return fail(L, NULL, "the file is empty (no settings); a profile starts with version = %d "
                         "(docs/profile-format.md)", PT_PROFILE_VERSION);
  if ((rc = only_keys(L, root, "the profile", keys))) return rc;
  if ((rc = load_header(L, root, p))) return rc;
  const config_setting_t *x;
  if ((x = config_setting_get_member(root, "communicator")) && (rc = load_communicator(L, x, p)))
    return rc;
  if ((x = config_setting_get_member(root, "nccl_env")) && (rc = load_env(L, x, p))) return rc;
  if ((x = config_setting_get_member(root, "margin")) && (rc = load_margin(L, x, p))) return rc;
  for (int c = 0; c < PT_NCOLL; c++) {
    const config_setting_t *g = config_setting_get_member(root, pt_coll_name(c));
    if (g && (rc = load_collective(L, g, c, p))) return rc;
  }
  const config_setting_t *rl = config_setting_get_member(root, "rules");
  if (rl) {
    if (!config_setting_is_list(rl)) return fail(L, rl, "rules must be a list ( {...}, ... )");
    p->nrules = (size_t)config_setting_length(rl);
    p->rules = calloc(p->nrules ? p->nrules : 1, sizeof *p->rules);
    if (!p->rules) return PT_ENOMEM;
    for (size_t i = 0; i < p->nrules; i++)
      if ((rc = load_rule(L, config_setting_get_elem(rl, (unsigned)i), &p->rules[i]))) return rc;
  }
  return pt__validate(p, L->file, L->err);
}

int pt_profile_load_string(struct pt_profile *p, const char *text, const char *name,
                           struct pt_error_rec *err) {
  struct loader L = {name, err};
  config_t cfg;
  int rc;
  memset(p, 0, sizeof *p);
  memset(err, 0, sizeof *err);
  if ((rc = pt_text_refuse_include(text, name, err))) return rc; /* libconfig would follow it */
  config_init(&cfg);
  if (config_read_string(&cfg, text) != CONFIG_TRUE) {
    pt_error_set(err, 0, name, config_error_line(&cfg), "%s", config_error_text(&cfg));
    rc = PT_ESYNTAX;
  } else {
    rc = load_root(&L, config_root_setting(&cfg), p);
  }
  config_destroy(&cfg);
  if (rc == PT_ENOMEM && !err->msg[0]) {
    pt_error_set(err, 0, name, 0, "out of memory");
  }
  if (rc) {
    pt_profile_release(p);
    return rc;
  }
  p->hash = pt_hash_bytes(text, strlen(text));
  p->path = pt_strdup(name);
  return p->path ? 0 : PT_ENOMEM;
}

int pt_profile_load(struct pt_profile *p, const char *path, struct pt_error_rec *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = pt__read_file(path, &text, &len, err);
  memset(p, 0, sizeof *p);
  if (!rc && strlen(text) != len) {
    /* A NUL byte would silently cut what libconfig sees. */
    snprintf(err->file, sizeof err->file, "%s", path);
    err->line = 0;
    snprintf(err->msg, sizeof err->msg, "file contains a NUL byte; is it a profile?");
    rc = PT_EINVAL;
  }
  if (!rc) rc = pt_profile_load_string(p, text, path, err);
  free(text);
  return rc;
}
