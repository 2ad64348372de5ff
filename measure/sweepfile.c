/*
 * Sweep <-> profile file (measure/sweepfile.h). Owns the sweep record inside
 * provenance.extra; the profile format itself belongs to the tuner core.
 */
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pcie/version.h"
#include "pcie/files.h"
#include "sweepfile.h"

/* libconfig string literal: escape quotes and backslashes. */
static void quote(char *dst, size_t len, const char *src) {
  size_t k = 0;
  for (; *src && k + 3 < len; src++) {
    if (*src == '"' || *src == '\\') dst[k++] = '\\';
    dst[k++] = *src;
  }
  dst[k] = 0;
}

extern char **environ;

/* The variables the GPU backend sets itself for its workers (the tuner it
 * measures with, NCCL's log files): not the user's, so not recorded. */
static int backend_owned(const char *kv) {
  static const char *const own[] = {"NCCL_TUNER_PLUGIN=", "NCCL_DEBUG=", "NCCL_DEBUG_FILE=",
                                    "NCCL_DEBUG_SUBSYS="};
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (!strncmp(kv, own[i], strlen(own[i]))) return 1;
  return 0;
}

/* Fills p->env with this process's NCCL_* variables, which the workers
 * inherit; none set is recorded as such (an empty nccl_env group). */
static int record_nccl_env(struct pt_profile *p) {
  size_t n = 0;
  for (char **e = environ; *e; e++) n += !strncmp(*e, "NCCL_", 5) && strchr(*e, '=') && !backend_owned(*e);
  p->env_recorded = 1;
  p->env = calloc(n ? n : 1, sizeof *p->env);
  if (!p->env) return -1;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "NCCL_", 5) || !eq || backend_owned(*e)) continue;
    struct pt_env_var *v = &p->env[p->nenv++];
    v->name = strndup(*e, (size_t)(eq - *e));
    v->value = strdup(eq + 1);
    if (!v->name || !v->value) return -1;
  }
  return 0;
}

int pt_sweepfile_build(const struct pt_sweep *s, const struct pt_backend_info *bi,
                       const char *name, const char *args, int complete, struct pt_profile *p) {
  char *reps = NULL, date[32], qargs[2100], qtarget[600], note[512];
  time_t now = time(NULL);
  struct tm tm;
  int rc = pt_sweep_to_profile(s, p, &reps);
  if (rc) return rc;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%d", &tm);
  quote(qargs, sizeof qargs, args);
  quote(qtarget, sizeof qtarget, bi->target);
  snprintf(note, sizeof note,
           complete ? "%s sweep of %s, %llu repetitions measured"
                    : "PARTIAL %s sweep of %s (%llu repetitions so far); "
                      "continue it with: pcie-tune profile --resume --out FILE",
           s->opts.full ? "full" : "adaptive", bi->target, (unsigned long long)s->samples);
  size_t xlen = strlen(reps) + strlen(qargs) + strlen(qtarget) + 256;
  unsigned m = s->opts.mode_mask & 3u;
  /* The provenance text is the profile's from here on: the caller's
   * pt_profile_release frees it, whatever fails below. */
  if ((p->prov.extra = malloc(xlen)))
    snprintf(p->prov.extra, xlen,
             "    sweep = { state = \"%s\"; args = \"%s\"; target = \"%s\"; samples = %lluL; };\n"
             "    nreps = %s;\n",
             complete ? "complete" : "partial", qargs, qtarget, (unsigned long long)s->samples, reps);
  free(reps);
  p->version = PT_PROFILE_VERSION;
  p->name = pt_strdup(name);
  p->match_nranks = bi->nranks;
  p->match_nnodes = bi->nnodes;
  /* communicator.channels (docs/profile-format.md): the simulated box's
   * count, or the one NCCL's INFO lines gave the GPU backend (0: unknown). */
  p->comm_channels = bi->comm_channels;
  /* nccl_env: what shaped that communicator. Only a run on GPUs has one; a
   * simulated box's NCCL view does not depend on this process's variables. */
  if (!strcmp(bi->name, "nccl") && record_nccl_env(p)) return PT_ENOMEM;
  p->prov.tool = pt_strdup("pcie-tune " PT_VERSION);
  p->prov.backend = pt_strdup(bi->name);
  p->prov.nccl_version = pt_strdup(bi->nccl_version);
  p->prov.date = pt_strdup(date);
  p->prov.mode = pt_strdup(m == 3u ? "both" : m == (1u << PT_MODE_GRAPH) ? "graph" : "eager");
  p->prov.note = pt_strdup(note);
  if (bi->box.ngpus > 0) {
    if (!(p->prov.box = malloc(sizeof *p->prov.box))) return PT_ENOMEM;
    *p->prov.box = bi->box;
  }
  if (!p->prov.extra || !p->name || !p->prov.tool || !p->prov.backend || !p->prov.nccl_version ||
      !p->prov.date || !p->prov.mode || !p->prov.note)
    return PT_ENOMEM;
  return 0;
}

/* Read as the plugin reads a profile (include/pcie/files.h): a FIFO or
 * /dev/zero given to --resume is refused at once, @include too. */
