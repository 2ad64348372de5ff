/* dlopen of NCCL and the CUDA runtime for the GPU backend (measure/gpu_api.h). */
#include <dlfcn.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_api.h"

/* A libnccl found at build time (mk/gpu.mk), tried after the loader's path. */
#ifndef PT_NCCL_LIB
#define PT_NCCL_LIB NULL
#endif

void pt_cuda_version_text(int v, char *out, size_t len) {
  if (v <= 0) snprintf(out, len, "none");
  else snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
}

/* The file a symbol really came from, whatever name dlopen was given. */
static void where(void *fn, const char *fallback, char *out) {
  Dl_info di;
  char tmp[PATH_MAX];
  const char *name = dladdr(fn, &di) && di.dli_fname ? di.dli_fname : fallback;
  if (!realpath(name, tmp)) snprintf(tmp, sizeof tmp, "%s", name);
  memcpy(out, tmp, PATH_MAX);
}

struct symtab {
  const char *name;
  size_t off;
  int required;
};

#define C(f) {"cuda" #f, offsetof(struct pt_gpu_api, f), 1}
static const struct symtab cuda_syms[] = {
    C(GetErrorString), C(DriverGetVersion), C(RuntimeGetVersion), C(GetDeviceCount), C(SetDevice),
    C(DeviceGetAttribute), C(DeviceGetPCIBusId), C(DeviceCanAccessPeer), C(Malloc), C(Free),
    C(Memcpy), C(MemcpyAsync), C(MemsetAsync), C(StreamCreateWithFlags), C(StreamDestroy), C(StreamSynchronize),
    C(EventCreate), C(EventDestroy), C(EventRecord), C(EventSynchronize), C(EventElapsedTime),
    C(StreamBeginCapture), C(StreamEndCapture), C(GraphInstantiateWithFlags), C(GraphUpload),
    C(GraphLaunch), C(GraphDestroy), C(GraphExecDestroy)};
#undef C
#define N(f, req) {"nccl" #f, offsetof(struct pt_gpu_api, f), req}
static const struct symtab nccl_syms[] = {
    N(GetVersion, 1),   N(GetUniqueId, 1), N(CommInitRank, 1),      N(CommDestroy, 1),
    N(GroupStart, 1),   N(GroupEnd, 1),    N(GroupSimulateEnd, 0),  N(AllReduce, 1),
    N(MemAlloc, 0),     N(MemFree, 0),
    {"ncclGetErrorString", offsetof(struct pt_gpu_api, NcclErrorString), 1},
    {"ncclGetLastError", offsetof(struct pt_gpu_api, NcclLastError), 1}};
#undef N
#define D(f) {"cu" #f, offsetof(struct pt_gpu_api, f), 1}
static const struct symtab drv_syms[] = {D(ModuleLoadData), D(ModuleGetFunction), D(ModuleUnload), D(LaunchKernel),
                                         {"cuGetErrorString", offsetof(struct pt_gpu_api, DrvErrorString), 1}};
#undef D

/* dlsym returns void *; C11 has no cast from it to a function pointer, so
 * the address is copied into the pointer object instead. */
static int resolve(void *lib, struct pt_gpu_api *a, const struct symtab *t, size_t n, const char *file,
                   char *why, size_t whylen) {
  for (size_t i = 0; i < n; i++) {
    void *p = dlsym(lib, t[i].name);
    if (!p && t[i].required) {
      snprintf(why, whylen, "%s lacks %s", file, t[i].name);
      return -1;
    }
    memcpy((char *)a + t[i].off, &p, sizeof p);
  }
  return 0;
}

static void *open_first(const char *pattern) {
  glob_t g;
  void *h = NULL;
  if (glob(pattern, 0, NULL, &g) == 0)
    for (size_t i = g.gl_pathc; i-- > 0 && !h;) h = dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_LOCAL);
  globfree(&g);
  return h;
}

