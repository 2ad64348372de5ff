/*
 * bench/profile_init: what one communicator init costs through the built
 * plugin (dlopen, ABI v6) for the shipped profile and the worst shapes we
 * can build: each pre-scan bound reached alone and all at once, the hostile
 * files of issue 17 §4 (10^6 tiny groups in provenance.extra; an invalid
 * 14 MB file) and issue 30 §1 (one group of N members with long names that
 * share a prefix: libconfig's duplicate check is O(N^2 * L)). Each case runs
 * in its own child process: median wall time of 5 inits, whether the plugin
 * loaded or refused the file (foreign profiles accepted, so "loaded" means
 * parsed, validated and compiled) and the child's peak RSS above a child
 * that only loaded the plugin. PT_BENCH_ECHO=1 prints the plugin's log.
 * Not a test.
 *
 *   make bench && PCIE_TUNER_SO=build/libnccl-tuner-pcie.so build/bench/profile_init
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pcie/host.h"

#define REPS 5

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A profile with fill's text in provenance.extra. */
static void write_profile(const char *path, void (*fill)(FILE *, long, int), long n, int len) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fputs("version = 1;\nname = \"bench\";\n"
        "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.30.7\"; "
        "date = \"2026-12-01\"; mode = \"graph\";\n extra = { ",
        f);
  if (fill) fill(f, n, len);
  fputs(" }; };\nallreduce = { graph = { sizes = [ 1024L, 1048576L ]; candidates = (\n"
        "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); } ); }; };\n",
        f);
  fclose(f);
}

static void groups(FILE *f, long n, int len) {
  (void)len;
  fputs("g = (", f);
  for (long i = 0; i < n; i++) fputs(i ? ",{}" : "{}", f);
  fputs(");", f);
}

static void numbers(FILE *f, long n, int len) {
  (void)len;
  fputs("v = [", f);
  for (long i = 0; i < n; i++) fputs(i ? ",1" : "1", f);
  fputs("];", f);
}

static void numbers_then_junk(FILE *f, long n, int len) {
  numbers(f, n, len);
  fputs(" = = ;", f);
}

/* A name of len bytes: all 'a' but the last 8, which are i in hex. */
static void name(FILE *f, int len, long i) {
  for (int j = 0; j < len - 8; j++) fputc('a', f);
  fprintf(f, "%08lx = 1; ", i);
}

/* Issue 30 §1: one group of n members whose names are len bytes and share
 * all but their last 8 (libconfig compares each new name with every
 * earlier one: O(n^2 * len)). */
static void members(FILE *f, long n, int len) {
  fputs("m = { ", f);
  for (long i = 0; i < n; i++) name(f, len, i);
  fputs("};", f);
}

/* Many groups of members each, every group just within the name-check
 * bound on its own: the bound is on the sum. */
static void member_groups(FILE *f, long n, int len) {
  for (long g = 0; g < 64; g++) {
    fprintf(f, "m%ld = { ", g);
    for (long i = 0; i < n; i++) name(f, len, i);
    fputs("}; ", f);
  }
}

/* Strings at the bounds: 16 of 64 KiB (1 MiB of strings). */
static void strings(FILE *f, long n, int len) {
  (void)len;
  for (long i = 0; i < n; i++) {
    fprintf(f, "s%ld = \"", i);
    for (int j = 0; j < 65530; j++) fputc('x', f);
    fputs("\"; ", f);
  }
}

/* Nesting at the limit, repeated: a = { a = { ... } }. */
static void nests(FILE *f, long n, int len) {
  (void)len;
  for (long r = 0; r < n; r++) {
    fprintf(f, "n%ld = ", r);
    for (int i = 0; i < 30; i++) fputs("{ a = ", f);
    fputs("1;", f);
    for (int i = 0; i < 30; i++) fputs(" };", f);
    fputs(" ", f);
  }
}

/* In a child: REPS inits (each its own communicator, finalized before the
 * next, so the registry parses again); prints the median ms on fd. */
