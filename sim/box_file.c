/*
 * Box files: a simulated box described in libconfig (format in docs/sim.md),
 * loaded strictly. Unknown keys, wrong types and out-of-range values are
 * errors naming file and line; nothing is defaulted except what a `based_on`
 * built-in box provides. Owns parsing only; the model is in sim/box.c.
 */
#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nccl/common.h"
#include "pcie/files.h"
#include "pcie/sim_box.h"

struct ctx {
  const char *path;
  struct pt_error_rec *err;
  int inherited; /* 1 when based_on gave every field a value */
};

static int fail(struct ctx *c, const config_setting_t *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct ctx *c, const config_setting_t *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(c->err, code, c->path, s ? config_setting_source_line(s) : 0, fmt, ap);
  va_end(ap);
  return code;
}

/* Rejects any member of group g not named in allowed (NULL-terminated). */
static int only_keys(struct ctx *c, const config_setting_t *g, const char *const *allowed) {
  for (int i = 0; i < config_setting_length(g); i++) {
    const config_setting_t *m = config_setting_get_elem(g, (unsigned)i);
    const char *name = config_setting_name(m);
    int ok = 0;
    for (const char *const *a = allowed; *a && !ok; a++) ok = name && !strcmp(name, *a);
    if (!ok)
      return fail(c, m, PT_EINVAL, "unknown key '%s' in '%s'", name ? name : "?",
                  config_setting_name(g) ? config_setting_name(g) : "box");
  }
  return 0;
}

static int missing(struct ctx *c, const config_setting_t *g, const char *key) {
  return fail(c, g, PT_EINVAL, "missing '%s'%s", key,
              c->inherited ? "" : " (or give based_on = \"<built-in box>\")");
}

/* A number (int or float) in [lo, hi]; absent is an error unless inherited. */
static int get_num(struct ctx *c, const config_setting_t *g, const char *key, double lo,
                   double hi, double *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return c->inherited ? 0 : missing(c, g, key);
  int t = config_setting_type(s);
  double v;
  if (t == CONFIG_TYPE_FLOAT) v = config_setting_get_float(s);
  else if (t == CONFIG_TYPE_INT) v = config_setting_get_int(s);
  else if (t == CONFIG_TYPE_INT64) v = (double)config_setting_get_int64(s);
  else return fail(c, s, PT_EINVAL, "'%s' must be a number", key);
  if (!(v >= lo && v <= hi)) return fail(c, s, PT_EINVAL, "'%s' = %g is out of range [%g, %g]", key, v, lo, hi);
  *out = v;
  return 0;
}

static int get_int(struct ctx *c, const config_setting_t *g, const char *key, int lo, int hi,
                   int *out) {
  double v = *out;
  int rc = get_num(c, g, key, lo, hi, &v);
  if (rc) return rc;
  const config_setting_t *s = config_setting_get_member(g, key);
  if (s && config_setting_type(s) == CONFIG_TYPE_FLOAT)
    return fail(c, s, PT_EINVAL, "'%s' must be an integer", key);
  *out = (int)v;
  return 0;
}

static int get_bool(struct ctx *c, const config_setting_t *g, const char *key, int *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return c->inherited ? 0 : missing(c, g, key);
  if (config_setting_type(s) != CONFIG_TYPE_BOOL)
    return fail(c, s, PT_EINVAL, "'%s' must be true or false", key);
  *out = config_setting_get_bool(s);
  return 0;
}

static int get_str(struct ctx *c, const config_setting_t *g, const char *key, char *dst,
                   size_t len, int required) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return required && !c->inherited ? missing(c, g, key) : 0;
  const char *v = config_setting_get_string(s);
  if (!v) return fail(c, s, PT_EINVAL, "'%s' must be a string", key);
  if (strlen(v) >= len) return fail(c, s, PT_EINVAL, "'%s' is longer than %zu characters", key, len - 1);
  snprintf(dst, len, "%s", v);
  return 0;
}

static const config_setting_t *group(struct ctx *c, const config_setting_t *g, const char *key,
                                     int *rc) {
  const config_setting_t *s = config_setting_get_member(g, key);
  *rc = 0;
  if (!s) {
    if (!c->inherited) *rc = missing(c, g, key);
    return NULL;
  }
  if (!config_setting_is_group(s)) *rc = fail(c, s, PT_EINVAL, "'%s' must be a group { ... }", key);
  return *rc ? NULL : s;
}

