/* The nccl backend end to end, as a user runs it (`pcie-tune profile
 * --backend nccl --nccl-lib <double>`), through the device double of
 * test/double/: every defect of issue 10 that a GPU would show. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure/gpu_gap.h"
#include "nccl/common.h"
#include "pcie/sim_box.h"
#include "support/pt_test.h"

static char *dir, dbl[1200];
extern char **environ;

/* The double reads PTDOUBLE_* from the environment: a stray one of the
 * user's (PTDOUBLE_DEVICES=1) would fail every check for no reason of the
 * code's. Each test sets its own on the command line; the rest go. */
static void clear_stray(void) {
  char names[32][64];
  size_t n = 0;
  for (char **e = environ; *e && n < 32; e++)
    if (!strncmp(*e, "PTDOUBLE_", 9)) snprintf(names[n++], sizeof names[0], "%.*s", (int)strcspn(*e, "="), *e);
  for (size_t i = 0; i < n; i++) {
    fprintf(stderr, "test_measure_double: ignoring %s from the environment\n", names[i]);
    unsetenv(names[i]);
  }
}

static void setup(void) {
  dir = pt_test_tmpdir();
  snprintf(dbl, sizeof dbl, "%s", pt_test_double());
}
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* Runs `ENV pcie-tune profile --backend nccl --nccl-lib DOUBLE ARGS` in dir
 * with TMPDIR=dir; returns the exit status, stderr in *err. */
static int profile(char **err, const char *env, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int profile(char **err, const char *env, const char *fmt, ...) {
  char args[2048], cmd[4096], *out = NULL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  clear_stray();
  /* Warm-up by time replays for 100 ms of (virtual) GPU time: thousands of
   * replays on host processes. Off unless a test asks for it. */
  snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s %s %s profile --backend nccl --nccl-lib %s --quiet %s %s", dir, dir,
           env, pt_test_cli(), dbl, strstr(args, "--warmup-ms") ? "" : "--warmup-ms 0", args);
  int rc = pt_test_run(cmd, &out, err);
  free(out);
  return rc;
}

static struct pt_profile *load(const char *name) { return pt_test_load_profile(dir, name); }

static const struct pt_point *point(const struct pt_profile *p, int mode, int algo, int proto, int ch,
                                    uint64_t n) {
  const struct pt_series *s = p->series[PT_ALLREDUCE][mode];
  ck_assert_ptr_nonnull(s);
  for (size_t k = 0; k < s->nsizes; k++) {
    if (s->sizes[k] != n) continue;
    if (algo < 0) return &s->nccl_default[k];
    for (size_t c = 0; c < s->ncand; c++)
      if (s->cand[c].algo == algo && s->cand[c].proto == proto && s->cand[c].channels == ch)
        return &s->cand[c].points[k];
  }
  return NULL;
}

static char *slurp(const char *name) {
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *buf = calloc(1, 1 << 20);
  ck_assert_uint_gt(fread(buf, 1, (1 << 20) - 1, f), 0);
  fclose(f);
  return buf;
}

/* Defects 2, 3, 8, 9, 11 and the process models: --warmup 0 measures every
 * point (one untimed replay always runs), graph and eager, a process per
 * GPU and one process with a thread per GPU (which would deadlock if one
 * thread launched every GPU's graph); candidates above the communicator's
 * channel count (from NCCL's INFO lines) are not measured; nothing is
 * left in TMPDIR. */
