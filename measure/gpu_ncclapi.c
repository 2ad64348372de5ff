/* dlopen of libnccl for the GPU backend (measure/gpu_ncclapi.h). */
#ifdef PT_HAVE_GPU
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_ncclapi.h"

/* The libnccl mk/gpu.mk found at build time: the fallback when the loader
 * finds none. */
#ifndef PT_NCCL_LIB
#define PT_NCCL_LIB NULL
#endif

/* dlsym returns void *; C11 has no cast from it to a function pointer, so
 * the address is copied into the pointer object instead. */
static int sym(void *lib, const char *name, void *fnptr, size_t size, int required, char *why,
               size_t whylen) {
  void *p = dlsym(lib, name);
  if (!p && required) {
    snprintf(why, whylen, "the NCCL library lacks %s", name);
    return -1;
  }
  memcpy(fnptr, &p, size);
  return 0;
}

#define SYM(field, required) \
  sym(a->lib, "nccl" #field, &a->field, sizeof a->field, required, why, whylen)

int pt_nccl_api_load(struct pt_nccl_api *a, const char *path, char *why, size_t whylen) {
  memset(a, 0, sizeof *a);
  const char *tries[] = {path ? path : "libnccl.so.2", path ? NULL : PT_NCCL_LIB};
  for (size_t i = 0; i < 2 && !a->lib && tries[i]; i++) {
    a->lib = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
    snprintf(a->path, sizeof a->path, "%s", tries[i]);
  }
  if (!a->lib) {
    snprintf(why, whylen, "cannot load NCCL (%s); give --nccl-lib PATH or set LD_LIBRARY_PATH",
             dlerror());
    return -1;
  }
  if (SYM(GetVersion, 1) || SYM(CommInitAll, 1) || SYM(CommDestroy, 1) || SYM(GroupStart, 1) ||
      SYM(GroupEnd, 1) || SYM(GroupSimulateEnd, 0) || SYM(AllReduce, 1) ||
      SYM(GetErrorString, 1) || SYM(GetLastError, 1)) {
    pt_nccl_api_unload(a);
    return -1;
  }
  return 0;
}

void pt_nccl_api_unload(struct pt_nccl_api *a) {
  if (a->lib) dlclose(a->lib);
  a->lib = NULL;
}
#endif
