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

/* NCCL_MIN_CTAS: before 2.31.2 (and still) a communicator floor exactly
 * like NCCL_MIN_NCHANNELS (src/graph/connect.cc, copyChannels up to
 * max(ncclMinNchannels(), config.minCTAs)), so only a profile of NCCL
 * 2.31.2 or later explores it: there it is also each collective's floor
 * after the tuner's cap (src/enqueue/enqueue.cc scheduleCollTasksToPlan at
 * NVIDIA/nccl 88980683, version.mk 2.31.2). 1 is NCCL's own minimum. */
static int min_ctas_same(long long v, const struct pt_profile *base, char *why, size_t len) {
  int major = 0, minor = 0, patch = 0;
  if (!base->prov.nccl_version || sscanf(base->prov.nccl_version, "%d.%d.%d", &major, &minor, &patch) < 2)
    major = minor = 0;
  if (major * 10000 + minor * 100 + patch < PT_NCCL_V2_31_2) {
    snprintf(why, len, "NCCL %d.%d.%d reads it only where it builds the communicator, as NCCL_MIN_NCHANNELS "
                       "(explore that); from 2.31.2 it is also each collective's minimum",
             major, minor, patch);
    return 1;
  }
  if (v > 1) return 0;
  snprintf(why, len, "NCCL's own minimum");
  return 1;
}

static void min_ctas_box(struct pt_box *box, long long v) { box->hw.min_ctas = (int)v; }

/* NCCL_BUFFSIZE: bytes, K/M/G accepted here and exported as the plain
 * number, the only form NCCL reads (misc/param.cc ncclLoadParam: strtoll,
 * what follows the digits ignored, so "1M" is one byte). At least 64 KiB:
 * a step (buffer / NCCL_STEPS) must hold NCCL's P2P chunk, and the Simple
 * slice floor (buffer / 128) stays 16-byte aligned; at most 1 GiB, held
 * per channel and peer in device memory. */
static int buffsize(const char *s, long long *v, char *why, size_t len) {
  char *end;
  long long n = strtoll(s, &end, 10);
  int sh = 0;
  if (end != s && *s != '-' && *s != '+' && *end) {
    sh = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : -1;
    end++;
  }
  if (end != s && !*end && sh >= 0 && n <= (1LL << 30) && (n << sh) >= (64 << 10) && (n << sh) <= (1LL << 30)) {
    *v = n << sh;
    return 0;
  }
  snprintf(why, len, "comma list of byte counts 65536..1073741824, K/M/G allowed (1M = 1048576)");
  return -1;
}

/* NCCL's own buffer is the first run. */
static int buffsize_same(long long v, const struct pt_profile *base, char *why, size_t len) {
  (void)base;
  if (v != (long long)PT_NCCL_BUFFSIZE_DEFAULT) return 0;
  snprintf(why, len, "NCCL's default, the first run");
  return 1;
}

/* The Simple buffer only; NCCL's view has no buffer term, the truth does
 * (sim/ring_chunks.c). */
static void buffsize_box(struct pt_box *box, long long v) { box->nccl_buffsize = (uint64_t)v; }

static const struct pt_explore_var vars[] = {
    {"NCCL_MIN_NCHANNELS", "channel exploration", "NCCL's own channel count",
     "more channels gain no more than %.0f%%: keep NCCL's own count (leave NCCL_MIN_NCHANNELS unset)",
     min_channels, min_channels_same, min_channels_box, "the profile was measured so; without it the plugin warns at init and\n"
     "still decides, but the job runs NCCL's default and loses that share", 1},
    {"NCCL_MIN_CTAS", "NCCL_MIN_CTAS exploration", "NCCL's own minimum (1)",
     "higher minimums gain no more than %.0f%%: keep NCCL's own (leave NCCL_MIN_CTAS unset)", min_channels,
     min_ctas_same, min_ctas_box, "the profile was measured so; without it the plugin warns at init and\n"
     "still decides, but the job runs other channel counts and loses that share", 1},
    {"NCCL_BUFFSIZE", "NCCL_BUFFSIZE exploration", "NCCL's default buffer (4 MiB)",
     "other buffer sizes gain no more than %.0f%%: keep NCCL's default (leave NCCL_BUFFSIZE unset)", buffsize,
     buffsize_same, buffsize_box, "the plugin warns otherwise: every latency in the profile was measured with it", 0},
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
