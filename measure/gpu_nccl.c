/*
 * The GPU backend's coordinator (measure/gpu_nccl.h): environment, ranks
 * (processes or threads), the ncclUniqueId hand-over, requests out and
 * results in, provenance. What a rank does on its GPU is measure/gpu_rank.c.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_api.h"
#include "gpu_nccl.h"
#include "gpu_ncclog.h"
#include "gpu_prov.h"
#include "gpu_rank.h"
#include "proto.h"

extern char **environ;

struct gpu {
  struct pt_gpu_api api;
  int n, dev[PT_GPU_MAX], single, same_gpu, beat_fd, poisoned, own_scratch;
  unsigned ops, warmup;
  double warmup_ms;
  int fd[PT_GPU_MAX];
  pid_t pid[PT_GPU_MAX];
  pthread_t th[PT_GPU_MAX];
  int started;
  struct pt_rank_cfg cfg[PT_GPU_MAX];
  char plugin[PATH_MAX], scratch[PATH_MAX], profdir[PATH_MAX + 16], logdir[PATH_MAX + 16];
  struct pt_ncclog log;
  struct pt_rank_msg msg; /* receive buffer */
  struct pt_backend_info info;
};

static int gerr(struct pt_error_rec *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int gerr(struct pt_error_rec *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(err, code, "nccl backend", 0, fmt, ap);
  va_end(ap);
  return code;
}

int pt_gpu_built(void) { return 1; }

/* ---- ranks ---- */

struct thread_arg {
  int fd;
  const struct pt_rank_cfg *cfg;
};

static void *rank_thread(void *p) {
  struct thread_arg a = *(struct thread_arg *)p;
  free(p);
  pt_rank_serve(a.fd, a.cfg);
  close(a.fd);
  return NULL;
}

/* A forked rank keeps only its own socket (and stdio): a rank that held
 * the worker's protocol socket would hide the worker's death from the
 * profiler. */
static void close_others(int keep) {
  DIR *d = opendir("/proc/self/fd");
  int fds[1024], n = 0;
  struct dirent *e;
  if (!d) return;
  while ((e = readdir(d)) && n < 1024) {
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != keep && fd != dirfd(d)) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
}

/* --same-gpu-ranks, in rank r's process before NCCL starts: a host hash
 * of its own (NCCL reads NCCL_HOSTID into it, src/misc/utils.cc
 * getHostHash), so NCCL sees one rank per node and asks the tuner, where
 * two ranks on one GPU of one host are refused ("Duplicate GPU detected",
 * src/init.cc); the nodes then talk over sockets on the loopback interface
 * (NCCL_IB_DISABLE=1, NCCL_SOCKET_IFNAME=lo). */
static int same_gpu_env(int r) {
  char id[64];
  snprintf(id, sizeof id, "pcie-tune-same-gpu-rank-%d", r);
  return setenv("NCCL_HOSTID", id, 1) || setenv("NCCL_IB_DISABLE", "1", 1) ||
         setenv("NCCL_SOCKET_IFNAME", "lo", 1);
}

static int start_rank(struct gpu *g, int r, struct pt_error_rec *err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return gerr(err, PT_EIO, "cannot create a rank socket: %s", strerror(errno));
  if (g->single) {
    struct thread_arg *a = malloc(sizeof *a);
    if (!a || (*a = (struct thread_arg){sv[1], &g->cfg[r]}, pthread_create(&g->th[r], NULL, rank_thread, a))) {
      free(a);
      close(sv[0]);
      close(sv[1]);
      return gerr(err, PT_EIO, "cannot start the thread of rank %d", r);
    }
  } else {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      close(sv[0]);
      close(sv[1]);
      return gerr(err, PT_EIO, "cannot fork rank %d: %s", r, strerror(errno));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the coordinator */
      close_others(sv[1]);
      if (g->same_gpu && same_gpu_env(r)) _exit(1);
      _exit(pt_rank_serve(sv[1], &g->cfg[r]));
    }
    g->pid[r] = pid;
    close(sv[1]);
  }
  g->fd[r] = sv[0];
  g->started = r + 1;
  return 0;
}

