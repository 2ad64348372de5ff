/* pcie-tune profile / show / simulate as a user runs them: output, exit
 * codes (0 ok, 1 failed, 2 usage), no overwrite without --force, and
 * --resume after an interrupted sweep. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/pt_test.h"

static char *dir;

static int run(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **out, char **err, const char *fmt, ...) {
  char args[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  return pt_test_cli_run(dir, 300, out, err, "%s", args);
}

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static void expect(int want, const char *needle_err, const char *args) {
  char *out = NULL, *err = NULL;
  int rc = run(&out, &err, "%s", args);
  ck_assert_msg(rc == want, "'%s': exit %d, want %d; stderr: %s", args, rc, want, err);
  if (needle_err) ck_assert_msg(strstr(err, needle_err) != NULL, "'%s': stderr '%s' lacks '%s'", args, err, needle_err);
  free(out);
  free(err);
}

static char *slurp(const char *name) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *buf = calloc(1, 1 << 20);
  fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  return buf;
}

START_TEST(bad_arguments_exit_2_with_a_clear_message) {
  expect(2, "missing --out", "profile --backend sim --box gen5-8x-p2p");
  expect(2, "unknown option '--bogus'", "profile --bogus");
  expect(2, "bad --sizes '8:x'", "profile --backend sim --box gen5-8x-p2p --out p.cfg --sizes 8:x");
  expect(2, "bad --sizes '1M:8'", "profile --backend sim --box gen5-8x-p2p --out p.cfg --sizes 1M:8");
  expect(2, "bad --protos 'll256'", "profile --backend sim --box gen5-8x-p2p --out p.cfg --protos ll256");
  expect(2, "bad --algos 'nvls'", "profile --backend sim --box gen5-8x-p2p --out p.cfg --algos nvls");
  expect(2, "bad --reps '0'", "profile --backend sim --box gen5-8x-p2p --out p.cfg --reps 0");
  expect(2, "--seed needs a value (--seed N)", "profile --backend sim --box gen5-8x-p2p --out p.cfg --seed");
  expect(2, "unknown backend 'gpu' (nccl or sim)", "profile --backend gpu --box x --out p.cfg");
  expect(2, "missing --gpus LIST", "profile --backend nccl --out p.cfg");
  expect(2, "--box, --isolate and --inject are for --backend sim", "profile --backend nccl --gpus 0 --box x --out p.cfg");
  expect(2, "--inject needs --isolate", "profile --backend sim --box gen5-8x-p2p --out p.cfg --inject crash:ring/ll/4");
  expect(2, "bad --inject", "profile --backend sim --box gen5-8x-p2p --isolate --out p.cfg --inject melt:ring/ll/4");
  expect(2, "--gpus is for --backend nccl", "profile --backend sim --box gen5-8x-p2p --gpus 0 --out p.cfg");
  expect(2, "bad --timeout '0'", "profile --backend sim --box gen5-8x-p2p --isolate --timeout 0 --out p.cfg");
  expect(2, "unknown box 'nope'", "profile --backend sim --box nope --out p.cfg");
  expect(2, "above the target's 4 channels", "profile --backend sim --box gen5-8x-p2p --out p.cfg --channels 8,16");
  expect(2, "missing PROFILE", "show");
  expect(2, "bad --collective 'allsum' (broadcast, reduce, allgather, reducescatter or allreduce)",
         "show p.cfg --collective allsum");
  expect(2, "missing --box", "simulate p.cfg");
  expect(2, "bad --tokens", "simulate p.cfg --box gen5-8x-p2p --tokens 1,x");
  /* --ops/--warmup take what the nccl backend accepts, not more. */
  expect(2, "bad --ops '5000' (1..1000)", "profile --backend nccl --gpus 0 --out p.cfg --ops 5000");
  expect(2, "bad --warmup '1001' (0..1000)", "profile --backend nccl --gpus 0 --out p.cfg --warmup 1001");
  /* The resume record is a list of words: a value with a space, or an
   * empty one, would come back as a different sweep. */
  expect(2, "--box 'my box.cfg' contains whitespace", "profile --backend sim --box 'my box.cfg' --out p.cfg");
  expect(2, "--name 'a b' contains whitespace", "profile --backend sim --box gen5-8x-p2p --name 'a b' --out p.cfg");
  expect(2, "--name '' is empty", "profile --backend sim --box gen5-8x-p2p --name '' --out p.cfg");
  expect(2, "--gpus '0 1' contains whitespace", "profile --backend nccl --gpus '0 1' --out p.cfg");
  /* Too long for the record: refused, never cut short. */
  char longbox[1200], cmd[1400];
  memset(longbox, 'b', sizeof longbox - 1);
  longbox[sizeof longbox - 1] = 0;
  snprintf(cmd, sizeof cmd, "profile --backend sim --box %s --out p.cfg", longbox);
  expect(2, "do not fit in the 1024-byte resume record", cmd);
  /* Lists longer than the parser's buffer are refused, not truncated. */
  char longch[400] = "1";
  for (size_t k = strlen(longch); k + 2 < sizeof longch; k += 2) strcat(longch, ",1");
  snprintf(cmd, sizeof cmd, "profile --backend sim --box gen5-8x-p2p --out p.cfg --channels %s", longch);
  expect(2, "bad --channels", cmd);
  struct stat st;
  ck_assert_int_ne(stat("p.cfg", &st), 0); /* nothing was written */
}
END_TEST

