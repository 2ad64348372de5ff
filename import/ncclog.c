/*
 * NCCL debug log lines: the prefix NCCL's logger writes and the messages
 * pcie-tune doctor needs, as one table of patterns (POSIX extended regular
 * expressions) matched on their stable beginnings.
 *
 * Where the texts come from (NVIDIA/nccl):
 *  - prefix: src/debug.cc, ncclDebugLog: "%s:%d:%d " host, pid, tid, then
 *    "[%d] NCCL INFO %s" or "[%d] %s:%d NCCL WARN %s" (with " (func)" after
 *    the line number in 2.30); an optional timestamp may come first.
 *  - version: src/init.cc, showVersion: "NCCL version 2.x.y[suffix]+cudaX.Y",
 *    without the prefix when NCCL_DEBUG=VERSION or WARN.
 *  - tuner loading, 2.28 and later: src/plugin/tuner.cc, ncclTunerPluginLoad
 *    ("NCCL_TUNER_PLUGIN set by environment to", "Successfully loaded external
 *    tuner plugin", "External tuner plugin %s is unsupported"), and
 *    src/plugin/tuner/tuner_v*.cc ("TUNER/Plugin: Using %s (vN)");
 *    src/plugin/plugin_open.cc, openPluginLib ("TUNER/Plugin: Could not
 *    find:", "TUNER/Plugin: <lib>: <dlerror>").
 *  - tuner loading, 2.21-2.27: src/misc/tuner.cc then src/plugin/tuner*.cc
 *    ("TUNER/Plugin: NCCL_TUNER_PLUGIN set to", "Using tuner plugin",
 *    "Failed to find ncclTunerPlugin_vN symbol", "Using internal tuner
 *    plugin", "No plugin found", "Plugin load returned").
 *  - communicators: src/init.cc, initTransportsRank ("comm %p rank %d nRanks
 *    %d nNodes %d ...", printed before the tuner's init) and
 *    ncclCommInitRankFunc ("... comm %p rank %d nranks %d ... commId 0x%llx
 *    - Init COMPLETE"; commId is the commHash the tuner's init receives).
 *  - channels: src/init.cc, initTransportsRank: "%d coll channels, %d
 *    collnet channels, %d nvls channels, %d p2p channels, %d p2p channels
 *    per peer" (2.19 and later; 2.18 lacks the collnet count), the first
 *    number being comm->nChannels after every rank agreed on it.
 *  - settings: src/misc/param.cc, ncclLoadParam: "%s set by environment to
 *    %lld." (integer parameters, with a final '.'), and the string variables
 *    each reader logs ("NCCL_PROTO set by environment to %s", tuning.cc;
 *    "NCCL_TOPO_FILE ...", topo.cc; "NCCL_COLLNET_ENABLE ... %d.", init.cc).
 *  - this project's plugin: tuner/core.c (pt_core_init and the trace),
 *    prefixed "PcieTuner: ".
 */
#include "ncclog.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pattern {
  enum nl_kind kind;
  /* What the message must begin with ("*text": contain) before the
   * expression is tried: keeps most lines to a few string compares, so a
   * large log reads at close to the speed of reading it. */
  const char *lead;
  const char *re;
  int group[NL_MAX_FIELDS]; /* capture group of each field; 0 = none */
};

