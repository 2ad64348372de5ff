/*
 * The CUDA driver half of the double (test/double/dbl.h): the module and
 * launch calls of the backend's gap kernel (measure/gpu_gap.h). It cannot
 * run PTX: it accepts an image only as a PTX text the driver would take
 * (".version", ".target", a ".entry"), finds entries by name as
 * cuModuleGetFunction does, and runs a launched entry as the one kernel it
 * knows, a spin on %globaltimer for its first u64 parameter in ns; any
 * other kernel is refused at load, so a changed gap kernel fails here
 * until the double learns it. Error codes are CUDA's (cuda.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbl.h"

#define CU_OK 0
#define CU_ERR_INVALID_VALUE 1
#define CU_ERR_OUT_OF_MEMORY 2
#define CU_ERR_INVALID_IMAGE 200
#define CU_ERR_INVALID_PTX 218
#define CU_ERR_INVALID_HANDLE 400
#define CU_ERR_NOT_FOUND 500

struct pt_cu_function_s {
  struct pt_cu_module_s *m;
};
/* Functions belong to their module and go with it, as in CUDA. */
#define MAX_FN 8
struct pt_cu_module_s {
  char *ptx;
  struct pt_cu_function_s fn[MAX_FN];
  int nfn;
};

DBL_API int cuGetErrorString(int r, const char **s) {
  switch (r) {
  case CU_OK: *s = "no error"; return CU_OK;
  case CU_ERR_INVALID_VALUE: *s = "invalid argument"; return CU_OK;
  case CU_ERR_OUT_OF_MEMORY: *s = "out of memory"; return CU_OK;
  case CU_ERR_INVALID_IMAGE: *s = "device kernel image is invalid"; return CU_OK;
  case CU_ERR_INVALID_PTX: *s = "a PTX JIT compilation failed"; return CU_OK;
  case CU_ERR_INVALID_HANDLE: *s = "invalid resource handle"; return CU_OK;
  case CU_ERR_NOT_FOUND: *s = "named symbol not found"; return CU_OK;
  default: *s = NULL; return CU_ERR_INVALID_VALUE;
  }
}

DBL_API int cuModuleLoadData(struct pt_cu_module_s **m, const void *image) {
  const char *t = image;
  if (!m || !t) return CU_ERR_INVALID_VALUE;
  if (strncmp(t, ".version", 8) || !strstr(t, ".target")) return CU_ERR_INVALID_IMAGE;
  if (!strstr(t, ".entry") || !strstr(t, "%globaltimer") || !strstr(t, "ld.param.u64")) return CU_ERR_INVALID_PTX;
  *m = calloc(1, sizeof **m);
  if (!*m || !((*m)->ptx = strdup(t))) {
    free(*m);
    return CU_ERR_OUT_OF_MEMORY;
  }
  return CU_OK;
}

DBL_API int cuModuleGetFunction(struct pt_cu_function_s **f, struct pt_cu_module_s *m, const char *name) {
  char want[256];
  if (!f || !m || !name) return CU_ERR_INVALID_VALUE;
  snprintf(want, sizeof want, ".entry %s(", name);
  if (!strstr(m->ptx, want)) return CU_ERR_NOT_FOUND;
  if (m->nfn == MAX_FN) return CU_ERR_OUT_OF_MEMORY;
  *f = &m->fn[m->nfn++];
  (*f)->m = m;
  return CU_OK;
}

DBL_API int cuModuleUnload(struct pt_cu_module_s *m) {
  if (!m) return CU_ERR_INVALID_HANDLE;
  free(m->ptx);
  free(m);
  return CU_OK;
}

DBL_API int cuLaunchKernel(struct pt_cu_function_s *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shmem, struct pt_cu_stream_s *s, void **params,
                           void **extra) {
  if (!f) return CU_ERR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024 || shmem > 48 * 1024 ||
      !params || !params[0] || extra || !s)
    return CU_ERR_INVALID_VALUE;
  unsigned long long ns;
  memcpy(&ns, params[0], sizeof ns);
  struct dbl_op op = {.kind = DBL_OP_SPIN, .bytes = (size_t)ns};
  if (!s->capturing) *dbl_hclk() += dbl_env()->enqueue_us; /* a launch costs host time; capture does not */
  return dbl_issue(s, &op, PT_MODE_EAGER);
}