static void describe_rank(struct gpu *g, int r, char *out, size_t len) {
  int st = 0;
  if (g->single || !g->pid[r] || waitpid(g->pid[r], &st, 0) != g->pid[r]) {
    snprintf(out, len, "rank %d (GPU %d) stopped answering", r, g->dev[r]);
    return;
  }
  g->pid[r] = 0;
  if (WIFSIGNALED(st))
    snprintf(out, len, "rank %d (GPU %d) killed by signal %d (%s)", r, g->dev[r], WTERMSIG(st), strsignal(WTERMSIG(st)));
  else
    snprintf(out, len, "rank %d (GPU %d) exited with status %d", r, g->dev[r], WEXITSTATUS(st));
}

/* Reads rank r's next message into g->msg. Returns 0, or -1 when the rank
 * is gone (why says how). */
static int hear(struct gpu *g, int r, char *why, size_t len) {
  ssize_t n;
  do n = recv(g->fd[r], &g->msg, sizeof g->msg, 0);
  while (n < 0 && errno == EINTR);
  if (n == (ssize_t)sizeof g->msg) return 0;
  describe_rank(g, r, why, len);
  return -1;
}

static int tell(struct gpu *g, int r, const struct pt_rank_cmd *c) {
  return send(g->fd[r], c, sizeof *c, MSG_NOSIGNAL) == (ssize_t)sizeof *c ? 0 : -1;
}

/* ---- measurement ---- */

static int worse(int a, int b) {
  static const int rank_of[] = {[PT_PT_OK] = 0, [PT_PT_MISSING] = 0, [PT_PT_UNSUPPORTED] = 1,
                                [PT_PT_WRONG] = 2, [PT_PT_HANG] = 3, [PT_PT_CRASH] = 4};
  return rank_of[b] > rank_of[a] ? b : a;
}

/* A rank timed one warm-up replay. Once every rank has, all get one
 * warm-up count, from the slowest rank's replay. Returns the rank that
 * could not be told, or -1. */
static int on_warm(struct gpu *g, double *warm_us, unsigned *nwarm) {
  *warm_us = g->msg.warm_us > *warm_us ? g->msg.warm_us : *warm_us;
  if (++*nwarm != (unsigned)g->n) return -1;
  struct pt_rank_cmd w = {.type = PT_RK_CMD_WARM};
  double want = g->warmup_ms * 1000.0 / (*warm_us > 0.01 ? *warm_us : 0.01);
  w.warm = want > 100000 ? 100000 : (unsigned)ceil(want);
  for (int q = 0; q < g->n; q++)
    if (tell(g, q, &w)) return q;
  return -1;
}

/* Rank r finished repetition g->msg.rep: the parent hears of the
 * repetitions every rank has finished (its hang watchdog's heartbeat). */
static void on_beat(struct gpu *g, int r, unsigned *beats, unsigned *sent_beats) {
  beats[r] = g->msg.rep;
  unsigned lo = beats[0];
  for (int q = 1; q < g->n; q++) lo = beats[q] < lo ? beats[q] : lo;
  if (lo > *sent_beats && g->beat_fd >= 0) {
    uint32_t v = lo;
    pt_proto_write(g->beat_fd, PT_MSG_BEAT, &v, sizeof v);
  }
  *sent_beats = lo > *sent_beats ? lo : *sent_beats;
}