/* First match wins: specific patterns before the catch-alls of their family.
 * Keep to the beginnings of messages, so a reworded tail still matches.
 * The communicator's lines (the second half) are NCCL's format strings at
 * every tag from v2.21.5-1 to v2.30.7-1 and on dev (2.31); where they
 * changed, both forms match:
 *  - NL_COMM_INIT: src/init.cc, ncclCommInitRankFunc, "ncclCommInitRank comm
 *    %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx -
 *    Init START|COMPLETE" (2.21-2.22), "%s comm ..." with the function's name
 *    from 2.23; a split prints "parent %p splitCount %d color %d key %d"
 *    instead of the commId (2.23+).
 *  - NL_CHANNELS: src/init.cc, initTransportsRank, "%d coll channels, %d
 *    collnet channels, %d nvls channels, %d p2p channels, %d p2p channels
 *    per peer" (unchanged 2.21-dev; the tail is optional for 2.18's shorter
 *    form, which import/nccltests.c still reads).
 *  - NL_RING: src/graph/rings.cc, ncclBuildRings: "Channel %02d/%02d : " then
 *    " %3d" per rank (2.21-2.22), "Channel %02d/%02d :" then " %d" (2.23+;
 *    2.30 pads to the widest rank and ends a long line with "..."); rank 0
 *    only.
 *  - NL_TREES: src/init.cc, initTransportsRank, "Trees%s" with " [%d]
 *    %d/%d/%d->%d->%d" per channel (channel, down[0..2], rank, up).
 *  - NL_TRANSPORT: src/transport/p2p.cc, p2pSendSetup, "Channel %02d/%01d :
 *    %d[%d] -> %d[%d] via P2P/%s%s%s" (CUMEM or MNNVL, "/read", "/CE"), "via
 *    P2P/IPC%s%s", "via P2P/direct pointer%s", "via P2P/indirect/%d[%d]%s";
 *    src/transport/shm.cc, shmSendSetup, "Channel %02d : %d[%d] -> %d[%d] via
 *    SHM/%s/%s" (CE or direct each way; "via SHM/direct" in 2.30+);
 *    src/transport/net.cc, sendSetup/recvSetup, "Channel %02d/%d : %d[%d] ->
 *    %d[%d] [send|receive] via NET/%s/%d..." (name, device, then flags).
 *  - NL_GRAPH, NL_GRAPH_FALLBACK: src/graph/search.cc, ncclTopoPrintGraph
 *    "Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s,
 *    sameChannels %d" and ncclTopoCompute "Could not find a path for pattern
 *    %d, falling back to simple order" (a WARN up to 2.24, INFO after).
 *  - NL_COLL: src/enqueue.cc, ncclEnqueueCheck, "%s: opCount %lx sendbuff %p
 *    recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d]
 *    stream %p" (the same at 2.28.9 and 2.30.7), with NCCL_DEBUG_SUBSYS=COLL;
 *    under CUDA-graph capture it is printed once, at capture.
 *  - NL_P2P_DISABLED: src/graph/paths.cc, ncclTopoCheckP2p, "P2P is disabled
 *    between connected GPUs %d and %d. ..." (NVML's P2P status, per pair). */
