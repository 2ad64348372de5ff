/*
 * bench/tuner_hotpath: ns per getCollInfo call through the built plugin (dlopen,
 * ABI v6) for profiles with 10, 100 and 1000 measured sizes, against a
 * getCollInfo that decides nothing, called the same way in the same run.
 * Prints medians over repetitions and the added ns / ratio. Not a test.
 *
 *   make bench   (or build/bench/tuner_hotpath after `make`)
 *   build/bench/tuner_hotpath [NSIZES] runs one profile size only;
 *   build/bench/tuner_hotpath FILE.cfg runs that profile (the shipped one:
 *   profiles/example-8x-pcie.cfg); HOTPATH_CALLS sets the calls per run (for
 *   instruction counts under callgrind).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <math.h>

#include "nccl/tuner_v6.h"
#include "pcie/host.h"
#include "pcie/nccl_model.h"

#define REPS 9
#define NSIZES_MAX 1000

typedef ncclResult_t (*coll_fn)(void *, ncclFunc_t, size_t, int, float **, int, int, int, int *);

static ncclResult_t decide_nothing(void *ctx, ncclFunc_t coll, size_t n, int pipe, float **t,
                                   int na, int np, int reg, int *nch) {
  (void)ctx, (void)coll, (void)n, (void)pipe, (void)t, (void)na, (void)np, (void)reg, (void)nch;
  return ncclSuccess;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median ns per call over REPS runs of CALLS calls with varied sizes. */
static long CALLS = 2000000;

static double time_calls(coll_fn volatile fn, void *ctx, const size_t *sizes, size_t nsizes) {
  struct pt_nccl_params p;
  float base[7][3], t[7][3];
  double reps[REPS];
  pt_nccl_params_default(&p, 8);
  pt_nccl_cost_table(&p, ncclFuncAllReduce, 65536, 1, base);
  for (int r = 0; r < REPS; r++) {
    int nch = 0;
    double t0 = now_ns();
    for (int i = 0; i < CALLS; i++) {
      memcpy(t, base, sizeof t);
      fn(ctx, ncclFuncAllReduce, sizes[i & (nsizes - 1)], 1, (float **)t, 7, 3, i & 1, &nch);
    }
    reps[r] = (now_ns() - t0) / CALLS;
  }
  qsort(reps, REPS, sizeof *reps, cmp);
  return reps[REPS / 2];
}

static void write_profile(const char *path, int nsizes) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  fprintf(f, "version = 1;\nname = \"bench-%d\";\nprovenance = { tool = \"bench\"; backend = \"synthetic\";"
             " nccl_version = \"-\"; date = \"-\"; mode = \"graph\"; };\n"
             "communicator = { channels = 8; };\nallreduce = { graph = {\n sizes = [",
          nsizes);
  unsigned long long prev = 0;
  for (int i = 0; i < nsizes; i++) {
    unsigned long long v = (unsigned long long)(8.0 * exp2(28.0 * i / (nsizes - 1)));
    prev = v > prev ? v : prev + 1; /* strictly ascending at the small end */
    fprintf(f, "%s%lluL", i ? "," : "", prev);
  }
  /* NCCL's default, slower than every candidate (at most 1.16 x 20 us
   * plus the slowest bandwidth term, +4 % noise): a candidate is ranked
   * only where the default was measured too (tuner/table.c), so without
   * one every size is left to NCCL and the bench times a lookup only. */
  fprintf(f, " ];\n nccl_default = (");
  prev = 0;
  for (int i = 0; i < nsizes; i++) {
    unsigned long long v = (unsigned long long)(8.0 * exp2(28.0 * i / (nsizes - 1)));
    prev = v > prev ? v : prev + 1;
    fprintf(f, "%s%.3f", i ? "," : "", 2.0 * (20.0 * 1.5 + (double)prev / 2000.0));
  }
  fprintf(f, " );\n candidates = (\n");
  /* Six candidates with latency + size/bandwidth curves and +-4 % noise,
   * so rankings cross often and intervals grow with the profile. */
  unsigned seed = 3;
  prev = 0;
  for (int c = 0; c < 6; c++) {
    fprintf(f, "%s  { algo = \"%s\"; proto = \"%s\"; channels = %d; latency = (", c ? ",\n" : "",
            c % 2 ? "tree" : "ring", c % 3 ? "ll" : "simple", 1 + c);
    prev = 0;
    for (int i = 0; i < nsizes; i++) {
      unsigned long long v = (unsigned long long)(8.0 * exp2(28.0 * i / (nsizes - 1)));
      prev = v > prev ? v : prev + 1;
      double noise = 1.0 + 0.08 * ((double)(rand_r(&seed) % 1000) / 1000.0 - 0.5);
      fprintf(f, "%s%.3f", i ? "," : "", (20.0 * (1 + 0.1 * c) + (double)prev / (1000.0 * (2.0 + 2.0 * c))) * noise);
    }
    fprintf(f, "); }");
  }
  fprintf(f, " ); }; };\n");
  fclose(f);
}

