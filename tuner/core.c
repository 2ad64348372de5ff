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
  int rc = pt_select_profile(getenv("PCIE_TUNER_PROFILE"), nranks, nnodes, &ctx->loaded, msg,
                             sizeof msg);
  if (rc == PT_ENOENT) {
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

const struct pt_choice *pt_core_decide(const struct pt_ctx *ctx, int coll, size_t nbytes,
                                       int reg_buff, float *cost, int num_algo, int num_proto,
                                       int *nchannels) {
  if (!ctx || !ctx->loaded) return NULL;
  int mode = reg_buff ? PT_MODE_GRAPH : PT_MODE_EAGER;
  const struct pt_interval *iv;
  int k = pt_table_decide(&ctx->loaded->table, coll, mode, nbytes, cost, num_algo, num_proto,
                          nchannels, &iv);
  if (ctx->trace) {
    if (k >= 0)
      logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> %s/%s %d ch (rank %d%s)",
            pt_coll_name(coll) ? pt_coll_name(coll) : "?", nbytes, pt_mode_name(mode),
            pt_algo_name(iv->c[k].algo), pt_proto_name(iv->c[k].proto), iv->c[k].channels, k + 1,
            iv->c[k].from_rule ? ", rule" : "");
    else
      logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> NCCL's own choice",
            pt_coll_name(coll) ? pt_coll_name(coll) : "?", nbytes, pt_mode_name(mode));
  }
  return k >= 0 ? &iv->c[k] : NULL;
}

void pt_core_chunk(const struct pt_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                   size_t *chunk) {
  if (!ctx || !ctx->loaded || !chunk) return;
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