/* { ll = x; ll128 = y; simple = z; } into v[3]. */
static int per_proto(struct ctx *c, const config_setting_t *g, const char *key, double lo,
                     double hi, double v[3]) {
  static const char *const keys[] = {"ll", "ll128", "simple", NULL};
  int rc;
  const config_setting_t *s = group(c, g, key, &rc);
  if (!s) return rc;
  if ((rc = only_keys(c, s, keys))) return rc;
  for (int p = 0; p < 3 && !rc; p++) rc = get_num(c, s, keys[p], lo, hi, &v[p]);
  return rc;
}

static int parse_truth(struct ctx *c, const config_setting_t *root, struct pt_box_truth *t) {
  static const char *const keys[] = {"transport", "host_bw", "launch_us", "base_us", "hop_us",
                                     "chan_us",   "chan_bw", "link_bw",   "eff",     "overlap",
                                     NULL};
  static const char *const modes[] = {"eager", "graph", NULL};
  static const char *const algos[] = {"tree", "ring", NULL};
  int rc;
  const config_setting_t *g = group(c, root, "truth", &rc), *s;
  if (!g) return rc;
  if ((rc = only_keys(c, g, keys))) return rc;
  if ((s = config_setting_get_member(g, "transport"))) {
    const char *v = config_setting_get_string(s);
    if (v && !strcmp(v, "p2p")) t->transport = PT_XPORT_P2P;
    else if (v && !strcmp(v, "shm")) t->transport = PT_XPORT_SHM;
    else return fail(c, s, PT_EINVAL, "unknown transport '%s' (expected p2p or shm)", v ? v : "?");
  } else if (!c->inherited) {
    return missing(c, g, "transport");
  }
  if (t->transport == PT_XPORT_SHM && (rc = get_num(c, g, "host_bw", 0.01, 1000, &t->host_bw)))
    return rc;
  if ((s = group(c, g, "launch_us", &rc))) {
    if ((rc = only_keys(c, s, modes))) return rc;
    for (int m = 0; m < PT_NMODES && !rc; m++) rc = get_num(c, s, pt_mode_name(m), 0, 1e4, &t->launch_us[m]);
  }
  if (rc || (rc = per_proto(c, g, "base_us", 0, 1e4, t->base_us))) return rc;
  if ((s = group(c, g, "hop_us", &rc))) {
    if ((rc = only_keys(c, s, algos))) return rc;
    if ((rc = per_proto(c, s, "tree", 0, 1e4, t->hop_us[NCCL_ALGO_TREE]))) return rc;
    rc = per_proto(c, s, "ring", 0, 1e4, t->hop_us[NCCL_ALGO_RING]);
  }
  if (rc || (rc = get_num(c, g, "chan_us", 0, 1e3, &t->chan_us))) return rc;
  if ((rc = per_proto(c, g, "chan_bw", 0.001, 1e4, t->chan_bw))) return rc;
  if ((rc = per_proto(c, g, "link_bw", 0.001, 1e4, t->link_bw))) return rc;
  if ((rc = per_proto(c, g, "eff", 0.01, 1.0, t->eff))) return rc;
  return per_proto(c, g, "overlap", 1.0, 16.0, t->overlap);
}

static int parse_nccl(struct ctx *c, const config_setting_t *root, struct pt_nccl_params *n) {
  static const char *const keys[] = {"compcap", "search_channels", "bw_intra", "comm_channels",
                                     "ll128",   "tree",            "ll",       "simple",
                                     "max_batch_colls", NULL};
  int rc;
  const config_setting_t *g = group(c, root, "nccl", &rc);
  if (!g) return rc;
  if ((rc = only_keys(c, g, keys)) || (rc = get_int(c, g, "compcap", 0, 3, &n->compcap)) ||
      (rc = get_int(c, g, "search_channels", 1, 32, &n->search_channels)) ||
      (rc = get_num(c, g, "bw_intra", 0.01, 1000, &n->bw_intra)) ||
      (rc = get_int(c, g, "comm_channels", 1, PT_MAX_CHANNELS, &n->comm_channels)) ||
      (rc = get_bool(c, g, "ll128", &n->ll128_enabled)) ||
      (rc = get_bool(c, g, "tree", &n->tree_enabled)) ||
      (rc = get_bool(c, g, "ll", &n->ll_enabled)) ||
      (rc = get_bool(c, g, "simple", &n->simple_enabled)))
    return rc;
  return get_int(c, g, "max_batch_colls", 1, 64, &n->max_batch_colls);
}