START_TEST(help_exits_0) {
  const char *cmds[] = {"--help", "profile --help", "show --help", "simulate --help"};
  for (size_t i = 0; i < 4; i++) {
    char *out = NULL, *err = NULL;
    ck_assert_int_eq(run(&out, &err, "%s", cmds[i]), 0);
    ck_assert_msg(strstr(out, "usage: pcie-tune") != NULL, "%s: %s", cmds[i], out);
    free(out);
    free(err);
  }
}
END_TEST

START_TEST(profile_show_simulate) {
  char *out = NULL, *err = NULL, path[1100];
  ck_assert_int_eq(run(&out, &err, "profile --backend sim --box gen5-8x-dual-misdetect --out p.cfg"), 0);
  ck_assert_ptr_nonnull(strstr(err, "wrote p.cfg"));
  free(out), free(err);
  /* Never overwritten without --force. */
  expect(1, "p.cfg: already exists; pass --force to overwrite it", "profile --backend sim --box gen5-8x-dual-misdetect --out p.cfg");
  expect(0, NULL, "profile --backend sim --box gen5-8x-dual-misdetect --out p.cfg --force --quiet");

  ck_assert_int_eq(run(&out, &err, "show p.cfg --svg p.svg"), 0);
  ck_assert_ptr_nonnull(strstr(out, "allreduce, graph mode"));
  /* The NCCL view of the simulated box is labelled (derived, not typed). */
  ck_assert_ptr_nonnull(strstr(out, "measured with backend sim, NCCL 2.30 (sim, derived view)"));
  /* 64 KiB sits in an interval where LL beats NCCL's mis-detected Simple. */
  char *line = strstr(out, "ring/ll/2"); /* the derived communicator has 2 channels */
  ck_assert_ptr_nonnull(line);
  ck_assert_ptr_nonnull(strstr(out, "x  "));
  free(out), free(err);
  snprintf(path, sizeof path, "%s/p.svg", dir);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char svg[65536];
  size_t n = fread(svg, 1, sizeof svg - 1, f);
  svg[n] = 0;
  fclose(f);
  ck_assert_ptr_nonnull(strstr(svg, "<svg"));
  ck_assert_ptr_nonnull(strstr(svg, "NCCL default"));
  ck_assert_ptr_nonnull(strstr(svg, "latency (\u00b5s, log scale)"));
  ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
  /* The chart obeys --force like every other output; refused means untouched. */
  char *keep = pt_test_write(dir, "keep.svg", "mine\n");
  ck_assert_ptr_nonnull(keep);
  expect(1, "keep.svg: already exists; pass --force", "show p.cfg --svg keep.svg");
  char *mine = slurp("keep.svg");
  ck_assert_str_eq(mine, "mine\n");
  free(mine);
  expect(0, NULL, "show p.cfg --svg keep.svg --force");
  mine = slurp("keep.svg");
  ck_assert_ptr_nonnull(strstr(mine, "</svg>"));
  free(mine), free(keep);
  expect(2, "--force only applies to --svg", "show p.cfg --force");

  ck_assert_int_eq(run(&out, &err, "show p.cfg --json"), 0);
  ck_assert_ptr_nonnull(strstr(out, "\"intervals\": ["));
  ck_assert_ptr_nonnull(strstr(out, "\"speedup\": "));
  free(out), free(err);
  expect(1, "applies to 8 ranks, not 4", "show p.cfg --nranks 4");
  expect(1, "no reduce data", "show p.cfg --collective reduce");
  expect(1, "nope.cfg", "show nope.cfg");

  ck_assert_int_eq(run(&out, &err, "simulate p.cfg --box gen5-8x-dual-misdetect"), 0);
  ck_assert_ptr_nonnull(strstr(out, "tokens=4"));
  ck_assert_ptr_nonnull(strstr(out, "tokens=128"));
  ck_assert_ptr_nonnull(strstr(out, "total"));
  /* tokens=4 (56 KiB): NCCL runs Simple, the plugin LL, about twice as fast. */
  char *t4 = strstr(out, "tokens=4");
  ck_assert_ptr_nonnull(strstr(t4, "ring/simple"));
  double d, t, o, sp;
  char *us = strstr(t4, " \u00b5s");
  ck_assert_ptr_nonnull(us);
  while (us > t4 && us[-1] != ' ') us--;
  ck_assert_int_eq(sscanf(us, "%lf \u00b5s %lf \u00b5s %lf \u00b5s %lfx", &d, &t, &o, &sp), 4);
  ck_assert_double_gt(sp, 1.5);
  ck_assert_double_le(t / o, 1.05);
  free(out), free(err);
  char *w = pt_test_write(dir, "w.txt", "# a workload\nstep1 allreduce 65536 10\nstep1 allgather 1024 2\nstep2 allreduce 8 1\n");
  ck_assert_ptr_nonnull(w);
  free(w);
  ck_assert_int_eq(run(&out, &err, "simulate p.cfg --box gen5-8x-dual-misdetect --workload w.txt"), 0);
  ck_assert_ptr_nonnull(strstr(out, "step2"));
  free(out), free(err);
  w = pt_test_write(dir, "bad.txt", "step1 allreduce 65536 10\nstep1 allsum 10 1\n");
  ck_assert_ptr_nonnull(w);
  free(w);
  expect(1, "bad.txt:2: unknown collective", "simulate p.cfg --box gen5-8x-dual-misdetect --workload bad.txt");
  /* A line longer than the reader's buffer is named, not split in two:
   * here the split would turn the comment's tail into a workload line. */
  char longline[700] = "step1 allreduce 65536 10 #";
  memset(longline + strlen(longline), 'x', 600);
  strcpy(longline + 626, " step2 allreduce 8 1\n");
  w = pt_test_write(dir, "long.txt", longline);
  ck_assert_ptr_nonnull(w);
  free(w);
  expect(1, "long.txt:1: line longer than 510 bytes", "simulate p.cfg --box gen5-8x-dual-misdetect --workload long.txt");
  expect(1, "cannot load the plugin", "simulate p.cfg --box gen5-8x-dual-misdetect --plugin /nonexistent.so");
}
END_TEST


