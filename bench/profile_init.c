/*
 * bench/profile_init: what one communicator init costs through the built
 * plugin (dlopen, ABI v6) for the shipped profile, a large valid one at the
 * bounds and the hostile files of issue 17 §4 (10^6 tiny groups in
 * provenance.extra; an invalid 14 MB file). Each case runs in its own child
 * process: median wall time of 5 inits and the child's peak RSS above a
 * child that only loaded the plugin. Not a test.
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
static void write_profile(const char *path, void (*fill)(FILE *, long), long n) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fputs("version = 1;\nname = \"bench\";\n"
        "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.30.7\"; "
        "date = \"2026-12-01\"; mode = \"graph\";\n extra = { ",
        f);
  if (fill) fill(f, n);
  fputs(" }; };\nallreduce = { graph = { sizes = [ 1024L, 1048576L ]; candidates = (\n"
        "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); } ); }; };\n",
        f);
  fclose(f);
}

static void groups(FILE *f, long n) {
  fputs("g = (", f);
  for (long i = 0; i < n; i++) fputs(i ? ",{}" : "{}", f);
  fputs(");", f);
}

static void numbers(FILE *f, long n) {
  fputs("v = [", f);
  for (long i = 0; i < n; i++) fputs(i ? ",1" : "1", f);
  fputs("];", f);
}

static void numbers_then_junk(FILE *f, long n) {
  numbers(f, n);
  fputs(" = = ;", f);
}

/* In a child: REPS inits (each its own communicator, finalized before the
 * next, so the registry parses again); prints the median ms on fd. */
static void child(const char *so, const char *path, int fd) {
  struct ph_plugin pl;
  char err[256];
  double t[REPS];
  if (ph_plugin_open(&pl, so, 6, err, sizeof err)) _exit(1);
  if (path) setenv("PCIE_TUNER_PROFILE", path, 1);
  for (int r = 0; path && r < REPS; r++) {
    struct ph_comm c;
    double t0 = now_ms();
    ph_comm_init(&c, &pl, 8, 1, (uint64_t)r);
    t[r] = now_ms() - t0;
    ph_comm_finalize(&c);
  }
  qsort(t, REPS, sizeof *t, cmp);
  double med = path ? t[REPS / 2] : 0;
  if (write(fd, &med, sizeof med) != sizeof med) _exit(1);
  _exit(0);
}

static int run(const char *so, const char *path, double *ms, long *rss_kb) {
  int p[2];
  struct rusage ru;
  int st;
  if (pipe(p)) return -1;
  pid_t pid = fork();
  if (pid == 0) child(so, path, p[1]);
  close(p[1]);
  if (read(p[0], ms, sizeof *ms) != sizeof *ms) *ms = -1;
  close(p[0]);
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) return -1;
  *rss_kb = ru.ru_maxrss;
  return 0;
}

int main(void) {
  const char *so = getenv("PCIE_TUNER_SO") ? getenv("PCIE_TUNER_SO") : "build/libnccl-tuner-pcie.so";
  char dir[] = "/tmp/pt-bench-init-XXXXXX", path[4][128];
  static const char *names[4] = {"shipped example profile", "valid, 60000 values in extra",
                                 "valid, 10^6 groups in extra", "invalid, 14 MB"};
  if (!mkdtemp(dir)) return 1;
  snprintf(path[0], sizeof path[0], "profiles/example-8x-pcie.cfg");
  for (int i = 1; i < 4; i++) snprintf(path[i], sizeof path[i], "%s/p%d.cfg", dir, i);
  write_profile(path[1], numbers, 60000);
  write_profile(path[2], groups, 1000000);
  write_profile(path[3], numbers_then_junk, 7000000);
  double ms;
  long base_kb, kb;
  if (run(so, NULL, &ms, &base_kb)) {
    fprintf(stderr, "bench/profile_init: cannot load %s\n", so);
    return 1;
  }
  printf("bench/profile_init: median of %d inits per case, each case in its own process (%s)\n",
         REPS, so);
  printf("%-32s %10s %12s\n", "profile", "ms/init", "peak RSS +MB");
  for (int i = 0; i < 4; i++) {
    if (run(so, path[i], &ms, &kb)) {
      printf("%-32s failed\n", names[i]);
      continue;
    }
    printf("%-32s %10.2f %12.1f\n", names[i], ms, (double)(kb - base_kb) / 1024.0);
  }
  for (int i = 1; i < 4; i++) unlink(path[i]);
  rmdir(dir);
  return 0;
}
