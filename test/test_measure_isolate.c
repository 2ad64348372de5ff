/* The isolated backend (measure/isolate.h) over real `pcie-tune worker
 * --backend sim` processes with injected faults: results identical to the
 * in-process backend, crash / abort / exit / hang / garbage / wrong turned
 * into the right point state with a clear detail, a fresh worker after
 * each failure, timeouts enforced quickly, no zombies or leaked fds, a
 * sweep that carries on, and resume that does not re-run finished points. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/backends.h"
#include "measure/isolate.h"
#include "nccl/common.h"
#include "measure/proto.h"
#include "measure/sweepfile.h"
#include "support/pt_test.h"

#define BOX "gen5-8x-p2p"
#define KB 1024ull

static int devnull = -1;

static void setup(void) { devnull = open("/dev/null", O_WRONLY | O_CLOEXEC); }
static void teardown(void) { close(devnull); }

/* Opens an isolated sim backend; faults are extra "--inject" values. */
static int open_iso(struct pt_backend *b, double timeout_s, const char *const *faults,
                    struct pt_error_rec *e) {
  const char *args[40] = {"--backend", "sim", "--box", BOX, "--seed", "7"};
  size_t k = 6;
  for (size_t i = 0; faults && faults[i]; i++) {
    args[k++] = "--inject";
    args[k++] = faults[i];
  }
  args[k] = NULL;
  struct pt_isolate_opts o = {pt_test_cli(), args, timeout_s, 10, devnull, NULL, 0, 0, 0, NULL, 0};
  return pt_backend_isolated_open(b, &o, e);
}

static struct pt_measure_req req_of(int algo, int proto, int ch, uint64_t nbytes, unsigned reps) {
  struct pt_measure_req r = {PT_ALLREDUCE, PT_MODE_GRAPH, nbytes, 0, algo, proto, ch, 0, reps, 0, 0};
  return r;
}

static int measure(struct pt_backend *b, struct pt_measure_req r, double *s, struct pt_measure_res *res) {
  struct pt_error_rec e = {"", 0, ""};
  int rc = b->measure(b->self, &r, s, res, &e);
  ck_assert_msg(rc == 0, "measure failed: %s", e.msg);
  return res->state;
}

static int count_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  for (struct dirent *de; (de = readdir(d));) n += de->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the DIR's own descriptor */
}

static void assert_no_children(void) {
  errno = 0;
  ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
  ck_assert_int_eq(errno, ECHILD);
}

START_TEST(same_results_as_in_process) {
  struct pt_backend iso, sim;
  struct pt_backend_info a, c;
  struct pt_error_rec e;
  ck_assert_int_eq(open_iso(&iso, 10, NULL, &e), 0);
  ck_assert_int_eq(pt_backend_sim_open(&sim, pt_box_builtin(BOX), 7), 0);
  iso.info(iso.self, &a);
  sim.info(sim.self, &c);
  ck_assert_int_eq(memcmp(&a, &c, sizeof a), 0);
  ck_assert_str_eq(pt_isolate_provenance(&iso), "");
  struct pt_measure_req reqs[] = {
      req_of(NCCL_ALGO_RING, NCCL_PROTO_LL, 2, 64 * KB, 9),
      req_of(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 4, 4096 * KB, PT_SWEEP_MAX_REPS),
      req_of(NCCL_ALGO_TREE, NCCL_PROTO_LL, 1, 8 * KB, 3),
      req_of(NCCL_ALGO_RING, NCCL_PROTO_LL128, 2, 1024 * KB, 5), /* unsupported on this box */
      {PT_ALLGATHER, PT_MODE_EAGER, 256 * KB, 1, 0, 0, 0, 4, 6, 0, 0}, /* NCCL default */
  };
  unsigned seen = 0;
  for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
    double s1[PT_SWEEP_MAX_REPS], s2[PT_SWEEP_MAX_REPS];
    struct pt_measure_res r1, r2;
    measure(&iso, reqs[i], s1, &r1);
    measure(&sim, reqs[i], s2, &r2);
    ck_assert_int_eq(r1.state, r2.state);
    ck_assert_str_eq(r1.detail, r2.detail);
    if (r1.state == PT_PT_OK) /* bit-exact: the protocol moves doubles unchanged */
      ck_assert_int_eq(memcmp(s1, s2, reqs[i].reps * sizeof *s1), 0);
    seen |= 1u << r1.state;
  }
  /* Both kinds of answer crossed the pipe. */
  ck_assert_uint_eq(seen, 1u << PT_PT_OK | 1u << PT_PT_UNSUPPORTED);
  struct pt_isolate_stats st;
  ck_assert_int_eq(pt_isolate_stats(&iso, &st), 0);
  ck_assert_uint_eq(st.spawned, 1);
  ck_assert_int_eq(pt_isolate_stats(&sim, &st), -1);
  ck_assert_ptr_null(pt_isolate_provenance(&sim));
  iso.close(iso.self);
  sim.close(sim.self);
  assert_no_children();
}
END_TEST