START_TEST(both_modes_both_process_models_warmup_0) {
  const char *models[] = {"per-gpu", "single"};
  const int comm = pt_box_builtin("consumer-2x")->nccl.comm_channels; /* 1, 2 or 4 in the sweep */
  ck_assert(comm == 1 || comm == 2 || comm == 4);
  for (int m = 0; m < 2; m++) {
    char *err = NULL, name[32];
    snprintf(name, sizeof name, "p%d.cfg", m);
    int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x",
                     "--gpus 0-1 --process-model %s --both --warmup 0 --ops 4 --sizes 4K:64K --algos ring "
                     "--protos ll,simple --channels 1,2,4,8 --reps 3 --full --out %s", models[m], name);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", models[m], rc, err);
    free(err);
    struct pt_profile *p = load(name);
    for (int mode = 0; mode < 2; mode++)
      for (uint64_t n = 4096; n <= 65536; n *= 2) {
        const struct pt_point *d = point(p, mode, -1, 0, 0, n);
        ck_assert_msg(d && d->state == PT_PT_OK && d->lat_us > 0, "%s mode %d %llu: default not ok", models[m],
                      mode, (unsigned long long)n);
        /* Up to the communicator's channels (the box's NCCL view), not above. */
        const struct pt_point *top = point(p, mode, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, comm, n);
        ck_assert_msg(top && top->state == PT_PT_OK, "ring/simple/%d at %llu not measured", comm,
                      (unsigned long long)n);
        ck_assert_ptr_null(point(p, mode, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2 * comm, n));
      }
    /* What the plugin reads: the communicator's count, and an environment
     * recorded as empty (the double's own variables are not the user's). */
    ck_assert_int_eq(p->comm_channels, comm);
    ck_assert_int_eq(p->env_recorded, 1);
    ck_assert_ptr_null(pt_profile_env(p, "NCCL_TUNER_PLUGIN"));
    ck_assert_ptr_null(pt_profile_env(p, "NCCL_DEBUG_FILE"));
    pt_test_free_profile(p);
    char *text = slurp(name);
    char want[32];
    snprintf(want, sizeof want, "comm_channels = %d;", comm);
    ck_assert_msg(strstr(text, want), "%s", text);
    ck_assert_msg(strstr(text, m ? "process_model = \"single-process\"" : "process_model = \"process-per-gpu\""),
                  "%s", text);
    /* NCCL connects at the first collective: read after it. */
    const char *tr = strstr(text, "transports = [ \""), *end = tr ? strchr(tr, ']') : NULL;
    ck_assert_msg(tr && end, "no transports recorded");
    char *t01 = strstr(tr, "\"0>1 SHM/direct/direct\""), *t10 = strstr(tr, "\"1>0 SHM/direct/direct\"");
    ck_assert_msg(t01 && t10 && t01 < end && t10 < end, "transports missing: %.200s", tr);
    ck_assert_msg(strstr(text, "libnccl-double-cudart-nccl.so"), "library missing");
    free(text);
  }
  DIR *d = opendir(dir);
  struct dirent *e;
  while ((e = readdir(d))) ck_assert_msg(strncmp(e->d_name, "pcie-tune", 9), "left behind: %s", e->d_name);
  closedir(d);
}
END_TEST

/* Defects 4 and 5, and issue 18 §1/§3: each rank times its own launch,
 * after the ranks were aligned on the GPU, so the time is the box's
 * collective time: never other GPUs' launches, a single thread's enqueue
 * rate, the host work of checking the previous replay (which the double's
 * host-cost model makes 2.5 ms per MiB, ranks 50 % apart), nor a log line
 * per collective in eager mode (NCCL_DEBUG_SUBSYS=TUNING, 100 us each). */
