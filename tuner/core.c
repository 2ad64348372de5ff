/*
 * The tuner core: a context per communicator, created at init from the
 * selected profile, read-only afterwards. Init is the only place that reads
 * the environment, takes a lock (inside the registry) or logs at INFO/WARN;
 * decide and chunk are table lookups.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core_internal.h"
#include "pcie/core.h"

#define LOG_PREFIX "PcieTuner: "

/* Formats once and hands NCCL a plain "%s", so a profile path with '%' in it
 * cannot become a format string. */
__attribute__((format(printf, 4, 5))) static void logf_(ncclDebugLogger_t log, int level,
                                                        unsigned long flags, const char *fmt, ...) {
  char buf[1400];
  va_list ap;
  if (!log) return;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  log((ncclDebugLogLevel)level, flags, __FILE__, __LINE__, LOG_PREFIX "%s", buf);
}

int pt_nccl_proto_forces_ll128(const char *v) {
  char buf[256], *save = NULL;
  int forced = 0;
  if (!v || !v[0]) return 0;
  snprintf(buf, sizeof buf, "%s", v);
  for (char *part = strtok_r(buf, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
    char *list = strchr(part, ':') ? strchr(part, ':') + 1 : part, *s2 = NULL;
    int except = list[0] == '^', named = 0;
    for (char *t = strtok_r(list + except, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
      while (*t == ' ') t++;
      named |= !strncasecmp(t, "LL128", 5) && (t[5] == '\0' || t[5] == ' ');
    }
    /* NCCL: naming LL128, or excluding a list without it, force-enables it. */
    forced |= except ? !named : named;
  }
  return forced;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

void pt_core_init(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                  ncclDebugLogger_t log) {
  char msg[1400];
  struct pt_ctx *ctx = calloc(1, sizeof *ctx);
  *out = ctx;
  if (!ctx) {
    logf_(log, NCCL_LOG_WARN, NCCL_ALL, "out of memory at init; leaving decisions to NCCL");
    return;
  }
  ctx->log = log;
  ctx->nranks = nranks;
  ctx->nnodes = nnodes;
  ctx->comm_id = comm_id;
  ctx->trace = env_on("PCIE_TUNER_TRACE");
  ctx->v2_ll128 = pt_nccl_proto_forces_ll128(getenv("NCCL_PROTO"));
  const char *spec = getenv("PCIE_TUNER_PROFILE");
  int rc = pt_select_profile(spec, nranks, nnodes, &ctx->loaded, msg, sizeof msg);
  /* Nothing installed fits: plain INFO. A profile the user named that does
   * not fit is a mistake worth a WARN. */
  if (rc == PT_ENOENT && !(spec && spec[0])) {
    logf_(log, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING, "%s; leaving decisions to NCCL", msg);
    return;
  }
  if (rc) {
    /* NCCL_ALL: the default NCCL_DEBUG_SUBSYS would hide a TUNING-only WARN. */
    logf_(log, NCCL_LOG_WARN, NCCL_ALL, "%s; leaving every decision to NCCL for this communicator",
          msg);
    return;
  }
  const struct pt_profile *p = &ctx->loaded->prof;
  logf_(log, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING,
        "profile %s name '%s' hash %016llx intervals %zu (nRanks %zu nNodes %zu commId %016llx)",
        p->path, p->name, (unsigned long long)p->hash, ctx->loaded->table.ninterval, nranks,
        nnodes, (unsigned long long)comm_id);
}

static void trace(const struct pt_ctx *ctx, int coll, size_t nbytes, int mode,
                  const struct pt_choice *c, const char *why) {
  const char *name = pt_coll_name(coll) ? pt_coll_name(coll) : "?";
  if (c)
    logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> %s/%s %d ch (%s)", name, nbytes,
          pt_mode_name(mode), pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels, why);
  else
    logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> NCCL's own choice (%s)", name,
          nbytes, pt_mode_name(mode), why);
}

/* The choice a decision applied, for the trace and the v2 shim; off the
 * default path, so its locals do not weigh on every call. */
__attribute__((noinline, cold)) static int report(const struct pt_ctx *ctx, int coll,
                                                  size_t nbytes, int mode, int k,
                                                  const struct pt_choice *c, const char *why,
                                                  struct pt_choice *out) {
  if (ctx->trace) trace(ctx, coll, nbytes, mode, k >= 0 ? c : NULL, why);
  if (k >= 0 && out) *out = *c;
  return k >= 0;
}

/* The profiler measures one candidate: the profile is out of the way, and a
 * combination NCCL disabled is reported, never revived. */
__attribute__((noinline)) static int decide_forced(const struct pt_ctx *ctx, int coll,
                                                   size_t nbytes, int mode, float *cost,
                                                   int num_algo, int num_proto, int *nchannels,
                                                   struct pt_choice *out) {
  struct pt_hot forced;
  uint32_t chunk;
  if (!pt__control_forced(&forced, &chunk)) return 0; /* released meanwhile */
  int k = pt_table_apply_packed(&forced, cost, num_algo, num_proto, nchannels);
  pt__control_count(k >= 0);
  struct pt_choice c = {.algo = forced.algo[0], .proto = forced.proto[0],
                        .channels = forced.channels[0], .chunk = chunk};
  return report(ctx, coll, nbytes, mode, k, &c,
                k >= 0 ? "forced by pcie-tune" : "forced choice disabled by NCCL", out);
}

int pt_core_decide(const struct pt_ctx *ctx, int coll, size_t nbytes, int reg_buff, float *cost,
                   int num_algo, int num_proto, int *nchannels, struct pt_choice *out) {
  static const char *const rank_names[PT_MAX_RANKED] = {"rank 1", "rank 2", "rank 3", "rank 4"};
  const struct pt_interval *iv;
  int mode = reg_buff ? PT_MODE_GRAPH : PT_MODE_EAGER;
  if (!ctx) return 0;
  if (__builtin_expect(pt__control_active(), 0))
    return decide_forced(ctx, coll, nbytes, mode, cost, num_algo, num_proto, nchannels, out);
  if (!ctx->loaded) return 0;
  int k = pt_table_decide(&ctx->loaded->table, coll, mode, nbytes, cost, num_algo, num_proto,
                          nchannels, &iv);
  if (__builtin_expect(!out && !ctx->trace, 1)) return k >= 0; /* the default path ends here */
  static const struct pt_choice none;
  const struct pt_choice *c = k >= 0 ? &iv->c[k] : &none;
  return report(ctx, coll, nbytes, mode, k, c,
                k < 0 ? "no usable candidate" : c->from_rule ? "rule" : rank_names[k], out);
}

void pt_core_chunk(const struct pt_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                   size_t *chunk) {
  struct pt_hot forced;
  uint32_t fchunk;
  if (!ctx || !chunk) return;
  if (pt__control_forced(&forced, &fchunk)) {
    if (fchunk && forced.algo[0] == algo && forced.proto[0] == proto)
      *chunk = pt_chunk_round(fchunk, proto);
    return;
  }
  if (!ctx->loaded) return;
  /* getChunkSize is not told regBuff: graph data first, as the verify-step
   * collectives this tool exists for are graph-captured. */
  size_t c = pt_table_chunk(&ctx->loaded->table, coll, PT_MODE_GRAPH, nbytes, algo, proto);
  if (!c) c = pt_table_chunk(&ctx->loaded->table, coll, PT_MODE_EAGER, nbytes, algo, proto);
  if (c) *chunk = c;
}

void pt_core_finalize(struct pt_ctx *ctx) {
  if (!ctx) return;
  pt_registry_release(ctx->loaded);
  free(ctx);
}
