/*
 * Which NCCL `pcie-tune profile --backend nccl` measures, and which one the
 * job's engine loads (docs/gpu.md, "Libraries"): a profile is refused at
 * the job's first init when the two differ in minor version, after a sweep
 * that can take hours, so the profiler finds out before it starts.
 */
#ifndef PCIE_CLI_NCCL_PICK_H
#define PCIE_CLI_NCCL_PICK_H

#include <stddef.h>

struct cli_nccl {
  char path[1024]; /* the file loaded, as the loader resolved it */
  int major, minor, patch;
  char from[160];  /* how it was found: "VLLM_NCCL_SO_PATH", "torch's wheel (.../site-packages)" */
};

/* The NCCL an engine (vLLM, SGLang) loads: the file VLLM_NCCL_SO_PATH names
 * (vLLM's find_nccl_library), else the libnccl.so.2 of the nvidia-nccl
 * wheel in the Python environment that has torch (PCIE_TUNE_PYTHON, else
 * python3 on PATH; empty: none looked up; the
 * first sys.path entry holding nvidia/nccl/lib, as torch/__init__.py's
 * _preload_cuda_deps searches; torch's own libraries point there too).
 * Returns 1 with *out filled and the version read, 0 when none is found. */
int cli_engine_nccl(struct cli_nccl *out);

/* The NCCL at path (NULL: the libnccl.so.2 the loader finds), loaded here
 * to read its path and version. Returns 1, or 0 when it cannot be loaded
 * or has no ncclGetVersion. */
int cli_nccl_at(const char *path, struct cli_nccl *out);

#endif
