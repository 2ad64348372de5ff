/*
 * The NCCL version of the process, found at init (include/pcie/ncclver.h).
 *
 * dlsym(RTLD_DEFAULT, "ncclGetVersion") misses an NCCL loaded RTLD_LOCAL
 * (Python's ctypes, vLLM's PyNCCL). The logger NCCL hands to init is its
 * own ncclDebugLog, so dladdr() on it names NCCL's library (or the program
 * NCCL is linked into); dlopen of that name with RTLD_NOLOAD returns the
 * loaded copy without loading anything, and dlsym on that handle finds
 * ncclGetVersion whatever the RTLD_ flags it was loaded with. It is taken
 * only from that same object: one found elsewhere says "unknown".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "pcie/ncclver.h"

typedef int (*get_version_fn)(int *);

/* The NCCL releases that load each tuner ABI first (src/plugin/tuner.cc
 * tries the newest symbol it knows: v3 from 2.22.3, v4 from 2.24.3, v5 from
 * 2.28.3, v6 from 2.30.3; v7 is NCCL 2.32, include/nccl/tuner_v7.h). 2.19
 * and 2.20 know only v1 (ncclTunerPlugin_v1; aws-ofi-nccl's release notes
 * for 2.19/2.20 say the same), which this plugin does not export; v2 is
 * 2.21's. The one table of this fact: doctor reads it through
 * pt_nccl_tuner_abi. */
static const struct {
  int abi, lo, hi; /* minor versions of 2.x */
} abi_range[] = {{1, 19, 20}, {2, 21, 21}, {3, 22, 23}, {4, 24, 27}, {5, 28, 29}, {6, 30, 31}, {7, 32, 99}};

int pt_nccl_tuner_abi(int minor) {
  for (size_t i = 0; i < sizeof abi_range / sizeof abi_range[0]; i++)
    if (minor >= abi_range[i].lo && minor <= abi_range[i].hi) return abi_range[i].abi;
  return 0;
}

void pt_nccl_version_range(int abi, int *lo, int *hi) {
  *lo = 0;
  *hi = 99;
  for (size_t i = 0; i < sizeof abi_range / sizeof abi_range[0]; i++)
    if (abi_range[i].abi == abi) {
      *lo = abi_range[i].lo;
      *hi = abi_range[i].hi;
    }
}

int pt_nccl_version(const void *nccl_fn, int abi, struct pt_nccl_ver *out) {
  Dl_info info;
  memset(out, 0, sizeof *out);
  pt_nccl_version_range(abi, &out->minor_lo, &out->minor_hi);
  if (!abi)
    snprintf(out->how, sizeof out->how, "unknown");
  else if (out->minor_lo == out->minor_hi)
    snprintf(out->how, sizeof out->how, "unknown, tuner ABI v%d implies NCCL 2.%d", abi,
             out->minor_lo);
  else if (out->minor_hi == 99)
    snprintf(out->how, sizeof out->how, "unknown, tuner ABI v%d implies NCCL 2.%d or later", abi,
             out->minor_lo);
  else
    snprintf(out->how, sizeof out->how, "unknown, tuner ABI v%d implies NCCL 2.%d-2.%d", abi,
             out->minor_lo, out->minor_hi);
  if (!nccl_fn || !dladdr(nccl_fn, &info) || !info.dli_fname) return 0;
  void *h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  /* The program itself (NCCL linked in statically) is not found by its
   * name; its handle is dlopen(NULL). Only then: a global search from
   * another library's logger could find some other NCCL. */
  Dl_info prog;
  if (!h && dladdr((const void *)getauxval(AT_PHDR), &prog) && prog.dli_fbase == info.dli_fbase)
    h = dlopen(NULL, RTLD_LAZY);
  if (!h) return 0;
  get_version_fn get = (get_version_fn)(uintptr_t)dlsym(h, "ncclGetVersion");
  /* Only the object that holds the logger says which NCCL logs: dlsym on
   * the program's handle searches every global library too, and on a
   * library's handle its dependencies, where an unrelated ncclGetVersion
   * may be (a second NCCL loaded RTLD_GLOBAL). Anything else: unknown. */
  Dl_info found;
  if (get && (!dladdr((const void *)(uintptr_t)get, &found) || found.dli_fbase != info.dli_fbase))
    get = NULL;
  int code = 0;
  if (get && get(&code) == 0 && code > 0) {
    /* NCCL_VERSION_CODE: 2.x.y is 2*10000 + x*100 + y since 2.9, and
     * 2*1000 + x*100 + y before (nccl.h.in). */
    out->code = code;
    if (code >= 10000) {
      out->major = code / 10000;
      out->minor = code / 100 % 100;
      out->patch = code % 100;
    } else {
      out->major = code / 1000;
      out->minor = code / 100 % 10;
      out->patch = code % 100;
    }
    out->minor_lo = out->minor_hi = out->minor;
    snprintf(out->how, sizeof out->how, "%d.%d.%d", out->major, out->minor, out->patch);
  }
  dlclose(h); /* RTLD_NOLOAD took a reference */
  return out->code ? 1 : 0;
}

int pt_nccl_version_parse(const char *s, int *major, int *minor) {
  int a, b, n = 0;
  if (!s || sscanf(s, "%d.%d%n", &a, &b, &n) != 2 || a < 1 || b < 0) return -1;
  *major = a;
  *minor = b;
  return 0;
}