/* "cpu1" or "switch0" into a pt_hw_dev parent; -1 with an error. */
static int parse_parent(struct ctx *c, const config_setting_t *g, const struct pt_hw *hw, int *out) {
  const config_setting_t *s = config_setting_get_member(g, "parent");
  const char *v = s ? config_setting_get_string(s) : NULL;
  int n = -1;
  char tail = 0;
  if (!s) return fail(c, g, PT_EINVAL, "missing 'parent' (\"cpu0\", \"cpu1\", ... or \"switch0\", ...)");
  if (v && sscanf(v, "cpu%d%c", &n, &tail) == 1 && n >= 0 && n < hw->ncpus) {
    *out = -n - 1;
    return 0;
  }
  if (v && sscanf(v, "switch%d%c", &n, &tail) == 1 && n >= 0 && n < hw->nswitches) {
    *out = n;
    return 0;
  }
  return fail(c, s, PT_EINVAL, "parent '%s' is not a CPU (cpu0..cpu%d) or a switch listed before (%d so far)",
              v ? v : "?", hw->ncpus - 1, hw->nswitches);
}

/* One entry of 'switches' or 'gpus': parent, gen, lanes (and sm, count). */
static int parse_dev(struct ctx *c, const config_setting_t *g, struct pt_hw *hw, int is_gpu) {
  static const char *const sw_keys[] = {"parent", "gen", "lanes", NULL};
  static const char *const gpu_keys[] = {"parent", "gen", "lanes", "sm", "count", NULL};
  struct pt_hw_dev d = {0, 0, 16, 0};
  int rc, count = 1;
  if ((rc = only_keys(c, g, is_gpu ? gpu_keys : sw_keys)) || (rc = parse_parent(c, g, hw, &d.parent)) ||
      (rc = get_int(c, g, "gen", 1, 6, &d.gen)))
    return rc;
  if (config_setting_get_member(g, "lanes") && (rc = get_int(c, g, "lanes", 1, 32, &d.lanes))) return rc;
  if (is_gpu && ((rc = get_int(c, g, "sm", 60, 200, &d.sm)) ||
                 (config_setting_get_member(g, "count") && (rc = get_int(c, g, "count", 1, PT_HW_MAX_GPUS, &count)))))
    return rc;
  int *n = is_gpu ? &hw->ngpus : &hw->nswitches;
  int max = is_gpu ? PT_HW_MAX_GPUS : PT_HW_MAX_SWITCHES;
  if (*n + count > max) return fail(c, g, PT_EINVAL, "more than %d %s", max, is_gpu ? "GPUs" : "switches");
  for (int i = 0; i < count; i++) (is_gpu ? hw->gpu : hw->sw)[(*n)++] = d;
  return 0;
}

static int parse_env(struct ctx *c, const config_setting_t *g, struct pt_hw *hw) {
  static const char *const keys[] = {"NCCL_P2P_LEVEL",     "NCCL_PROTO",        "NCCL_ALGO",
                                     "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_P2P_DISABLE",
                                     "NCCL_SHM_DISABLE",   "NCCL_MIN_CTAS",     NULL};
  int rc;
  if (!config_setting_is_group(g)) return fail(c, g, PT_EINVAL, "'env' must be a group { ... }");
  if ((rc = only_keys(c, g, keys)) || (rc = get_str(c, g, "NCCL_P2P_LEVEL", hw->p2p_level, sizeof hw->p2p_level, 0)) ||
      (rc = get_str(c, g, "NCCL_PROTO", hw->proto, sizeof hw->proto, 0)) ||
      (rc = get_str(c, g, "NCCL_ALGO", hw->algo, sizeof hw->algo, 0)))
    return rc;
  if (config_setting_get_member(g, "NCCL_MIN_NCHANNELS") &&
      (rc = get_int(c, g, "NCCL_MIN_NCHANNELS", 1, 64, &hw->min_nchannels)))
    return rc;
  if (config_setting_get_member(g, "NCCL_MIN_CTAS") && (rc = get_int(c, g, "NCCL_MIN_CTAS", 1, 64, &hw->min_ctas)))
    return rc;
  if (config_setting_get_member(g, "NCCL_MAX_NCHANNELS") &&
      (rc = get_int(c, g, "NCCL_MAX_NCHANNELS", 1, 64, &hw->max_nchannels)))
    return rc;
  /* NCCL reads both with strtol: 1 disables, anything else leaves it on. */
  if (config_setting_get_member(g, "NCCL_P2P_DISABLE") &&
      (rc = get_int(c, g, "NCCL_P2P_DISABLE", 0, 1, &hw->p2p_disable)))
    return rc;
  if (config_setting_get_member(g, "NCCL_SHM_DISABLE") &&
      (rc = get_int(c, g, "NCCL_SHM_DISABLE", 0, 1, &hw->shm_disable)))
    return rc;
  return 0;
}

