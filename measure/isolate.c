/*
 * The isolated backend (measure/isolate.h): worker start-up, request/response,
 * timeout, and turning a dead worker into a point state. Owns the worker
 * processes; the frames themselves are measure/proto.c's.
 */
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "isolate.h"
#include "proto.h"

/* How long a worker that closed its end, or was asked to leave, gets to
 * exit on its own before it is killed. */
#define GRACE_MS 2000

#define MAX_SIZES 128

/* How long a killed worker's ranks get to leave: their GPU contexts live
 * until they are gone, and in exclusive compute mode the next worker
 * cannot open a GPU a dying rank still holds. */
#define LINGER_MS 30000

struct iso {
  char **argv; /* exe, "worker", args..., NULL */
  int64_t timeout_ms, start_ms;
  unsigned ops, warmup;
  double warmup_ms, gap_us;
  char *scratch;
  size_t nsizes; /* slowest OK median per measured size, for deadlines */
  uint64_t sizes[MAX_SIZES];
  double slowest[MAX_SIZES];
  int stderr_fd;
  volatile sig_atomic_t *stop;
  pid_t parent; /* the profiler, as its workers see it */
  pid_t pid;    /* 0: no worker */
  pid_t lingering; /* a process of the last worker's group outlived LINGER_MS; 0 = none */
  int fd;    /* -1: no worker */
  int have_info;
  struct pt_backend_info info;
  char *prov;
  struct pt_isolate_stats st;
  unsigned char buf[PT_PROTO_MAX_PAYLOAD];
};

