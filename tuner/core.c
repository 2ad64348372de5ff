/*
 * The tuner core: a context per communicator, created at init from the
 * selected profile, read-only afterwards. Init is the only place that reads
 * the environment, takes a lock (inside the registry) or logs at INFO/WARN;
 * decide and chunk are table lookups.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core_internal.h"
#include "pcie/chunk.h"
#include "pcie/core.h"
#include "table_hot.h"

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

/* An init line that says the plugin stepped aside (or warns): it ends with
 * the communicator's commId, as the init INFO line carries it, so that
 * `pcie-tune doctor` ties it to its communicator whatever order lines from
 * several communicators arrive in. */
__attribute__((format(printf, 5, 6))) static void initf(ncclDebugLogger_t log, uint64_t comm_id,
                                                        int level, unsigned long flags,
                                                        const char *fmt, ...) {
  char buf[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  logf_(log, level, flags, "%s (commId %016llx)", buf, (unsigned long long)comm_id);
}

/* Every context init handed out and finalize has not taken back. NCCL
 * finalizes a context once, but a plugin must never abort a process: a
 * second finalize of the same pointer finds it gone from this list and does
 * nothing, without reading the freed memory. (Only a context allocated
 * since at the same address cannot be told apart.) Its own lock: finalize
 * never waits behind an init reading a slow file. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pt_ctx *live;

static void live_add(struct pt_ctx *ctx) {
  pthread_mutex_lock(&live_lock);
  ctx->live_next = live;
  live = ctx;
  pthread_mutex_unlock(&live_lock);
}

/* Unlinks ctx; returns 0 when it was not live (never handed out or already
 * finalized). */
static int live_take(const struct pt_ctx *ctx) {
  int found = 0;
  pthread_mutex_lock(&live_lock);
  for (struct pt_ctx **pp = &live; *pp; pp = &(*pp)->live_next)
    if (*pp == ctx) {
      *pp = ctx->live_next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&live_lock);
  return found;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

/* Whether this communicator may use the profile at all; logs the one WARN
 * when not, or one WARN naming what differs but does not refuse. Returns 1
 * to go passive. Only inputs that are the same on every rank may refuse
 * (docs/decisions.md, "Why the same answer on every rank"): the profile's
 * bytes, nNodes, NCCL's version and, on one node, the host. This process's
 * NCCL_* variables differ between ranks when a launcher sets them so, and
 * NCCL does not reconcile them all, so they only warn. */
static int refuse(const struct pt_ctx *ctx, const struct pt_profile *p, int abi, char *note,
                  size_t note_len) {
  char msg[1024], env[1024], must[1024], warn[1024];
  if (pt_profile_partial(p, msg, sizeof msg)) {
    initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL, "%s: %s; leaving every decision to NCCL",
          p->path, msg);
    return 1;
  }
  pt_env_compare(p, env, sizeof env);
  int no = pt_prov_check(p, ctx->nnodes, (const void *)ctx->log, abi,
                         env_on("PCIE_TUNER_ACCEPT_FOREIGN"), must, warn, sizeof must, note,
                         note_len);
  if (no) {
    initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL,
          "%s: %s%s%s; leaving every decision to NCCL (measure this box with pcie-tune profile, "
          "or set PCIE_TUNER_ACCEPT_FOREIGN=1 to use the profile anyway)",
          p->path, must, env[0] ? "; also " : "", env);
    return 1;
  }
  if (env[0] || warn[0])
    initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL,
          "%s: %s%s%s; the profile still decides, alike on every rank (NCCL's disabled choices "
          "are never revived, its channel count is never exceeded)",
          p->path, warn, warn[0] && env[0] ? "; " : "", env);
  return 0;
}

/* A global NCCL_PROTO or NCCL_ALGO (teams set NCCL_PROTO=Simple to protect
 * prefill) hides every choice the profile measured outside it: one WARN per
 * process naming the variable and the size ranges where the profile would
 * have chosen otherwise. Worded so that doctor reads it as no refusal. */
static void warn_global_env(const struct pt_ctx *ctx) {
  static int warned;
  const char *proto = getenv("NCCL_PROTO"), *algo = getenv("NCCL_ALGO");
  char ranges[700], var[160];
  if ((!proto && !algo) || !ctx->v2_known || __atomic_load_n(&warned, __ATOMIC_RELAXED)) return;
  if (!pt_env_blocked(ctx->table, &ctx->v2_enable, ranges, sizeof ranges)) return;
  if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  snprintf(var, sizeof var, "%s%.60s%s%s%.60s", proto ? "NCCL_PROTO=" : "", proto ? proto : "",
           proto && algo ? " " : "", algo ? "NCCL_ALGO=" : "", algo ? algo : "");
  initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL,
        "%s is set for the whole job: NCCL will not run the profile's choice for %s; the profile "
        "still decides elsewhere (set it per collective, or unset it where the profile was "
        "measured without it)",
        var, ranges);
}