/* The hardware group, replacing any inherited hardware as a whole. */
/* The CPU keys of a hardware group: cpus, cpu_vendor, intel_gen. */
static int parse_cpu(struct ctx *c, const config_setting_t *g, struct pt_hw *hw) {
  static const char *const vendors[] = {"other", "intel", "amd", NULL};
  static const char *const gens[] = {"bdw", "skl", "srp", "erp", NULL};
  const config_setting_t *s;
  char v[16] = "";
  int rc;
  if ((rc = get_int(c, g, "cpus", 1, PT_HW_MAX_CPUS, &hw->ncpus)) || (rc = get_str(c, g, "cpu_vendor", v, sizeof v, 1)))
    return rc;
  hw->cpu_vendor = -1;
  for (int i = 0; vendors[i]; i++)
    if (!strcmp(v, vendors[i])) hw->cpu_vendor = i;
  if (hw->cpu_vendor < 0)
    return fail(c, config_setting_get_member(g, "cpu_vendor"), PT_EINVAL, "unknown cpu_vendor '%s' (amd, intel or other)",
                v);
  hw->cpu_model = PT_INTEL_SKL;
  if (!(s = config_setting_get_member(g, "intel_gen"))) return 0;
  const char *gv = config_setting_get_string(s);
  hw->cpu_model = -1;
  for (int i = 0; gv && gens[i]; i++)
    if (!strcmp(gv, gens[i])) hw->cpu_model = i;
  if (hw->cpu_model < 0) return fail(c, s, PT_EINVAL, "unknown intel_gen '%s' (bdw, skl, srp or erp)", gv ? gv : "?");
  return 0;
}

/* The device lists of a hardware group: switches (optional), then gpus. */
static int parse_devs(struct ctx *c, const config_setting_t *g, struct pt_hw *hw) {
  int rc = 0;
  for (int is_gpu = 0; is_gpu < 2; is_gpu++) {
    const char *key = is_gpu ? "gpus" : "switches";
    const config_setting_t *l = config_setting_get_member(g, key);
    if (!l) {
      if (is_gpu) return missing(c, g, key);
      continue;
    }
    if (!config_setting_is_list(l)) return fail(c, l, PT_EINVAL, "'%s' must be a list ( ... )", key);
    for (int i = 0; i < config_setting_length(l) && !rc; i++) {
      const config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
      rc = config_setting_is_group(e) ? parse_dev(c, e, hw, is_gpu)
                                      : fail(c, e, PT_EINVAL, "each entry of '%s' must be a group", key);
    }
    if (rc) return rc;
  }
  return 0;
}