/* One fault, one request: the expected state and detail, then a healthy
 * request served by a fresh worker, and nothing left behind. */
static void fault_case(const char *fault, double timeout_s, int want_state, const char *want_detail,
                       double max_s) {
  const char *faults[] = {fault, NULL};
  struct pt_backend b;
  struct pt_error_rec e;
  struct pt_isolate_stats st;
  struct pt_measure_res res;
  double s[PT_SWEEP_MAX_REPS];
  int fds = count_fds();
  ck_assert_msg(open_iso(&b, timeout_s, faults, &e) == 0, "%s", e.msg);
  /* Below the fault's minimum size the candidate is healthy. */
  ck_assert_int_eq(measure(&b, req_of(NCCL_ALGO_RING, NCCL_PROTO_LL, 2, 32 * KB, 3), s, &res), PT_PT_OK);
  pt_isolate_stats(&b, &st);
  pid_t first = st.pid;
  int64_t t0 = pt_proto_now_ms();
  int state = measure(&b, req_of(NCCL_ALGO_RING, NCCL_PROTO_LL, 2, 64 * KB, 3), s, &res);
  double took = (double)(pt_proto_now_ms() - t0) / 1000;
  ck_assert_msg(state == want_state, "%s: state %s (%s), want %s", fault, pt_point_state_name(state),
                res.detail, pt_point_state_name(want_state));
  ck_assert_msg(strstr(res.detail, want_detail), "%s: detail '%s' lacks '%s'", fault, res.detail, want_detail);
  ck_assert_msg(took <= max_s, "%s: took %.2f s, limit %.2f s", fault, took, max_s);
  pt_isolate_stats(&b, &st);
  int dead = want_state == PT_PT_CRASH || want_state == PT_PT_HANG;
  if (dead) {
    /* The failed worker is gone and reaped, not a zombie. */
    ck_assert_int_eq(st.pid, 0);
    ck_assert_int_eq(kill(first, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
  }
  ck_assert_uint_eq(st.crashes, want_state == PT_PT_CRASH);
  ck_assert_uint_eq(st.hangs, want_state == PT_PT_HANG);
  /* Other candidates still measure, on a fresh worker when needed. */
  ck_assert_int_eq(measure(&b, req_of(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 2, 64 * KB, 3), s, &res), PT_PT_OK);
  pt_isolate_stats(&b, &st);
  /* A hang or a crash is tried once more in a fresh worker. */
  ck_assert_uint_eq(st.spawned, dead ? 3 : 1);
  ck_assert_uint_eq(st.retries, dead);
  ck_assert(st.pid > 0 && (dead ? st.pid != first : st.pid == first));
  b.close(b.self);
  ck_assert_int_eq(count_fds(), fds);
  assert_no_children();
}

START_TEST(crash_is_recorded_with_its_signal) {
  fault_case("crash:ring/ll/2@65536", 10, PT_PT_CRASH, "worker killed by signal 11", 5);
}
END_TEST

START_TEST(abort_is_recorded_with_its_signal) {
  fault_case("abort:ring/ll/*@65536", 10, PT_PT_CRASH, "worker killed by signal 6", 5);
}
END_TEST

START_TEST(exit_status_is_recorded) {
  fault_case("exit:*/ll/2@65536", 10, PT_PT_CRASH, "worker exited with status 3", 5);
}
END_TEST

START_TEST(hang_is_killed_at_the_timeout) {
  /* Retried once in a fresh worker (defect 1), so two timeouts. */
  fault_case("hang:ring/ll/2@65536", 1, PT_PT_HANG, "no result or heartbeat within 1.0 s, twice", 4.5);
}
END_TEST

START_TEST(garbage_is_a_protocol_error_not_a_hang) {
  /* The worker hangs after the garbage: only reading the bytes can end
   * this before the 20 s timeout. */
  fault_case("garbage:ring/ll/2@65536", 20, PT_PT_CRASH, "worker protocol error: bad frame magic", 5);
}
END_TEST

START_TEST(wrong_result_keeps_the_worker) {
  fault_case("wrong:ring/ll/2@65536", 10, PT_PT_WRONG, "got 0, want 36", 5);
}
END_TEST

START_TEST(a_worker_that_cannot_start_fails_open) {
  struct pt_backend b;
  struct pt_error_rec e;
  const char *bad_box[] = {"--backend", "sim", "--box", "no-such-box", NULL};
  struct pt_isolate_opts o = {pt_test_cli(), bad_box, 5, 5, devnull, NULL, 0, 0, 0, NULL, 0};
  /* The worker's own reason arrives in its FAIL frame. */
  ck_assert_int_eq(pt_backend_isolated_open(&b, &o, &e), PT_EIO);
  ck_assert_msg(strstr(e.msg, "no-such-box"), "%s", e.msg);
  /* No such binary: the exec fails and the exit status says so. */
  o.exe = "/nonexistent/pcie-tune";
  ck_assert_int_eq(pt_backend_isolated_open(&b, &o, &e), PT_EIO);
  ck_assert_msg(strstr(e.msg, "worker exited with status 127 before it was ready"), "%s", e.msg);
  /* A program that is not a worker: the stream ends without a HELLO. */
  const char *none[] = {NULL};
  o.exe = "/bin/true";
  o.args = none;
  ck_assert_int_eq(pt_backend_isolated_open(&b, &o, &e), PT_EIO);
  ck_assert_msg(strstr(e.msg, "exited with status 0 before it was ready"), "%s", e.msg);
  o.exe = pt_test_cli();
  o.args = bad_box;
  o.timeout_s = 0;
  ck_assert_int_eq(pt_backend_isolated_open(&b, &o, &e), PT_EINVAL);
  assert_no_children();
}
END_TEST

START_TEST(a_worker_that_stays_silent_at_start_is_killed) {
  struct pt_backend b;
  struct pt_error_rec e;
  char *dir = pt_test_tmpdir();
  char *script = pt_test_write(dir, "silent.sh", "#!/bin/sh\nexec sleep 30\n");
  ck_assert_int_eq(chmod(script, 0755), 0);
  struct pt_isolate_opts o = {script, NULL, 5, 1, devnull, NULL, 0, 0, 0, NULL, 0};
  int64_t t0 = pt_proto_now_ms();
  ck_assert_int_eq(pt_backend_isolated_open(&b, &o, &e), PT_EIO);
  ck_assert_msg(strstr(e.msg, "worker not ready after 1.0 s; killed"), "%s", e.msg);
  ck_assert_int_lt(pt_proto_now_ms() - t0, 2500);
  assert_no_children();
  pt_test_rmtree(dir);
  free(script);
  free(dir);
}
END_TEST

/* A backend that logs what the sweep asks of the isolated one, and can
 * interrupt the sweep a few measurements after the first failure. */
#define LOG_MAX 4096
struct rec {
  struct pt_backend inner;
  struct pt_measure_req req[LOG_MAX];
  int state[LOG_MAX];
  size_t n;
  int stop_after_fault; /* 0: never stop; else stop this many calls after one */
  size_t fault_at;
  volatile sig_atomic_t stop;
};

static int rec_info(void *self, struct pt_backend_info *out) {
  struct rec *r = self;
  return r->inner.info(r->inner.self, out);
}

static int rec_measure(void *self, const struct pt_measure_req *q, double *s, struct pt_measure_res *res,
                       struct pt_error_rec *e) {
  struct rec *r = self;
  int rc = r->inner.measure(r->inner.self, q, s, res, e);
  ck_assert_int_lt(r->n, LOG_MAX);
  r->req[r->n] = *q;
  r->state[r->n] = rc ? -1 : res->state;
  if (!r->fault_at && (res->state == PT_PT_CRASH || res->state == PT_PT_HANG)) r->fault_at = r->n + 1;
  r->n++;
  if (r->stop_after_fault && r->fault_at && r->n >= r->fault_at + (size_t)r->stop_after_fault) r->stop = 1;
  return rc;
}

static struct pt_backend rec_backend(struct rec *r) {
  struct pt_backend b = {r, rec_info, rec_measure, NULL};
  return b;
}

static struct pt_cand_spec cands[64];

static void sweep_opts(struct pt_sweep_opts *o, volatile sig_atomic_t *stop) {
  static const int ch[] = {1, 2, 4};
  pt_sweep_opts_default(o);
  o->min_bytes = 4 * KB;
  o->max_bytes = 256 * KB;
  o->reps = 5;
  o->screen_reps = 3;
  o->cands = cands;
  o->ncand = pt_sweep_cands(1u << NCCL_ALGO_TREE | 1u << NCCL_ALGO_RING, 7u, ch, 3, 4, cands, 64);
  o->stop = stop;
}

/* The state the candidate ended with anywhere in the profile (first non-OK). */
static int cand_state(const struct pt_profile *p, int algo, int proto, int ch) {
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  for (size_t c = 0; c < s->ncand; c++) {
    if (s->cand[c].algo != algo || s->cand[c].proto != proto || s->cand[c].channels != ch) continue;
    for (size_t k = 0; k < s->nsizes; k++)
      if (s->cand[c].points[k].state > PT_PT_UNSUPPORTED) return s->cand[c].points[k].state;
    return PT_PT_OK;
  }
  return PT_PT_MISSING;
}

START_TEST(sweep_carries_on_past_faults) {
  const char *faults[] = {"crash:ring/ll/2", "hang:tree/simple/1", "wrong:ring/simple/4", NULL};
  struct rec *r = calloc(1, sizeof *r);
  struct pt_sweep_opts o;
  struct pt_sweep sw = {0};
  struct pt_error_rec e;
  struct pt_profile prof = {0};
  char *reps = NULL;
  ck_assert_int_eq(open_iso(&r->inner, 1, faults, &e), 0);
  sweep_opts(&o, &r->stop);
  ck_assert_int_eq(pt_sweep_init(&sw, &o, &e), 0);
  struct pt_backend b = rec_backend(r);
  int64_t t0 = pt_proto_now_ms();
  ck_assert_msg(pt_sweep_run(&sw, &b, &e) == 0, "%s", e.msg);
  ck_assert_int_lt(pt_proto_now_ms() - t0, 15000);
  ck_assert_int_eq(sw.stopped, 0);
  ck_assert_int_eq(pt_sweep_to_profile(&sw, &prof, &reps), 0);
  ck_assert_int_eq(cand_state(&prof, NCCL_ALGO_RING, NCCL_PROTO_LL, 2), PT_PT_CRASH);
  ck_assert_int_eq(cand_state(&prof, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 1), PT_PT_HANG);
  ck_assert_int_eq(cand_state(&prof, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 4), PT_PT_WRONG);
  ck_assert_int_eq(cand_state(&prof, NCCL_ALGO_RING, NCCL_PROTO_LL, 4), PT_PT_OK);
  /* A failed candidate is dead: asked exactly once. */
  size_t asked[3] = {0};
  for (size_t i = 0; i < r->n; i++) {
    const struct pt_measure_req *q = &r->req[i];
    if (q->is_default) continue;
    asked[0] += q->algo == NCCL_ALGO_RING && q->proto == NCCL_PROTO_LL && q->channels == 2;
    asked[1] += q->algo == NCCL_ALGO_TREE && q->proto == NCCL_PROTO_SIMPLE && q->channels == 1;
    asked[2] += q->algo == NCCL_ALGO_RING && q->proto == NCCL_PROTO_SIMPLE && q->channels == 4;
  }
  ck_assert_uint_eq(asked[0], 1);
  ck_assert_uint_eq(asked[1], 1);
  ck_assert_uint_eq(asked[2], 1);
  struct pt_isolate_stats st;
  pt_isolate_stats(&r->inner, &st);
  ck_assert_uint_eq(st.crashes, 1);
  ck_assert_uint_eq(st.hangs, 1);
  ck_assert_uint_eq(st.spawned, 5); /* the hang and the crash were retried in a fresh worker */
  free(reps);
  pt_profile_release(&prof);
  pt_sweep_release(&sw);
  r->inner.close(r->inner.self);
  free(r);
  assert_no_children();
}
END_TEST

static int same_point(const struct pt_measure_req *a, const struct pt_measure_req *b) {
  return a->coll == b->coll && a->mode == b->mode && a->nbytes == b->nbytes &&
         a->is_default == b->is_default &&
         (a->is_default || (a->algo == b->algo && a->proto == b->proto && a->channels == b->channels));
}

START_TEST(resume_skips_finished_points) {
  const char *faults[] = {"crash:ring/ll/2", NULL};
  struct rec *r1 = calloc(1, sizeof *r1), *r2 = calloc(1, sizeof *r2);
  struct pt_sweep_opts o;
  struct pt_sweep s1 = {0}, s2 = {0};
  struct pt_error_rec e;
  struct pt_backend_info bi;
  struct pt_profile part = {0}, loaded = {0};
  char *dir = pt_test_tmpdir(), path[1100];
  snprintf(path, sizeof path, "%s/partial.cfg", dir);
  /* Run 1: interrupted five measurements after the crash. */
  ck_assert_int_eq(open_iso(&r1->inner, 5, faults, &e), 0);
  r1->stop_after_fault = 5;
  sweep_opts(&o, &r1->stop);
  ck_assert_int_eq(pt_sweep_init(&s1, &o, &e), 0);
  struct pt_backend b1 = rec_backend(r1);
  ck_assert_int_eq(pt_sweep_run(&s1, &b1, &e), 0);
  ck_assert_int_eq(s1.stopped, 1);
  ck_assert_uint_gt(r1->fault_at, 0);
  r1->inner.info(r1->inner.self, &bi);
  ck_assert_int_eq(pt_sweepfile_build(&s1, &bi, "resume-test", "--test", 0, &part), 0);
  ck_assert_int_eq(pt_profile_write(&part, path, 0, &e), 0);
  /* The crash is in the checkpoint like any other point. */
  ck_assert_msg(pt_profile_load(&loaded, path, &e) == 0, "%s", e.msg);
  ck_assert_int_eq(cand_state(&loaded, NCCL_ALGO_RING, NCCL_PROTO_LL, 2), PT_PT_CRASH);
  /* Run 2: seeded from the file, runs to the end. */
  ck_assert_int_eq(open_iso(&r2->inner, 5, faults, &e), 0);
  sweep_opts(&o, &r2->stop);
  ck_assert_int_eq(pt_sweep_init(&s2, &o, &e), 0);
  ck_assert_msg(pt_sweepfile_seed(&s2, path, &e) == 0, "%s", e.msg);
  struct pt_backend b2 = rec_backend(r2);
  ck_assert_int_eq(pt_sweep_run(&s2, &b2, &e), 0);
  ck_assert_int_eq(s2.stopped, 0);
  ck_assert_uint_gt(r2->n, 0);
  for (size_t i = 0; i < r2->n; i++) {
    const struct pt_measure_req *q = &r2->req[i];
    ck_assert_msg(q->is_default || !(q->algo == NCCL_ALGO_RING && q->proto == NCCL_PROTO_LL && q->channels == 2),
                  "the crashed candidate ran again");
    for (size_t j = 0; j < r1->n; j++) {
      const struct pt_measure_req *p = &r1->req[j];
      if (!same_point(p, q)) continue;
      /* Finished in run 1: a failure, or all the repetitions run 2 wants. */
      ck_assert_msg(r1->state[j] == PT_PT_OK || r1->state[j] == PT_PT_UNSUPPORTED,
                    "a point that ended %s ran again", pt_point_state_name(r1->state[j]));
      ck_assert_msg(r1->state[j] != PT_PT_OK || p->first_rep + p->reps < q->first_rep + q->reps,
                    "point %llu B asked for %u reps again after %u", (unsigned long long)q->nbytes,
                    q->first_rep + q->reps, p->first_rep + p->reps);
    }
  }
  pt_profile_release(&loaded);
  pt_profile_release(&part);
  pt_sweep_release(&s1);
  pt_sweep_release(&s2);
  r1->inner.close(r1->inner.self);
  r2->inner.close(r2->inner.self);
  free(r1);
  free(r2);
  pt_test_rmtree(dir);
  free(dir);
  assert_no_children();
}
END_TEST

/* Defect 1: the deadline grows with what one request must run, estimated
 * from the slowest candidate at the largest size measured below it. */
START_TEST(deadline_scales_with_size_and_ops) {
  const uint64_t sizes[] = {1 << 20, 64 << 20};
  const double slowest[] = {300.0, 10000.0};
  ck_assert_double_eq_tol(pt_isolate_window_s(60, 20, 5, 0, 8, sizes, slowest, 2), 60, 1e-9);
  ck_assert_double_eq_tol(pt_isolate_window_s(60, 20, 5, 0, 1 << 20, sizes, slowest, 2), 60 + 4 * 20 * 7 * 300e-6, 1e-9);
  /* 256 MiB from 64 MiB: x4, 40 ms per op; 20 ops, 5 + 2 replays before a heartbeat. */
  ck_assert_double_eq_tol(pt_isolate_window_s(60, 20, 5, 0, 256 << 20, sizes, slowest, 2), 60 + 4 * 20 * 7 * 0.04, 1e-9);
  ck_assert_double_eq_tol(pt_isolate_window_s(60, 20, 5, 0, 256 << 20, sizes, slowest, 0), 60, 1e-9);
  ck_assert_double_eq_tol(pt_isolate_window_s(60, 20, 5, 100, 8, sizes, slowest, 0), 60.2, 1e-9);
}
END_TEST

int main(void) {
  Suite *s = suite_create("isolate");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, same_results_as_in_process);
  tcase_add_test(tc, crash_is_recorded_with_its_signal);
  tcase_add_test(tc, abort_is_recorded_with_its_signal);
  tcase_add_test(tc, exit_status_is_recorded);
  tcase_add_test(tc, hang_is_killed_at_the_timeout);
  tcase_add_test(tc, deadline_scales_with_size_and_ops);
  tcase_add_test(tc, garbage_is_a_protocol_error_not_a_hang);
  tcase_add_test(tc, wrong_result_keeps_the_worker);
  tcase_add_test(tc, a_worker_that_cannot_start_fails_open);
  tcase_add_test(tc, a_worker_that_stays_silent_at_start_is_killed);
  tcase_add_test(tc, sweep_carries_on_past_faults);
  tcase_add_test(tc, resume_skips_finished_points);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