static int gpu_measure(void *self, const struct pt_measure_req *req, double *samples,
                       struct pt_measure_res *res, struct pt_error_rec *err) {
  struct gpu *g = self;
  struct pt_rank_cmd cmd = {.type = PT_RK_CMD_MEASURE, .req = *req};
  unsigned beats[PT_GPU_MAX] = {0}, sent_beats = 0, nwarm = 0;
  double warm_us = 0;
  int done[PT_GPU_MAX] = {0}, ndone = 0;
  char why[400];
  res->state = PT_PT_OK;
  res->detail[0] = 0;
  if (g->poisoned) return gerr(err, PT_EIO, "the GPU backend is unusable after an earlier error");
  if (req->coll != PT_ALLREDUCE) {
    res->state = PT_PT_UNSUPPORTED;
    snprintf(res->detail, sizeof res->detail, "the nccl backend measures allreduce only");
    return 0;
  }
  if (req->nbytes % sizeof(float) || req->nbytes > ((uint64_t)1 << 40) || !req->nbytes) {
    res->state = PT_PT_UNSUPPORTED;
    snprintf(res->detail, sizeof res->detail, "sizes must be multiples of 4 bytes (fp32) up to 1 TiB");
    return 0;
  }
  /* One process: the plugin's forced choice is process-wide, so rank 0
   * sets it before any rank runs. Every rank reads the counters (they
   * count every rank's decisions, its own among them): a rank that went on
   * to replay while rank 0 found the candidate disabled would wait for
   * rank 0 in the collective forever. */
  if (g->single) {
    struct pt_rank_cmd f = {.type = PT_RK_CMD_FORCE, .req = *req};
    if (tell(g, 0, &f) || hear(g, 0, why, sizeof why)) goto died0;
    if (g->msg.res.state != PT_PT_OK) {
      *res = g->msg.res;
      return 0;
    }
  }
  for (int r = 0; r < g->n; r++) {
    cmd.do_force = !g->single;
    cmd.do_verdict = 1;
    if (tell(g, r, &cmd)) {
      describe_rank(g, r, why, sizeof why);
      goto crashed;
    }
  }
  for (unsigned i = 0; i < req->reps; i++) samples[i] = 0;
  while (ndone < g->n) {
    struct pollfd p[PT_GPU_MAX];
    for (int r = 0; r < g->n; r++) p[r] = (struct pollfd){done[r] ? -1 : g->fd[r], POLLIN, 0};
    if (poll(p, (nfds_t)g->n, -1) < 0) {
      if (errno == EINTR) continue;
      return gerr(err, PT_EIO, "poll: %s", strerror(errno));
    }
    for (int r = 0; r < g->n; r++) {
      if (done[r] || !p[r].revents) continue;
      if (hear(g, r, why, sizeof why)) goto crashed;
      if (g->msg.type == PT_RK_FAIL) {
        g->poisoned = 1;
        return gerr(err, PT_EIO, "%s", g->msg.text);
      }
      if (g->msg.type == PT_RK_WARM) {
        int q = on_warm(g, &warm_us, &nwarm);
        if (q >= 0) {
          describe_rank(g, q, why, sizeof why);
          goto crashed;
        }
        continue;
      }
      if (g->msg.type == PT_RK_BEAT) {
        on_beat(g, r, beats, &sent_beats);
        continue;
      }
      done[r] = 1;
      ndone++;
      if (g->msg.res.state != PT_PT_OK) {
        if (worse(res->state, g->msg.res.state) != res->state) *res = g->msg.res;
        continue;
      }
      /* The slowest rank sets each repetition's time. */
      for (unsigned i = 0; i < req->reps; i++)
        if (g->msg.samples[i] > samples[i]) samples[i] = g->msg.samples[i];
    }
    /* A failed rank leaves its peers blocked in the collective: the
     * candidate crashed or hung as a whole; the worker leaves after this. */
    if (res->state == PT_PT_CRASH) {
      g->poisoned = 1;
      return 0;
    }
  }
  return 0;
died0:
  describe_rank(g, 0, why, sizeof why);
crashed:
  g->poisoned = 1;
  res->state = PT_PT_CRASH;
  snprintf(res->detail, sizeof res->detail, "%.250s", why);
  return 0;
}

static int gpu_info(void *self, struct pt_backend_info *out) {
  *out = ((const struct gpu *)self)->info;
  return 0;
}

/* Removes the scratch directory's known contents (NCCL logs, the empty
 * profile directory) and, when we made it, the directory itself. */
static void clean_scratch(struct gpu *g) {
  DIR *d = g->logdir[0] ? opendir(g->logdir) : NULL;
  struct dirent *e;
  char path[PATH_MAX * 2];
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, "nccl.", 5)) {
      snprintf(path, sizeof path, "%s/%s", g->logdir, e->d_name);
      unlink(path);
    }
  if (d) closedir(d);
  if (g->logdir[0]) rmdir(g->logdir);
  if (g->profdir[0]) rmdir(g->profdir);
  if (g->own_scratch) rmdir(g->scratch);
}

static void gpu_close(void *self) {
  struct gpu *g = self;
  if (!g) return;
  for (int r = 0; r < g->started; r++) close(g->fd[r]); /* EOF: ranks tear down and leave */
  for (int r = 0; r < g->started; r++) {
    if (g->single) {
      /* A rank thread stuck in a dead collective never returns; the
       * process is about to exit then. */
      if (!g->poisoned) pthread_join(g->th[r], NULL);
      continue;
    }
    if (!g->pid[r]) continue;
    int st;
    if (g->poisoned) kill(g->pid[r], SIGKILL);
    for (int t = 0; t < 400 && waitpid(g->pid[r], &st, WNOHANG) == 0; t++)
      nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    if (kill(g->pid[r], 0) == 0) {
      kill(g->pid[r], SIGKILL);
      waitpid(g->pid[r], &st, 0);
    }
  }
  if (!g->single || !g->poisoned) pt_gpu_api_unload(&g->api);
  clean_scratch(g);
  free(g);
}