static int parse_hw(struct ctx *c, const config_setting_t *g, struct pt_box *b) {
  static const char *const keys[] = {"cpus", "cpu_vendor", "intel_gen", "switches", "gpus", "p2p", "env",
                                     "host_staging_gbs", NULL};
  struct pt_hw *hw = &b->hw;
  const config_setting_t *s;
  int rc, inherited = c->inherited;
  if (!config_setting_is_group(g)) return fail(c, g, PT_EINVAL, "'hardware' must be a group { ... }");
  /* Over a based_on box with hardware, a group of only 'env' and 'p2p'
   * changes those on the inherited hardware (the same box run with other
   * NCCL variables); any device key replaces the hardware as a whole. */
  int only_env = inherited && b->has_hw;
  for (int i = 0; only_env && i < config_setting_length(g); i++) {
    const char *n = config_setting_name(config_setting_get_elem(g, (unsigned)i));
    only_env = n && (!strcmp(n, "env") || !strcmp(n, "p2p"));
  }
  if (only_env) {
    if ((rc = only_keys(c, g, keys)) || (rc = get_bool(c, g, "p2p", &hw->p2p))) return rc;
    if ((s = config_setting_get_member(g, "env")) && (rc = parse_env(c, s, hw))) return rc;
    goto check;
  }
  memset(hw, 0, sizeof *hw);
  b->nanchors = 0; /* other hardware: a based_on box's rows are not its rows */
  c->inherited = 0; /* every hardware key but switches and env is required */
  if ((rc = only_keys(c, g, keys)) || (rc = parse_cpu(c, g, hw)) || (rc = parse_devs(c, g, hw))) goto out;
  if ((rc = get_bool(c, g, "p2p", &hw->p2p))) goto out;
  /* Optional: a server host stages SHM far faster than the consumer tables
   * the fitted shm_bw comes from (docs/sim.md, "Host staging"). */
  if (config_setting_get_member(g, "host_staging_gbs") &&
      (rc = get_num(c, g, "host_staging_gbs", 0.1, 1000, &hw->host_staging_gbs)))
    goto out;
  if ((s = config_setting_get_member(g, "env")) && (rc = parse_env(c, s, hw))) goto out;
check:;
  char msg[400];
  if (pt_hw_check(hw, msg, sizeof msg)) {
    rc = fail(c, g, PT_EINVAL, "hardware: %s", msg);
    goto out;
  }
  b->has_hw = 1;
out:
  c->inherited = inherited;
  return rc;
}

static int parse_noise(struct ctx *c, const config_setting_t *root, struct pt_box *b) {
  static const char *const keys[] = {"sigma", "outlier_prob", "outlier_scale", NULL};
  int rc;
  const config_setting_t *g = group(c, root, "noise", &rc);
  if (!g) return rc;
  if ((rc = only_keys(c, g, keys)) || (rc = get_num(c, g, "sigma", 0, 1, &b->noise_sigma)) ||
      (rc = get_num(c, g, "outlier_prob", 0, 1, &b->outlier_prob)))
    return rc;
  return get_num(c, g, "outlier_scale", 0, 100, &b->outlier_scale);
}

/* Reads a name through a core parser; -1 when s has no such name. */
static int get_name(struct ctx *c, const config_setting_t *g, const char *key,
                    int (*parse)(const char *), int *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return fail(c, g, PT_EINVAL, "missing '%s'", key);
  const char *v = config_setting_get_string(s);
  int x = v ? parse(v) : -1;
  if (x < 0) return fail(c, s, PT_EINVAL, "unknown %s '%s'", key, v ? v : "(not a string)");
  *out = x;
  return 0;
}

static int get_bytes(struct ctx *c, const config_setting_t *g, const char *key, uint64_t *out) {
  const config_setting_t *s = config_setting_get_member(g, key);
  if (!s) return fail(c, g, PT_EINVAL, "missing '%s'", key);
  int t = config_setting_type(s);
  long long v = t == CONFIG_TYPE_INT64 ? config_setting_get_int64(s)
                : t == CONFIG_TYPE_INT  ? config_setting_get_int(s)
                                        : -1;
  if (v < 1) return fail(c, s, PT_EINVAL, "'%s' must be an integer >= 1", key);
  *out = (uint64_t)v;
  return 0;
}