static int cfg_open(config_t *cfg, const char *path, struct pt_error_rec *err) {
  char *text = NULL;
  size_t len;
  int rc;
  if ((rc = pt_file_read(path, PT_MAX_PROFILE_BYTES, 0, &text, &len, err)) ||
      (rc = pt_text_refuse_include(text, path, err)) ||
      (rc = pt_text_prescan(text, len, path, err))) {
    free(text);
    return rc;
  }
  config_init(cfg);
  rc = config_read_string(cfg, text) == CONFIG_TRUE ? 0 : PT_ESYNTAX;
  if (rc) {
    pt_error_set(err, 0, path, config_error_line(cfg), "%s", config_error_text(cfg));
    config_destroy(cfg);
  }
  free(text);
  return rc;
}

int pt_sweepfile_state(const char *path, struct pt_sweepfile_state *st, struct pt_error_rec *err) {
  config_t cfg;
  const char *state = NULL, *args = NULL;
  long long samples = 0;
  int rc;
  memset(err, 0, sizeof *err);
  memset(st, 0, sizeof *st);
  if ((rc = cfg_open(&cfg, path, err))) return rc;
  if (!config_lookup_string(&cfg, "provenance.extra.sweep.state", &state) ||
      !config_lookup_string(&cfg, "provenance.extra.sweep.args", &args)) {
    snprintf(err->file, sizeof err->file, "%s", path);
    snprintf(err->msg, sizeof err->msg,
             "not written by a pcie-tune sweep (no provenance.extra.sweep record)");
    rc = PT_EINVAL;
    goto out;
  }
  config_lookup_int64(&cfg, "provenance.extra.sweep.samples", &samples);
  st->complete = !strcmp(state, "complete");
  st->samples = (unsigned long long)(samples > 0 ? samples : 0);
  if (strlen(args) >= sizeof st->args) {
    /* Cut short, the record could still parse, as a different sweep. */
    const config_setting_t *set = config_lookup(&cfg, "provenance.extra.sweep.args");
    pt_error_set(err, 0, path, set ? config_setting_source_line(set) : 0,
                 "sweep record args longer than %zu bytes", sizeof st->args - 1);
    rc = PT_EINVAL;
    goto out;
  }
  snprintf(st->args, sizeof st->args, "%s", args);
out:
  config_destroy(&cfg);
  return rc;
}

static int seed_series(struct pt_sweep *s, const struct pt_series *ps, int coll, int mode,
                       const config_setting_t *arr, const char *path, struct pt_error_rec *err) {
  size_t n = (ps->ncand + 1) * ps->nsizes;
  if (!config_setting_is_array(arr) || (size_t)config_setting_length(arr) != n) {
    pt_error_set(err, 0, path, config_setting_source_line(arr),
                 "nreps for %s/%s must hold %zu counts", pt_coll_name(coll),
                 pt_mode_name(mode), n);
    return PT_EINVAL;
  }
  for (size_t r = 0; r <= ps->ncand; r++) {
    const struct pt_point *pts = r < ps->ncand ? ps->cand[r].points : ps->nccl_default;
    struct pt_cand_spec spec = {0, 0, 0, 0};
    if (r < ps->ncand)
      spec = (struct pt_cand_spec){ps->cand[r].algo, ps->cand[r].proto, ps->cand[r].channels,
                                   (uint32_t)ps->cand[r].chunk};
    if (!pts) continue;
    for (size_t k = 0; k < ps->nsizes; k++) {
      int reps = config_setting_get_int_elem(arr, (int)(r * ps->nsizes + k));
      pt_sweep_seed_point(s, coll, mode, r < ps->ncand ? &spec : NULL, ps->sizes[k], &pts[k],
                          reps > 0 ? (unsigned)reps : 0);
    }
  }
  return 0;
}

int pt_sweepfile_seed(struct pt_sweep *s, const char *path, struct pt_error_rec *err) {
  struct pt_profile prof;
  config_t cfg;
  int rc;
  memset(&prof, 0, sizeof prof);
  if ((rc = pt_profile_load(&prof, path, err))) return rc;
  if ((rc = cfg_open(&cfg, path, err))) goto out_prof;
  const config_setting_t *list = config_lookup(&cfg, "provenance.extra.nreps");
  if (!list || !config_setting_is_list(list)) {
    pt_error_set(err, 0, path, 0, "no provenance.extra.nreps list: cannot resume");
    rc = PT_EINVAL;
    goto out;
  }
  for (int i = 0; i < config_setting_length(list) && !rc; i++) {
    const config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
    const char *cn = NULL, *mn = NULL;
    config_setting_lookup_string(g, "collective", &cn);
    config_setting_lookup_string(g, "mode", &mn);
    int coll = cn ? pt_coll_parse(cn) : -1;
    int mode = !mn ? -1 : !strcmp(mn, "graph") ? PT_MODE_GRAPH : !strcmp(mn, "eager") ? PT_MODE_EAGER : -1;
    const config_setting_t *arr = config_setting_get_member(g, "nreps");
    if (coll < 0 || mode < 0 || !arr) {
      pt_error_set(err, 0, path, config_setting_source_line(g),
                   "bad nreps entry (needs collective, mode and nreps)");
      rc = PT_EINVAL;
      break;
    }
    if (prof.series[coll][mode]) rc = seed_series(s, prof.series[coll][mode], coll, mode, arr, path, err);
  }
out:
  config_destroy(&cfg);
out_prof:
  pt_profile_release(&prof);
  return rc;
}