START_TEST(times_are_the_collective_not_the_host) {
  char *err = NULL;
  const struct pt_box *box = pt_box_builtin("gen5-8x-p2p");
  const uint64_t sizes[] = {14336, 131072, 2097152};
  int rc = profile(&err, "PTDOUBLE_BOX=gen5-8x-p2p PTDOUBLE_ENQUEUE_US=6 PTDOUBLE_HOST_US_PER_MIB=2500 "
                   "PTDOUBLE_HOST_SKEW=0.5 PTDOUBLE_LOG_US=100",
                   "--gpus 0-7 --both --ops 4 --sizes 14336,128K,2M --algos ring --protos simple --channels 2 --reps 3 "
                   "--full --out t.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("t.cfg");
  for (int m = 0; m < 2; m++)
    for (size_t i = 0; i < 3; i++) {
      double got = point(p, m, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, sizes[i])->lat_us;
      double want = pt_box_true_us(box, PT_ALLREDUCE, m, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, sizes[i]);
      ck_assert_msg(fabs(got - want) < 1e-3 * want, "%s %llu B: %.4f us, want %.4f (%.1f %% off)",
                    m == PT_MODE_GRAPH ? "graph" : "eager", (unsigned long long)sizes[i], got, want,
                    100 * (got / want - 1));
    }
  /* The engines' buffers by default, and what NCCL registers recorded. */
  ck_assert_str_eq(p->prov.buffers, "cudaMalloc");
  ck_assert_int_eq(p->prov.has_graph_register, 1);
  ck_assert_int_eq(p->prov.graph_register, 1);
  pt_test_free_profile(p);
}
END_TEST

/* Issue 26 §5: back to back, the double hides part of each Simple
 * all-reduce in the previous one's tail (PTDOUBLE_OVERLAP_SIMPLE), as
 * NCCL's next kernel starts while peers finish the previous op; at a size
 * where Simple is truly slower than LL, --gap 0 then ranks Simple first.
 * The default gap (a kernel before each all-reduce) ends the burst: both
 * measure their true time and LL ranks first again; the gap is recorded. */
START_TEST(the_gap_removes_the_burst_bias) {
  const struct pt_box *box = pt_box_builtin("gen5-8x-p2p");
  uint64_t n = 0;
  double ll = 0, simple = 0;
  for (uint64_t s = 4096; s <= (4u << 20) && !n; s *= 2) {
    ll = pt_box_true_us(box, PT_ALLREDUCE, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 2, s);
    simple = pt_box_true_us(box, PT_ALLREDUCE, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, s);
    if (simple > 1.05 * ll && simple < 1.4 * ll) n = s;
  }
  ck_assert_msg(n, "no size where ring/simple/2 is 5-40 %% slower than ring/ll/2 on gen5-8x-p2p");
  const char *gaps[] = {"--gap 0", ""};
  for (int g = 0; g < 2; g++) {
    char *err = NULL, name[32];
    snprintf(name, sizeof name, "gap%d.cfg", g);
    int rc = profile(&err, "PTDOUBLE_BOX=gen5-8x-p2p PTDOUBLE_OVERLAP_SIMPLE=0.5",
                     "--gpus 0-7 --graph --ops 4 --sizes %llu --algos ring --protos ll,simple --channels 2 --reps 3 "
                     "--full %s --out %s", (unsigned long long)n, gaps[g], name);
    ck_assert_msg(rc == 0, "%s: exit %d: %s", gaps[g], rc, err);
    free(err);
    struct pt_profile *p = load(name);
    double got_ll = point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 2, n)->lat_us;
    double got_simple = point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, n)->lat_us;
    if (g == 0) {
      ck_assert_msg(got_simple < got_ll, "--gap 0 at %llu B: simple %.3f us, ll %.3f us: no burst bias",
                    (unsigned long long)n, got_simple, got_ll);
    } else {
      ck_assert_msg(got_ll < got_simple, "gap at %llu B: ll %.3f us, simple %.3f us", (unsigned long long)n, got_ll,
                    got_simple);
      ck_assert_msg(fabs(got_ll - ll) < 1e-3 * ll && fabs(got_simple - simple) < 1e-3 * simple,
                    "gap: ll %.4f (want %.4f), simple %.4f (want %.4f)", got_ll, ll, got_simple, simple);
    }
    ck_assert_ptr_nonnull(p->prov.extra);
    const char *rec = strstr(p->prov.extra, "gap_us");
    double v = -1;
    ck_assert_msg(rec && sscanf(rec, "gap_us = %lf", &v) == 1 && v == (g ? PT_GAP_DEFAULT_US : 0), "recorded: %.40s",
                  rec ? rec : "nothing");
    pt_test_free_profile(p);
  }
}
END_TEST

/* Defect 7: a wrong result in one timed replay only (the 3rd execution
 * of the op: warm-up is 1-2) is caught, although later replays are right. */
START_TEST(every_timed_replay_is_checked) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAULTS='corrupt#3:ring/simple/2@16384-16384'",
                   "--gpus 0-1 --warmup 0 --ops 2 --sizes 16K:16K --algos ring --protos simple --channels 2 "
                   "--reps 3 --full --out w.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("w.cfg");
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 16384)->state, PT_PT_WRONG);
  pt_test_free_profile(p);
  char *text = slurp("w.cfg");
  ck_assert_msg(strstr(text, "\"wrong\"") || strstr(text, "wrong"), "%s", text);
  free(text);
}
END_TEST

/* Defect 1: a slow measurement sends heartbeats and is not a hang; a hang
 * that does not repeat in a fresh worker is measured; a real hang kills
 * the candidate from its size up only. */