static int parse_anchor(struct ctx *c, const config_setting_t *g, struct pt_box_anchor *a) {
  static const char *const keys[] = {"collective", "mode",     "bytes",         "latency", "source",
                                     "algo",       "proto",    "channels",      "curve",   "comm_channels",
                                     NULL};
  int rc, st;
  const config_setting_t *s;
  memset(a, 0, sizeof *a);
  a->algo = a->proto = -1;
  if ((rc = only_keys(c, g, keys)) || (rc = get_name(c, g, "collective", pt_coll_parse, &a->coll)))
    return rc;
  a->mode = PT_MODE_EAGER;
  if ((s = config_setting_get_member(g, "mode"))) {
    const char *v = config_setting_get_string(s);
    st = !v ? -1 : !strcmp(v, "eager") ? PT_MODE_EAGER : !strcmp(v, "graph") ? PT_MODE_GRAPH : -1;
    if (st < 0) return fail(c, s, PT_EINVAL, "unknown mode '%s' (expected eager or graph)", v ? v : "?");
    a->mode = st;
  }
  if ((rc = get_bytes(c, g, "bytes", &a->nbytes))) return rc;
  c->inherited = 0; /* anchor fields are never inherited */
  if ((rc = get_num(c, g, "latency", 0.001, 1e9, &a->lat_us)) ||
      (rc = get_str(c, g, "source", a->source, sizeof a->source, 1)) ||
      (rc = get_str(c, g, "curve", a->curve, sizeof a->curve, 0)))
    return rc;
  /* The communicator the row was measured on (another NCCL version's, or
   * NCCL_GRAPH_FILE's), when it is not the box's own. */
  if (config_setting_get_member(g, "comm_channels") &&
      (rc = get_int(c, g, "comm_channels", 1, PT_MAX_CHANNELS, &a->comm_channels)))
    return rc;
  if (config_setting_get_member(g, "algo")) {
    if ((rc = get_name(c, g, "algo", pt_algo_parse, &a->algo)) ||
        (rc = get_name(c, g, "proto", pt_proto_parse, &a->proto)))
      return rc;
    /* channels = 0: NCCL's own count for the forced algorithm and protocol. */
    a->channels = 1;
    return get_int(c, g, "channels", 0, PT_MAX_CHANNELS, &a->channels);
  }
  if (config_setting_get_member(g, "proto") || config_setting_get_member(g, "channels"))
    return fail(c, g, PT_EINVAL, "'proto' and 'channels' need 'algo' (without it the anchor is NCCL's default)");
  return 0;
}

static int parse_fault(struct ctx *c, const config_setting_t *g, struct pt_box_fault *f) {
  static const char *const keys[] = {"collective", "algo", "proto", "min_bytes", "max_bytes",
                                     "state", NULL};
  int rc;
  const config_setting_t *s;
  f->coll = -1;
  if ((rc = only_keys(c, g, keys))) return rc;
  if (config_setting_get_member(g, "collective") &&
      (rc = get_name(c, g, "collective", pt_coll_parse, &f->coll)))
    return rc;
  if ((rc = get_name(c, g, "algo", pt_algo_parse, &f->algo)) ||
      (rc = get_name(c, g, "proto", pt_proto_parse, &f->proto)) ||
      (rc = get_bytes(c, g, "min_bytes", &f->min_bytes)) ||
      (rc = get_bytes(c, g, "max_bytes", &f->max_bytes)))
    return rc;
  if (f->max_bytes < f->min_bytes)
    return fail(c, g, PT_EINVAL, "max_bytes %llu is below min_bytes %llu",
                (unsigned long long)f->max_bytes, (unsigned long long)f->min_bytes);
  if (!(s = config_setting_get_member(g, "state"))) return fail(c, g, PT_EINVAL, "missing 'state'");
  const char *v = config_setting_get_string(s);
  f->state = !v ? -1 : !strcmp(v, "wrong") ? PT_PT_WRONG : !strcmp(v, "crash") ? PT_PT_CRASH
                     : !strcmp(v, "hang") ? PT_PT_HANG : -1;
  if (f->state < 0) return fail(c, s, PT_EINVAL, "unknown state '%s' (expected wrong, crash or hang)", v ? v : "?");
  return 0;
}

/* A list of groups parsed one by one into a fixed array. */
static int parse_list(struct ctx *c, const config_setting_t *root, const char *key, size_t max,
                      size_t *n, int (*one)(struct ctx *, const config_setting_t *, void *),
                      void *arr, size_t elem) {
  const config_setting_t *l = config_setting_get_member(root, key);
  int rc = 0, inherited = c->inherited;
  if (!l) return 0;
  if (!config_setting_is_list(l)) return fail(c, l, PT_EINVAL, "'%s' must be a list ( ... )", key);
  if ((size_t)config_setting_length(l) > max)
    return fail(c, l, PT_EINVAL, "'%s' has %d entries; at most %zu are allowed", key,
                config_setting_length(l), max);
  *n = 0;
  for (int i = 0; i < config_setting_length(l) && !rc; i++) {
    const config_setting_t *g = config_setting_get_elem(l, (unsigned)i);
    if (!config_setting_is_group(g)) return fail(c, g, PT_EINVAL, "each entry of '%s' must be a group", key);
    rc = one(c, g, (char *)arr + *n * elem);
    if (!rc) (*n)++;
  }
  c->inherited = inherited;
  return rc;
}

