/*
 * Progress of a sweep on stderr (cli/progress.h). Redraws at most ten times
 * a second so a fast backend is not slowed down by the terminal.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void pt_progress_init(struct pt_progress *p, int quiet) {
  memset(p, 0, sizeof *p);
  p->tty = isatty(STDERR_FILENO);
  p->quiet = quiet;
  p->start = now_s();
}

void pt_progress_cb(void *arg, const struct pt_sweep_progress *sp) {
  struct pt_progress *p = arg;
  char key[96];
  if (p->quiet) return;
  double t = now_s(), f = sp->fraction < 0 ? 0 : sp->fraction > 1 ? 1 : sp->fraction;
  snprintf(key, sizeof key, "%s %s", sp->series, sp->phase);
  if (!p->tty) {
    if (strcmp(key, p->last_key)) fprintf(stderr, "profile: %3.0f%% %s\n", 100 * f, key);
    snprintf(p->last_key, sizeof p->last_key, "%s", key);
    return;
  }
  if (t - p->last < 0.1 && f < 1 && !strcmp(key, p->last_key)) return;
  p->last = t;
  snprintf(p->last_key, sizeof p->last_key, "%s", key);
  char bar[31];
  int fill = (int)(f * 30);
  for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  double el = t - p->start, eta = f > 0.01 ? el * (1 - f) / f : -1;
  if (eta >= 0)
    fprintf(stderr, "\r[%s] %3.0f%% %-28s %8llu reps  ETA %d:%02d ", bar, 100 * f, key,
            (unsigned long long)sp->samples, (int)eta / 60, (int)eta % 60);
  else
    fprintf(stderr, "\r[%s] %3.0f%% %-28s %8llu reps  ETA --:-- ", bar, 100 * f, key,
            (unsigned long long)sp->samples);
}

void pt_progress_end(struct pt_progress *p) {
  if (p->tty && !p->quiet && p->last_key[0]) fputc('\n', stderr);
}