START_TEST(slow_is_not_hang_and_hang_is_local) {
  char *err = NULL, env[1024];
  snprintf(env, sizeof env,
           "PTDOUBLE_BOX=consumer-2x PTDOUBLE_STATE=%s "
           "PTDOUBLE_FAULTS='slow=0.35:ring/ll/1@8192-8192,hangonce:ring/ll/2@8192-8192,hang:ring/simple/1@16384'",
           dir);
  int rc = profile(&err, env,
                   "--gpus 0-1 --warmup 0 --ops 1 --timeout 1 --sizes 4K:32K --algos ring --protos ll,simple "
                   "--channels 1,2 --reps 3 --full --out h.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("h.cfg");
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 8192)->state, PT_PT_OK);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 2, 8192)->state, PT_PT_OK);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 8192)->state, PT_PT_OK);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 16384)->state, PT_PT_HANG);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 32768)->state, PT_PT_MISSING);
  pt_test_free_profile(p);
}
END_TEST

/* Defect 6: the environment failing (memory, a device) stops the sweep
 * with a clear message; no candidate is blamed. */
START_TEST(environment_failures_stop_the_sweep) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAIL=malloc@65536",
                   "--gpus 0-1 --ops 1 --sizes 16K:64K --algos ring --protos simple --channels 2 --reps 2 --full "
                   "--out e.cfg");
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(err, "cannot allocate") && strstr(err, "lower --sizes"), "%s", err);
  free(err);
  err = NULL;
  rc = profile(&err, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAIL=init", "--gpus 0-1 --out i.cfg");
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(err, "ncclCommInitRank failed"), "%s", err);
  free(err);
}
END_TEST

/* Acceptance: on a double modelled on a built-in box, the GPU flow picks
 * the same winner at every size as the simulated backend on that box, or
 * one whose true latency is within 5% of it (a tie the simulator's noise
 * decided). */
START_TEST(decisions_match_the_sim_backend) {
  char *err = NULL, cmd[2048], *out = NULL;
  const char *sweep = "--sizes 8:256K --algos ring,tree --protos ll,simple --channels 1,2,4 --reps 3 --full";
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x", "--gpus 0-1 --ops 4 %s --out g.cfg", sweep);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  snprintf(cmd, sizeof cmd, "cd %s && %s profile --backend sim --box consumer-2x --quiet %s --out s.cfg", dir,
           pt_test_cli(), sweep);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  free(out), free(err);
  struct pt_profile *g = load("g.cfg"), *s = load("s.cfg");
  const struct pt_series *gs = g->series[PT_ALLREDUCE][PT_MODE_GRAPH], *ss = s->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_uint_eq(gs->nsizes, ss->nsizes);
  for (size_t k = 0; k < gs->nsizes; k++) {
    int best[2] = {-1, -1};
    const struct pt_series *sr[2] = {gs, ss};
    for (int w = 0; w < 2; w++) {
      double b = INFINITY;
      for (size_t c = 0; c < sr[w]->ncand; c++) {
        const struct pt_point *pt = &sr[w]->cand[c].points[k];
        if (pt->state == PT_PT_OK && pt->lat_us < b) b = pt->lat_us, best[w] = (int)c;
      }
    }
    ck_assert_int_ge(best[0], 0);
    const struct pt_candidate *a = &gs->cand[best[0]], *b = &ss->cand[best[1]];
    const struct pt_box *box = pt_box_builtin("consumer-2x");
    double ta = pt_box_true_us(box, PT_ALLREDUCE, PT_MODE_GRAPH, a->algo, a->proto, a->channels, gs->sizes[k]);
    double tb = pt_box_true_us(box, PT_ALLREDUCE, PT_MODE_GRAPH, b->algo, b->proto, b->channels, gs->sizes[k]);
    ck_assert_msg((a->algo == b->algo && a->proto == b->proto && a->channels == b->channels) ||
                      fabs(ta - tb) <= 0.05 * tb,
                  "%llu B: nccl/double picks %d/%d/%d, sim picks %d/%d/%d", (unsigned long long)gs->sizes[k],
                  a->algo, a->proto, a->channels, b->algo, b->proto, b->channels);
  }
  pt_test_free_profile(g);
  pt_test_free_profile(s);
}
END_TEST