/* LL128 choices the profile holds but the plugin leaves to NCCL for want
 * of a passing correctness screen (pt_profile_ll128_usable): one WARN per
 * process saying why and what to run, worded so that doctor reads it as no
 * refusal. A failed screen is said once too: NCCL's own LL128 entries are
 * then raised on every call (table_hot.h, pt_hot_drop_ll128). */
static void warn_ll128(const struct pt_ctx *ctx, const struct pt_profile *p) {
  static int warned;
  size_t n = pt_profile_ll128_usable(p) ? 0 : pt_profile_ll128_choices(p);
  if (!n || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  if (p->ll128_screen == PT_LL128_UNUSABLE)
    initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL,
          "%s: LL128 failed its correctness screen on this box (provenance.extra.ll128_screen): never chosen, "
          "and NCCL's own LL128 entries are set aside on every call; the profile still decides elsewhere",
          p->path);
  else
    initf(ctx->log, ctx->comm_id, NCCL_LOG_WARN, NCCL_ALL,
          "%s: %zu LL128 choice%s without a passing LL128 correctness screen for this box (LL128 over PCIe "
          "returns wrong results where a 128-byte line tears): NCCL's own choice stands there; the profile "
          "still decides elsewhere (screen it on this box: pcie-tune screen %s --gpus LIST --out FILE)",
          p->path, n, n == 1 ? "" : "s", p->path);
}

void pt_core_init(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                  ncclDebugLogger_t log) {
  pt_core_init_abi(out, comm_id, nranks, nnodes, log, 0);
}

void pt_core_init_abi(struct pt_ctx **out, uint64_t comm_id, size_t nranks, size_t nnodes,
                      ncclDebugLogger_t log, int abi) {
  char msg[1400], ch[64], note[1100] = "";
  struct pt_ctx *ctx = calloc(1, sizeof *ctx);
  *out = ctx;
  if (!ctx) {
    initf(log, comm_id, NCCL_LOG_WARN, NCCL_ALL, "out of memory at init; leaving decisions to NCCL");
    return;
  }
  live_add(ctx);
  ctx->log = log;
  ctx->nranks = nranks;
  ctx->nnodes = nnodes;
  ctx->comm_id = comm_id;
  ctx->trace = env_on("PCIE_TUNER_TRACE");
  ctx->v2_known = !pt_nccl_enabled(getenv("NCCL_ALGO"), getenv("NCCL_PROTO"), &ctx->v2_enable);
  const char *spec = getenv("PCIE_TUNER_PROFILE");
  int rc = pt_select_profile(spec, nranks, nnodes, &ctx->loaded, msg, sizeof msg);
  /* Nothing installed fits: plain INFO. A profile the user named that does
   * not fit is a mistake worth a WARN. */
  if (rc == PT_ENOENT && !(spec && spec[0])) {
    initf(log, comm_id, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING, "%s; leaving decisions to NCCL", msg);
    return;
  }
  if (rc) {
    /* NCCL_ALL: the default NCCL_DEBUG_SUBSYS would hide a TUNING-only WARN. */
    initf(log, comm_id, NCCL_LOG_WARN, NCCL_ALL,
          "%s; leaving every decision to NCCL for this communicator", msg);
    return;
  }
  const struct pt_profile *p = &ctx->loaded->prof;
  ctx->table = &ctx->loaded->table;
  if (refuse(ctx, p, abi, note, sizeof note)) goto passive;
  if (pt_profile_has_comm_rules(p)) {
    /* Rules for some communicators only: this one gets its own table. */
    ctx->own = malloc(sizeof *ctx->own);
    if (!ctx->own || pt_table_build_for(ctx->own, p, nranks, nnodes)) {
      free(ctx->own);
      ctx->own = NULL;
      initf(log, comm_id, NCCL_LOG_WARN, NCCL_ALL, "out of memory at init; leaving decisions to NCCL");
      goto passive;
    }
    ctx->table = ctx->own;
  }
  warn_global_env(ctx);
  warn_ll128(ctx, p);
  if (ctx->table->comm_channels)
    snprintf(ch, sizeof ch, "channels <= %d", ctx->table->comm_channels);
  else
    snprintf(ch, sizeof ch, "channels unknown: <= %d, all-gather keeps NCCL's",
             ctx->table->chan_cap);
  logf_(log, NCCL_LOG_INFO, NCCL_INIT | NCCL_TUNING,
        "profile %s name '%s' hash %016llx decision intervals %zu in %zu collective%s "
        "(%s) (nRanks %zu nNodes %zu commId %016llx) (%s)",
        p->path, p->name, (unsigned long long)p->hash, ctx->table->ninterval, ctx->table->nsets,
        ctx->table->nsets == 1 ? "" : "s", ch, nranks, nnodes, (unsigned long long)comm_id, note);
  return;
passive:
  pt_registry_release(ctx->loaded);
  ctx->loaded = NULL;
  ctx->table = NULL;
}

