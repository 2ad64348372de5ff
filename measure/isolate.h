/*
 * The isolated backend: a struct pt_backend (include/pcie/sweep.h) whose
 * measure() forwards each request to a worker process, `pcie-tune worker
 * ARGS...` (cli/worker.c), over the protocol of measure/proto.h. It does not
 * know what the worker measures with (simulated box or GPUs).
 *
 * Outcomes the worker cannot report itself are decided here, from facts
 * only: the worker died (signal or exit status) -> PT_PT_CRASH with
 * "worker killed by signal 11 (...)"; no result or heartbeat within the
 * deadline (pt_isolate_window_s) -> the worker's process group is killed
 * and the request is retried once in a fresh worker; a second timeout is
 * PT_PT_HANG; bytes that
 * are not the protocol -> the worker is killed, PT_PT_CRASH with "worker
 * protocol error: ...". After any of these the next request starts a fresh
 * worker. A FAIL frame (the worker's backend can no longer measure, e.g.
 * no GPU) or a worker that cannot start makes measure() return a negative
 * code, which stops the sweep. Nothing parses the worker's stderr.
 *
 * Every worker runs in its own process group (Ctrl-C in the terminal
 * reaches only the profiler, which then stops cleanly), holds none of the
 * parent's other descriptors, and is reaped by the time measure() or
 * close() returns: no zombies, no leaked descriptors. Not thread-safe: one
 * thread drives one isolated backend.
 */
#ifndef PCIE_CLI_ISOLATE_H
#define PCIE_CLI_ISOLATE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "pcie/sweep.h"

struct pt_isolate_opts {
  const char *exe;              /* the pcie-tune binary; NULL = /proc/self/exe */
  const char *const *args;      /* worker arguments after "worker", NULL-terminated */
  double timeout_s;             /* per request, > 0 */
  double start_timeout_s;       /* from exec to HELLO (GPU/NCCL init is slow), > 0 */
  int stderr_fd;                /* the worker's stderr; -1 = inherit ours */
  /* When set (asynchronously, e.g. by SIGINT), a measurement in progress is
   * abandoned: the worker is killed and the point stays PT_PT_MISSING, so
   * the sweep stops at once and --resume measures it again. May be NULL. */
  volatile sig_atomic_t *stop;
  /* Deadline scaling (docs/gpu.md, "Deadlines"): collectives per launch and
   * untimed launches per request; 0 = the worker is not a GPU one and
   * timeout_s alone applies. */
  unsigned ops, warmup;
  double warmup_ms; /* warm-up by time on top of the counted warm-up */
  /* A directory the workers write into (NCCL logs), removed with all it
   * holds at close, also what killed workers left there. May be NULL. */
  const char *scratch;
  double gap_us; /* compute before each timed collective (measure/gpu_gap.h), us */
};

/* The time the isolated backend allows a request before the first
 * heartbeat, and between heartbeats: timeout_s, plus twice the warm-up by
 * time, plus four times the estimated time of one untimed-and-timed batch,
 * ops * (warmup + 2) collectives, each estimated from the slowest candidate
 * measured at the largest size m <= nbytes, scaled by nbytes / m (0 when
 * nothing was measured yet). sizes/slowest_us hold n measured sizes. In
 * seconds. */
double pt_isolate_window_s(double timeout_s, unsigned ops, unsigned warmup, double warmup_ms, uint64_t nbytes,
                           const uint64_t *sizes, const double *slowest_us, size_t n);

struct pt_isolate_stats {
  unsigned spawned;   /* workers started, the first one included */
  unsigned crashes;   /* PT_PT_CRASH decided here (death or protocol error) */
  unsigned hangs;     /* PT_PT_HANG: timeouts, each after a retry in a fresh worker */
  unsigned retries;   /* timeouts retried once in a fresh worker */
  unsigned beats;     /* heartbeats received */
  pid_t pid;          /* the live worker, 0 when none */
};

/* Starts the first worker and waits for its HELLO, so that info() and the
 * provenance are known before the sweep begins. The options are copied.
 * Returns 0, PT_EINVAL for bad options, PT_ENOMEM, or PT_EIO with *err
 * saying why the worker did not start (its FAIL message when it sent one).
 * The caller releases b with b->close(b->self). */
int pt_backend_isolated_open(struct pt_backend *b, const struct pt_isolate_opts *o,
                             struct pt_error_rec *err);

/* The provenance text the worker sent in HELLO: a libconfig group body
 * (possibly "") owned by the backend, valid until close. NULL when b is not
 * an isolated backend. */
const char *pt_isolate_provenance(const struct pt_backend *b);

/* Counters for tests and progress reports. Returns -1 when b is not an
 * isolated backend. */
int pt_isolate_stats(const struct pt_backend *b, struct pt_isolate_stats *out);

#endif
