/* The helper threads: a fixed set per process (PCIE_NET_NTHREADS), each an
 * epoll loop over the streams assigned to it, started when the first comm
 * appears and joined when the last one closes, so that NCCL can unload the
 * library after finalize. An event hands the stream to pt__stream_run,
 * whose owner decides the next interest (see stream.c). Never logs on the
 * loop (only when threads cannot be started). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "internal.h"

/* Bytes one event may move before the stream goes back to the end of the
 * queue: big enough to amortise the epoll round, small enough that one
 * stream cannot starve the others sharing the thread. */
#define PT_WORKER_BUDGET (1024 * 1024)
#define PT_WORKER_EVENTS 64

struct pt_worker {
  pthread_t thread;
  int epfd;
  int evfd;
  atomic_uint loops; /* batches finished; pt__pool_forget waits on it */
  atomic_int stop;
};

static pthread_mutex_t p_mu = PTHREAD_MUTEX_INITIALIZER;
static int p_users;
static int p_n;
static struct pt_worker p_w[PT_MAX_THREADS];
static atomic_uint p_rr;

static void *worker_main(void *arg) {
  struct pt_worker *w = arg;
  struct epoll_event ev[PT_WORKER_EVENTS];
  /* Named, so a core dump or `top -H` says whose thread it is. Set here,
   * once the thread runs with its own signal mask. */
  (void)pthread_setname_np(pthread_self(), "pcie-net");
  while (!atomic_load(&w->stop)) {
    int n = epoll_wait(w->epfd, ev, PT_WORKER_EVENTS, -1);
    for (int i = 0; i < n; i++) {
      struct pt_stream *s = ev[i].data.ptr;
      if (!s) {
        uint64_t v;
        (void)!read(w->evfd, &v, sizeof(v));
        continue;
      }
      atomic_store(&s->fired, ev[i].events | EPOLLONESHOT);
      pt__stream_run(s, PT_WORKER_BUDGET);
    }
    atomic_fetch_add(&w->loops, 1);
  }
  return NULL;
}

static void wake(struct pt_worker *w) {
  uint64_t one = 1;
  (void)!write(w->evfd, &one, sizeof(one));
}

static void stop_workers(int n) {
  for (int i = 0; i < n; i++) {
    atomic_store(&p_w[i].stop, 1);
    wake(&p_w[i]);
    pthread_join(p_w[i].thread, NULL);
    close(p_w[i].epfd);
    close(p_w[i].evfd);
  }
}

static int start_worker(struct pt_worker *w) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  memset(w, 0, sizeof(*w));
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->epfd < 0 || w->evfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev) != 0) goto fail;
  /* Helpers take no asynchronous signals: those belong to the application's
   * threads. Faults stay unblocked, so a bad access dies at once with this
   * thread's stack in the core instead of being hidden or retried. */
  sigset_t all, old;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) sigdelset(&all, faults[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&w->thread, NULL, worker_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    errno = rc;
    goto fail;
  }
  return 0;
fail:
  if (w->epfd >= 0) close(w->epfd);
  if (w->evfd >= 0) close(w->evfd);
  return -1;
}

ncclResult_t pt__pool_acquire(ncclDebugLogger_t log) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&p_mu);
  if (p_users == 0) {
    int want = pt__cfg()->nthreads, n = 0;
    while (n < want && start_worker(&p_w[n]) == 0) n++;
    if (n < want) {
      PT_WARN(log, "cannot start helper thread %d of %d: %s", n, want, strerror(errno));
      stop_workers(n);
      res = ncclSystemError;
    } else {
      p_n = n;
    }
  }
  if (res == ncclSuccess) p_users++;
  pthread_mutex_unlock(&p_mu);
  return res;
}

void pt__pool_release(void) {
  pthread_mutex_lock(&p_mu);
  if (--p_users == 0) {
    stop_workers(p_n);
    p_n = 0;
  }
  pthread_mutex_unlock(&p_mu);
}

int pt__pool_threads(void) { return p_n; /* stable while the caller holds a pool reference */ }

int pt__pool_add(struct pt_stream *s, uint32_t interest) {
  s->interest = interest;
  if (p_n == 0) {
    s->worker = -1; /* no helpers: the caller progresses it (xfer.c) */
    return 0;
  }
  /* p_n is stable while this comm holds a pool reference. */
  s->worker = (int)(atomic_fetch_add(&p_rr, 1) % (unsigned)p_n);
  struct epoll_event ev = {.events = interest, .data.ptr = s};
  return epoll_ctl(p_w[s->worker].epfd, EPOLL_CTL_ADD, s->fd, &ev);
}

void pt__pool_arm(struct pt_stream *s, uint32_t interest) {
  struct epoll_event ev = {.events = interest, .data.ptr = s};
  s->interest = interest;
  if (s->worker < 0) return;
  /* Cannot fail for a registered fd short of memory exhaustion; a stream
   * left unarmed is still progressed by isend/irecv/test. */
  (void)epoll_ctl(p_w[s->worker].epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

void pt__pool_forget(struct pt_comm *comm) {
  unsigned seen[PT_MAX_THREADS];
  int used[PT_MAX_THREADS] = {0};
  for (int i = 0; i < comm->nstreams; i++) {
    struct pt_stream *s = &comm->streams[i];
    if (s->worker < 0) continue;
    (void)epoll_ctl(p_w[s->worker].epfd, EPOLL_CTL_DEL, s->fd, NULL);
    used[s->worker] = 1;
  }
  /* A helper may have fetched an event for one of these streams before the
   * DEL: once it finishes the batch it was in, it cannot hold them. */
  for (int w = 0; w < p_n; w++) {
    if (!used[w]) continue;
    seen[w] = atomic_load(&p_w[w].loops);
    wake(&p_w[w]);
  }
  for (int w = 0; w < p_n; w++)
    while (used[w] && atomic_load(&p_w[w].loops) == seen[w]) sched_yield();
}