/* Workers or ranks whose command line names this test's directory. */
static int alive(void) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    char path[300], buf[4096];
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < k; i++)
      if (!buf[i]) buf[i] = ' ';
    buf[k] = 0;
    n += strstr(buf, " worker ") && strstr(buf, dir);
  }
  closedir(d);
  return n;
}

static void nap_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL); }

/* SIGKILL of the profiler mid-sweep leaves a checkpoint and no worker or
 * rank behind; Ctrl-C leaves a partial profile; --resume finishes both. */
START_TEST(sigkill_and_ctrl_c_then_resume) {
  const int sigs[] = {SIGKILL, SIGINT};
  for (int k = 0; k < 2; k++) {
    char cmd[4096], path[1200], name[16];
    snprintf(name, sizeof name, "r%d.cfg", k);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* Ring/simple hangs from 16 KiB on with a long timeout: the sweep is
     * stuck there when the signal comes. */
    snprintf(cmd, sizeof cmd,
             "cd %s && TMPDIR=%s PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAULTS='hang:ring/simple/*@16384' exec %s profile "
             "--backend nccl --nccl-lib %s --quiet --warmup-ms 0 --gpus 0-1 --ops 2 --sizes 4K:32K --algos ring --protos ll,simple "
             "--channels 1,2 --reps 3 --full --timeout 600 --checkpoint 0 --out %s 2>%s.err",
             dir, dir, pt_test_cli(), dbl, name, name);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
      _exit(127);
    }
    struct stat st;
    int seen = 0;
    for (int i = 0; i < 600 && !seen; i++, nap_ms(50)) {
      char *text = stat(path, &st) == 0 ? slurp(name) : NULL;
      seen = text && strstr(text, "state = \"ok\"") == NULL && alive() && strstr(text, "nreps");
      free(text);
    }
    ck_assert_msg(seen, "no checkpoint appeared");
    nap_ms(1500); /* into the hanging measurement */
    ck_assert_int_eq(kill(pid, sigs[k]), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (sigs[k] == SIGKILL) ck_assert(WIFSIGNALED(status));
    else {
      /* The user is told what was kept (captured: make test stays quiet). */
      ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x", status);
      char errname[32];
      snprintf(errname, sizeof errname, "%s.err", name);
      char *said = slurp(errname);
      ck_assert_msg(strstr(said, "interrupted after") && strstr(said, "--resume"), "%s", said);
      free(said);
    }
    for (int i = 0; i < 100 && alive(); i++) nap_ms(20);
    ck_assert_msg(!alive(), "a worker or rank outlived the profiler");
    char *err = NULL, *out = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s PTDOUBLE_BOX=consumer-2x %s profile --resume --quiet --out %s", dir,
             dir, pt_test_cli(), name);
    int rc = pt_test_run(cmd, &out, &err);
    ck_assert_msg(rc == 0, "resume: exit %d: %s", rc, err);
    free(out), free(err);
    struct pt_profile *p = load(name);
    ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 32768)->state, PT_PT_OK);
    pt_test_free_profile(p);
  }
}
END_TEST

/* Exactly the sizes asked for (a list, a workload file), and the channel
 * count NCCL_MIN_NCHANNELS gives the communicator. */
START_TEST(size_lists_workloads_and_channel_env) {
  char *err = NULL, *wl = pt_test_write(dir, "w.txt", "# verify step\nv1 allreduce 14336 61\nv8 allreduce 114688 61\n");
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x NCCL_MIN_NCHANNELS=8",
                   "--gpus 0-1 --ops 2 --sizes 4K,1M --workload %s --algos ring --protos simple --channels 2,8,16 "
                   "--reps 3 --full --out l.cfg", wl);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  free(wl);
  struct pt_profile *p = load("l.cfg");
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  const uint64_t want[] = {4096, 14336, 114688, 1048576};
  ck_assert_uint_eq(s->nsizes, 4);
  for (size_t i = 0; i < 4; i++) ck_assert_uint_eq(s->sizes[i], want[i]);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, 14336)->state, PT_PT_OK);
  ck_assert_ptr_null(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 16, 14336));
  ck_assert_int_eq(p->comm_channels, 8);
  ck_assert_str_eq(pt_profile_env(p, "NCCL_MIN_NCHANNELS"), "8");
  pt_test_free_profile(p);
  char *text = slurp("l.cfg");
  ck_assert_msg(strstr(text, "comm_channels = 8;") && strstr(text, "NCCL_MIN_NCHANNELS=8"), "%s", text);
  free(text);
}
END_TEST