int main(int argc, char **argv) {
  const char *file = argc > 1 && strstr(argv[1], ".cfg") ? argv[1] : NULL;
  int only = argc > 1 && !file ? atoi(argv[1]) : 0;
  if (getenv("HOTPATH_CALLS")) CALLS = atol(getenv("HOTPATH_CALLS"));
  if (CALLS < 1) CALLS = 1;
  const char *so = getenv("PCIE_TUNER_SO") ? getenv("PCIE_TUNER_SO") : "build/libnccl-tuner-pcie.so";
  static const int counts[] = {10, 100, 1000};
  static size_t sizes[4096], verify[4096];
  unsigned seed = 11;
  char dir[] = "/tmp/pt-bench-XXXXXX", path[64], err[256];
  struct ph_plugin pl;
  if (!mkdtemp(dir) || ph_plugin_open(&pl, so, 6, err, sizeof err)) {
    fprintf(stderr, "bench/tuner_hotpath: %s\n", err);
    return 1;
  }
  /* Two call patterns: what NCCL sees in a verify step (the all-reduce
   * sizes of 1..128 tokens x 14336 B, each repeated, as graph capture
   * does), and the worst case, a random size on every call. */
  static const size_t tokens[] = {1, 4, 8, 16, 32, 64, 128};
  for (size_t i = 0; i < 4096; i++) verify[i] = tokens[(i / 123) % 7] * 14336;
  for (size_t i = 0; i < 4096; i++) sizes[i] = (size_t)8 << (rand_r(&seed) % 26), sizes[i] += rand_r(&seed) % sizes[i];
  const ncclTuner_v6_t *t = pl.sym;
  double base_v = time_calls(decide_nothing, NULL, verify, 4096);
  double base_r = time_calls(decide_nothing, NULL, sizes, 4096);
  printf("bench/tuner_hotpath: median of %d runs x %ld getCollInfo calls (ABI v6, dlopen)\n", REPS, CALLS);
  printf("%-24s %6s | %-27s | %-27s\n", "", "", "verify-step sizes", "random sizes 8 B..512 MB");
  printf("%-24s %6s | %8s %9s %8s | %8s %9s %8s\n", "plugin", "ivals", "ns/call", "added ns",
         "ratio", "ns/call", "added ns", "ratio");
  printf("%-24s %6s | %8.2f %9s %8s | %8.2f %9s %8s\n", "decides nothing (base)", "-", base_v, "-",
         "1.00", base_r, "-", "1.00");
  for (int k = 0; k < 3; k++) {
    struct ph_comm c;
    if (file ? k > 0 : only && only != counts[k]) continue;
    snprintf(path, sizeof path, "%s/p%d.cfg", dir, counts[k]);
    if (!file) write_profile(path, counts[k]);
    setenv("PCIE_TUNER_PROFILE", file ? file : path, 1);
    /* Profiles of no box: accepted on purpose (docs/decisions.md). */
    setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
    ph_comm_init(&c, &pl, 8, 1, 1);
    if (ph_log_find(NCCL_LOG_WARN, NULL)) {
      fprintf(stderr, "bench/tuner_hotpath: the plugin did not load %s\n", path);
      return 1;
    }
    struct ph_log_entry e;
    ph_log_get(ph_log_count() - 1, &e);
    const char *iv = strstr(e.msg, "intervals ");
    double nv = time_calls(t->getCollInfo, c.ctx, verify, 4096);
    double nr = time_calls(t->getCollInfo, c.ctx, sizes, 4096);
    char label[64];
    if (file) snprintf(label, sizeof label, "%.24s", strrchr(file, '/') ? strrchr(file, '/') + 1 : file);
    else snprintf(label, sizeof label, "profile, %d sizes", counts[k]);
    printf("%-24s %6d | %8.2f %9.2f %8.2f | %8.2f %9.2f %8.2f\n", label, iv ? atoi(iv + 10) : -1, nv,
           nv - base_v, nv / base_v, nr, nr - base_r, nr / base_r);
    ph_comm_finalize(&c);
    if (!file) unlink(path);
  }
  rmdir(dir);
  ph_plugin_close(&pl);
  return 0;
}
