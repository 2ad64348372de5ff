/*
 * The one line import, check and show end with (cli/host_verdict.h): the
 * plugin's own checks, run here, so the answer cannot differ from what the
 * job's init decides on this host with the loader's NCCL.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine.h"
#include "host_verdict.h"
#include "nccl_pick.h"
#include "pcie/core.h"
#include "pcie/hostinfo.h"
#include "pcie/ncclver.h"

/* ncclGetVersion of the NCCL the job loads; NULL when there is none. An
 * engine (vLLM, SGLang, torch) loads its own (cli/nccl_pick.h:
 * VLLM_NCCL_SO_PATH, else torch's wheel), which is often another version
 * than the libnccl.so.2 the loader finds for a program linked against
 * NCCL: the engine's is judged when there is one, and *from says which.
 * The handle stays open: the tuner's version reader looks the library up
 * by address. */
static const void *job_nccl(char *path, size_t len, char *from, size_t flen) {
  static void *h;
  static char engine[320];
  struct cli_nccl e;
  Dl_info info;
  path[0] = 0;
  const char *named = getenv("VLLM_NCCL_SO_PATH");
  if (!h && cli_engine_nccl(&e) && (h = dlopen(e.path, RTLD_LAZY | RTLD_LOCAL)))
    snprintf(engine, sizeof engine, " (the engine's NCCL: %s)", e.from);
  else if (!h && named && named[0])
    snprintf(engine, sizeof engine, " (VLLM_NCCL_SO_PATH=%.120s cannot be loaded: vLLM will not "
                                    "start with it; this is the loader's)", named);
  if (!h) h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  snprintf(from, flen, "%s", engine);
  void *fn = h ? dlsym(h, "ncclGetVersion") : NULL;
  if (fn && dladdr(fn, &info) && info.dli_fname) snprintf(path, len, "%s", info.dli_fname);
  return fn;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

/* What to do about each cause pt_prov_check names (a profile from another
 * box measured with another NCCL gets both): the advice, then the words
 * of the causes it answers. */
static void advice(const char *must, char *buf, size_t len) {
  static const char *const what[][3] = {
      {"import on the box that ran nccl-tests with --box-here, or measure this box with pcie-tune "
       "profile", "records no provenance.box", NULL},
      {"measure this box with pcie-tune profile, or, if the logs came from this box, import them here "
       "with --box-here", "another box", "cannot read this host"},
      {"measure with the NCCL the job loads (pcie-tune profile --nccl-lib PATH)", "measured with NCCL", NULL},
      {"measure on as many nodes as the job runs", "single node", NULL},
  };
  for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
    size_t n = strlen(buf);
    if (strstr(must, what[i][1]) || (what[i][2] && strstr(must, what[i][2])))
      snprintf(buf + n, len > n ? len - n : 0, "; %s", what[i][0]);
  }
  snprintf(buf + strlen(buf), len > strlen(buf) ? len - strlen(buf) : 0,
           " (or set PCIE_TUNER_ACCEPT_FOREIGN=1 to use it anyway)");
}

int cli_host_verdict(const struct pt_profile *p, size_t nnodes, char *buf, size_t len) {
  char must[1024], warn[1024], note[1400], lib[512], part[600], from[320];
  if (!nnodes) nnodes = p->match_nnodes > 0 ? (size_t)p->match_nnodes : 1;
  if (pt_profile_partial(p, part, sizeof part)) {
    snprintf(buf, len, "on this host: the plugin refuses this profile: %s; the plugin leaves every "
                       "decision to NCCL until then", part);
    return 1;
  }
  const void *fn = job_nccl(lib, sizeof lib, from, sizeof from);
  int no = pt_prov_check(p, nnodes, fn, 0, env_on("PCIE_TUNER_ACCEPT_FOREIGN"), must, warn,
                         sizeof must, note, sizeof note);
  char where[700];
  struct pt_nccl_ver v;
  if (fn && lib[0] && pt_nccl_version(fn, 0, &v))
    snprintf(where, sizeof where, "on this host, with NCCL %s from %s%s", v.how, lib, from);
  else
    snprintf(where, sizeof where, "on this host (no libnccl.so.2 on the loader path: NCCL's "
                                  "version is checked at the job's init)");
  if (no) {
    snprintf(buf, len, "%s: the plugin refuses this profile: %s", where, must);
    advice(must, buf, len);
    return 1;
  }
  snprintf(buf, len, "%s: the plugin uses this profile (%s)%s%s", where, note,
           warn[0] ? "; it warns: " : "", warn);
  cli_engine_env_note(p, buf, len);
  return 0;
}
