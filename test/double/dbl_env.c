/*
 * The double's configuration, read once from the environment, its faults,
 * and its NCCL-like log (test/double/README.md lists every variable).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dbl.h"

#define MAX_FAULTS 16

struct fault {
  int kind, algo, proto, channels; /* -1 / 0 = any */
  size_t lo, hi;
  unsigned nth;   /* corrupt#N: only the N-th execution; 0 = every one */
  int once;       /* hangonce: only until PTDOUBLE_STATE holds its marker */
  double slow_s;
};

static struct dbl_env env;
static struct fault faults[MAX_FAULTS];
static size_t nfaults;
static int env_ok = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static FILE *log_file;
static int log_info;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static double num(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? atof(v) : dflt;
}

/* "KIND:ALGO/PROTO/CH@MIN[-MAX]" with KIND hang, hangonce, crash, corrupt,
 * corrupt#N, tear or slow=SECONDS; ALGO/PROTO/CH may be '*'. */
static int parse_fault(char *t, struct fault *f) {
  char *colon = strchr(t, ':'), *at;
  if (!colon) return -1;
  *colon = 0;
  memset(f, 0, sizeof *f);
  f->algo = f->proto = -1;
  f->hi = (size_t)-1;
  if (!strcmp(t, "hang")) f->kind = DBL_F_HANG;
  else if (!strcmp(t, "hangonce")) f->kind = DBL_F_HANG, f->once = 1;
  else if (!strcmp(t, "crash")) f->kind = DBL_F_CRASH;
  else if (!strcmp(t, "crashonce")) f->kind = DBL_F_CRASH, f->once = 1;
  else if (!strcmp(t, "tear")) f->kind = DBL_F_TEAR;
  else if (!strncmp(t, "corrupt", 7)) {
    f->kind = DBL_F_CORRUPT;
    if (t[7] == '#') f->nth = (unsigned)atoi(t + 8);
  } else if (!strncmp(t, "slow=", 5)) f->kind = DBL_F_SLOW, f->slow_s = atof(t + 5);
  else return -1;
  char *cand = colon + 1;
  if ((at = strchr(cand, '@'))) {
    *at++ = 0;
    char *dash = strchr(at, '-');
    f->lo = strtoull(at, NULL, 10);
    if (dash) f->hi = strtoull(dash + 1, NULL, 10);
  }
  char a[16] = "", p[16] = "", c[16] = "";
  if (sscanf(cand, "%15[^/]/%15[^/]/%15s", a, p, c) != 3) return -1;
  f->algo = !strcmp(a, "*") ? -1 : pt_algo_parse(a);
  f->proto = !strcmp(p, "*") ? -1 : pt_proto_parse(p);
  f->channels = !strcmp(c, "*") ? 0 : atoi(c);
  return (!strcmp(a, "*") || f->algo >= 0) && (!strcmp(p, "*") || f->proto >= 0) ? 0 : -1;
}

static void load(void) {
  struct pt_error_rec e;
  const char *box = getenv("PTDOUBLE_BOX");
  if (pt_box_resolve(&env.box, box && *box ? box : "gen5-8x-p2p", &e)) {
    fprintf(stderr, "nccl double: PTDOUBLE_BOX=%s: %s\n", box ? box : "", e.msg);
    env_ok = 0;
    return;
  }
  /* NCCL_BUFFSIZE as NCCL reads it (misc/param.cc ncclLoadParam: strtoll
   * base 0, whatever follows the digits ignored, so "1M" is 1 byte), in
   * the box's truth (sim/ring_chunks.c). A buffer too small for a step
   * fails here, where NCCL's steps would be empty. */
  const char *bs = getenv("NCCL_BUFFSIZE");
  if (bs && *bs) {
    long long v = strtoll(bs, NULL, 0);
    if (v < 65536) {
      fprintf(stderr, "nccl double: NCCL_BUFFSIZE=%s reads as %lld bytes, too small for NCCL's steps\n", bs, v);
      env_ok = 0;
      return;
    }
    env.box.nccl_buffsize = (uint64_t)v;
  }
  env.ndev = (int)num("PTDOUBLE_DEVICES", env.box.nranks);
  if (env.ndev > DBL_MAX_DEV) env.ndev = DBL_MAX_DEV;
  env.driver = (int)num("PTDOUBLE_DRIVER", 13000);
  env.runtime = (int)num("PTDOUBLE_RUNTIME", 13000);
  /* NCCL's own count, moved into [NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS]
   * as NCCL does when the user sets them. */
  int lo = (int)num("NCCL_MIN_NCHANNELS", 0), hi = (int)num("NCCL_MAX_NCHANNELS", 0);
  /* A box derived from hardware builds the communicator the variables ask
   * for (sim/nccl_derive.c), so its truth runs the extra channels too, as
   * `profile --backend sim` with the same variable measures. */
  if (env.box.has_hw && (lo > 0 || hi > 0)) {
    env.box.hw.min_nchannels = lo > 0 ? lo : 0;
    env.box.hw.max_nchannels = hi > 0 ? hi : 0;
    if (pt_box_derive(&env.box, &e)) {
      fprintf(stderr, "nccl double: NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS: %s\n", e.msg);
      env_ok = 0;
      return;
    }
  }
  env.comm_channels = env.box.nccl.comm_channels;
  if (lo > env.comm_channels) env.comm_channels = lo;
  if (hi > 0 && hi < env.comm_channels) env.comm_channels = hi;
  if (env.comm_channels > 32) env.comm_channels = 32;
  env.graph_launch_us = num("PTDOUBLE_GRAPH_LAUNCH_US", 2.0);
  env.enqueue_us = num("PTDOUBLE_ENQUEUE_US", 4.0);
  env.upload_us = num("PTDOUBLE_UPLOAD_US", 50.0);
  /* About what a D2H copy from pageable memory plus an exact check of
   * every element costs a host core (~4 GB/s); ranks 25 % apart. */
  env.host_us_per_mib = num("PTDOUBLE_HOST_US_PER_MIB", 250.0);
  env.host_skew = num("PTDOUBLE_HOST_SKEW", 0.25);
  env.log_us = num("PTDOUBLE_LOG_US", 10.0);
  env.init_s = num("PTDOUBLE_INIT_S", 0.0);
  static const char *const ov[3] = {"PTDOUBLE_OVERLAP_LL", "PTDOUBLE_OVERLAP_LL128", "PTDOUBLE_OVERLAP_SIMPLE"};
  for (int p = 0; p < 3; p++) {
    env.overlap[p] = num(ov[p], 0.0);
    if (env.overlap[p] < 0 || env.overlap[p] > 0.9) {
      fprintf(stderr, "nccl double: %s=%g: want a fraction 0..0.9\n", ov[p], env.overlap[p]);
      env_ok = 0;
      return;
    }
  }
  const char *subsys = getenv("NCCL_DEBUG_SUBSYS");
  env.log_tuning = subsys && (strcasestr(subsys, "TUNING") || strcasestr(subsys, "ALL")) && !strchr(subsys, '^');
  const char *fs = getenv("PTDOUBLE_FAULTS");
  if (fs && *fs) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", fs);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && nfaults < MAX_FAULTS;
         t = strtok_r(NULL, ",", &save))
      if (parse_fault(t, &faults[nfaults]) == 0) nfaults++;
      else fprintf(stderr, "nccl double: ignoring bad fault '%s'\n", t);
  }
  const char *lvl = getenv("NCCL_DEBUG");
  log_info = lvl && (!strcasecmp(lvl, "INFO") || !strcasecmp(lvl, "TRACE"));
  env_ok = 1;
}