/* ---- set-up ---- */

/* The plugin next to this executable (build tree: build/), or in ../lib
 * (installed: PREFIX/bin and PREFIX/lib). */
static int find_plugin(const char *given, char *out, struct pt_error_rec *err) {
  char exe[PATH_MAX], cand[PATH_MAX + 64];
  if (given) {
    if (!realpath(given, out)) return gerr(err, PT_EINVAL, "--plugin %s: %s", given, strerror(errno));
    return 0;
  }
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k < 0) return gerr(err, PT_EIO, "cannot read /proc/self/exe: %s", strerror(errno));
  exe[k] = 0;
  const char *dir = dirname(exe);
  const char *rel[] = {"/libnccl-tuner-pcie.so", "/../lib/libnccl-tuner-pcie.so"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
    if (realpath(cand, out)) return 0;
  }
  return gerr(err, PT_EIO, "cannot find libnccl-tuner-pcie.so next to %s or in ../lib; give --plugin PATH", dir);
}

static int setup_env(struct gpu *g, const char *scratch, struct pt_error_rec *err) {
  const char *old = getenv("NCCL_TUNER_PLUGIN");
  if (old && strcmp(old, g->plugin))
    fprintf(stderr, "pcie-tune worker: NCCL_TUNER_PLUGIN=%s replaced by %s for the measurement\n", old, g->plugin);
  if (scratch) {
    /* One directory per worker: a killed predecessor's stays until the
     * profiler removes the whole scratch directory. */
    snprintf(g->scratch, sizeof g->scratch, "%s/w%d", scratch, (int)getpid());
    if (mkdir(g->scratch, 0700)) return gerr(err, PT_EIO, "cannot create %s: %s", g->scratch, strerror(errno));
    g->own_scratch = 1;
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(g->scratch, sizeof g->scratch, "%s/pcie-tune-worker.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g->scratch)) return gerr(err, PT_EIO, "cannot create a scratch directory: %s", strerror(errno));
    g->own_scratch = 1;
  }
  snprintf(g->profdir, sizeof g->profdir, "%s/noprofile", g->scratch);
  snprintf(g->logdir, sizeof g->logdir, "%s/ncclog", g->scratch);
  if (mkdir(g->profdir, 0700) || mkdir(g->logdir, 0700)) {
    int e = errno;
    return gerr(err, PT_EIO, "cannot create %s/{noprofile,ncclog}: %s", g->scratch, strerror(e));
  }
  char logfile[PATH_MAX + 64];
  snprintf(logfile, sizeof logfile, "%s/nccl.%%p.log", g->logdir);
  /* An empty directory: the plugin finds no profile and stays passive
   * unless forced, so "NCCL default" really is NCCL's own choice. NCCL's
   * INFO lines go to files of ours (never to the protocol). */
  if (setenv("NCCL_TUNER_PLUGIN", g->plugin, 1) || setenv("PCIE_TUNER_PROFILE", g->profdir, 1) ||
      setenv("NCCL_DEBUG", "INFO", 1) || setenv("NCCL_DEBUG_FILE", logfile, 1) ||
      setenv("NCCL_DEBUG_SUBSYS", "INIT,ENV", 1))
    return gerr(err, PT_ENOMEM, "cannot set the environment");
  return 0;
}

static void read_logs(struct gpu *g) {
  DIR *d = opendir(g->logdir);
  struct dirent *e;
  char path[PATH_MAX * 2];
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, "nccl.", 5)) continue;
    snprintf(path, sizeof path, "%s/%s", g->logdir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    pt_ncclog_scan(f, &g->log);
    fclose(f);
  }
  if (d) closedir(d);
}