START_TEST(resume_continues_an_interrupted_sweep) {
  char *out = NULL, *err = NULL;
  const char *opts = "--backend sim --box gen5-8x-ll128 --sizes 8:64M --seed 3";
  /* Uninterrupted reference. */
  ck_assert_int_eq(run(&out, &err, "profile %s --out ref.cfg --quiet", opts), 0);
  free(out), free(err);
  /* Stopped after 150 repetitions: a valid partial profile, exit 1. */
  ck_assert_int_eq(run(&out, &err, "profile %s --out p.cfg --budget 150", opts), 1);
  ck_assert_ptr_nonnull(strstr(err, "partial profile written to p.cfg"));
  ck_assert_ptr_nonnull(strstr(err, "--resume --out p.cfg"));
  free(out), free(err);
  char *partial = slurp("p.cfg");
  ck_assert_ptr_nonnull(strstr(partial, "state = \"partial\""));
  free(partial);
  /* A partial sweep is not usable yet: check says so and fails. */
  expect(1, "partial sweep", "check p.cfg");
  /* Options other than --out/--budget/--quiet are refused on resume. */
  expect(2, "--resume takes the sweep's options", "profile --resume --out p.cfg --box gen5-8x-p2p");
  /* Resume twice more with small budgets, then to the end. */
  expect(1, "budget reached", "profile --resume --out p.cfg --budget 200");
  ck_assert_int_eq(run(&out, &err, "profile --resume --out p.cfg"), 0);
  free(out), free(err);
  expect(1, "is complete; nothing to resume", "profile --resume --out p.cfg");
  /* A record longer than the reader holds is an error naming file:line,
   * never a shortened sweep (here: one without its --name). */
  ck_assert_int_eq(run(&out, &err, "profile %s --out long.cfg --budget 150", opts), 1);
  free(out), free(err);
  char *l = slurp("long.cfg"), *at = strstr(l, " --name ");
  ck_assert_ptr_nonnull(at);
  char *edited = calloc(1, strlen(l) + 1200);
  memcpy(edited, l, (size_t)(at - l));
  memset(edited + (at - l), ' ', 1100);
  strcat(edited, at);
  char *w = pt_test_write(dir, "long.cfg", edited);
  ck_assert_ptr_nonnull(w);
  free(w), free(edited), free(l);
  ck_assert_int_eq(run(&out, &err, "profile --resume --out long.cfg"), 1);
  ck_assert_msg(strstr(err, "long.cfg:") && strstr(err, "sweep record args longer than 1023 bytes"), "%s", err);
  free(out), free(err);
  /* The resumed sweep measured the same grid and takes the same decisions. */
  char *a = slurp("p.cfg"), *b = slurp("ref.cfg");
  ck_assert_ptr_nonnull(strstr(a, "state = \"complete\""));
  char *sa = strstr(a, "sizes = ["), *sb = strstr(b, "sizes = [");
  ck_assert_ptr_nonnull(sa);
  ck_assert_int_eq(strncmp(sa, sb, (size_t)(strchr(sb, ']') - sb)), 0);
  free(a), free(b);
  char *o1 = NULL, *o2 = NULL;
  ck_assert_int_eq(run(&o1, &err, "simulate p.cfg --box gen5-8x-ll128"), 0);
  free(err);
  ck_assert_int_eq(run(&o2, &err, "simulate ref.cfg --box gen5-8x-ll128"), 0);
  free(err);
  ck_assert_str_eq(strstr(o1, "step"), strstr(o2, "step"));
  free(o1), free(o2);
}
END_TEST

