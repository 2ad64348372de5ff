/*
 * Progress of a sweep on stderr (cli/progress.h). Redraws at most ten times
 * a second so a fast backend is not slowed down by the terminal; without a
 * terminal it prints one line per phase, and one per measurement only when
 * measurements are slow (ten seconds since the last line), so a log of a
 * GPU sweep shows what is running without a line per point.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "measure/isolate.h"
#include "progress.h"

#define SLOW_LINE_S 10.0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void pt_progress_init(struct pt_progress *p, int quiet) {
  memset(p, 0, sizeof *p);
  p->tty = isatty(STDERR_FILENO);
  p->quiet = quiet;
  p->start = p->last_line = now_s();
}

static void draw(struct pt_progress *p, double t) {
  char bar[31], eta[16];
  double f = p->fraction, el = t - p->start;
  int fill = (int)(f * 30);
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  if (f > 0.01) {
    int s = (int)(el * (1 - f) / f);
    snprintf(eta, sizeof eta, "%d:%02d", s / 60, s % 60);
  } else {
    snprintf(eta, sizeof eta, "--:--");
  }
  /* \033[K clears what a longer earlier line left behind. */
  fprintf(stderr, "\r[%s] %3.0f%% %-24s %7llu reps  ETA %s  %s\033[K", bar, 100 * f, p->last_key, p->samples,
          eta, p->point);
}

void pt_progress_cb(void *arg, const struct pt_sweep_progress *sp) {
  struct pt_progress *p = arg;
  char key[96];
  if (p->quiet) return;
  double t = now_s(), f = sp->fraction < 0 ? 0 : sp->fraction > 1 ? 1 : sp->fraction;
  snprintf(key, sizeof key, "%s %s", sp->series, sp->phase);
  p->fraction = f;
  p->samples = (unsigned long long)sp->samples;
  if (f >= 1) p->point[0] = 0; /* nothing left to measure */
  if (!p->tty) {
    if (strcmp(key, p->last_key)) {
      fprintf(stderr, "profile: %3.0f%% %s\n", 100 * f, key);
      p->last_line = t;
    }
    snprintf(p->last_key, sizeof p->last_key, "%s", key);
    return;
  }
  if (t - p->last < 0.1 && f < 1 && !strcmp(key, p->last_key)) return;
  p->last = t;
  snprintf(p->last_key, sizeof p->last_key, "%s", key);
  draw(p, t);
}

/* Names the point about to be measured and, when there is a deadline, the
 * wall-clock time it falls at: a bar that stops moving then still says what
 * it waits for and until when. */
static void announce(struct pt_progress *p, const struct pt_measure_req *q) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
  char what[48], when[48] = "";
  double n = (double)q->nbytes, t = now_s();
  int u = 0;
  while (n >= 1024 && u < 3) n /= 1024, u++;
  if (q->is_default) snprintf(what, sizeof what, "NCCL default");
  else snprintf(what, sizeof what, "%s/%s/%d", pt_algo_name(q->algo), pt_proto_name(q->proto), q->channels);
  if (p->deadline_s > 0) {
    time_t at = time(NULL) + (time_t)p->deadline_s;
    struct tm tm;
    localtime_r(&at, &tm);
    snprintf(when, sizeof when, ", deadline %.0f s (%02d:%02d:%02d)", p->deadline_s, tm.tm_hour, tm.tm_min,
             tm.tm_sec);
  }
  snprintf(p->point, sizeof p->point, "measuring %s at %g %s%s", what, n, unit[u], when);
  if (p->tty) {
    /* A slow measurement must show; a fast sweep keeps its 10 Hz limit. */
    if (t - p->last >= 0.1 || p->deadline_s > 0) {
      p->last = t;
      draw(p, t);
    }
  } else if (t - p->last_line >= SLOW_LINE_S) {
    fprintf(stderr, "profile: %3.0f%% %s: %s\n", 100 * p->fraction, p->last_key, p->point);
    p->last_line = t;
  }
}