/* The `nccl` group of provenance.extra: what NCCL ran with. */
static void write_nccl_group(struct gpu *g, FILE *f, const char *user_env) {
  fputs("    nccl = {\n      library = ", f);
  pt_prov_quote(f, g->api.nccl_path);
  fputs(";\n      cudart = ", f);
  pt_prov_quote(f, g->api.cudart_path);
  fprintf(f, ";\n      process_model = \"%s\";\n", g->single ? "single-process" : "process-per-gpu");
  /* Provenance only: the profile's communicator.channels, which the plugin
   * reads, comes from the backend info (measure/sweepfile.c). */
  fprintf(f, "      comm_channels = %d;\n      transports = [", g->log.comm_channels);
  for (size_t i = 0; i < g->log.nlinks; i++) {
    char t[64];
    snprintf(t, sizeof t, "%d>%d %s", g->log.links[i].from, g->log.links[i].to, g->log.links[i].via);
    fputs(i ? ", " : " ", f);
    pt_prov_quote(f, t);
  }
  fputs(" ];\n      ", f);
  /* Provenance only: the profile's nccl_env, which the plugin compares
   * with its own, is written by measure/sweepfile.c. */
  fputs(user_env, f);
  fputs("\n      log = [", f);
  for (size_t i = 0; i < g->log.nexcerpt; i++) {
    fputs(i ? ",\n        " : "\n        ", f);
    pt_prov_quote(f, g->log.excerpt[i]);
  }
  fputs(" ];\n    };\n", f);
}

static int max_channels_env(void) {
  const char *v = getenv("NCCL_MAX_NCHANNELS");
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  if (v && *v && !*end && n >= 1 && n <= PT_MAX_CHANNELS) return (int)n;
  return PT_MAX_CHANNELS;
}

/* Starts every rank, hands rank 0's unique id to the others and waits
 * until all are ready. *rank0 receives rank 0's provenance text. */
static int start_all(struct gpu *g, char *rank0, size_t len, struct pt_error_rec *err) {
  char why[400];
  int rc;
  for (int r = 0; r < g->n; r++)
    if ((rc = start_rank(g, r, err))) return rc;
  struct pt_rank_cmd c = {.type = PT_RK_CMD_UID};
  if (hear(g, 0, why, sizeof why)) return gerr(err, PT_EIO, "%s during start-up", why);
  if (g->msg.type == PT_RK_FAIL) return gerr(err, PT_EIO, "%s", g->msg.text);
  c.uid = g->msg.uid;
  for (int r = 0; r < g->n; r++)
    if (tell(g, r, &c)) return gerr(err, PT_EIO, "rank %d (GPU %d) is gone during start-up", r, g->dev[r]);
  /* Whichever rank fails first is reported at once: its peers may wait
   * for it inside ncclCommInitRank until NCCL's bootstrap gives up. */
  int ready[PT_GPU_MAX] = {0}, nready = 0;
  while (nready < g->n) {
    struct pollfd p[PT_GPU_MAX];
    for (int r = 0; r < g->n; r++) p[r] = (struct pollfd){ready[r] ? -1 : g->fd[r], POLLIN, 0};
    if (poll(p, (nfds_t)g->n, -1) < 0) {
      if (errno == EINTR) continue;
      return gerr(err, PT_EIO, "poll: %s", strerror(errno));
    }
    for (int r = 0; r < g->n; r++) {
      if (ready[r] || !p[r].revents) continue;
      if (hear(g, r, why, sizeof why)) return gerr(err, PT_EIO, "%s during start-up", why);
      if (g->msg.type == PT_RK_FAIL) return gerr(err, PT_EIO, "%s", g->msg.text);
      if (r == 0) snprintf(rank0, len, "%s", g->msg.text);
      ready[r] = 1;
      nready++;
    }
  }
  return 0;
}

/* The first collective connects the peers (connect_peers in gpu_rank.c);
 * a failure there is the environment's: nothing was forced. */
static int connect_all(struct gpu *g, struct pt_error_rec *err) {
  struct pt_rank_cmd c = {.type = PT_RK_CMD_CONNECT};
  char why[400];
  for (int r = 0; r < g->n; r++)
    if (tell(g, r, &c)) return gerr(err, PT_EIO, "rank %d (GPU %d) is gone during start-up", r, g->dev[r]);
  for (int r = 0; r < g->n; r++) {
    if (hear(g, r, why, sizeof why)) return gerr(err, PT_EIO, "%s during the first all-reduce", why);
    if (g->msg.type == PT_RK_FAIL) return gerr(err, PT_EIO, "%s", g->msg.text);
    if (g->msg.res.state != PT_PT_OK) return gerr(err, PT_EIO, "the first all-reduce failed: %s", g->msg.res.detail);
  }
  return 0;
}