/* Faults in isolated workers end up in the profile as states, and the
 * plugin never chooses those candidates. */
START_TEST(isolated_faults_are_recorded) {
  char *out = NULL, *err = NULL;
  int rc = run(&out, &err,
               "profile --backend sim --box gen5-8x-p2p --isolate --timeout 1 --sizes 64K:1M --full "
               "--algos ring --protos ll,simple --channels 2,4 --reps 3 --out f.cfg "
               "--inject crash:ring/ll/4@262144 --inject hang:ring/simple/4@1048576 --inject wrong:ring/ll/2@65536 --quiet");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(out);
  free(err);
  ck_assert_int_eq(run(&out, &err, "check f.cfg"), 0);
  free(out);
  free(err);
  char *path = NULL, *text = NULL;
  ck_assert(asprintf(&path, "%s/f.cfg", dir) > 0);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t len = 0;
  ck_assert_int_ne(getdelim(&text, &len, '\0', f), -1);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(text, "\"crash\""));
  ck_assert_ptr_nonnull(strstr(text, "\"hang\""));
  ck_assert_ptr_nonnull(strstr(text, "\"wrong\""));
  /* show: none of the three poisoned candidates is chosen or ranked; each is
   * listed as excluded, with the reason and the size. */
  ck_assert_int_eq(run(&out, &err, "show f.cfg"), 0);
  char *excl = strstr(out, "excluded:");
  ck_assert_ptr_nonnull(excl);
  excl[-1] = '\0'; /* the table above, the exclusions below */
  ck_assert_ptr_null(strstr(out, "ring/ll/4"));
  ck_assert_ptr_null(strstr(out, "ring/simple/4"));
  ck_assert_ptr_null(strstr(out, "ring/ll/2"));
  ck_assert_ptr_nonnull(strstr(excl, "excluded: ring/ll/4: crash at 256 KiB"));
  ck_assert_ptr_nonnull(strstr(excl, "excluded: ring/simple/4: hang at 1 MiB"));
  ck_assert_ptr_nonnull(strstr(excl, "excluded: ring/ll/2: wrong at 64 KiB"));
  free(out);
  free(err);
  free(text);
  free(path);
}
END_TEST