static void child(const char *so, const char *path, int fd) {
  struct ph_plugin pl;
  char err[256];
  double t[REPS];
  if (ph_plugin_open(&pl, so, 6, err, sizeof err)) _exit(1);
  if (path) setenv("PCIE_TUNER_PROFILE", path, 1);
  /* A bench profile records no box: used anyway, so that "loaded" means
   * parsed, validated and compiled. */
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  if (getenv("PT_BENCH_ECHO")) ph_log_echo(1);
  for (int r = 0; path && r < REPS; r++) {
    struct ph_comm c;
    double t0 = now_ms();
    ph_comm_init(&c, &pl, 8, 1, (uint64_t)r);
    t[r] = now_ms() - t0;
    ph_comm_finalize(&c);
  }
  qsort(t, REPS, sizeof *t, cmp);
  /* [0] the median; [1] 1 when the plugin refused the file (a WARN). */
  double out[2] = {path ? t[REPS / 2] : 0, ph_log_find(NCCL_LOG_WARN, NULL) > 0};
  if (write(fd, out, sizeof out) != sizeof out) _exit(1);
  _exit(0);
}

static int run(const char *so, const char *path, double *ms, int *refused, long *rss_kb) {
  int p[2];
  struct rusage ru;
  int st;
  if (pipe(p)) return -1;
  pid_t pid = fork();
  if (pid == 0) child(so, path, p[1]);
  close(p[1]);
  double in[2] = {-1, 0};
  if (read(p[0], in, sizeof in) != sizeof in) in[0] = -1;
  *ms = in[0];
  *refused = in[1] != 0;
  close(p[0]);
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) return -1;
  *rss_kb = ru.ru_maxrss;
  return 0;
}

/* Every bound at once: 1 MiB of strings, a group at the name-check bound,
 * then values up to the token bound. */
static void all_bounds(FILE *f, long n, int len) {
  (void)len;
  strings(f, 15, 0);
  members(f, 174, 248);
  numbers(f, n, 0);
}

static const struct {
  const char *name;
  void (*fill)(FILE *, long, int);
  long n;
  int len;
} cases[] = {
    {"shipped example profile", NULL, 0, 0},
    {"60000 values in extra", numbers, 60000, 0},
    {"10^6 groups in extra", groups, 1000000, 0},
    {"14 MB invalid", numbers_then_junk, 7000000, 0},
    {"1 group, 174 x 248 B names", members, 174, 248},
    {"1 group, 565 x 9 B names", members, 565, 9},
    {"1 group, 2000 x 248 B", members, 2000, 248},
    {"1 group, 8000 x 248 B", members, 8000, 248},
    {"1 group, 32000 x 9 B", members, 32000, 9},
    {"1 group, 32000 x 248 B", members, 32000, 248},
    {"64 groups, 21 x 248 B", member_groups, 21, 248},
    {"16 strings of 64 KiB", strings, 15, 0},
    {"400 nests 30 deep", nests, 400, 0},
    {"all bounds at once", all_bounds, 64000, 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

int main(void) {
  const char *so = getenv("PCIE_TUNER_SO") ? getenv("PCIE_TUNER_SO") : "build/libnccl-tuner-pcie.so";
  char dir[] = "/tmp/pt-bench-init-XXXXXX", path[NCASES][128];
  if (!mkdtemp(dir)) return 1;
  for (size_t i = 0; i < NCASES; i++) {
    if (!cases[i].fill) {
      snprintf(path[i], sizeof path[i], "profiles/example-8x-pcie.cfg");
      continue;
    }
    snprintf(path[i], sizeof path[i], "%s/p%zu.cfg", dir, i);
    write_profile(path[i], cases[i].fill, cases[i].n, cases[i].len);
  }
  double ms;
  long base_kb, kb;
  int refused;
  if (run(so, NULL, &ms, &refused, &base_kb)) {
    fprintf(stderr, "bench/profile_init: cannot load %s\n", so);
    return 1;
  }
  printf("bench/profile_init: median of %d inits per case, each case in its own process (%s)\n",
         REPS, so);
  printf("%-36s %-8s %10s %12s\n", "profile", "plugin", "ms/init", "peak RSS +MB");
  for (size_t i = 0; i < NCASES; i++) {
    if (run(so, path[i], &ms, &refused, &kb)) {
      printf("%-36s failed\n", cases[i].name);
      continue;
    }
    printf("%-36s %-8s %10.2f %12.1f\n", cases[i].name, refused ? "refused" : "loaded", ms,
           (double)(kb - base_kb) / 1024.0);
    fflush(stdout);
  }
  for (size_t i = 0; i < NCASES; i++)
    if (cases[i].fill) unlink(path[i]);
  rmdir(dir);
  return 0;
}
