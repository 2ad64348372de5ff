/*
 * Finding NCCL libraries for the profiler (cli/nccl_pick.h). Runs python3
 * only to read its sys.path (no import), so it is quick and works whatever
 * torch version is installed.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_pick.h"

typedef int (*get_version_fn)(int *);

int cli_nccl_at(const char *path, struct cli_nccl *out) {
  Dl_info info;
  int code = 0, ok = 0;
  void *h = dlopen(path ? path : "libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return 0;
  void *sym = dlsym(h, "ncclGetVersion");
  get_version_fn get = (get_version_fn)(uintptr_t)sym;
  if (get && get(&code) == 0 && code > 0 && dladdr(sym, &info) && info.dli_fname) {
    /* NCCL_VERSION_CODE: X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before. */
    int big = code >= 10000;
    out->major = big ? code / 10000 : code / 1000;
    out->minor = big ? code / 100 % 100 : code / 100 % 10;
    out->patch = code % 100;
    snprintf(out->path, sizeof out->path, "%s", info.dli_fname);
    ok = 1;
  }
  dlclose(h);
  return ok;
}

static int exists(const char *dir, const char *rel) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  return access(p, F_OK) == 0;
}

int cli_engine_nccl(struct cli_nccl *out) {
  const char *so = getenv("VLLM_NCCL_SO_PATH");
  memset(out, 0, sizeof *out);
  if (so && so[0]) {
    snprintf(out->from, sizeof out->from, "VLLM_NCCL_SO_PATH");
    return cli_nccl_at(so, out);
  }
  /* PCIE_TUNE_PYTHON names the engine's interpreter (a venv's bin/python)
   * without activating it; empty: no lookup. */
  const char *python = getenv("PCIE_TUNE_PYTHON");
  if (!python) python = "python3";
  if (!python[0] || strchr(python, '\'')) return 0;
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "'%.1024s' -c 'import sys; print(chr(10).join(p for p in sys.path if p))' 2>/dev/null",
           python);
  FILE *py = popen(cmd, "r");
  if (!py) return 0;
  char line[1024], lib[1100] = "", torch_at[1024] = "";
  while (fgets(line, sizeof line, py)) {
    line[strcspn(line, "\n")] = 0;
    if (!torch_at[0] && exists(line, "torch/__init__.py")) snprintf(torch_at, sizeof torch_at, "%s", line);
    if (!lib[0] && exists(line, "nvidia/nccl/lib/libnccl.so.2"))
      snprintf(lib, sizeof lib, "%.1000s/nvidia/nccl/lib/libnccl.so.2", line);
  }
  pclose(py);
  if (!torch_at[0] || !lib[0]) return 0;
  snprintf(out->from, sizeof out->from, "torch's wheel, the nvidia-nccl wheel in %.100s", torch_at);
  return cli_nccl_at(lib, out);
}
