/*
 * The GPU backend of a pcie-tune built without CUDA/NCCL (mk/gpu.mk found
 * none): says how to get one. Compiled empty when the real one is built.
 */
#ifndef PT_HAVE_GPU
#include <stdio.h>

#include "gpu_nccl.h"

int pt_gpu_built(void) { return 0; }

int pt_gpu_open(struct pt_backend *b, const struct pt_gpu_opts *o, char **prov,
                struct pt_error_rec *err) {
  (void)b;
  (void)o;
  *prov = NULL;
  snprintf(err->file, sizeof err->file, "pcie-tune");
  err->line = 0;
  snprintf(err->msg, sizeof err->msg,
           "the nccl backend is not built in: this pcie-tune was built without the CUDA toolkit "
           "and NCCL; install both (cuda_runtime.h, libcudart_static.a, nccl.h, libnccl.so), "
           "or point CUDA_HOME (and NCCL_HOME) at them, then rebuild with make");
  return PT_ENOENT;
}
#endif