static const struct pattern patterns[] = {
    {NL_VERSION, "NCCL version ", "^NCCL version ([0-9]+\\.[0-9]+\\.[0-9]+)([^ ]*)", {1, 2}},
    {NL_TUNER_ENV, "*NCCL_TUNER_PLUGIN set ", "^(TUNER/Plugin: )?NCCL_TUNER_PLUGIN set (by environment )?to (.*)$", {3}},
    {NL_TUNER_USING_V, "TUNER/Plugin: Using ", "^TUNER/Plugin: Using (.+) \\(v([0-9]+)\\)", {1, 2}},
    {NL_TUNER_NOTFOUND, "TUNER/Plugin: ", "^TUNER/Plugin: (Could not find: ?|No plugin found \\()([^)]*)",
     {2}},
    {NL_TUNER_INTERNAL, "TUNER/Plugin: Using internal tuner", "^", {0}},
    {NL_TUNER_USING, "TUNER/Plugin: Using tuner plugin ", "^TUNER/Plugin: Using tuner plugin (.+)$",
     {1}},
    {NL_TUNER_NOSYM, "TUNER/Plugin: Failed to find ",
     "^TUNER/Plugin: Failed to find ncclTunerPlugin_v([0-9]+)", {1}},
    {NL_TUNER_LOADED, "Successfully loaded external tuner plugin ",
     "^Successfully loaded external tuner plugin (.+)$", {1}},
    {NL_TUNER_UNSUPPORTED, "External tuner plugin ", "^External tuner plugin (.+) is unsupported", {1}},
    {NL_OTHER, "TUNER/Plugin: ", "^TUNER/Plugin: (Closing tuner|Plugin name set by env)", {0}},
    {NL_TUNER_MSG, "TUNER/Plugin: ", "^TUNER/Plugin: (.+)$", {1}},
    {NL_COMM, "comm ",
     "^comm (0x[0-9a-fA-F]+|\\(nil\\)) rank ([0-9]+) nRanks ([0-9]+) nNodes ([0-9]+)", {1, 2, 3, 4}},
    {NL_COMM_INIT, "* Init ",
     "comm (0x[0-9a-fA-F]+) rank ([0-9]+) nranks ([0-9]+) cudaDev ([0-9]+) nvmlDev [0-9]+ busId "
     "([0-9a-fA-F]+) (commId 0x([0-9a-fA-F]+) |parent .*)- ?Init (START|COMPLETE)",
     {1, 2, 3, 7, 4, 5, 8}},
    {NL_CHANNELS, "* coll channels, ",
     "^([0-9]+) coll channels, (([0-9]+) collnet channels, )?(([0-9]+) nvls channels, ([0-9]+) p2p "
     "channels, ([0-9]+) p2p channels per peer)?",
     {1, 3, 5, 6, 7}},
    {NL_TRANSPORT, "Channel ",
     "^Channel ([0-9]+)(/[0-9]+)? : ([0-9]+)\\[([0-9]+)\\] -> ([0-9]+)\\[([0-9]+)\\] "
     "(\\[(send|receive)\\] )?via ([A-Z0-9]+/.*[^ ])",
     {1, 3, 4, 5, 6, 8, 9}},
    {NL_RING, "Channel ", "^Channel ([0-9]+)/([0-9]+) :(( +[0-9]+)+)( *\\.\\.\\.)? *$", {1, 2, 3}},
    {NL_TREES, "Trees", "^Trees((  ?\\[[0-9]+\\] [-0-9/>]+)+)", {1}},
    {NL_GRAPH, "Pattern ",
     "^Pattern ([0-9]+), crossNic [0-9]+, nChannels ([0-9]+), bw ([0-9.]+)/([0-9.]+), type "
     "([A-Z0-9]+)/([A-Z0-9]+)",
     {1, 2, 3, 4, 5, 6}},
    {NL_GRAPH_FALLBACK, "Could not find a path for pattern ",
     "^Could not find a path for pattern ([0-9]+)", {1}},
    {NL_P2P_DISABLED, "P2P is disabled between ",
     "^P2P is disabled between (NVLINK )?connected GPUs ([0-9]+) and ([0-9]+)", {2, 3}},
    {NL_ENV, "NCCL_", "^(NCCL_[A-Za-z0-9_]+) set by environment to (.*)$", {1, 2}},
    {NL_COLL, "*: opCount ",
     "^([A-Za-z]+): opCount ([0-9a-fA-F]+) sendbuff [^ ]+ recvbuff [^ ]+ count ([0-9]+) datatype "
     "([0-9]+) op [0-9]+ root -?[0-9]+ comm (0x[0-9a-fA-F]+|\\(nil\\)) \\[nranks=([0-9]+)\\] stream "
     "([^ ]+)",
     {1, 2, 3, 4, 5, 6, 7}},
    /* The rest of the init line (intervals, nRanks, nNodes, commId) is read
     * key by key in classify(), so a field added or moved keeps matching. */
    {NL_PT_PROFILE, "PcieTuner: profile ", "^PcieTuner: profile (.+) name '(.*)' hash ([0-9a-f]+)",
     {1, 2, 3}},
    {NL_PT_REFUSE, "PcieTuner: ", "^PcieTuner: (.*); leaving ", {1}},
    {NL_PT_TRACE, "PcieTuner: ",
     "^PcieTuner: ([a-z]+) ([0-9]+) B ([a-z]+) -> (([a-z0-9_]+/[a-z0-9_]+) ([0-9]+) ch|NCCL's own "
     "choice) \\((.*)\\)",
     {1, 2, 3, 5, 6, 7}},
    {NL_PT_MSG, "PcieTuner: ", "^PcieTuner: (.*)$", {1}},
};
#define NPATTERNS (sizeof patterns / sizeof patterns[0])

/* host:pid:tid [dev], then what comes before "NCCL INFO"/"NCCL WARN" (WARN
 * puts file:line there). The host has no ':' or blank (gethostname). */
static const char prefix_re[] =
    "([^ :\\[]+):([0-9]+):([0-9]+) \\[([0-9]+)\\] ([^ ]+:[0-9]+( \\([^)]*\\))? )?NCCL (INFO|WARN) ";

static regex_t compiled[NPATTERNS], prefix;
static int ready;

int nl_init(void) {
  if (ready) return 0;
  if (regcomp(&prefix, prefix_re, REG_EXTENDED)) return -1;
  for (size_t i = 0; i < NPATTERNS; i++)
    if (regcomp(&compiled[i], patterns[i].re, REG_EXTENDED)) {
      while (i--) regfree(&compiled[i]);
      regfree(&prefix);
      return -1;
    }
  ready = 1;
  return 0;
}

void nl_release(void) {
  if (!ready) return;
  for (size_t i = 0; i < NPATTERNS; i++) regfree(&compiled[i]);
  regfree(&prefix);
  ready = 0;
}

