/* The compute-gap kernel (measure/gpu_gap.h). */
#include <stdio.h>
#include <string.h>

#include "gpu_gap.h"

const char pt_gap_entry[] = "pt_gap_spin";

/* Each thread spins on %globaltimer (nanoseconds, PTX ISA "Special
 * Registers") until pt_gap_ns have passed since it started: wall time, so
 * the gap does not depend on the clock rate. PTX 7.0 / sm_52: CUDA 11.0
 * and any later driver JIT it for newer GPUs (checked with CUDA 13's
 * ptxas for sm_75, sm_90 and sm_120). */
const char pt_gap_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry pt_gap_spin(.param .u64 pt_gap_ns)\n"
    "{\n"
    "  .reg .pred %p;\n"
    "  .reg .u64 %t0, %t, %n;\n"
    "  ld.param.u64 %n, [pt_gap_ns];\n"
    "  mov.u64 %t0, %globaltimer;\n"
    "$Lspin:\n"
    "  mov.u64 %t, %globaltimer;\n"
    "  sub.u64 %t, %t, %t0;\n"
    "  setp.lt.u64 %p, %t, %n;\n"
    "  @%p bra $Lspin;\n"
    "  ret;\n"
    "}\n";

/* Threads per block: enough warps per SM that its schedulers are all busy,
 * as a GEMM's are. */
#define GAP_THREADS 256

static const char *drv_text(const struct pt_gpu_api *a, pt_cu_res r) {
  const char *s = NULL;
  if (!a->DrvErrorString || a->DrvErrorString(r, &s) || !s) return "unknown CUDA driver error";
  return s;
}

int pt_gap_open(struct pt_gap *g, const struct pt_gpu_api *a, int dev, double gap_us, char *why, size_t len) {
  int sms = 0;
  pt_cu_res r;
  memset(g, 0, sizeof *g);
  if (gap_us <= 0) return 0;
  if (!a->LaunchKernel) {
    snprintf(why, len, "--gap needs the CUDA driver (libcuda.so.1), which could not be loaded; give --gap 0 to time "
                       "the collectives back to back");
    return -1;
  }
  if (a->DeviceGetAttribute(&sms, PT_CU_ATTR_SM_COUNT, dev) || sms < 1) sms = 1;
  if ((r = a->ModuleLoadData(&g->mod, pt_gap_ptx))) {
    snprintf(why, len, "cannot load the gap kernel (cuModuleLoadData: %s); give --gap 0", drv_text(a, r));
    g->mod = NULL;
    return -1;
  }
  if ((r = a->ModuleGetFunction(&g->fn, g->mod, pt_gap_entry))) {
    snprintf(why, len, "cannot find the gap kernel (cuModuleGetFunction: %s); give --gap 0", drv_text(a, r));
    pt_gap_close(g, a);
    return -1;
  }
  g->blocks = (unsigned)sms;
  g->ns = (unsigned long long)(gap_us * 1000.0 + 0.5);
  return 0;
}

pt_cu_res pt_gap_launch(const struct pt_gap *g, const struct pt_gpu_api *a, pt_cu_stream s, const char **what) {
  unsigned long long ns = g->ns;
  void *params[] = {&ns};
  pt_cu_res r = a->LaunchKernel(g->fn, g->blocks, 1, 1, GAP_THREADS, 1, 1, 0, s, params, NULL);
  if (r) *what = drv_text(a, r);
  return r;
}

void pt_gap_close(struct pt_gap *g, const struct pt_gpu_api *a) {
  if (g->mod && a->ModuleUnload) a->ModuleUnload(g->mod);
  memset(g, 0, sizeof *g);
}