/* A rank that dies is the candidate's crash; the sweep goes on. */
START_TEST(a_dying_rank_is_a_crash) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAULTS='crash:ring/ll/1@8192'",
                   "--gpus 0-1 --ops 2 --sizes 4K:16K --algos ring --protos ll --channels 1,2 --reps 3 --full --out c.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("c.cfg");
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 8192)->state, PT_PT_CRASH);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 2, 16384)->state, PT_PT_OK);
  pt_test_free_profile(p);
  char *text = slurp("c.cfg");
  ck_assert_msg(strstr(text, "killed by signal 11") || strstr(text, "crash"), "%s", text);
  free(text);
}
END_TEST

/* In place on request (inputs restored before every replay, on the
 * measuring stream: the double runs a legacy-stream device-to-device copy
 * only when something orders it, as CUDA may; every replay checked),
 * buffers from ncclMemAlloc when asked; all recorded. */
START_TEST(in_place_with_nccl_buffers) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAULTS='corrupt#5:ring/simple/2@16384-16384' "
                   "NCCL_GRAPH_REGISTER=0",
                   "--gpus 0-1 --in-place --buffers ncclMemAlloc --warmup 2 --ops 1 --sizes 8K:32K --algos ring "
                   "--protos simple --channels 1,2 --reps 3 --full --out ip.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("ip.cfg");
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 16384)->state, PT_PT_WRONG);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 1, 32768)->state, PT_PT_OK);
  ck_assert_int_eq(point(p, PT_MODE_GRAPH, -1, 0, 0, 32768)->state, PT_PT_OK);
  ck_assert_str_eq(p->prov.buffers, "ncclMemAlloc");
  ck_assert_int_eq(p->prov.graph_register, 0);
  pt_test_free_profile(p);
  char *text = slurp("ip.cfg");
  ck_assert_msg(strstr(text, "placement = \"in-place\"") && strstr(text, "buffers = \"ncclMemAlloc\"") &&
                    strstr(text, "--in-place"), "%s", text);
  free(text);
}
END_TEST

/* Warm-up by time: one timed replay per rank, one count for all from the
 * slowest, then that many replays. With one op per replay the execution
 * numbers are known: 1 (first replay), 2 (timed for the count), 3..count+2
 * (the warm-up), so a wrong result at count+2 is seen by the warm-up check,
 * one at count+1 is overwritten unseen, and all ranks ran alike (no hang). */
START_TEST(warm_up_by_time_is_one_count_for_all_ranks) {
  const struct pt_box *box = pt_box_builtin("consumer-2x");
  /* The timed replay follows the first one without a wait, so its launch
   * is hidden behind the GPU's queue: the time is the collective's. */
  double t = pt_box_true_us(box, PT_ALLREDUCE, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 16384);
  double want = 3.0 * 1000 / (t + PT_GAP_DEFAULT_US); /* --warmup-ms 3; the replay holds a gap */
  ck_assert_msg(want - floor(want) > 0.02 && ceil(want) - want > 0.02, "pick another --warmup-ms: %g", want);
  unsigned count = (unsigned)ceil(want);
  for (int k = 0; k < 2; k++) {
    char *err = NULL, env[256], name[16];
    snprintf(env, sizeof env, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_FAULTS='corrupt#%u:ring/simple/2@16384-16384'",
             count + 1 + (unsigned)k);
    snprintf(name, sizeof name, "wm%d.cfg", k);
    int rc = profile(&err, env, "--gpus 0-1 --warmup 0 --warmup-ms 3 --ops 1 --sizes 16K:16K --algos ring "
                     "--protos simple --channels 2 --reps 2 --full --out %s", name);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    free(err);
    struct pt_profile *p = load(name);
    ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 16384)->state,
                     (k ? PT_PT_WRONG : PT_PT_OK));
    pt_test_free_profile(p);
  }
}
END_TEST