/* Only this build's workers: another checkout's suites may be running the
 * same sweep (same seed) on the machine at the same time. */
static int workers_alive(const char *seed) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "pgrep -f '^%s worker .*--seed %s' >/dev/null", pt_test_cli(), seed);
  return system(cmd) == 0;
}

/* Starts an isolated sim sweep (checkpoint after every measurement) whose
 * workers hang from 1 MiB on, and waits until a checkpoint exists and a
 * worker is alive. Returns the profiler's pid. */
static pid_t start_hanging_sweep(const char *seed, unsigned timeout_s, const char *out) {
  char cmd[4096], *path = NULL;
  snprintf(cmd, sizeof cmd,
           "cd %s && exec %s profile --backend sim --box gen5-8x-p2p --isolate --timeout %u --seed %s "
           "--sizes 8:4M --algos ring --protos ll,simple --channels 1,2,4 --checkpoint 0 --quiet "
           "--inject hang:*/*/*@1048576 --out %s 2>%s.err",
           dir, pt_test_cli(), timeout_s, seed, out, out);
  ck_assert(asprintf(&path, "%s/%s", dir, out) > 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  struct stat st;
  int seen = 0;
  for (int i = 0; i < 400 && !seen; i++) { /* up to 20 s for the first checkpoint */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    seen = stat(path, &st) == 0 && workers_alive(seed);
  }
  free(path);
  ck_assert_msg(seen, "no checkpoint appeared");
  return pid;
}

/* A profiler killed outright (SIGKILL: no handler runs) leaves the last
 * checkpoint, a valid partial profile, and no worker behind; --resume
 * finishes it. */
START_TEST(checkpoint_survives_sigkill) {
  pid_t pid = start_hanging_sweep("9137", 3, "k.cfg");
  ck_assert_int_eq(kill(pid, SIGKILL), 0);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFSIGNALED(status));
  for (int i = 0; i < 100 && workers_alive("9137"); i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  ck_assert_msg(!workers_alive("9137"), "a worker outlived the killed profiler");
  char *out = NULL, *err = NULL;
  ck_assert_int_eq(run(&out, &err, "check k.cfg"), 1); /* valid, but a partial sweep */
  ck_assert_ptr_nonnull(strstr(err, "partial sweep"));
  free(out);
  free(err);
  int rc = run(&out, &err, "profile --resume --out k.cfg --quiet");
  ck_assert_msg(rc == 0, "resume exit %d: %s", rc, err);
  free(out);
  free(err);
  rc = run(&out, &err, "profile --resume --out k.cfg");
  ck_assert_int_eq(rc, 1);
  ck_assert_ptr_nonnull(strstr(err, "is complete; nothing to resume"));
  free(out);
  free(err);
}
END_TEST

/* Ctrl-C while a worker is busy stops at once: the measurement in progress
 * is abandoned (never recorded as a hang), the partial profile is written
 * and the exit status is 130. */
START_TEST(sigint_interrupts_a_measurement) {
  char *path = NULL;
  ck_assert(asprintf(&path, "%s/i.cfg", dir) > 0);
  pid_t pid = start_hanging_sweep("9138", 60, "i.cfg");
  struct timespec pause = {1, 0};
  nanosleep(&pause, NULL); /* well inside the 60 s timeout */
  pt_test_interrupt(pid);
  ck_assert(!workers_alive("9138"));
  char *out = NULL, *err = NULL, *text = NULL;
  ck_assert_int_eq(run(&out, &err, "check i.cfg"), 1); /* valid, but a partial sweep */
  ck_assert_ptr_nonnull(strstr(err, "partial sweep"));
  free(out);
  free(err);
  FILE *f = fopen(path, "r");
  size_t len = 0;
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ne(getdelim(&text, &len, '\0', f), -1);
  fclose(f);
  ck_assert_ptr_null(strstr(text, "\"hang\""));
  ck_assert_ptr_nonnull(strstr(text, "state = \"partial\""));
  free(text);
  /* The profiler's stderr went to a file (make test stays quiet): it
   * says where the partial profile is and how to continue. */
  text = NULL;
  len = 0;
  char *errpath = NULL;
  ck_assert(asprintf(&errpath, "%s.err", path) > 0);
  ck_assert_ptr_nonnull(f = fopen(errpath, "r"));
  ck_assert_int_ne(getdelim(&text, &len, '\0', f), -1);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(text, "pcie-tune profile: interrupted after "));
  ck_assert_ptr_nonnull(strstr(text, "continue with: pcie-tune profile --resume --out i.cfg"));
  free(text);
  free(errpath);
  free(path);
}
END_TEST