static int load_cudart(struct pt_gpu_api *a, const char *given, char *why, size_t whylen) {
  char dir[PATH_MAX], pat[PATH_MAX + 64];
  static const char *const sys[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  if (given) {
    if (!(a->cudart = dlopen(given, RTLD_NOW | RTLD_LOCAL))) {
      snprintf(why, whylen, "cannot load the CUDA runtime --cudart-lib %s (%s)", given, dlerror());
      return -1;
    }
  } else {
    snprintf(dir, sizeof dir, "%s", a->nccl_path);
    char *d = dirname(dir);
    snprintf(pat, sizeof pat, "%s/libcudart.so*", d);
    a->cudart = open_first(pat);
    if (!a->cudart) {
      snprintf(pat, sizeof pat, "%s/../../cuda_runtime/lib/libcudart.so*", d);
      a->cudart = open_first(pat);
    }
    if (!a->cudart && dlsym(a->nccl, "cudaGetDeviceCount")) a->cudart = dlopen(a->nccl_path, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !a->cudart && i < sizeof sys / sizeof sys[0]; i++)
      a->cudart = dlopen(sys[i], RTLD_NOW | RTLD_LOCAL);
    if (!a->cudart) {
      snprintf(why, whylen, "cannot find the CUDA runtime (libcudart.so) beside %s or on the loader's path; "
                            "give --cudart-lib PATH (e.g. the one in the nvidia-cuda-runtime wheel)", a->nccl_path);
      return -1;
    }
  }
  if (resolve(a->cudart, a, cuda_syms, sizeof cuda_syms / sizeof cuda_syms[0], "the CUDA runtime", why, whylen))
    return -1;
  /* cudaDeviceProp changed size in CUDA 12, which exports the new one as
   * _v2; only the name (the first member) is read. */
  void *p = dlsym(a->cudart, "cudaGetDeviceProperties_v2");
  if (!p) p = dlsym(a->cudart, "cudaGetDeviceProperties");
  memcpy(&a->GetDeviceProperties, &p, sizeof p);
  if (!p) {
    snprintf(why, whylen, "the CUDA runtime lacks cudaGetDeviceProperties");
    return -1;
  }
  where(*(void **)&a->GetDeviceCount, "libcudart", a->cudart_path);
  return 0;
}

/* The driver's few entry points the gap kernel needs. A missing driver is
 * not an error here: --gap 0 needs none, and the rank says so otherwise. */
static void load_driver(struct pt_gpu_api *a) {
  char why[256];
  size_t n = sizeof drv_syms / sizeof drv_syms[0];
  if (dlsym(a->cudart, "cuLaunchKernel") && !resolve(a->cudart, a, drv_syms, n, "", why, sizeof why)) return;
  if (!(a->driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) return;
  if (resolve(a->driver, a, drv_syms, n, "", why, sizeof why)) {
    for (size_t i = 0; i < n; i++) memset((char *)a + drv_syms[i].off, 0, sizeof(void *));
    dlclose(a->driver);
    a->driver = NULL;
  }
}

int pt_gpu_api_load(struct pt_gpu_api *a, const char *nccl_lib, const char *cudart_lib, char *why,
                    size_t whylen) {
  memset(a, 0, sizeof *a);
  const char *tries[] = {nccl_lib ? nccl_lib : "libnccl.so.2", nccl_lib ? NULL : PT_NCCL_LIB};
  for (size_t i = 0; i < 2 && !a->nccl && tries[i]; i++) a->nccl = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
  if (!a->nccl) {
    /* Given a path, the fix is that path, not the option the user already used. */
    if (nccl_lib)
      snprintf(why, whylen, "cannot load NCCL from --nccl-lib %s (%s); check the path (the libnccl.so.2 your "
               "engine loads, e.g. .../site-packages/nvidia/nccl/lib/libnccl.so.2)", nccl_lib, dlerror());
    else
      snprintf(why, whylen, "cannot load NCCL (%s); give --nccl-lib PATH or set LD_LIBRARY_PATH", dlerror());
    return -1;
  }
  if (resolve(a->nccl, a, nccl_syms, sizeof nccl_syms / sizeof nccl_syms[0], "the NCCL library", why, whylen))
    goto fail;
  where(*(void **)&a->GetVersion, tries[0], a->nccl_path);
  if (load_cudart(a, cudart_lib, why, whylen)) goto fail;
  load_driver(a);
  return 0;
fail:
  pt_gpu_api_unload(a);
  return -1;
}

void pt_gpu_api_unload(struct pt_gpu_api *a) {
  if (a->driver) dlclose(a->driver);
  if (a->cudart) dlclose(a->cudart);
  if (a->nccl) dlclose(a->nccl);
  a->driver = a->cudart = a->nccl = NULL;
}