/* Defect 11: what narrows the sweep is said, not left to "unsupported". */
START_TEST(user_nccl_env_and_ll128_are_explained) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x NCCL_ALGO=Ring",
                   "--gpus 0-1 --ops 1 --sizes 4K:8K --algos ring --protos ll,ll128 --channels 1 --reps 2 --full "
                   "--out n.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "warning: NCCL_ALGO=Ring") && strstr(err, "unless NCCL_PROTO enables it"), "%s", err);
  free(err);
  char *text = slurp("n.cfg");
  ck_assert_msg(strstr(text, "NCCL_ALGO=Ring"), "the environment is not recorded");
  free(text);
}
END_TEST

/* Issue 26 §4: --engine applies in the workers what the engine sets
 * (vLLM: NCCL_CUMEM_ENABLE=0; SGLang: also NCCL_NVLS_ENABLE=0), records it
 * in nccl_env and in the resume record; a variable the user set is kept,
 * as the engines keep it. */
START_TEST(engine_settings_are_applied_and_recorded) {
  static const char *const runs[][3] = {
      {"", "vllm", "0"}, {"NCCL_CUMEM_ENABLE=1", "vllm", "1"}, {"", "sglang", "0"}, {"", "none", NULL}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *err = NULL, env[256], out[32];
    snprintf(env, sizeof env, "PTDOUBLE_BOX=consumer-2x %s", runs[i][0]);
    snprintf(out, sizeof out, "e%zu.cfg", i);
    int rc = profile(&err, env,
                     "--gpus 0-1 --ops 1 --sizes 4K:8K --algos ring --protos simple --channels 1 --reps 2 "
                     "--engine %s --out %s", runs[i][1], out);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    free(err);
    struct pt_profile *p = load(out);
    const char *v = pt_profile_env(p, "NCCL_CUMEM_ENABLE");
    ck_assert_int_eq(p->env_recorded, 1);
    if (runs[i][2]) ck_assert_msg(v && !strcmp(v, runs[i][2]), "--engine %s: NCCL_CUMEM_ENABLE %s", runs[i][1], v ? v : "unset");
    else ck_assert_ptr_null(v);
    v = pt_profile_env(p, "NCCL_NVLS_ENABLE");
    if (!strcmp(runs[i][1], "sglang")) ck_assert_msg(v && !strcmp(v, "0"), "NCCL_NVLS_ENABLE %s", v ? v : "unset");
    else ck_assert_ptr_null(v);
    pt_test_free_profile(p);
    char *text = slurp(out);
    char want[32];
    snprintf(want, sizeof want, "--engine %s", runs[i][1]);
    ck_assert_msg(strstr(text, want), "the resume record lacks %s:\n%s", want, text);
    free(text);
  }
  char *err = NULL;
  ck_assert_int_eq(profile(&err, "", "--gpus 0-1 --engine tgi --out x.cfg"), 2);
  ck_assert_msg(strstr(err, "bad --engine 'tgi' (none, vllm or sglang)"), "%s", err);
  free(err);
}
END_TEST

/* --process-model single: a candidate NCCL has disabled (LL128 on PCIe)
 * is unsupported on every rank, not a hang of the ranks that went on. */
START_TEST(single_process_disabled_is_unsupported) {
  char *err = NULL;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x",
                   "--gpus 0-1 --process-model single --both --ops 1 --sizes 8K:8K --algos ring --protos ll,ll128 "
                   "--channels 1 --reps 2 --timeout 2 --full --out s.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("s.cfg");
  for (int m = 0; m < 2; m++) {
    ck_assert_int_eq(point(p, m, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, 8192)->state, PT_PT_OK);
    const struct pt_point *q = point(p, m, NCCL_ALGO_RING, NCCL_PROTO_LL128, 1, 8192);
    ck_assert_msg(!q || q->state == PT_PT_UNSUPPORTED, "ll128: state %d", q ? q->state : -1);
  }
  pt_test_free_profile(p);
}
END_TEST

/* A crash that does not repeat in a fresh worker is measured, as a hang
 * that does not repeat is. */