static void copy(char *dst, size_t len, const char *src, regmatch_t m) {
  size_t n = m.rm_so < 0 ? 0 : (size_t)(m.rm_eo - m.rm_so);
  if (n >= len) n = len - 1;
  if (n) memcpy(dst, src + m.rm_so, n);
  dst[n] = 0;
}

static void classify(struct nl_line *out) {
  regmatch_t m[10];
  out->kind = NL_OTHER;
  for (size_t i = 0; i < NPATTERNS; i++) {
    const char *lead = patterns[i].lead;
    if (lead[0] == '*' ? !strstr(out->msg, lead + 1) : strncmp(out->msg, lead, strlen(lead)))
      continue;
    if (regexec(&compiled[i], out->msg, 10, m, 0)) continue;
    out->kind = patterns[i].kind;
    for (int f = 0; f < NL_MAX_FIELDS; f++) {
      int g = patterns[i].group[f];
      out->field[f][0] = 0;
      if (g) {
        copy(out->field[f], sizeof out->field[f], out->msg, m[g]);
        out->nfield = f + 1;
      }
    }
    break;
  }
  if (out->kind == NL_ENV) {
    /* ncclLoadParam ends an integer with '.': "to 4." is 4. */
    char *v = out->field[1];
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\r')) v[--n] = 0;
    if (n >= 2 && v[n - 1] == '.' && v[n - 2] >= '0' && v[n - 2] <= '9') v[n - 1] = 0;
  }
  if (out->kind == NL_PT_PROFILE) {
    /* f3 intervals, f4 nRanks, f5 nNodes: "" when the line lacks them. */
    static const char *const keys[3] = {" intervals ", "nRanks ", "nNodes "};
    const char *tail = strstr(out->msg, " hash ");
    for (int k = 0; k < 3; k++) {
      const char *at = tail ? strstr(tail, keys[k]) : NULL;
      out->field[3 + k][0] = 0;
      if (at) sscanf(at + strlen(keys[k]), "%31[0-9]", out->field[3 + k]);
    }
    out->nfield = 6;
    const char *c = tail ? strstr(tail, "commId ") : NULL;
    out->commid[0] = 0;
    if (c) sscanf(c + 7, "%31[0-9a-fA-F]", out->commid);
  }
}

int nl_parse(const char *line, struct nl_line *out) {
  regmatch_t m[8];
  memset(out, 0, sizeof *out);
  if (!ready && nl_init()) return 0;
  /* Most of a job's output is not NCCL's: two searches rule it out before
   * the prefix's expression runs. */
  int nccl = strstr(line, "NCCL INFO ") || strstr(line, "NCCL WARN ");
  if (nccl && regexec(&prefix, line, 8, m, 0) == 0) {
    char num[24];
    copy(out->host, sizeof out->host, line, m[1]);
    copy(num, sizeof num, line, m[2]);
    out->pid = strtol(num, NULL, 10);
    copy(num, sizeof num, line, m[3]);
    out->tid = strtol(num, NULL, 10);
    copy(num, sizeof num, line, m[4]);
    out->dev = atoi(num);
    out->level = line[m[7].rm_so] == 'W' ? NL_WARN : NL_INFO;
    out->msg = line + m[0].rm_eo;
  } else {
    /* NCCL_DEBUG=VERSION/WARN print the version alone on its line. */
    const char *v = strstr(line, "NCCL version ");
    if (!v || (v != line && v[-1] != ' ')) return 0;
    out->level = NL_BARE;
    out->pid = -1;
    out->msg = v;
  }
  classify(out);
  return out->level != NL_BARE || out->kind == NL_VERSION;
}

/* Refusal reasons by their stable words (tuner/select.c, the profile
 * loader); the first that appears wins. */
static const struct {
  const char *needle, *cls;
} refusals[] = {
    {"both match", "ambiguous"},
    {"does not match", "not fitting"},
    {"matches nRanks", "not fitting"},
    {"cannot be opened", "unreadable"},
    {"cannot read", "unreadable"},
    {"partial", "partial"},
    {"incomplete", "partial"},
    {"not complete", "partial"},
    {"out of memory", "other"},
};

const char *nl_refusal_class(const char *reason, enum nl_level level) {
  for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
    if (strstr(reason, refusals[i].needle)) return refusals[i].cls;
  /* A WARN with a file:line reason is the loader rejecting the profile. */
  return level == NL_WARN ? "invalid" : "other";
}
