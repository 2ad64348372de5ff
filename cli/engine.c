/*
 * What each engine sets (cli/engine.h). Facts from the engines' code:
 *
 * vLLM, vllm/env_override.py (run at `import vllm`, so in every worker):
 * NCCL_CUMEM_ENABLE=0 unless the variable is already set (older releases:
 * unconditionally), and unless /dev/nvidia-caps-imex-channels exists
 * (multi-node NVLink, which needs cuMem). With it NCCL's ncclMemAlloc and
 * its own buffers fall back to cudaMalloc and peers map them with legacy
 * CUDA IPC instead of cuMem handles (NCCL src/allocator.cc, src/init.cc).
 *
 * SGLang, python/sglang/srt/entrypoints/engine.py, _set_envs_and_config
 * (run by the launcher before the workers start): NCCL_CUMEM_ENABLE to 0
 * (1 only with --enable-symm-mem) and NCCL_NVLS_ENABLE to 0 (1 with
 * --enable-nccl-nvls or --enable-symm-mem), each only where not already
 * set. NVLS needs NVSwitch; on PCIe it changes nothing NCCL runs, but the
 * value is part of the environment the profile records.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

struct setting {
  const char *engine, *name, *value;
};

static const struct setting settings[] = {
    {"vllm", "NCCL_CUMEM_ENABLE", "0"},
    {"sglang", "NCCL_CUMEM_ENABLE", "0"},
    {"sglang", "NCCL_NVLS_ENABLE", "0"},
};

const char *cli_engine_name(int i) {
  static const char *const names[] = {"none", "vllm", "sglang"};
  return i >= 0 && i < 3 ? names[i] : "none";
}

void cli_engine_apply(const char *engine, char *msg, size_t len) {
  size_t n = 0;
  msg[0] = 0;
  if (!engine || !strcmp(engine, "none")) return;
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
    const struct setting *s = &settings[i];
    if (strcmp(s->engine, engine)) continue;
    const char *was = getenv(s->name);
    int imex = !strcmp(engine, "vllm") && access("/dev/nvidia-caps-imex-channels", F_OK) == 0;
    const char *what;
    char buf[160];
    if (was) {
      snprintf(buf, sizeof buf, "%s=%s kept (set here; %s leaves it too)", s->name, was, engine);
      what = buf;
    } else if (imex) {
      snprintf(buf, sizeof buf, "%s left unset (/dev/nvidia-caps-imex-channels exists: vLLM keeps cuMem "
                                "for multi-node NVLink)", s->name);
      what = buf;
    } else {
      setenv(s->name, s->value, 1);
      snprintf(buf, sizeof buf, "%s=%s", s->name, s->value);
      what = buf;
    }
    n += (size_t)snprintf(msg + n, n < len ? len - n : 0, "%s%s", n ? ", " : "", what);
  }
}

/* A setting of an engine that the profile's measurement did not have
 * (and this shell leaves to the engine). */
static int differs(const struct pt_profile *p, const struct setting *s) {
  const char *was = pt_profile_env(p, s->name);
  return !getenv(s->name) && !(was && !strcmp(was, s->value));
}

void cli_engine_env_note(const struct pt_profile *p, char *buf, size_t len) {
  static const char *const engines[][2] = {{"vllm", "vLLM"}, {"sglang", "SGLang"}};
  char said[256] = "";
  if (!p->env_recorded) return;
  for (size_t e = 0; e < 2; e++) {
    char vars[128] = "";
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
      if (!strcmp(settings[i].engine, engines[e][0]) && differs(p, &settings[i]))
        snprintf(vars + strlen(vars), sizeof vars - strlen(vars), "%s%s=%s", vars[0] ? " " : "",
                 settings[i].name, settings[i].value);
    if (vars[0])
      snprintf(said + strlen(said), sizeof said - strlen(said), "%s%s %s", said[0] ? ", " : "",
               engines[e][1], vars);
  }
  if (!said[0]) return;
  size_t at = strlen(buf);
  snprintf(buf + at, len > at ? len - at : 0,
           "; engines set what this measurement did not have (%s): in their jobs the plugin warns that "
           "it differs and still decides; for such a job, measure under the same (pcie-tune profile "
           "--engine, or nccl-tests with those variables set)", said);
}
