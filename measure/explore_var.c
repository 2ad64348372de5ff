/* The explorable NCCL settings (measure/explore_var.h). */
#include "explore_var.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL_MIN_NCHANNELS: sim/nccl_derive.c builds the communicator it asks
 * for, which only a box derived from hardware can do. */
static int min_channels(struct pt_box *b, long long v, char *why, size_t len) {
  struct pt_error_rec e;
  b->hw.min_nchannels = (int)v;
  if (!b->has_hw) {
    snprintf(why, len, "its NCCL view is typed by hand, so NCCL_MIN_NCHANNELS cannot change it; "
                       "exploring it needs a box derived from hardware (docs/sim.md)");
    return -1;
  }
  if (pt_box_derive(b, &e)) {
    snprintf(why, len, "%s", e.msg);
    return -1;
  }
  return 0;
}

/* NCCL_BUFFSIZE: the Simple buffer only; NCCL's view does not use it
 * (its cost model has no buffer term), the truth does (sim/ring_chunks.c). */
static int buffsize(struct pt_box *b, long long v, char *why, size_t len) {
  (void)why, (void)len;
  b->nccl_buffsize = (uint64_t)v;
  return 0;
}

static const struct pt_explore_var vars[] = {
    {"NCCL_MIN_NCHANNELS", "channels", 1, 64, 0, 0, 1, min_channels,
     "more channels gain no more than %.0f%%: keep NCCL's own count (leave NCCL_MIN_NCHANNELS unset)",
     "the plugin refuses the profile otherwise"},
    /* At least 64 KiB: a step (buffer / NCCL_STEPS) must hold NCCL's P2P
     * chunk's share, and the slice floor (buffer / 128) stays 16-byte
     * aligned; at most 1 GiB, per channel and peer in device memory. */
    {"NCCL_BUFFSIZE", "bytes", 64 << 10, 1LL << 30, 1, (long long)PT_NCCL_BUFFSIZE_DEFAULT, 0, buffsize,
     "other buffer sizes gain no more than %.0f%%: keep NCCL's default (leave NCCL_BUFFSIZE unset)",
     "the plugin warns otherwise: every latency in the profile was measured with it"},
};

const struct pt_explore_var *pt_explore_var_find(const char *name) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (!strcmp(vars[i].name, name)) return &vars[i];
  return NULL;
}

const char *pt_explore_var_names(void) { return "NCCL_MIN_NCHANNELS, NCCL_BUFFSIZE"; }

int pt_explore_var_parse(const struct pt_explore_var *var, const char *text, long long *v, char *why,
                         size_t len) {
  char *end = NULL;
  errno = 0;
  long long x = strtoll(text, &end, 10);
  if (errno || end == text) goto bad;
  if (var->suffixes && *end) {
    int sh = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : *end == 'G' || *end == 'g' ? 30 : -1;
    if (sh < 0 || end[1] || x > (1LL << 40)) goto bad;
    x <<= sh;
    end++;
  }
  if (*end) goto bad;
  if (x < var->lo || x > var->hi) {
    snprintf(why, len, "%s=%s is out of range [%lld, %lld] %s", var->name, text, var->lo, var->hi, var->what);
    return -1;
  }
  *v = x;
  return 0;
bad:
  snprintf(why, len, "%s: '%s' is not a number of %s%s", var->name, text, var->what,
           var->suffixes ? " (K, M, G allowed: 1M = 1048576)" : "");
  return -1;
}

void pt_explore_var_format(long long v, char *out, size_t len) { snprintf(out, len, "%lld", v); }
