/*
 * A TEST DOUBLE of NCCL's library as the tuner plugin sees it at init: the
 * two things the plugin's version lookup touches (tuner/ncclver.c), NCCL's
 * logger, which NCCL passes to the tuner's init, and ncclGetVersion. The
 * test loads it RTLD_LOCAL, as Python's ctypes loads NCCL in vLLM's PyNCCL,
 * so dlsym(RTLD_DEFAULT, "ncclGetVersion") cannot see it.
 *
 * PTDOUBLE_NCCL_VERSION (read at each call) is the NCCL_VERSION_CODE it
 * reports, 23007 (2.30.7) when unset; "fail" makes ncclGetVersion return
 * ncclInvalidArgument as NCCL does for a NULL pointer. The logger formats
 * each message and hands it to the sink the test installed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*sink_fn)(int level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...);
static sink_fn sink;

EXPORT void ncclDoubleSetSink(sink_fn fn) { sink = fn; }

EXPORT int ncclGetVersion(int *version) {
  const char *v = getenv("PTDOUBLE_NCCL_VERSION");
  if (!version || (v && !strcmp(v, "fail"))) return 4; /* ncclInvalidArgument */
  *version = v && v[0] ? atoi(v) : 23007;
  return 0;
}

EXPORT void ncclDebugLog(int level, unsigned long flags, const char *file, int line,
                         const char *fmt, ...) {
  char buf[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (sink) sink(level, flags, file, line, "%s", buf);
}