/* Without a terminal, a long measurement still shows: a line every
 * min(10 s, half the deadline) until it ends, from a thread that only
 * waits meanwhile (the main thread is blocked in the measurement). */
struct ticker {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  double every_s, start;
  const struct pt_progress *p;
};

static void *tick(void *arg) {
  struct ticker *t = arg;
  struct timespec at;
  pthread_mutex_lock(&t->mu);
  clock_gettime(CLOCK_REALTIME, &at);
  while (!t->done) {
    at.tv_sec += (time_t)t->every_s;
    at.tv_nsec += (long)((t->every_s - (double)(time_t)t->every_s) * 1e9);
    if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
    while (!t->done && pthread_cond_timedwait(&t->cv, &t->mu, &at) != ETIMEDOUT) {
    }
    const char *deadline = strstr(t->p->point, ", deadline");
    int len = deadline ? (int)(deadline - t->p->point) : (int)strlen(t->p->point);
    if (!t->done)
      fprintf(stderr, "profile: %3.0f%% still %.*s (%.0f s so far)\n", 100 * t->p->fraction, len, t->p->point,
              now_s() - t->start);
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

/* What came of a point that failed: said at once, naming it, so a log
 * never shows the next candidate's line as if it were the one that hung. */
static void outcome(const struct pt_progress *p, const struct pt_measure_res *res, unsigned retried) {
  const char *what = p->point + strlen("measuring ");
  const char *deadline = strstr(what, ", deadline");
  int len = deadline ? (int)(deadline - what) : (int)strlen(what);
  if (res->state != PT_PT_HANG && res->state != PT_PT_CRASH && res->state != PT_PT_WRONG && !retried) return;
  if (p->tty) fputs("\r\033[K", stderr);
  if (res->state == PT_PT_OK)
    fprintf(stderr, "profile: %.*s: failed once, measured in a fresh worker\n", len, what);
  else
    fprintf(stderr, "profile: %.*s: %s: %s\n", len, what, pt_point_state_name(res->state), res->detail);
}

static int info(void *self, struct pt_backend_info *out) {
  struct pt_progress *p = self;
  return p->inner->info(p->inner->self, out);
}

static int measure(void *self, const struct pt_measure_req *req, double *samples, struct pt_measure_res *res,
                   struct pt_error_rec *err) {
  struct pt_progress *p = self;
  struct pt_isolate_stats before, after;
  struct ticker t = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 10.0, now_s(), p};
  pthread_t th;
  if (p->quiet) return p->inner->measure(p->inner->self, req, samples, res, err);
  announce(p, req);
  int isolated = pt_isolate_stats(p->inner, &before) == 0;
  if (p->deadline_s > 0 && p->deadline_s / 2 < t.every_s) t.every_s = p->deadline_s / 2;
  int ticking = !p->tty && p->deadline_s > 0 && pthread_create(&th, NULL, tick, &t) == 0;
  int rc = p->inner->measure(p->inner->self, req, samples, res, err);
  if (ticking) {
    pthread_mutex_lock(&t.mu);
    t.done = 1;
    pthread_cond_signal(&t.cv);
    pthread_mutex_unlock(&t.mu);
    pthread_join(th, NULL);
  }
  if (rc == 0 && res->state != PT_PT_MISSING) {
    unsigned retried = isolated && pt_isolate_stats(p->inner, &after) == 0 ? after.retries - before.retries : 0;
    outcome(p, res, retried);
    p->last_line = now_s();
  }
  return rc;
}

const struct pt_backend *pt_progress_wrap(struct pt_progress *p, const struct pt_backend *be,
                                          double deadline_s) {
  p->inner = be;
  p->deadline_s = deadline_s;
  p->outer.self = p;
  p->outer.info = info;
  p->outer.measure = measure;
  p->outer.close = NULL; /* be is closed by its owner */
  return &p->outer;
}

void pt_progress_end(struct pt_progress *p) {
  if (p->tty && !p->quiet && p->last_key[0]) fputc('\n', stderr);
}
