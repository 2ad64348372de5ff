/*
 * The NCCL environment as NCCL reads it, at init only: NCCL_ALGO and
 * NCCL_PROTO parsed the way NCCL does (for the v2 shim, which has no cost
 * table to learn them from), and the comparison of the environment recorded
 * in a profile with the one the job runs under.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl/common.h"
#include "pcie/core.h"
#include "pcie/profile.h"
#include "pcie/table.h"

/* NCCL's own spellings (init.cc ncclFuncStr, ncclAlgoStr, ncclProtoStr). */
static const char *const func_str[PT_NCOLL] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                               "AllReduce"};
static const char *const algo_str[NCCL_NUM_ALGORITHMS] = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char *const proto_str[NCCL_NUM_PROTOCOLS] = {"LL", "LL128", "Simple"};

/* One "[prefix:][^]elem,elem" entry applied to list[nprefix][nelem], as
 * graph/tuning.cc parseList does: a named prefix resets that function's row,
 * no prefix resets every row; '^' turns the named elements off and the rest
 * on. Returns -1 for anything NCCL would refuse (unknown element or prefix,
 * a later entry without prefix). */
static int parse_entry(char *entry, int first, const char *const *elems, int nelem,
                       unsigned char *list) {
  char *save = NULL;
  char *prefix = strtok_r(entry, ":", &save);
  char *elem_list = strtok_r(NULL, ":", &save);
  if (!prefix) return 0;
  if (!elem_list) {
    if (!first) return -1;
    elem_list = prefix;
    prefix = NULL;
  }
  int unset = elem_list[0] == '^', found = 0;
  elem_list += unset;
  for (int f = 0; f < PT_NCOLL; f++) {
    if (prefix && strcasecmp(prefix, func_str[f])) continue;
    found = 1;
    for (int e = 0; e < nelem; e++) list[f * nelem + e] = (unsigned char)unset;
    char *copy = strdup(elem_list), *s2 = NULL;
    if (!copy) return -1;
    for (char *t = strtok_r(copy, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
      int e = 0;
      while (e < nelem && strcasecmp(t, elems[e])) e++;
      if (e == nelem) {
        free(copy);
        return -1;
      }
      list[f * nelem + e] = (unsigned char)!unset;
    }
    free(copy);
  }
  return found ? 0 : -1;
}

static int parse_list(const char *str, const char *const *elems, int nelem, unsigned char *list) {
  char *copy = strdup(str), *save = NULL;
  int rc = 0, first = 1;
  if (!copy) return -1;
  for (char *e = strtok_r(copy, ";", &save); e && !rc; e = strtok_r(NULL, ";", &save), first = 0)
    rc = parse_entry(e, first, elems, nelem, list);
  free(copy);
  return rc;
}

int pt_nccl_enabled(const char *algo_env, const char *proto_env, struct pt_nccl_enable *out) {
  /* NCCL's defaults: every algorithm on; LL128 "2" (on only where NCCL
   * judges it safe, never on a PCIe-only node), the others on. */
  for (int f = 0; f < PT_NCOLL; f++) {
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) out->algo[f][a] = 1;
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) out->proto[f][p] = p == NCCL_PROTO_LL128 ? 2 : 1;
  }
  if (proto_env && parse_list(proto_env, proto_str, NCCL_NUM_PROTOCOLS, &out->proto[0][0]))
    return -1;
  if (algo_env && parse_list(algo_env, algo_str, NCCL_NUM_ALGORITHMS, &out->algo[0][0])) return -1;
  return 0;
}

/* Variables whose change can change comm->nChannels: the recorded count no
 * longer holds. */
static const char *const channel_vars[] = {
    "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS",    "NCCL_MAX_CTAS",
    "NCCL_P2P_LEVEL",     "NCCL_P2P_DISABLE",   "NCCL_SHM_DISABLE", "NCCL_TOPO_FILE",
    "NCCL_GRAPH_FILE",    "NCCL_NCHANNELS_PER_NET_PEER", NULL};
/* Variables that change which algorithms/protocols NCCL enables or which
 * calls arrive with regBuff (graph data): decisions may differ. */
