/*
 * One exploration (measure/explore.h): a sweep per value through the
 * caller's callback, each judged on the workload against NCCL's default of
 * the first run, and the report. A value wins only when it beats the
 * current winner by more than the profile's margin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"

/* "NCCL_MIN_NCHANNELS=4", or the first run's label. */
static const char *label(const struct pt_explore_var *var, int has, long long v, char *buf, size_t len) {
  if (!has) return var->unset;
  snprintf(buf, len, "%s=%lld", var->name, v);
  return buf;
}

/* One run: the variable set (or not) for the workers, the sweep, the judging. */
static int one(const struct pt_explore_run *r, struct pt_explore_result *res, int has, long long v) {
  struct pt_profile *p = &res->prof[res->n];
  char why[256], lb[96];
  if (r->set_env && has) {
    char text[32];
    snprintf(text, sizeof text, "%lld", v);
    setenv(r->var->name, text, 1);
  } else if (r->set_env) {
    unsetenv(r->var->name);
  }
  int status = r->sweep(r->arg, has, v, p);
  if (status) {
    res->n++; /* whatever it holds is released with the others */
    return status;
  }
  res->value[res->n] = has ? v : 0;
  /* Each run's NCCL default too: what the variable alone does, without
   * the plugin, so the plugin is credited only with its own share. */
  if (pt_explore_total(p, r->mode, r->items, r->nitems, 1, &res->dflt[res->n], why, sizeof why) ||
      pt_explore_total(p, r->mode, r->items, r->nitems, 0, &res->total[res->n], why, sizeof why)) {
    fprintf(stderr, "%s: cannot judge the run with %s on the workload: %s\n", r->who,
            label(r->var, has, v, lb, sizeof lb), why);
    res->n++; /* released with the others */
    return 1;
  }
  res->n++;
  return 0;
}

int pt_explore(const struct pt_explore_run *r, struct pt_explore_result *res) {
  int status;
  char why[256];
  memset(res, 0, sizeof *res);
  if (r->set_env && getenv(r->var->name))
    fprintf(stderr, "%s: note: %s=%s is set; --explore sets it per run and measures the first run without it\n",
            r->who, r->var->name, getenv(r->var->name));
  if ((status = one(r, res, 0, 0))) return status;
  for (size_t i = 0; i < r->nvalues; i++) {
    if (r->var->same(r->values[i], &res->prof[0], why, sizeof why)) {
      fprintf(stderr, "%s: %s=%lld skipped: %s\n", r->who, r->var->name, r->values[i], why);
      continue;
    }
    if ((status = one(r, res, 1, r->values[i]))) return status;
  }
  res->winner = pt_explore_pick(res->total, res->n, pt_profile_margin(&res->prof[0]));
  return 0;
}

void pt_explore_report(FILE *f, const struct pt_explore_run *r, const struct pt_explore_result *res) {
  double base = res->dflt[0];
  fprintf(f, "%s, %s mode, on %s (%zu line%s):\n", r->var->title, r->mode == PT_MODE_GRAPH ? "graph" : "eager",
          r->workload ? r->workload : "the verify step (tokens 1,4,8,16,32,64,128 x 14336 B)", r->nitems,
          r->nitems == 1 ? "" : "s");
  fprintf(f, "  %-20s %8s %14s %10s %13s\n", r->var->name, "channels", "workload us", "vs default",
          "plugin's share");
  fprintf(f, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default\n", "unset", res->prof[0].comm_channels, base, 1.0,
          "-");
  for (size_t i = 0; i < res->n; i++) {
    char kv[32];
    snprintf(kv, sizeof kv, "%lld", res->value[i]);
    if (i && r->var->channel_rows)
      fprintf(f, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default at %d channels, no plugin\n", kv,
              res->prof[i].comm_channels, res->dflt[i], base / res->dflt[i], "-", res->prof[i].comm_channels);
    else if (i)
      fprintf(f, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default with %s=%s, no plugin\n", kv,
              res->prof[i].comm_channels, res->dflt[i], base / res->dflt[i], "-", r->var->name, kv);
    fprintf(f, "  %-20s %8d %14.2f %9.3fx %12.3fx  tuned%s\n", i ? kv : "unset", res->prof[i].comm_channels,
            res->total[i], base / res->total[i], res->dflt[i] / res->total[i], i == res->winner ? "  <- chosen" : "");
  }
}

void pt_explore_advice(FILE *f, const struct pt_explore_run *r, const struct pt_explore_result *res) {
  size_t w = res->winner;
  double base = res->dflt[0];
  if (w)
    fprintf(f, "of the %.2fx, %s=%lld alone gives %.2fx and the plugin %.2fx on top\n"
               "run the job with it (%s):\nexport %s=%lld\n",
            base / res->total[w], r->var->name, res->value[w], base / res->dflt[w], res->dflt[w] / res->total[w],
            r->var->otherwise, r->var->name, res->value[w]);
  else
    fprintf(f, r->var->none_wins, pt_profile_margin(&res->prof[0]) * 100);
  if (!w) fputc('\n', f);
}

void pt_explore_result_release(struct pt_explore_result *res) {
  for (size_t i = 0; i < res->n; i++) pt_profile_release(&res->prof[i]);
  res->n = 0;
}