/* profile --workload reads the file with simulate's reader
 * (measure/workload.c): the same K/M/G sizes, the same checks with file
 * and line, and a FIFO refused at once instead of blocking the profiler. */
START_TEST(workload_files_read_as_simulate_reads_them) {
  static const char sweep[] = "profile --backend sim --box gen4-4x-shm --full --channels 1 --reps 1 --quiet";
  char *args = NULL;
  free(pt_test_write(dir, "w.txt", "# verify step\ns allreduce 14K 3\ns allreduce 8KiB 1\n"));
  ck_assert(asprintf(&args, "%s --workload w.txt --out p.cfg", sweep) > 0);
  expect(0, NULL, args);
  free(args);
  char *text = slurp("p.cfg");
  ck_assert_msg(strstr(text, "8192L, 14336L") != NULL, "p.cfg lacks the workload's sizes:\n%.400s", text);
  free(text);
  free(pt_test_write(dir, "c.txt", "s allreduce 8 0\n"));
  ck_assert(asprintf(&args, "%s --workload c.txt --out c.cfg", sweep) > 0);
  expect(2, "c.txt:1: COUNT must be 1..1000000", args);
  free(args);
  free(pt_test_write(dir, "u.txt", "s allreduce 8 1\ns allsum 8 1\n"));
  ck_assert(asprintf(&args, "%s --workload u.txt --out u.cfg", sweep) > 0);
  expect(2, "u.txt:2: unknown collective 'allsum' (", args);
  free(args);
  char fifo[1100];
  snprintf(fifo, sizeof fifo, "%s/fifo.txt", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert(asprintf(&args, "%s --workload fifo.txt --out f.cfg", sweep) > 0);
  expect(2, "--workload: fifo.txt", args);
  free(args);
}
END_TEST

/* --resume may give a longer --timeout (a sweep whose points hung on a
 * slow box); the record keeps it for the next --resume. Where no worker
 * runs, it is refused. */
START_TEST(resume_takes_a_longer_timeout) {
  static const char sweep[] = "profile --backend sim --box gen4-4x-shm --isolate --timeout 1 --channels 1,2 "
                              "--sizes 8:64K --reps 2 --budget 10 --quiet";
  char *args = NULL;
  ck_assert(asprintf(&args, "%s --out t.cfg", sweep) > 0);
  expect(1, "budget reached", args);
  free(args);
  expect(1, "budget reached", "profile --resume --out t.cfg --timeout 7 --budget 20 --quiet");
  char *text = slurp("t.cfg");
  ck_assert_msg(strstr(text, "--isolate --timeout 7") != NULL, "the record lacks the new timeout:\n%.600s", text);
  free(text);
  expect(0, NULL, "profile --resume --out t.cfg --quiet");
  expect(1, "budget reached", "profile --backend sim --box gen4-4x-shm --channels 1 --reps 2 --budget 4 --quiet --out u.cfg");
  expect(2, "--timeout applies to sweeps in workers", "profile --resume --out u.cfg --timeout 7");
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_profile");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, bad_arguments_exit_2_with_a_clear_message);
  tcase_add_test(tc, help_exits_0);
  tcase_add_test(tc, profile_show_simulate);
  tcase_add_test(tc, workload_files_read_as_simulate_reads_them);
  tcase_add_test(tc, resume_continues_an_interrupted_sweep);
  tcase_add_test(tc, resume_takes_a_longer_timeout);
  tcase_add_test(tc, isolated_faults_are_recorded);
  tcase_add_test(tc, checkpoint_survives_sigkill);
  tcase_add_test(tc, sigint_interrupts_a_measurement);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