static const char *const proto_vars[] = {"NCCL_PROTO", "NCCL_ALGO", "NCCL_GRAPH_REGISTER", NULL};
/* Variables that change how peers' buffers are allocated and mapped, and
 * so what each protocol costs: NCCL_CUMEM_ENABLE=0 (vLLM's and SGLang's
 * default, cli/engine.c) makes NCCL's buffers cudaMalloc'ed and mapped with
 * legacy CUDA IPC, and turns runtime connect off (src/allocator.cc,
 * src/init.cc); NCCL_NVLS_ENABLE (SGLang sets it) enables NVLS. */
static const char *const transport_vars[] = {"NCCL_CUMEM_ENABLE", "NCCL_NVLS_ENABLE", NULL};
/* Variables that change what each candidate costs, not what NCCL enables:
 * the buffer sizes set the chunks and slices the device code runs
 * (init.cc computeBuffSizes), so the measured ranking may not hold. */
static const char *const timing_vars[] = {"NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", NULL};

static int differs(const char *a, const char *b) {
  return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

static void describe(char *msg, size_t len, const char *name, const char *was, const char *now) {
  size_t n = strlen(msg);
  if (n + 1 >= len) return;
  snprintf(msg + n, len - n, "%s%s is %s%s%s here but was %s%s%s when measured", n ? "; " : "",
           name, now ? "'" : "", now ? now : "unset", now ? "'" : "", was ? "'" : "",
           was ? was : "unset", was ? "'" : "");
}

int pt_env_compare(const struct pt_profile *p, char *msg, size_t len) {
  int r = 0;
  if (len) msg[0] = '\0';
  if (!p->env_recorded) return 0;
  for (const char *const *v = channel_vars; *v; v++) {
    const char *was = pt_profile_env(p, *v), *now = getenv(*v);
    if (!differs(was, now)) continue;
    describe(msg, len, *v, was, now);
    r |= PT_ENV_CHANNELS;
  }
  static const struct {
    const char *const *vars;
    int bit;
  } groups[] = {{proto_vars, PT_ENV_PROTOCOLS}, {transport_vars, PT_ENV_TRANSPORT}, {timing_vars, PT_ENV_TIMING}};
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (const char *const *v = groups[g].vars; *v; v++) {
      const char *was = pt_profile_env(p, *v), *now = getenv(*v);
      if (!differs(was, now)) continue;
      describe(msg, len, *v, was, now);
      r |= groups[g].bit;
    }
  return r;
}

static void size_text(char *buf, size_t len, uint64_t b) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024 && !(b % 1024)) b /= 1024, u++;
  snprintf(buf, len, "%llu %s", (unsigned long long)b, unit[u]);
}

int pt_env_blocked(const struct pt_table *t, const struct pt_nccl_enable *en, char *msg, size_t len) {
  int n = 0;
  if (len) msg[0] = 0;
  for (int f = 0; f < PT_NCOLL; f++) {
    const struct pt_ivset *s = t->set[f];
    for (size_t i = 0; s && i < s->n; i++) {
      const struct pt_interval *iv = &s->iv[i];
      if (!iv->n) continue;
      int a = iv->c[0].algo, p = iv->c[0].proto;
      if (a < 0 || p < 0 || a >= NCCL_NUM_ALGORITHMS || p >= NCCL_NUM_PROTOCOLS) continue;
      if (en->algo[f][a] && en->proto[f][p]) continue;
      /* One range per run of blocked intervals with the same first choice. */
      uint64_t hi = iv->hi;
      while (i + 1 < s->n && s->iv[i + 1].n && s->iv[i + 1].c[0].algo == a &&
             s->iv[i + 1].c[0].proto == p)
        hi = s->iv[++i].hi;
      char lo_t[32], hi_t[32];
      size_text(lo_t, sizeof lo_t, iv->lo);
      size_text(hi_t, sizeof hi_t, hi);
      size_t used = strlen(msg);
      if (n++ < 6 && used + 1 < len)
        snprintf(msg + used, len - used, "%s%s %s-%s (%s/%s)", used ? ", " : "", func_str[f],
                 lo_t, hi == UINT64_MAX ? "max" : hi_t, pt_algo_name(a), pt_proto_name(p));
    }
  }
  if (n > 6) {
    size_t used = strlen(msg);
    if (used + 1 < len) snprintf(msg + used, len - used, " and %d more", n - 6);
  }
  return n;
}