static int one_anchor(struct ctx *c, const config_setting_t *g, void *out) {
  return parse_anchor(c, g, out);
}
static int one_fault(struct ctx *c, const config_setting_t *g, void *out) {
  return parse_fault(c, g, out);
}

static int parse_box(struct ctx *c, const config_setting_t *root, struct pt_box *b) {
  static const char *const keys[] = {"based_on", "name",  "desc",    "nranks", "nnodes",  "hardware",
                                     "truth",    "nccl",  "noise",   "anchors", "faults", "nccl_version",
                                     NULL};
  const config_setting_t *s;
  int rc;
  memset(b, 0, sizeof *b);
  if ((rc = only_keys(c, root, keys))) return rc;
  if ((s = config_setting_get_member(root, "based_on"))) {
    const char *v = config_setting_get_string(s);
    const struct pt_box *base = v ? pt_box_builtin(v) : NULL;
    if (!base) return fail(c, s, PT_EINVAL, "unknown built-in box '%s' in based_on", v ? v : "?");
    /* The base's anchors come along: they are published rows of the same
     * machine (the out-of-sample error box and simulate print is that
     * machine's, sim/oos.c), until the file replaces the hardware below. */
    *b = *base;
    c->inherited = 1;
  }
  const config_setting_t *hws = config_setting_get_member(root, "hardware");
  const config_setting_t *typed = config_setting_get_member(root, "nccl");
  if (!hws && !typed && !c->inherited)
    return fail(c, root, PT_EINVAL, "missing 'hardware' (or a hand-typed 'nccl' view, or based_on)");
  if (hws && (rc = parse_hw(c, hws, b))) return rc;
  if (hws) b->nranks = b->hw.ngpus;
  if ((rc = get_str(c, root, "name", b->name, sizeof b->name, 1)) ||
      (rc = get_str(c, root, "desc", b->desc, sizeof b->desc, 0)))
    return rc;
  /* nranks comes from the hardware's GPUs; only a typed view needs it. */
  int inherited = c->inherited;
  if (hws || !typed) c->inherited = 1;
  rc = get_int(c, root, "nranks", 2, 1024, &b->nranks);
  c->inherited = inherited;
  /* Without a truth group, a box with hardware gets the physical truth
   * computed from it (below, once NCCL's view is derived). */
  const config_setting_t *truth = config_setting_get_member(root, "truth");
  int phys = !truth && (hws || (c->inherited && b->phys));
  if (rc || (rc = get_int(c, root, "nnodes", 1, 1, &b->nnodes)) ||
      (rc = get_str(c, root, "nccl_version", b->nccl_version, sizeof b->nccl_version, 0)) ||
      (!phys && (rc = parse_truth(c, root, &b->truth))))
    return rc;
  if (truth) b->phys = 0;
  if (!b->nccl_version[0]) snprintf(b->nccl_version, sizeof b->nccl_version, "%s", PT_SIM_NCCL);
  if (hws && b->nranks != b->hw.ngpus)
    return fail(c, config_setting_get_member(root, "nranks"), PT_EINVAL,
                "nranks = %d, but the hardware has %d GPUs", b->nranks, b->hw.ngpus);
  /* NCCL's view: derived from the hardware, unless typed by hand. */
  if (!typed && b->has_hw) {
    if (b->nranks != b->hw.ngpus)
      return fail(c, config_setting_get_member(root, "nranks"), PT_EINVAL,
                  "nranks = %d, but the hardware of '%s' has %d GPUs; give 'hardware' (or a typed 'nccl')",
                  b->nranks, b->name, b->hw.ngpus);
    struct pt_error_rec e;
    if ((rc = pt_box_derive(b, &e))) return fail(c, hws ? hws : root, rc, "%s", e.msg);
    if (phys) pt_box_truth_from_hw(b, pt_phys_fitted());
  } else if (typed) {
    if ((rc = parse_nccl(c, root, &b->nccl))) return rc;
    b->view_source = PT_VIEW_TYPED;
  }
  if ((rc = parse_noise(c, root, b))) return rc;
  if (!b->name[0]) return fail(c, root, PT_EINVAL, "missing 'name'");
  b->nccl.nranks = b->nranks;
  if ((rc = parse_list(c, root, "anchors", PT_BOX_MAX_ANCHORS, &b->nanchors, one_anchor, b->anchors,
                       sizeof b->anchors[0])))
    return rc;
  return parse_list(c, root, "faults", PT_BOX_MAX_FAULTS, &b->nfaults, one_fault, b->faults,
                    sizeof b->faults[0]);
}