static int iso_err(struct pt_error_rec *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int iso_err(struct pt_error_rec *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(err, code, "worker", 0, fmt, ap);
  va_end(ap);
  return code;
}

static void describe(int status, char *out, size_t len) {
  if (WIFSIGNALED(status))
    snprintf(out, len, "worker killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status))
    snprintf(out, len, "worker exited with status %d", WEXITSTATUS(status));
  else
    snprintf(out, len, "worker ended with wait status 0x%x", (unsigned)status);
}

/* Ends the worker and reaps it; *status gets its wait status. With
 * grace_ms > 0 it may exit by itself first (it saw EOF, or it is dying);
 * otherwise, or when the grace runs out, its whole process group gets
 * SIGKILL. The group is killed while the leader is still unreaped, so its
 * id cannot have been reused. */
static void stop_worker(struct iso *w, int grace_ms, int *status) {
  siginfo_t si;
  int64_t end = pt_proto_now_ms() + grace_ms;
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  if (!w->pid) return;
  for (;;) {
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && si.si_pid == w->pid) break;
    if (r < 0 && errno != EINTR) break;
    if (pt_proto_now_ms() >= end) break;
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  }
  kill(-w->pid, SIGKILL); /* stray children of the worker, or the worker itself */
  int st = 0;
  while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (status) *status = st;
  /* The ranks (the worker's children, in its group) die with it, but not
   * at once: wait until the group is empty, so the next worker finds the
   * GPUs free. The group's id stays reserved while it has a member. */
  int64_t linger_end = pt_proto_now_ms() + LINGER_MS;
  while (kill(-w->pid, 0) == 0 && pt_proto_now_ms() < linger_end)
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  w->lingering = kill(-w->pid, 0) == 0 ? w->pid : 0;
  w->pid = 0;
  w->st.pid = 0;
}

/* The child side of fork: only async-signal-safe calls until exec. */
static void exec_worker(const struct iso *w, int sock) {
  struct sigaction dfl;
  sigset_t none;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  setpgid(0, 0);
  /* A worker must not outlive a profiler that was killed outright (SIGKILL
   * leaves no chance to reap it): the kernel kills it with its parent. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != w->parent) _exit(126);
  if (dup2(sock, 0) < 0 || dup2(sock, 1) < 0) _exit(126);
  if (w->stderr_fd >= 0 && dup2(w->stderr_fd, 2) < 0) _exit(126);
  /* The profiler's handlers and ignored signals must not leak into the
   * worker: a worker with SIGPIPE ignored would outlive a dead parent. */
  sigaction(SIGPIPE, &dfl, NULL);
  sigaction(SIGINT, &dfl, NULL);
  sigaction(SIGTERM, &dfl, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execv(w->argv[0], w->argv);
  _exit(127);
}

static int same_info(const struct pt_backend_info *a, const struct pt_backend_info *b) {
  return a->nranks == b->nranks && a->nnodes == b->nnodes && a->max_channels == b->max_channels &&
         a->comm_channels == b->comm_channels &&
         !strcmp(a->name, b->name) && !strcmp(a->target, b->target);
}

static int wait_readable(const struct iso *w, int64_t deadline);

/* Starts a worker and waits for its HELLO. */
static int spawn(struct iso *w, struct pt_error_rec *err) {
  int sv[2], status = 0, rc;
  char why[300], detail[300], msg[512];
  struct pt_frame f;
  struct pt_backend_info bi;
  char *prov = NULL;
  /* Said when this worker cannot start: the last one's ranks may be why. */
  const char *held = w->lingering ? "; processes of the previous, killed worker were still alive after 30 s "
                                    "and may hold the GPUs (exclusive compute mode)" : "";
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return iso_err(err, PT_EIO, "cannot create the worker socket (%s)", strerror(errno));
  fflush(NULL); /* nothing buffered twice */
  w->parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return iso_err(err, PT_EIO, "cannot start a worker (%s)", strerror(errno));
  }
  if (pid == 0) exec_worker(w, sv[1]);
  close(sv[1]);
  setpgid(pid, pid); /* also here, so a kill right after fork hits the group */
  w->pid = pid;
  w->fd = sv[0];
  w->st.spawned++;
  w->st.pid = pid;
  /* NCCL's initialisation can take minutes: Ctrl-C must not wait for it. */
  if (wait_readable(w, pt_proto_now_ms() + w->start_ms)) {
    stop_worker(w, 0, NULL);
    return iso_err(err, PT_EIO, "interrupted while the worker started");
  }
  rc = pt_proto_read(w->fd, pt_proto_now_ms() + w->start_ms, w->buf, sizeof w->buf, &f, why, sizeof why);
  if (rc == 0 && f.type == PT_MSG_FAIL) {
    int code;
    if (pt_proto_dec_fail(&f, &code, msg, sizeof msg, why, sizeof why) == 0) {
      stop_worker(w, GRACE_MS, NULL);
      return iso_err(err, PT_EIO, "%s%s", msg, held);
    }
    rc = PT_PROTO_BAD;
  } else if (rc == 0) {
    rc = pt_proto_dec_hello(&f, &bi, &prov, why, sizeof why);
  }
  if (rc == PT_PROTO_EOF) {
    stop_worker(w, GRACE_MS, &status);
    describe(status, detail, sizeof detail);
    return iso_err(err, PT_EIO, "%s before it was ready (%s)%s", detail, w->argv[0], held);
  }
  if (rc == PT_PROTO_TIMEOUT) {
    stop_worker(w, 0, NULL);
    return iso_err(err, PT_EIO, "worker not ready after %.1f s; killed", (double)w->start_ms / 1000);
  }
  if (rc) {
    /* Before stop_worker(), whose close/kill/waitpid reset errno. */
    if (rc == PT_PROTO_EIO) snprintf(why, sizeof why, "%s", strerror(errno));
    stop_worker(w, 0, NULL);
    return iso_err(err, PT_EIO, "worker protocol error at start-up: %s", why);
  }
  if (w->have_info && !same_info(&w->info, &bi)) {
    free(prov);
    stop_worker(w, 0, NULL);
    return iso_err(err, PT_EIO, "a restarted worker reports a different target ('%s', %d ranks)",
                   bi.target, bi.nranks);
  }
  if (!w->have_info) {
    w->info = bi;
    w->prov = prov;
    w->have_info = 1;
  } else {
    free(prov);
  }
  return 0;
}

static int iso_info(void *self, struct pt_backend_info *out) {
  const struct iso *w = self;
  *out = w->info;
  return 0;
}

/* The worker is gone or unusable: record why as the point's state. */
static void failed(struct iso *w, struct pt_measure_res *res, int state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void failed(struct iso *w, struct pt_measure_res *res, int state, const char *fmt, ...) {
  va_list ap;
  res->state = state;
  va_start(ap, fmt);
  vsnprintf(res->detail, sizeof res->detail, fmt, ap);
  va_end(ap);
  if (state == PT_PT_HANG) w->st.hangs++;
  else w->st.crashes++;
}

/* Sends the request, starting a worker when none is alive. A worker that
 * died while idle is not the request's fault: it is replaced once. */
static int send_req(struct iso *w, const struct pt_measure_req *req, struct pt_error_rec *err) {
  unsigned char out[64];
  size_t len = pt_proto_enc_req(out, sizeof out, req);
  int werr = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    int rc = w->fd < 0 ? spawn(w, err) : 0;
    if (rc) return rc;
    if (pt_proto_write(w->fd, PT_MSG_REQ, out, (uint32_t)len) == 0) return 0;
    werr = errno; /* stop_worker() resets it */
    stop_worker(w, GRACE_MS, NULL);
  }
  return iso_err(err, PT_EIO, "cannot send a request to a fresh worker (%s)", strerror(werr));
}

/* Waits until the worker's answer starts to arrive or the deadline passes
 * (the read that follows reports the timeout), waking every 100 ms to see
 * whether the profiler was asked to stop. Returns 1 when it was. Nothing is
 * read here, so no frame can be cut in half. */
static int wait_readable(const struct iso *w, int64_t deadline) {
  for (;;) {
    if (w->stop && *w->stop) return 1;
    int64_t left = deadline - pt_proto_now_ms();
    if (left <= 0) return 0;
    struct pollfd pfd = {w->fd, POLLIN, 0};
    int r = poll(&pfd, 1, left < 100 ? (int)left : 100);
    if (r > 0 || (r < 0 && errno != EINTR)) return 0;
  }
}

double pt_isolate_window_s(double timeout_s, unsigned ops, unsigned warmup, double warmup_ms, uint64_t nbytes,
                           const uint64_t *sizes, const double *slowest_us, size_t n) {
  uint64_t m = 0;
  double per_op = 0;
  for (size_t i = 0; i < n; i++)
    if (sizes[i] <= nbytes && sizes[i] >= m && sizes[i] > 0) {
      m = sizes[i];
      per_op = slowest_us[i] * ((double)nbytes / (double)m);
    }
  return timeout_s + 2.0 * warmup_ms / 1000 + 4.0 * (double)ops * (warmup + 2.0) * per_op / 1e6;
}

static void remember(struct iso *w, uint64_t nbytes, const double *samples, unsigned n) {
  double worst = 0;
  size_t i = 0;
  for (unsigned k = 0; k < n; k++) worst = samples[k] > worst ? samples[k] : worst;
  while (i < w->nsizes && w->sizes[i] != nbytes) i++;
  if (i == w->nsizes) {
    if (i == MAX_SIZES) return;
    w->nsizes++;
    w->sizes[i] = nbytes;
    w->slowest[i] = 0;
  }
  if (worst > w->slowest[i]) w->slowest[i] = worst;
}

static int64_t window_ms(const struct iso *w, uint64_t nbytes) {
  if (!w->ops) return w->timeout_ms;
  double s = pt_isolate_window_s((double)w->timeout_ms / 1000, w->ops, w->warmup, w->warmup_ms, nbytes, w->sizes,
                                 w->slowest, w->nsizes);
  /* The gaps (measure/gpu_gap.h) lengthen every launch by ops gaps, known
   * in advance: four times those of the batch and of the gaps' own timing
   * (four launches, once per worker and mode). */
  s += 4.0 * w->ops * (w->warmup + 6.0) * w->gap_us / 1e6;
  return (int64_t)(s * 1000 + 0.5);
}

static int measure_once(struct iso *w, const struct pt_measure_req *req, double *samples,
                        struct pt_measure_res *res, struct pt_error_rec *err, int last_try);

static int iso_measure(void *self, const struct pt_measure_req *req, double *samples,
                       struct pt_measure_res *res, struct pt_error_rec *err) {
  struct iso *w = self;
  unsigned crashes = w->st.crashes;
  int rc = measure_once(w, req, samples, res, err, 0);
  /* A timeout or a crash gets one more try in a fresh worker: either can
   * be the machine's once (a driver hiccup, a peer's teardown), and a
   * crash kills the candidate at every size. */
  if (rc == 1 || (rc == 0 && res->state == PT_PT_CRASH)) {
    w->st.retries++;
    w->st.crashes = crashes; /* counted once, if it crashes again */
    rc = measure_once(w, req, samples, res, err, 1);
    if (rc == 0 && res->state == PT_PT_CRASH && strlen(res->detail) < sizeof res->detail - 40)
      strcat(res->detail, " (twice, a fresh worker each time)");
  }
  if (rc == 0 && res->state == PT_PT_OK) remember(w, req->nbytes, samples, req->reps);
  return rc;
}

/* One try. Returns 0, a negative code, or 1 when it timed out and
 * last_try is 0 (the worker is gone; nothing recorded). */
static int measure_once(struct iso *w, const struct pt_measure_req *req, double *samples,
                        struct pt_measure_res *res, struct pt_error_rec *err, int last_try) {
  struct pt_frame f;
  char why[300], detail[300], msg[512];
  unsigned n = 0;
  int status = 0, code;
  res->state = PT_PT_OK;
  res->detail[0] = 0;
  if (req->reps < 1 || req->reps > PT_SWEEP_MAX_REPS)
    return iso_err(err, PT_EINVAL, "request for %u repetitions", req->reps);
  int rc = send_req(w, req, err);
  if (rc && w->stop && *w->stop) { /* Ctrl-C while a fresh worker started */
    res->state = PT_PT_MISSING;
    snprintf(res->detail, sizeof res->detail, "interrupted");
    return 0;
  }
  if (rc) return rc;
  int64_t window = window_ms(w, req->nbytes), deadline = pt_proto_now_ms() + window;
  for (;;) {
    if (wait_readable(w, deadline)) {
      /* Interrupted: not the candidate's fault, so no state but "not yet". */
      stop_worker(w, 0, NULL);
      res->state = PT_PT_MISSING;
      snprintf(res->detail, sizeof res->detail, "interrupted");
      return 0;
    }
    rc = pt_proto_read(w->fd, deadline, w->buf, sizeof w->buf, &f, why, sizeof why);
    if (rc || f.type != PT_MSG_BEAT) break;
    /* A repetition finished on every rank: slow, not hung. */
    w->st.beats++;
    deadline = pt_proto_now_ms() + window;
  }
  if (rc == 0 && f.type == PT_MSG_FAIL) {
    if (pt_proto_dec_fail(&f, &code, msg, sizeof msg, why, sizeof why) == 0) {
      stop_worker(w, GRACE_MS, NULL);
      return iso_err(err, PT_EIO, "%s", msg);
    }
    rc = PT_PROTO_BAD;
  } else if (rc == 0) {
    rc = pt_proto_dec_res(&f, res, samples, req->reps, &n, why, sizeof why);
    /* Samples must match the request exactly: OK carries one per
     * repetition, every other state none. */
    if (rc == 0 && n != (res->state == PT_PT_OK ? req->reps : 0)) {
      snprintf(why, sizeof why, "RES: %u samples for %u repetitions with state %s", n, req->reps,
               pt_point_state_name(res->state));
      rc = PT_PROTO_BAD;
    }
  }
  switch (rc) {
  case 0:
    /* A worker that reports a crash or hang of its own (a CUDA error, a
     * watchdog) leaves after the frame; its context cannot be trusted. */
    if (res->state == PT_PT_CRASH || res->state == PT_PT_HANG) stop_worker(w, GRACE_MS, NULL);
    return 0;
  case PT_PROTO_EOF:
    stop_worker(w, GRACE_MS, &status);
    describe(status, detail, sizeof detail);
    failed(w, res, PT_PT_CRASH, "%s", detail);
    return 0;
  case PT_PROTO_TIMEOUT:
    stop_worker(w, 0, NULL);
    if (!last_try) return 1;
    failed(w, res, PT_PT_HANG, "no result or heartbeat within %.1f s, twice (a fresh worker each time); killed",
           (double)window / 1000);
    return 0;
  case PT_PROTO_BAD:
    stop_worker(w, 0, NULL);
    failed(w, res, PT_PT_CRASH, "worker protocol error: %s", why);
    return 0;
  default:
    snprintf(detail, sizeof detail, "%s", strerror(errno));
    stop_worker(w, 0, NULL);
    failed(w, res, PT_PT_CRASH, "reading from the worker failed (%s)", detail);
    return 0;
  }
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

static void iso_close(void *self) {
  struct iso *w = self;
  if (!w) return;
  stop_worker(w, GRACE_MS, NULL); /* closing the socket is the worker's signal to leave */
  /* Every worker is reaped: what they left in the scratch directory goes. */
  if (w->scratch) nftw(w->scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(w->scratch);
  if (w->argv)
    for (char **a = w->argv; *a; a++) free(*a);
  free(w->argv);
  free(w->prov);
  free(w);
}

int pt_backend_isolated_open(struct pt_backend *b, const struct pt_isolate_opts *o,
                             struct pt_error_rec *err) {
  size_t nargs = 0;
  int rc = PT_ENOMEM;
  memset(b, 0, sizeof *b);
  if (!(o->timeout_s > 0) || !(o->start_timeout_s > 0) || o->timeout_s > 1e6 || o->start_timeout_s > 1e6)
    return iso_err(err, PT_EINVAL, "timeouts must be positive (got %g s and %g s)", o->timeout_s,
                   o->start_timeout_s);
  while (o->args && o->args[nargs]) nargs++;
  struct iso *w = calloc(1, sizeof *w);
  if (!w) return iso_err(err, PT_ENOMEM, "out of memory");
  w->fd = -1;
  w->stderr_fd = o->stderr_fd;
  w->timeout_ms = (int64_t)(o->timeout_s * 1000 + 0.5);
  w->stop = o->stop;
  w->start_ms = (int64_t)(o->start_timeout_s * 1000 + 0.5);
  w->ops = o->ops;
  w->warmup = o->warmup;
  w->warmup_ms = o->warmup_ms;
  w->gap_us = o->gap_us;
  if (o->scratch && !(w->scratch = strdup(o->scratch))) goto fail;
  w->argv = calloc(nargs + 3, sizeof *w->argv);
  if (!w->argv) goto fail;
  /* The resolved path, so that ps and pgrep show workers as pcie-tune. */
  char self[4096];
  ssize_t k = o->exe ? -1 : readlink("/proc/self/exe", self, sizeof self - 1);
  if (k > 0) self[k] = '\0';
  w->argv[0] = strdup(o->exe ? o->exe : k > 0 ? self : "/proc/self/exe");
  w->argv[1] = strdup("worker");
  if (!w->argv[0] || !w->argv[1]) goto fail;
  for (size_t i = 0; i < nargs; i++)
    if (!(w->argv[i + 2] = strdup(o->args[i]))) goto fail;
  if ((rc = spawn(w, err))) goto out;
  b->self = w;
  b->info = iso_info;
  b->measure = iso_measure;
  b->close = iso_close;
  return 0;
fail:
  iso_err(err, PT_ENOMEM, "out of memory");
out:
  iso_close(w);
  return rc;
}

const char *pt_isolate_provenance(const struct pt_backend *b) {
  return b && b->info == iso_info ? ((const struct iso *)b->self)->prov : NULL;
}

int pt_isolate_stats(const struct pt_backend *b, struct pt_isolate_stats *out) {
  if (!b || b->info != iso_info) return -1;
  *out = ((const struct iso *)b->self)->st;
  return 0;
}
