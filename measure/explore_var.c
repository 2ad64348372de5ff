/*
 * The NCCL settings `pcie-tune profile --explore VAR=LIST` can vary, one
 * entry each (measure/explore.h). NCCL_MIN_NCHANNELS: NCCL builds at least
 * that many communicator channels (src/graph/connect.cc, ncclTopoPostset:
 * the channel count is raised to ncclMinNchannels()), so a value at or
 * below the count NCCL builds by itself changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "nccl/common.h"

static int min_channels(const char *s, long long *v, char *why, size_t len) {
  char *end;
  long n = strtol(s, &end, 10);
  if (end != s && !*end && *s != '-' && *s != '+' && n >= 1 && n <= PT_MAX_CHANNELS) {
    *v = n;
    return 0;
  }
  snprintf(why, len, "comma list of 1..%d", PT_MAX_CHANNELS);
  return -1;
}

static int min_channels_same(long long v, const struct pt_profile *base, char *why, size_t len) {
  if (!base->comm_channels || v > base->comm_channels) return 0;
  snprintf(why, len, "NCCL already builds %d channels", base->comm_channels);
  return 1;
}

static void min_channels_box(struct pt_box *box, long long v) { box->hw.min_nchannels = (int)v; }

static const struct pt_explore_var vars[] = {
    {"NCCL_MIN_NCHANNELS", "channel exploration", "NCCL's own channel count",
     "more channels gain no more than %.0f%%: keep NCCL's own count (leave NCCL_MIN_NCHANNELS unset)",
     min_channels, min_channels_same, min_channels_box},
};

const struct pt_explore_var *pt_explore_var_find(const char *name) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (!strcmp(vars[i].name, name)) return &vars[i];
  return NULL;
}

const char *pt_explore_var_names(void) {
  static char names[256];
  if (!names[0])
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", vars[i].name);
  return names;
}

int pt_explore_values(const struct pt_explore_var *var, const char *list, long long *vals, size_t *n, char *why,
                      size_t len) {
  char buf[512];
  *n = 0;
  if (strlen(list) >= sizeof buf) return snprintf(why, len, "too long"), -1;
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long long v;
    size_t k = 0;
    if (var->parse(t, &v, why, len)) return -1;
    while (k < *n && vals[k] < v) k++;
    if (k < *n && vals[k] == v) continue;
    if (*n == PT_EXPLORE_MAX) return snprintf(why, len, "at most %d values", PT_EXPLORE_MAX), -1;
    memmove(vals + k + 1, vals + k, (*n - k) * sizeof *vals);
    vals[k] = v;
    (*n)++;
  }
  if (!*n) var->parse("", &(long long){0}, why, len);
  return *n ? 0 : -1;
}