int pt_gpu_open(struct pt_backend *b, const struct pt_gpu_opts *o, char **prov, struct pt_error_rec *err) {
  char why[600], *text = NULL, *env_text = NULL, *rank0 = NULL;
  size_t textlen = 0, envlen = 0;
  int rc;
  *prov = NULL;
  if (o->ngpus < 1 || o->ngpus > PT_GPU_MAX || o->ops < 1 || o->ops > 1000 || o->warmup > 1000)
    return gerr(err, PT_EINVAL, "bad options (%d GPUs, %u ops, %u warm-up)", o->ngpus, o->ops, o->warmup);
  if (o->same_gpu && o->single)
    return gerr(err, PT_EINVAL, "--same-gpu-ranks needs a process per rank, not a single process");
  struct gpu *g = calloc(1, sizeof *g);
  if (!g) return gerr(err, PT_ENOMEM, "out of memory");
  g->n = o->ngpus;
  g->ops = o->ops;
  g->warmup = o->warmup;
  g->warmup_ms = o->warmup_ms;
  g->single = o->single;
  g->same_gpu = o->same_gpu;
  g->beat_fd = o->beat_fd;
  memcpy(g->dev, o->gpus, sizeof(int) * (size_t)o->ngpus);
  rc = PT_ENOMEM;
  /* The user's NCCL_* environment, before we add ours. */
  FILE *ef = open_memstream(&env_text, &envlen);
  if (!ef || pt_prov_nccl_env(ef, (const char *const *)environ) || fclose(ef) || !env_text) goto nomem;
  if ((rc = find_plugin(o->plugin, g->plugin, err))) goto fail;
  if ((rc = setup_env(g, o->scratch, err))) goto fail;
  rc = PT_EIO;
  if (pt_gpu_api_load(&g->api, o->nccl_lib, o->cudart_lib, why, sizeof why)) {
    gerr(err, PT_EIO, "%s", why);
    goto fail;
  }
  for (int r = 0; r < g->n; r++)
    g->cfg[r] = (struct pt_rank_cfg){&g->api, g->plugin, g->dev, r, g->n, g->ops, g->warmup, o->in_place, o->nccl_mem,
                                     o->warmup_ms, o->gap_us};
  if (o->nccl_mem && !(g->api.MemAlloc && g->api.MemFree)) {
    gerr(err, PT_EIO, "--buffers ncclMemAlloc: %s has no ncclMemAlloc (NCCL 2.19 or later has it)", g->api.nccl_path);
    goto fail;
  }
  if (!(rank0 = calloc(1, sizeof g->msg.text))) goto nomem;
  if ((rc = start_all(g, rank0, sizeof g->msg.text, err)) || (rc = connect_all(g, err))) goto fail;
  read_logs(g);
  int version = 0;
  g->api.GetVersion(&version);
  snprintf(g->info.name, sizeof g->info.name, "nccl");
  snprintf(g->info.nccl_version, sizeof g->info.nccl_version, "%d.%d.%d", version / 10000, version / 100 % 100,
           version % 100);
  snprintf(g->info.target, sizeof g->info.target, "%d CUDA devices", g->n);
  int k = (int)strlen(g->info.target);
  for (int r = 0; r < g->n && (size_t)k < sizeof g->info.target; r++)
    k += snprintf(g->info.target + k, sizeof g->info.target - (size_t)k, "%s%d", r ? "," : " ", g->dev[r]);
  g->info.nranks = g->n;
  g->info.nnodes = g->same_gpu ? g->n : 1; /* a node per rank to NCCL */
  /* NCCL clamps a tuner's channel count to the communicator's: candidates
   * above it would measure, and later run, clamped. */
  g->info.max_channels = max_channels_env();
  if (g->log.comm_channels && g->log.comm_channels < g->info.max_channels)
    g->info.max_channels = g->log.comm_channels;
  g->info.comm_channels = g->log.comm_channels; /* the profile's communicator.channels */
  pt_prov_box(&g->info.box);
  FILE *f = open_memstream(&text, &textlen);
  if (!f) goto nomem;
  fputs(rank0, f);
  fputs("      ", f);
  fputs(env_text, f);
  fputs("\n    };\n", f);
  write_nccl_group(g, f, env_text);
  if (fclose(f) || !text) goto nomem;
  *prov = text;
  free(env_text);
  free(rank0);
  b->self = g;
  b->info = gpu_info;
  b->measure = gpu_measure;
  b->close = gpu_close;
  return 0;
nomem:
  rc = gerr(err, PT_ENOMEM, "out of memory");
fail:
  free(env_text);
  free(rank0);
  g->poisoned = 1;
  gpu_close(g);
  return rc;
}