int pt_box_parse(struct pt_box *b, const char *text, const char *path, struct pt_error_rec *err) {
  config_t cfg;
  struct ctx c = {path, err, 0};
  int rc;
  memset(err, 0, sizeof *err);
  if ((rc = pt_text_refuse_include(text, path, err))) return rc;
  /* The profile's bounds: libconfig's cost on a hostile file (a group of
   * thousands of long names) is otherwise quadratic. */
  if ((rc = pt_text_prescan(text, strlen(text), path, err))) return rc;
  config_init(&cfg);
  if (config_read_string(&cfg, text) != CONFIG_TRUE) {
    rc = PT_ESYNTAX;
    pt_error_set(err, 0, path, config_error_line(&cfg), "%s", config_error_text(&cfg));
    goto out;
  }
  rc = parse_box(&c, config_root_setting(&cfg), b);
  if (!rc && (rc = pt_box_check(b, err))) snprintf(err->file, sizeof err->file, "%s", path);
out:
  config_destroy(&cfg);
  return rc;
}

int pt_box_load(struct pt_box *b, const char *path, struct pt_error_rec *err) {
  char *text = NULL;
  size_t len;
  int rc;
  memset(err, 0, sizeof *err);
  /* A regular file of sane size, without @include or a NUL byte
   * (include/pcie/files.h): libconfig would block on a FIFO, exit on an
   * @include it cannot read and stop at a NUL as if the file ended there. */
  if ((rc = pt_file_read(path, PT_MAX_SMALL_INPUT, PT_READ_TEXT, &text, &len, err))) {
    static const char pre[] = "cannot read box file: ";
    size_t room = sizeof err->msg - sizeof pre;
    memmove(err->msg + sizeof pre - 1, err->msg, room);
    memcpy(err->msg, pre, sizeof pre - 1);
    err->msg[sizeof err->msg - 1] = '\0';
    return rc;
  }
  rc = pt_box_parse(b, text, path, err);
  free(text);
  return rc;
}

int pt_box_check(const struct pt_box *b, struct pt_error_rec *err) {
  const struct pt_nccl_params *n = &b->nccl;
  /* A derived view may have fewer communicator than search channels
   * (NCCL_MAX_NCHANNELS); a typed one with that is a typo. */
  if (b->view_source == PT_VIEW_TYPED && n->comm_channels < n->search_channels) {
    snprintf(err->msg, sizeof err->msg, "nccl.comm_channels (%d) is below nccl.search_channels (%d)",
             n->comm_channels, n->search_channels);
    return PT_EINVAL;
  }
  if (!n->ll_enabled && !n->simple_enabled && !n->ll128_enabled) {
    snprintf(err->msg, sizeof err->msg, "NCCL's view enables no protocol");
    return PT_EINVAL;
  }
  return 0;
}

int pt_box_resolve(struct pt_box *b, const char *name_or_path, struct pt_error_rec *err) {
  const struct pt_box *builtin = pt_box_builtin(name_or_path);
  struct stat st;
  if (builtin) {
    *b = *builtin;
    return 0;
  }
  /* A bare word that names no file was meant as a built-in box: list them. */
  if (!strchr(name_or_path, '/') && lstat(name_or_path, &st) != 0 && errno == ENOENT) {
    char list[400];
    size_t n = 0;
    list[0] = '\0';
    for (size_t i = 0; i < pt_box_builtin_count() && n < sizeof list; i++) {
      int k = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", pt_box_builtin_at(i)->name);
      if (k < 0) break;
      n += (size_t)k;
    }
    return pt_error_set(err, PT_EIO, name_or_path, 0,
                        "no built-in box of that name and no such file; the built-in boxes are %s",
                        list);
  }
  return pt_box_load(b, name_or_path, err);
}