static void trace(const struct pt_ctx *ctx, int coll, size_t nbytes, int mode,
                  const struct pt_choice *c, const char *why) {
  const char *name = pt_coll_name(coll) ? pt_coll_name(coll) : "?";
  /* What runs: on NCCL 2.31+ the count is a cap under NCCL's heuristic. */
  int runs = c && ctx->loaded && pt_nccl_caps_channels(ctx->loaded->prof.prov.nccl_version)
                 ? pt_nccl_channels_run(c->set_channels, (int)ctx->nranks, c->algo, c->proto, nbytes)
                 : c ? c->set_channels : 0;
  if (c && c->set_channels)
    logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> %s/%s %d ch%s (%s)", name,
          nbytes, pt_mode_name(mode), pt_algo_name(c->algo), pt_proto_name(c->proto), runs,
          runs != c->set_channels ? " (NCCL 2.31+ lowers it at this size)"
          : c->set_channels != c->channels ? " (clamped)" : "",
          why);
  else if (c)
    logf_(ctx->log, NCCL_LOG_INFO, NCCL_TUNING, "%s %zu B %s -> %s/%s, NCCL's channel count (%s)",
          name, nbytes, pt_mode_name(mode), pt_algo_name(c->algo), pt_proto_name(c->proto), why);
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
  int k = pt_table_apply_packed(&forced, cost, num_algo, num_proto, 0, nchannels);
  pt__control_count(k >= 0);
  struct pt_choice c = {.algo = forced.algo[0], .proto = forced.proto[0],
                        .channels = forced.channels[0], .set_channels = forced.channels[0],
                        .chunk = chunk};
  return report(ctx, coll, nbytes, mode, k, &c,
                k >= 0 ? "forced by pcie-tune" : "forced choice disabled by NCCL", out);
}

/* Why a decision was left to NCCL, for the trace; cost is the table as
 * NCCL passed it (left unchanged). */
static const char *why_none(const struct pt_ctx *ctx, int coll, const struct pt_interval *iv,
                            const float *cost, int num_algo, int num_proto) {
  if (!iv) return "no data for this collective";
  if (!iv->n)
    return iv->kind == PT_IV_OUTSIDE   ? "outside the measured sizes"
           : iv->kind == PT_IV_NO_GAIN ? "NCCL's default is as fast"
           : iv->kind == PT_IV_NO_DEFAULT ? "NCCL's default was not measured here"
                                       : "nothing measured here";
  const struct pt_ivset *set = pt_hot_set(ctx->table, coll);
  unsigned unseen = set ? set->hot[iv - set->iv].unseen : 0;
  if (unseen && num_algo == NCCL_NUM_ALGORITHMS && num_proto == NCCL_NUM_PROTOCOLS &&
      pt_hot_unseen_best(cost, unseen, pt_hot_best(cost)))
    return "NCCL's best entry is a combination it did not run when the profile was measured";
  return "no ranked choice usable in NCCL's table";
}

int pt_core_decide(const struct pt_ctx *ctx, int coll, size_t nbytes, int reg_buff,
                   int num_pipe_ops, float *cost, int num_algo, int num_proto, int *nchannels,
                   struct pt_choice *out) {
  static const char *const rank_names[PT_MAX_RANKED] = {"rank 1", "rank 2", "rank 3", "rank 4"};
  const struct pt_interval *iv;
  int mode = reg_buff ? PT_MODE_GRAPH : PT_MODE_EAGER;
  if (!ctx) return 0;
  if (__builtin_expect(pt__control_active(), 0))
    return decide_forced(ctx, coll, nbytes, mode, cost, num_algo, num_proto, nchannels, out);
  if (!ctx->table) return 0;
  int k = pt_table_decide(ctx->table, coll, nbytes, cost, num_algo, num_proto, num_pipe_ops,
                          nchannels, &iv);
  if (__builtin_expect(!out && !ctx->trace, 1)) return k >= 0; /* the default path ends here */
  static const struct pt_choice none;
  const struct pt_choice *c = k >= 0 ? &iv->c[k] : &none;
  return report(ctx, coll, nbytes, mode, k, c, k >= 0 ? (c->from_rule ? "rule" : rank_names[k])
                                              : why_none(ctx, coll, iv, cost, num_algo, num_proto),
                out);
}

void pt_core_chunk(const struct pt_ctx *ctx, int coll, size_t nbytes, int algo, int proto,
                   int nchannels, size_t *chunk) {
  struct pt_hot forced;
  uint32_t fchunk;
  if (!ctx || !chunk) return;
  if (pt__control_forced(&forced, &fchunk)) {
    if (fchunk && forced.algo[0] == algo && forced.proto[0] == proto)
      *chunk = pt_chunk_round(fchunk, proto);
    return;
  }
  if (!ctx->table) return;
  (void)nchannels; /* 1 for every part but CollNet's, whose count is NCCL's */
  long long c = pt_table_chunk(ctx->table, coll, nbytes, algo, proto);
  if (c > 0) *chunk = (size_t)c;
}

void pt_core_finalize(struct pt_ctx *ctx) {
  if (!ctx || !live_take(ctx)) return;
  if (ctx->own) {
    pt_table_release(ctx->own);
    free(ctx->own);
  }
  pt_registry_release(ctx->loaded);
  free(ctx);
}
