/*
 * bench/doctor_log: seconds `pcie-tune doctor` takes on one interleaved log
 * of 100, 1000 and 4000 processes (8-rank communicators, 2.28's INIT lines
 * with the plugin's line before NCCL's, as test/data/ncclog's vLLM fixture
 * has them), against the 100-process log in the same run: linear work shows
 * a ratio near the size ratio (10x, 40x). Also reading the same file with
 * `cat` for the floor. Medians of 5 runs. Not a test.
 *
 *   make bench   (or build/bench/doctor_log after `make`: build/pcie-tune, or the
 *   one beside $PCIE_TUNER_SO)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 5

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Lines of rank r of communicator c, process pid, in NCCL 2.28's formats. */
static void rank_lines(FILE *f, int c, int r, int pid, int line) {
  const char *host = "gpu-node";
  unsigned long long id = 0x1000000000000ull + (unsigned long long)c;
  char p[96];
  snprintf(p, sizeof p, "(VllmWorker rank=%d pid=%d) %s%d:%d:%d [%d] NCCL INFO ", r, pid, host,
           c / 8, pid, pid, r);
  switch (line) {
  case 0: fprintf(f, "%sNCCL_TUNER_PLUGIN set by environment to pcie\n", p); break;
  case 1: fprintf(f, "%sTUNER/Plugin: Using PcieTuner (v5)\n", p); break;
  case 2:
    fprintf(f,
            "%sPcieTuner: profile /etc/pcie-tuner/p.cfg name 'p' hash 9f2c4e1a07b3d865 decision "
            "intervals 14 in 4 collectives (channels <= 4) (nRanks 8 nNodes 1 commId "
            "%016llx)\n",
            p, id);
    break;
  case 3:
    fprintf(f,
            "%sncclCommInitRank comm 0x%x rank %d nranks 8 cudaDev %d nvmlDev %d busId %x000 "
            "commId 0x%llx - Init START\n",
            p, 0x5000 + r, r, r, r, 0x17 + r, id);
    break;
  case 4:
    fprintf(f, "%scomm 0x%x rank %d nRanks 8 nNodes 1 localRanks 8 localRank %d MNNVL 0\n", p,
            0x5000 + r, r, r);
    break;
  case 5:
    fprintf(f, "%sPattern 4, crossNic 0, nChannels 4, bw 24.000000/24.000000, type PXB/PIX, "
               "sameChannels 1\n", p);
    break;
  case 6:
    fprintf(f, "%s4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p "
               "channels per peer\n", p);
    break;
  default:
    if (line < 11) {
      fprintf(f, "%sChannel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM\n", p, line - 7, r, r,
              (r + 1) % 8, (r + 1) % 8);
    } else {
      fprintf(f,
              "%sncclCommInitRank comm 0x%x rank %d nranks 8 cudaDev %d nvmlDev %d busId %x000 "
              "commId 0x%llx - Init COMPLETE\n",
              p, 0x5000 + r, r, r, r, 0x17 + r, id);
    }
  }
}

#define LINES 12

static long write_log(const char *path, int nproc) {
  FILE *f = fopen(path, "w");
  long n = 0;
  if (!f) return -1;
  /* Interleaved line by line across the processes of each communicator, and
   * an engine line between communicators. */
  for (int c = 0; c < nproc / 8; c++) {
    for (int line = 0; line < LINES; line++)
      for (int r = 0; r < 8; r++, n++) rank_lines(f, c, r, 40000 + c * 8 + r, line);
    fprintf(f, "INFO 12-01 09:14:31 [gpu_model_runner.py:1329] Model loading took 7.1 GiB\n");
  }
  fclose(f);
  return n;
}

static double run(const char *cmd) {
  double t[REPS];
  for (int i = 0; i < REPS; i++) {
    double t0 = now_s();
    if (system(cmd) != 0) {
      fprintf(stderr, "doctor_log: '%s' failed\n", cmd);
      exit(1);
    }
    t[i] = now_s() - t0;
  }
  qsort(t, REPS, sizeof t[0], cmp);
  return t[REPS / 2];
}

int main(void) {
  /* `make bench` names the build through PCIE_TUNER_SO; pcie-tune is beside it. */
  const char *so = getenv("PCIE_TUNER_SO");
  char cli[512];
  if (so && strrchr(so, '/'))
    snprintf(cli, sizeof cli, "%.*s/pcie-tune", (int)(strrchr(so, '/') - so), so);
  else
    snprintf(cli, sizeof cli, "%s/build/pcie-tune", getenv("PT_SRCDIR") ? getenv("PT_SRCDIR") : ".");
  static const int sizes[] = {100, 1000, 4000};
  char dir[] = "/tmp/pt-bench-doctor-XXXXXX", path[128], cmd[1024];
  double base = 0;
  if (!mkdtemp(dir)) return 1;
  printf("pcie-tune doctor on one interleaved log, median of %d runs\n", REPS);
  printf("%10s %10s %12s %12s %14s %10s\n", "processes", "lines", "doctor s", "cat s",
         "us/NCCL line", "vs 100");
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(path, sizeof path, "%s/job-%d.log", dir, sizes[i]);
    long lines = write_log(path, sizes[i]);
    if (lines < 0) return 1;
    /* Exit 0: the generated job is a working one, so doctor read it all. */
    snprintf(cmd, sizeof cmd, "'%s' doctor -q '%s' > /dev/null", cli, path);
    double t = run(cmd);
    snprintf(cmd, sizeof cmd, "cat '%s' > /dev/null", path);
    double c = run(cmd);
    if (!i) base = t;
    printf("%10d %10ld %12.4f %12.4f %14.2f %9.1fx\n", sizes[i], lines, t, c, t / lines * 1e6,
           t / base);
    unlink(path);
  }
  rmdir(dir);
  return 0;
}