START_TEST(a_crash_is_retried_once) {
  char *err = NULL, env[1024];
  snprintf(env, sizeof env, "PTDOUBLE_BOX=consumer-2x PTDOUBLE_STATE=%s PTDOUBLE_FAULTS='crashonce:ring/ll/1@8192-8192'",
           dir);
  int rc = profile(&err, env, "--gpus 0-1 --ops 1 --sizes 4K:16K --algos ring --protos ll --channels 1 --reps 2 "
                   "--full --out c.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  struct pt_profile *p = load("c.cfg");
  for (uint64_t n = 4096; n <= 16384; n *= 2)
    ck_assert_int_eq(point(p, PT_MODE_GRAPH, NCCL_ALGO_RING, NCCL_PROTO_LL, 1, n)->state, PT_PT_OK);
  pt_test_free_profile(p);
}
END_TEST

/* One rank: NCCL never asks the tuner (the double does not either), so
 * no forced candidate is measured and nothing is written, instead of
 * forced figures that were NCCL's own choice. */
START_TEST(one_rank_never_asks_the_tuner) {
  char *err = NULL, path[1200];
  struct stat st;
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x",
                   "--gpus 0 --ops 1 --sizes 4K:8K --algos ring --protos ll,simple --channels 1 --reps 2 --full "
                   "--out o.cfg");
  ck_assert_msg(rc == 1 && strstr(err, "NCCL never asks a tuner on a one-rank communicator"), "exit %d: %s", rc, err);
  snprintf(path, sizeof path, "%s/o.cfg", dir);
  ck_assert_int_ne(stat(path, &st), 0);
  free(err);
}
END_TEST

/* A stray PTDOUBLE_DEVICES=1 of the user's does not fail the suite. */
START_TEST(stray_double_variables_are_ignored) {
  char *err = NULL;
  setenv("PTDOUBLE_DEVICES", "1", 1);
  int rc = profile(&err, "PTDOUBLE_BOX=consumer-2x",
                   "--gpus 0-1 --ops 1 --sizes 4K:4K --algos ring --protos ll --channels 1 --reps 2 --full --out d.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_ptr_null(getenv("PTDOUBLE_DEVICES"));
  free(err);
}
END_TEST

/* Ctrl-C while a worker starts (NCCL's init can take minutes) stops the
 * profiler at once, and no worker or rank outlives it. */
START_TEST(ctrl_c_while_the_worker_starts) {
  char cmd[4096];
  clear_stray();
  snprintf(cmd, sizeof cmd,
           "cd %s && TMPDIR=%s PTDOUBLE_BOX=consumer-2x PTDOUBLE_INIT_S=60 exec %s profile --backend nccl --nccl-lib %s "
           "--quiet --warmup-ms 0 --gpus 0-1 --ops 1 --sizes 4K:4K --algos ring --protos ll --channels 1 --out x.cfg "
           "2>x.err", dir, dir, pt_test_cli(), dbl);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 200 && !alive(); i++) nap_ms(20);
  ck_assert_msg(alive(), "no worker started");
  nap_ms(500);
  pt_test_interrupt(pid);
  for (int i = 0; i < 100 && alive(); i++) nap_ms(20);
  ck_assert_msg(!alive(), "a worker or rank outlived the profiler");
  char *said = slurp("x.err");
  ck_assert_msg(strstr(said, "interrupted while the worker started"), "%s", said);
  free(said);
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_double");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, both_modes_both_process_models_warmup_0);
  tcase_add_test(tc, times_are_the_collective_not_the_host);
  tcase_add_test(tc, single_process_disabled_is_unsupported);
  tcase_add_test(tc, a_crash_is_retried_once);
  tcase_add_test(tc, one_rank_never_asks_the_tuner);
  tcase_add_test(tc, stray_double_variables_are_ignored);
  tcase_add_test(tc, ctrl_c_while_the_worker_starts);
  tcase_add_test(tc, every_timed_replay_is_checked);
  tcase_add_test(tc, slow_is_not_hang_and_hang_is_local);
  tcase_add_test(tc, environment_failures_stop_the_sweep);
  tcase_add_test(tc, decisions_match_the_sim_backend);
  tcase_add_test(tc, sigkill_and_ctrl_c_then_resume);
  tcase_add_test(tc, size_lists_workloads_and_channel_env);
  tcase_add_test(tc, a_dying_rank_is_a_crash);
  tcase_add_test(tc, in_place_with_nccl_buffers);
  tcase_add_test(tc, warm_up_by_time_is_one_count_for_all_ranks);
  tcase_add_test(tc, user_nccl_env_and_ll128_are_explained);
  tcase_add_test(tc, engine_settings_are_applied_and_recorded);
  tcase_add_test(tc, the_gap_removes_the_burst_bias);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