const struct dbl_env *dbl_env(void) {
  pthread_once(&once, load);
  return env_ok == 1 ? &env : NULL;
}

double dbl_host_cost_us(int dev, size_t n) {
  const struct dbl_env *e = dbl_env();
  return e ? e->host_us_per_mib * ((double)n / (1 << 20)) * (1 + e->host_skew * dev) : 0;
}

int dbl_logging(void) {
  dbl_env();
  return log_info;
}

static int marked(const struct fault *f, size_t nbytes) {
  const char *dir = getenv("PTDOUBLE_STATE");
  char path[512];
  struct stat st;
  if (!dir) return 0;
  snprintf(path, sizeof path, "%s/%sonce-%d-%d-%d-%zu", dir, f->kind == DBL_F_CRASH ? "crash" : "hang", f->algo,
           f->proto, f->channels, nbytes);
  if (stat(path, &st) == 0) return 1;
  FILE *m = fopen(path, "w");
  if (m) fclose(m);
  return 0;
}

int dbl_fault(int algo, int proto, int channels, size_t nbytes, unsigned exec, double *slow_s) {
  dbl_env();
  for (size_t i = 0; i < nfaults; i++) {
    const struct fault *f = &faults[i];
    if ((f->algo >= 0 && f->algo != algo) || (f->proto >= 0 && f->proto != proto) ||
        (f->channels && f->channels != channels) || nbytes < f->lo || nbytes > f->hi)
      continue;
    if (f->kind == DBL_F_CORRUPT && f->nth && f->nth != exec) continue;
    if (f->once && marked(f, nbytes)) continue;
    *slow_s = f->slow_s;
    return f->kind;
  }
  return DBL_F_NONE;
}

int dbl_fail(const char *what, size_t bytes) {
  const char *v = getenv("PTDOUBLE_FAIL");
  size_t n = strlen(what);
  if (!v || strncmp(v, what, n)) return 0;
  if (v[n] == 0) return 1;
  return v[n] == '@' && bytes >= strtoull(v + n + 1, NULL, 10);
}

static void open_log(void) {
  const char *path = getenv("NCCL_DEBUG_FILE");
  char out[1024], host[256] = "host";
  size_t k = 0;
  gethostname(host, sizeof host - 1);
  if (!path) return;
  /* NCCL expands %h (host) and %p (pid) in NCCL_DEBUG_FILE. */
  for (const char *p = path; *p && k < sizeof out - 64; p++) {
    if (p[0] == '%' && p[1] == 'h') k += (size_t)snprintf(out + k, sizeof out - k, "%s", host), p++;
    else if (p[0] == '%' && p[1] == 'p') k += (size_t)snprintf(out + k, sizeof out - k, "%d", (int)getpid()), p++;
    else out[k++] = *p;
  }
  out[k] = 0;
  log_file = fopen(out, "a");
}

static void vlog(int dev, const char *level, const char *fmt, va_list ap) {
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  pthread_mutex_lock(&log_mu);
  if (!log_file) open_log();
  FILE *f = log_file ? log_file : stderr;
  fprintf(f, "%s:%d:%ld [%d] NCCL %s ", host, (int)getpid(), (long)syscall(SYS_gettid), dev, level);
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  fflush(f);
  pthread_mutex_unlock(&log_mu);
}

void dbl_info(int dev, const char *fmt, ...) {
  va_list ap;
  dbl_env();
  if (!log_info) return;
  va_start(ap, fmt);
  vlog(dev, "INFO", fmt, ap);
  va_end(ap);
}

void dbl_warn(int dev, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(dev, "WARN", fmt, ap);
  va_end(ap);
}
