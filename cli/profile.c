/*
 * pcie-tune profile: parses options, opens a measurement backend, runs the
 * sweep engine (measure/sweep.c) and writes the profile atomically. Ctrl-C (or
 * --budget) stops between measurements and leaves a partial profile that
 * --resume continues. Owns option handling only; what to measure is the
 * engine's business and how to measure the backend's.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "measure/backend_isolated_faults.h"
#include "measure/backend_nccl.h"
#include "measure/backends.h"
#include "measure/explore.h"
#include "measure/explore_var.h"
#include "measure/screen.h"
#include "cmds.h"
#include "measure/isolate.h"
#include "nccl/common.h"
#include "pcie/files.h"
#include "pcie/sim_box.h"
#include "progress.h"
#include "measure/sweepfile.h"
#include "measure/workload.h"

static const char usage_text[] =
    "usage: pcie-tune profile --backend nccl --gpus LIST --out FILE [options]\n"
    "       pcie-tune profile --backend sim --box NAME|FILE --out FILE [options]\n"
    "       pcie-tune profile --resume --out FILE [--budget N] [--timeout S] [--quiet]\n"
    "\n"
    "Measures NCCL's default and every candidate (algo, proto, channels) at each\n"
    "message size and writes a profile (docs/profile-format.md).\n"
    "\n"
    "  --backend nccl|sim     the GPUs through NCCL (docs/gpu.md), or a simulated box\n"
    "  --gpus LIST            nccl: CUDA devices, e.g. 0-7 or 0,2,4,6\n"
    "  --ops N                nccl: all-reduces per captured graph / timed launch; 20\n"
    "  --warmup N             nccl: untimed launches after the first one; 5\n"
    "  --warmup-ms MS         nccl: then untimed replays for this much GPU time; 100\n"
    "  --nccl-lib PATH        nccl: the libnccl to measure with (e.g. your torch wheel's)\n"
    "  --cudart-lib PATH      nccl: the CUDA runtime; default beside libnccl, then the system's\n"
    "  --plugin PATH          nccl: the tuner plugin NCCL loads; default next to pcie-tune\n"
    "  --process-model M      nccl: per-gpu (a process per GPU, as vLLM/torch) or single; per-gpu\n"
    "  --in-place             nccl: all-reduce in place (default: out of place, as most engines)\n"
    "  --buffers B            nccl: cudaMalloc (torch's caching allocator, the engines' default)\n"
    "                         or ncclMemAlloc (an NCCL memory pool); cudaMalloc (docs/gpu.md)\n"
    "  --timeout SECONDS      base deadline per measurement and between heartbeats, scaled\n"
    "                         up with size (docs/gpu.md); a hang is retried once; 60\n"
    "  --box NAME|FILE        sim: a built-in box name or a box file (docs/sim.md)\n"
    "  --isolate              sim: measure in worker processes too, as nccl always does\n"
    "  --inject FAULT         sim --isolate: crash|abort|hang|wrong|exit|garbage:ALGO/PROTO/CH[@MIN]\n"
    "                         (a testing aid for the isolation; repeatable)\n"
    "  --checkpoint SECONDS   write the partial profile this often, so --resume survives\n"
    "                         even a killed profiler; 30 (0 = after every measurement)\n"
    "  --out FILE             profile to write (never overwritten without --force)\n"
    "  --sizes MIN:MAX|LIST   sizes in bytes, powers of two from MIN, or exactly the comma\n"
    "                         LIST (K/M/G suffixes); 8:256M\n"
    "  --workload FILE        also measure every size of a workload file (the format of\n"
    "                         'pcie-tune simulate --workload')\n"
    "  --graph | --eager | --both   launch mode(s) to measure; --graph\n"
    "  --collectives LIST     allreduce,allgather,reducescatter,broadcast,reduce or all; allreduce\n"
    "  --algos LIST           ring,tree; ring,tree\n"
    "  --protos LIST          ll,ll128,simple; all three (disabled ones report unsupported)\n"
    "  --channels LIST        channel counts; 1..the box's channels\n"
    "  --reps N               repetitions per point (median and spread kept); 7\n"
    "  --screen-reps N        repetitions when screening (adaptive only); 3\n"
    "  --seed N               noise seed of the simulated backend; 1\n"
    "  --full                 measure the full grid instead of sweeping adaptively\n"
    "  --explore-channels LIST  sweep again with NCCL_MIN_NCHANNELS=k for each k of LIST,\n"
    "                         judge each on the workload (--workload, else the verify-step\n"
    "                         sizes) and keep the best; prints the export line (docs/cli.md)\n"
    "  --explore VAR=LIST     the same for another NCCL setting: NCCL_MIN_NCHANNELS or\n"
    "                         NCCL_BUFFSIZE (bytes, K/M/G suffixes; exported as bytes)\n"
    "  --name NAME            profile name; the box name\n"
    "  --budget N             stop after N repetitions, leaving a partial profile\n"
    "  --resume               continue the partial profile --out FILE\n"
    "  --force                overwrite an existing --out FILE\n"
    "  --quiet                no progress on stderr\n";

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

#define MAX_INJECT 8

struct opts {
  const char *backend, *box, *out, *name, *gpus, *nccl_lib, *plugin, *cudart_lib;
  int single;   /* --process-model single */
  int in_place; /* --in-place */
  int nccl_mem; /* --buffers ncclMemAlloc */
  const char *inject[MAX_INJECT];
  size_t ninject;
  int isolate;
  unsigned long long ops, warmup, warmup_ms, timeout_s, checkpoint_s;
  int timeout_given; /* --timeout was on the command line (--resume may change it) */
  uint64_t min_bytes, max_bytes;
  uint64_t sizes[PT_SWEEP_MAX_SIZES]; /* --sizes LIST and --workload, merged */
  size_t nsizes;
  const char *sizes_list, *workload; /* as given, for the resume record */
  int sizes_range;                   /* --sizes MIN:MAX was given */
  unsigned mode_mask, coll_mask, algo_mask, proto_mask;
  int channels[PT_MAX_CHANNELS];
  size_t nch;
  unsigned reps, screen_reps;
  unsigned long long seed, budget;
  int full, force, resume, quiet;
  /* --explore VAR=LIST (--explore-channels: NCCL_MIN_NCHANNELS), ascending */
  const struct pt_explore_var *xvar;
  long long explore[PT_MAX_CHANNELS];
  size_t nexplore;
};

/* Reports a usage error; returns its exit status, 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "pcie-tune profile: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'pcie-tune profile --help')\n");
  return 2;
}

static int parse_ull(const char *s, unsigned long long lo, unsigned long long hi,
                     unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || errno || *s == '-' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A comma list of names into a bit mask through parse(); "all" = every one. */
static int parse_list(const char *s, int (*parse)(const char *), unsigned all, unsigned *mask) {
  char buf[256];
  if (!strcmp(s, "all")) {
    *mask = all;
    return 0;
  }
  if (strlen(s) >= sizeof buf) return -1; /* truncating would drop names silently */
  snprintf(buf, sizeof buf, "%s", s);
  *mask = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int v = parse(t);
    if (v < 0 || !(all & (1u << v))) return -1;
    *mask |= 1u << v;
  }
  return *mask ? 0 : -1;
}

static int parse_channels(const char *s, struct opts *o) {
  char buf[256];
  if (strlen(s) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", s);
  o->nch = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    unsigned long long v;
    if (parse_ull(t, 1, PT_MAX_CHANNELS, &v) || o->nch >= PT_MAX_CHANNELS) return -1;
    o->channels[o->nch++] = (int)v;
  }
  return o->nch ? 0 : -1;
}

/* "14336,28672,1M": sizes in bytes with K/M/G suffixes, merged into o->sizes. */
static int parse_size_list(const char *s, struct opts *o) {
  char buf[1024];
  if (strlen(s) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    uint64_t v;
    if (pt_size_parse(t, 1, PT_WORKLOAD_MAX_BYTES, &v) || pt_sizes_add(o->sizes, &o->nsizes, PT_SWEEP_MAX_SIZES, v)) return -1;
  }
  return o->nsizes ? 0 : -1;
}

static int proto_parse(const char *s) { return pt_proto_parse(s); }
static int algo_parse(const char *s) { return pt_algo_parse(s); }
static int coll_parse(const char *s) { return pt_coll_parse(s); }

/* The sweep record (canonical()) is one space-separated string that
 * --resume splits again, so a value stored there must be one non-empty
 * word: "my box.cfg" would come back as two arguments. Returns 0 or 2. */
static int record_word(const char *opt, const char *v) {
  const char *c = v;
  while (*c && !isspace((unsigned char)*c)) c++;
  if (*v && !*c) return 0;
  return bad("%s '%s' %s; the resume record stores it as one word (rename the file or use a symlink)",
             opt, v, *v ? "contains whitespace" : "is empty");
}

/* Returns 0, or the exit status for a usage error / --help (-1 = help). */
/* --explore VAR=LIST: the values ascending, duplicates dropped. */
static int parse_explore(const char *v, struct opts *o) {
  char name[64], why[256];
  const char *eq = strchr(v, '=');
  if (!eq || eq == v || (size_t)(eq - v) >= sizeof name || !eq[1])
    return bad("bad --explore '%s' (VAR=LIST, e.g. NCCL_BUFFSIZE=1M,4M)", v);
  memcpy(name, v, (size_t)(eq - v));
  name[eq - v] = 0;
  if (!(o->xvar = pt_explore_var_find(name)))
    return bad("--explore %s: not an explorable setting (%s)", name, pt_explore_var_names());
  char *list = strdup(eq + 1), *save = NULL;
  if (!list) return bad("out of memory");
  o->nexplore = 0;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long long x;
    size_t j = 0;
    if (pt_explore_var_parse(o->xvar, t, &x, why, sizeof why)) {
      free(list);
      return bad("bad --explore: %s", why);
    }
    if (o->nexplore == PT_MAX_CHANNELS) {
      free(list);
      return bad("bad --explore: more than %d values", PT_MAX_CHANNELS);
    }
    while (j < o->nexplore && o->explore[j] < x) j++;
    if (j < o->nexplore && o->explore[j] == x) continue;
    memmove(&o->explore[j + 1], &o->explore[j], (o->nexplore - j) * sizeof o->explore[0]);
    o->explore[j] = x;
    o->nexplore++;
  }
  free(list);
  if (!o->nexplore) return bad("bad --explore '%s': no value", v);
  return 0;
}

static int parse(int argc, char **argv, struct opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long n;
#define NEED_ARG \
  if (!v) return bad("option '%s' needs a value", a); \
  i++;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return -1;
    else if (!strcmp(a, "--graph")) o->mode_mask = 1u << PT_MODE_GRAPH;
    else if (!strcmp(a, "--eager")) o->mode_mask = 1u << PT_MODE_EAGER;
    else if (!strcmp(a, "--both")) o->mode_mask = 3u;
    else if (!strcmp(a, "--full")) o->full = 1;
    else if (!strcmp(a, "--force")) o->force = 1;
    else if (!strcmp(a, "--resume")) o->resume = 1;
    else if (!strcmp(a, "--quiet")) o->quiet = 1;
    else if (!strcmp(a, "--isolate")) o->isolate = 1;
    else if (!strcmp(a, "--gpus")) {
      NEED_ARG
      if (record_word(a, v)) return 2;
      o->gpus = v;
    }
    else if (!strcmp(a, "--inject")) {
      NEED_ARG
      struct pt_fault f;
      char why[256];
      if (o->ninject == MAX_INJECT) return bad("more than %d --inject", MAX_INJECT);
      if (record_word(a, v)) return 2;
      if (pt_fault_parse(v, &f, why, sizeof why)) return bad("bad --inject: %s", why);
      o->inject[o->ninject++] = v;
    } else if (!strcmp(a, "--ops")) {
      NEED_ARG
      if (parse_ull(v, 1, 1000, &o->ops)) return bad("bad --ops '%s' (1..1000)", v);
    } else if (!strcmp(a, "--warmup")) {
      NEED_ARG
      if (parse_ull(v, 0, 1000, &o->warmup)) return bad("bad --warmup '%s' (0..1000)", v);
    } else if (!strcmp(a, "--warmup-ms")) {
      NEED_ARG
      if (parse_ull(v, 0, 10000, &o->warmup_ms)) return bad("bad --warmup-ms '%s' (0..10000)", v);
    } else if (!strcmp(a, "--timeout")) {
      NEED_ARG
      if (parse_ull(v, 1, 86400, &o->timeout_s)) return bad("bad --timeout '%s' (seconds, 1..86400)", v);
      o->timeout_given = 1;
    } else if (!strcmp(a, "--checkpoint")) {
      NEED_ARG
      if (parse_ull(v, 0, 86400, &o->checkpoint_s)) return bad("bad --checkpoint '%s' (seconds, 0..86400)", v);
    }
    else if (!strcmp(a, "--backend")) { NEED_ARG o->backend = v; }
    else if (!strcmp(a, "--nccl-lib") || !strcmp(a, "--plugin") || !strcmp(a, "--cudart-lib")) {
      NEED_ARG
      if (record_word(a, v)) return 2;
      *(a[2] == 'n' ? &o->nccl_lib : a[2] == 'p' ? &o->plugin : &o->cudart_lib) = v;
    } else if (!strcmp(a, "--in-place")) {
      o->in_place = 1;
    } else if (!strcmp(a, "--buffers")) {
      NEED_ARG
      if (strcmp(v, "cudaMalloc") && strcmp(v, "ncclMemAlloc")) return bad("bad --buffers '%s' (cudaMalloc or ncclMemAlloc)", v);
      o->nccl_mem = !strcmp(v, "ncclMemAlloc");
    } else if (!strcmp(a, "--process-model")) {
      NEED_ARG
      if (strcmp(v, "per-gpu") && strcmp(v, "single")) return bad("bad --process-model '%s' (per-gpu or single)", v);
      o->single = !strcmp(v, "single");
    }
    else if (!strcmp(a, "--box")) {
      NEED_ARG
      if (record_word(a, v)) return 2;
      o->box = v;
    } else if (!strcmp(a, "--name")) {
      NEED_ARG
      if (record_word(a, v)) return 2;
      o->name = v;
    }
    else if (!strcmp(a, "--out")) { NEED_ARG o->out = v; }
    else if (!strcmp(a, "--sizes") && !strchr(v ? v : ":", ':')) {
      NEED_ARG
      if (record_word(a, v) || parse_size_list(v, o)) return bad("bad --sizes '%s' (MIN:MAX, or a comma list of at most %d sizes)", v, PT_SWEEP_MAX_SIZES);
      o->sizes_list = v;
    } else if (!strcmp(a, "--workload")) {
      NEED_ARG
      struct pt_error_rec we;
      if (record_word(a, v)) return 2;
      if (pt_workload_sizes(v, o->sizes, &o->nsizes, PT_SWEEP_MAX_SIZES, &we)) {
        char buf[1200];
        pt_error_format(&we, buf, sizeof buf);
        return bad("--workload: %s", buf);
      }
      o->workload = v;
    } else if (!strcmp(a, "--sizes")) {
      NEED_ARG
      o->sizes_range = 1;
      char lo[64], *colon = strchr(v, ':');
      size_t lolen = colon ? (size_t)(colon - v) : strlen(v);
      snprintf(lo, sizeof lo, "%.*s", (int)(lolen < sizeof lo ? lolen : 0), v);
      if (lolen >= sizeof lo || pt_size_parse(lo, 1, PT_WORKLOAD_MAX_BYTES, &o->min_bytes) || pt_size_parse(colon ? colon + 1 : v, 1, PT_WORKLOAD_MAX_BYTES, &o->max_bytes) ||
          o->max_bytes < o->min_bytes)
        return bad("bad --sizes '%s' (expected MIN:MAX in bytes, e.g. 8:256M)", v);
    } else if (!strcmp(a, "--collectives")) {
      NEED_ARG
      if (parse_list(v, coll_parse, (1u << PT_NCOLL) - 1, &o->coll_mask))
        return bad("bad --collectives '%s' (allreduce, allgather, reducescatter, broadcast, reduce or all)", v);
    } else if (!strcmp(a, "--algos")) {
      NEED_ARG
      if (parse_list(v, algo_parse, (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_RING), &o->algo_mask))
        return bad("bad --algos '%s' (ring, tree or all: the algorithms a PCIe node has)", v);
    } else if (!strcmp(a, "--protos")) {
      NEED_ARG
      if (parse_list(v, proto_parse, 7u, &o->proto_mask)) return bad("bad --protos '%s' (ll, ll128, simple or all)", v);
    } else if (!strcmp(a, "--channels")) {
      NEED_ARG
      if (parse_channels(v, o)) return bad("bad --channels '%s' (comma list of 1..64)", v);
    } else if (!strcmp(a, "--explore-channels")) {
      NEED_ARG
      struct opts t;
      if (parse_channels(v, &t)) return bad("bad --explore-channels '%s' (comma list of 1..64)", v);
      o->nexplore = 0;
      o->xvar = pt_explore_var_find("NCCL_MIN_NCHANNELS");
      for (int k = 1; k <= PT_MAX_CHANNELS; k++)
        for (size_t j = 0; j < t.nch; j++)
          if (t.channels[j] == k) {
            o->explore[o->nexplore++] = k;
            break;
          }
    } else if (!strcmp(a, "--explore")) {
      NEED_ARG
      if (parse_explore(v, o)) return 2;
    } else if (!strcmp(a, "--reps")) {
      NEED_ARG
      if (parse_ull(v, 1, PT_SWEEP_MAX_REPS, &n)) return bad("bad --reps '%s' (1..64)", v);
      o->reps = (unsigned)n;
    } else if (!strcmp(a, "--screen-reps")) {
      NEED_ARG
      if (parse_ull(v, 1, PT_SWEEP_MAX_REPS, &n)) return bad("bad --screen-reps '%s' (1..64)", v);
      o->screen_reps = (unsigned)n;
    } else if (!strcmp(a, "--seed")) {
      NEED_ARG
      if (parse_ull(v, 0, ~0ULL, &o->seed)) return bad("bad --seed '%s'", v);
    } else if (!strcmp(a, "--budget")) {
      NEED_ARG
      if (parse_ull(v, 1, ~0ULL, &o->budget)) return bad("bad --budget '%s' (repetitions >= 1)", v);
    } else {
      return bad("unknown option '%s'", a);
    }
#undef NEED_ARG
  }
  return 0;
}

/* Appends to a fixed buffer, remembering an overflow instead of cutting
 * the record short in silence. */
struct rec {
  char *buf;
  size_t len, k;
  int full;
};

static void rec_add(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_add(struct rec *r, const char *fmt, ...) {
  va_list ap;
  if (r->full) return;
  va_start(ap, fmt);
  int n = vsnprintf(r->buf + r->k, r->len - r->k, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= r->len - r->k) r->full = 1;
  else r->k += (size_t)n;
}

/* The options that define a sweep, in one canonical string (stored in the
 * profile, re-read by --resume). Returns -1 when it does not fit in len. */
static int canonical(const struct opts *o, char *buf, size_t len) {
  struct rec r = {buf, len, 0, 0};
  const char *sep = "";
  buf[0] = 0;
  rec_add(&r, "--backend %s", o->backend);
  if (!strcmp(o->backend, "nccl")) {
    rec_add(&r, " --gpus %s --ops %llu --warmup %llu --timeout %llu --process-model %s", o->gpus, o->ops,
            o->warmup, o->timeout_s, o->single ? "single" : "per-gpu");
    if (o->nccl_lib) rec_add(&r, " --nccl-lib %s", o->nccl_lib);
    if (o->cudart_lib) rec_add(&r, " --cudart-lib %s", o->cudart_lib);
    if (o->plugin) rec_add(&r, " --plugin %s", o->plugin);
    if (o->in_place) rec_add(&r, " --in-place");
    if (o->nccl_mem) rec_add(&r, " --buffers ncclMemAlloc");
    rec_add(&r, " --warmup-ms %llu", o->warmup_ms);
  } else {
    rec_add(&r, " --box %s --seed %llu", o->box, o->seed);
    if (o->isolate) rec_add(&r, " --isolate --timeout %llu", o->timeout_s);
    for (size_t i = 0; i < o->ninject; i++) rec_add(&r, " --inject %s", o->inject[i]);
  }
  if (o->sizes_list) rec_add(&r, " --sizes %s", o->sizes_list);
  if (o->workload) rec_add(&r, " --workload %s", o->workload);
  if (!o->nsizes) rec_add(&r, " --sizes %llu:%llu", (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
  rec_add(&r, " --%s --collectives ",
          o->mode_mask == 3u ? "both" : o->mode_mask == (1u << PT_MODE_GRAPH) ? "graph" : "eager");
  for (int c = 0; c < PT_NCOLL; c++)
    if (o->coll_mask & (1u << c)) rec_add(&r, "%s%s", sep, pt_coll_name(c)), sep = ",";
  rec_add(&r, " --algos ");
  sep = "";
  for (int a = 0; a < 2; a++)
    if (o->algo_mask & (1u << a)) rec_add(&r, "%s%s", sep, pt_algo_name(a)), sep = ",";
  rec_add(&r, " --protos ");
  sep = "";
  for (int p = 0; p < 3; p++)
    if (o->proto_mask & (1u << p)) rec_add(&r, "%s%s", sep, pt_proto_name(p)), sep = ",";
  rec_add(&r, " --channels ");
  for (size_t i = 0; i < o->nch; i++) rec_add(&r, "%s%d", i ? "," : "", o->channels[i]);
  rec_add(&r, " --reps %u --screen-reps %u --checkpoint %llu --name %s%s", o->reps, o->screen_reps,
          o->checkpoint_s, o->name, o->full ? " --full" : "");
  return r.full ? -1 : 0;
}

static void defaults(struct opts *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = 8;
  o->max_bytes = 256ULL << 20;
  o->mode_mask = 1u << PT_MODE_GRAPH;
  o->coll_mask = 1u << PT_ALLREDUCE;
  o->algo_mask = (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_RING);
  o->proto_mask = 7u;
  o->reps = 7;
  o->screen_reps = 3;
  o->seed = 1;
  o->ops = 20;
  o->warmup = 5;
  o->warmup_ms = 100;
  o->timeout_s = 60;
  o->checkpoint_s = 30;
}

/* Splits the stored canonical string into argv and parses it. storage
 * must hold strlen(args) + 1 bytes; the parsed options point into it.
 * Returns 0, or non-zero when the record does not parse. */
static int parse_stored(const char *args, struct opts *o, char *storage) {
  char *argv[64];
  int argc = 0;
  strcpy(storage, args);
  argv[argc++] = (char *)"profile";
  for (char *save = NULL, *t = strtok_r(storage, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    if (argc == 64) return -1; /* more words than any record we write */
    argv[argc++] = t;
  }
  return parse(argc, argv, o);
}

static void print_error(const struct pt_error_rec *e) {
  char buf[1200];
  pt_error_format(e, buf, sizeof buf);
  fprintf(stderr, "pcie-tune profile: %s\n", buf);
}

/* Opens the backend the options name; xv > 0 applies o->xvar = xv to a
 * simulated box by the simulator's model of it (the nccl backend's workers
 * get it from the environment instead). Returns 0, or an exit status. */
static int open_backend(const struct opts *o, long long xv, struct pt_backend *be) {
  struct pt_error_rec e;
  int rc;
  if (!strcmp(o->backend, "nccl")) {
    struct pt_nccl_opts no;
    pt_nccl_opts_default(&no);
    no.gpus = o->gpus;
    no.ops = (unsigned)o->ops;
    no.warmup = (unsigned)o->warmup;
    no.warmup_ms = (unsigned)o->warmup_ms;
    no.timeout_s = (double)o->timeout_s;
    no.nccl_lib = o->nccl_lib;
    no.cudart_lib = o->cudart_lib;
    no.plugin = o->plugin;
    no.single = o->single;
    no.in_place = o->in_place;
    no.nccl_mem = o->nccl_mem;
    no.stop = &interrupted;
    rc = pt_backend_nccl_open(be, &no, &e);
  } else {
    struct pt_box box;
    if ((rc = pt_box_resolve(&box, o->box, &e))) {
      if (rc == PT_EIO && !strchr(o->box, '/') && !strstr(o->box, ".cfg")) {
        fprintf(stderr, "pcie-tune profile: unknown box '%s' (built-in:", o->box);
        for (size_t i = 0; i < pt_box_builtin_count(); i++) fprintf(stderr, " %s", pt_box_builtin_at(i)->name);
        fprintf(stderr, "; or a box file)\n");
        return 2;
      }
      print_error(&e);
      return 1;
    }
    char why[400];
    if (xv && o->xvar->apply_box(&box, xv, why, sizeof why)) {
      fprintf(stderr, "pcie-tune profile: box '%s': %s\n", o->box, why);
      return 2;
    }
    if (!o->isolate) return pt_backend_sim_open(be, &box, o->seed) ? 1 : 0;
    /* The same worker harness as the GPU backend, over the simulator. */
    char seed[32];
    const char *args[8 + 2 * MAX_INJECT];
    size_t n = 0;
    snprintf(seed, sizeof seed, "%llu", o->seed);
    args[n++] = "--backend", args[n++] = "sim", args[n++] = "--box", args[n++] = o->box;
    args[n++] = "--seed", args[n++] = seed;
    for (size_t i = 0; i < o->ninject; i++) args[n++] = "--inject", args[n++] = o->inject[i];
    args[n] = NULL;
    struct pt_isolate_opts io = {.args = args, .timeout_s = (double)o->timeout_s,
                                 .start_timeout_s = 30, .stderr_fd = -1, .stop = &interrupted};
    rc = pt_backend_isolated_open(be, &io, &e);
  }
  if (!rc) return 0;
  if (interrupted) { /* Ctrl-C while the first worker started: nothing measured */
    fprintf(stderr, "pcie-tune profile: interrupted while the worker started; nothing measured\n");
    return 128 + (int)interrupted;
  }
  print_error(&e);
  return rc == PT_EINVAL ? 2 : 1;
}

/* Before any LL128 candidate is measured, the correctness screen
 * (measure/screen.h); a failure records LL128 unusable on this box and
 * drops its candidates from the sweep. Returns 0 or an exit status. */
static int screen_ll128(const struct opts *o, const struct pt_backend *be, struct pt_sweep_opts *so,
                        struct pt_cand_spec *cands, struct pt_screen *out) {
  struct pt_error_rec e;
  if (pt_screen_sweep(be, so, cands, &so->ncand, out, &e)) {
    print_error(&e);
    return 1;
  }
  if (out->state == PT_SCREEN_PASS && !o->quiet)
    fprintf(stderr, "pcie-tune profile: LL128 screened (%s; %u replays with changing inputs at each of %zu sizes): "
                    "every output of every rank correct\n", out->cands, out->replays, out->nsizes);
  if (out->state != PT_SCREEN_FAIL) return 0;
  fprintf(stderr, "pcie-tune profile: LL128 failed its correctness screen: %s; recorded as unusable on this box, "
                  "its candidates are not measured\n", out->reason);
  return so->ncand ? 0 : (fprintf(stderr, "pcie-tune profile: no candidate left without LL128\n"), 2);
}

/* Everything one write of the profile needs, shared by checkpoints. */
struct run_state {
  const struct opts *o;
  const char *args;
  const struct pt_sweep *sw;
  const struct pt_backend *be;
  struct pt_backend_info bi;
  struct pt_progress pg;
  double last_write;
  int warned, written;
  /* --explore: the profile is built into *keep, not written, and o->xvar
   * = xv (0 = unset) shaped the run. */
  struct pt_profile *keep;
  long long xv;
  struct pt_screen screen; /* the LL128 screen run before the sweep */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes the sweep as it stands; isolated backends add their provenance
 * (GPU names, bus ids, versions, NCCL_* environment) to provenance.extra. */
static int save(const struct run_state *r, int complete, unsigned flags, struct pt_error_rec *e) {
  struct pt_profile prof = {0};
  const char *more = pt_isolate_provenance(r->be);
  int rc = pt_sweepfile_build(r->sw, &r->bi, r->o->name, r->args, complete, &prof);
  if (!rc) rc = pt_screen_record(&r->screen, &prof);
  if (!rc && more && more[0]) {
    char *joined = NULL;
    if (asprintf(&joined, "%s%s", prof.prov.extra ? prof.prov.extra : "", more) < 0) rc = PT_ENOMEM;
    else {
      free(prof.prov.extra);
      prof.prov.extra = joined;
    }
  }
  /* What the job must match (docs/gpu.md, "Buffers"): the allocator, and
   * whether NCCL registered buffers under capture (NCCL_GRAPH_REGISTER,
   * 1 unless set: NCCL_PARAM(GraphRegister) in NCCL 2.28's enqueue.cc). */
  if (!rc && !strcmp(r->o->backend, "nccl")) {
    const char *gr = getenv("NCCL_GRAPH_REGISTER");
    prof.prov.graph_register = gr && *gr ? atoi(gr) : 1;
    prof.prov.has_graph_register = 1;
    if (!(prof.prov.buffers = strdup(r->o->nccl_mem ? "ncclMemAlloc" : "cudaMalloc"))) rc = PT_ENOMEM;
  }
  /* A simulated box's view does not come from this process's environment
   * (sweepfile.c): record the variable its derivation was given. */
  if (!rc && r->xv && !prof.env_recorded) {
    char v[32];
    pt_explore_var_format(r->xv, v, sizeof v);
    prof.env_recorded = 1;
    if (!(prof.env = calloc(1, sizeof *prof.env)) || !(prof.env[0].name = strdup(r->o->xvar->name)) ||
        !(prof.env[0].value = strdup(v)))
      rc = PT_ENOMEM;
    if (prof.env) prof.nenv = 1;
  }
  if (!rc && r->keep) {
    *r->keep = prof;
    return 0;
  }
  if (!rc) rc = pt_profile_write(&prof, r->o->out, flags, e);
  else snprintf(e->msg, sizeof e->msg, "out of memory");
  pt_profile_release(&prof);
  return rc;
}

/* Progress, plus a checkpoint every --checkpoint seconds: the partial
 * profile on disk is what --resume continues after any interruption, a
 * SIGKILL or a power cut included. */
static void on_progress(void *arg, const struct pt_sweep_progress *p) {
  struct run_state *r = arg;
  struct pt_error_rec e = {0};
  pt_progress_cb(&r->pg, p);
  if (!strcmp(r->o->out, "-")) return; /* standard output gets the final profile only */
  if (r->keep) return;                  /* --explore-channels is not resumable */
  if (now_s() - r->last_write < (double)r->o->checkpoint_s) return;
  r->last_write = now_s();
  int rc = save(r, 0, PT_WRITE_FORCE, &e);
  r->written |= rc == 0;
  /* Early on, a series may have nothing valid to write yet: not an error. */
  if (rc && rc != PT_EINVAL && !r->warned) {
    print_error(&e);
    r->warned = 1;
  }
}

/* The sweep itself, once options are final. With keep, the finished
 * profile goes to *keep (the caller releases it) instead of --out, and
 * xv is as open_backend's. */
static int run(struct opts *o, const char *args, int resume, long long xv, struct pt_profile *keep) {
  struct pt_backend be = {0};
  struct pt_sweep sw = {0};
  struct pt_sweep_opts so;
  struct pt_cand_spec cands[2 * 3 * PT_MAX_CHANNELS];
  struct pt_error_rec e;
  struct run_state r = {.o = o, .args = args, .sw = &sw, .be = &be, .keep = keep, .xv = xv};
  int status, rc;
  /* Before the first worker starts (NCCL's init can take minutes): Ctrl-C
   * stops the profiler at any time, and its workers with it. */
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  if ((status = open_backend(o, xv, &be))) goto out;
  status = 1;
  be.info(be.self, &r.bi);
  pt_sweep_opts_default(&so);
  so.min_bytes = o->min_bytes;
  so.max_bytes = o->max_bytes;
  so.sizes = o->sizes;
  so.nsizes = o->nsizes;
  so.coll_mask = o->coll_mask;
  so.mode_mask = o->mode_mask;
  so.reps = o->reps;
  so.screen_reps = o->screen_reps < o->reps ? o->screen_reps : o->reps;
  so.full = o->full;
  so.budget = o->budget;
  so.stop = &interrupted;
  so.cands = cands;
  so.ncand = pt_sweep_cands(o->algo_mask, o->proto_mask, o->channels, o->nch, r.bi.max_channels, cands,
                            sizeof cands / sizeof cands[0]);
  if (!so.ncand) {
    fprintf(stderr, "pcie-tune profile: no candidate left: every --channels value is above the "
                    "target's %d channels\n", r.bi.max_channels);
    status = 2;
    goto out;
  }
  const char *proto_env = getenv("NCCL_PROTO"), *algo_env = getenv("NCCL_ALGO");
  /* NCCL disables LL128 on PCIe unless NCCL_PROTO enables it: say so in the
   * summary, rather than leave "unsupported" unexplained. */
  int ll128_note = !strcmp(o->backend, "nccl") && (o->proto_mask & (1u << NCCL_PROTO_LL128)) &&
                   (!proto_env || !strstr(proto_env, "LL128") || strchr(proto_env, '^'));
  if (!strcmp(o->backend, "nccl") && (algo_env || proto_env))
    fprintf(stderr, "pcie-tune profile: warning: NCCL_ALGO=%s NCCL_PROTO=%s are set: candidates they exclude "
                    "come back unsupported\n", algo_env ? algo_env : "(unset)", proto_env ? proto_env : "(unset)");
  if ((status = screen_ll128(o, &be, &so, cands, &r.screen))) goto out;
  status = 1;
  pt_progress_init(&r.pg, o->quiet);
  r.last_write = now_s();
  so.progress = on_progress;
  so.progress_arg = &r;
  if ((rc = pt_sweep_init(&sw, &so, &e))) {
    fprintf(stderr, "pcie-tune profile: %s\n", e.msg);
    status = rc == PT_EINVAL ? 2 : 1;
    goto out;
  }
  if (resume && (rc = pt_sweepfile_seed(&sw, o->out, &e))) {
    print_error(&e);
    goto out;
  }
  /* Workers (nccl, or sim --isolate) have a deadline per measurement. */
  double deadline = o->isolate || strcmp(o->backend, "sim") ? (double)o->timeout_s : 0;
  rc = pt_sweep_run(&sw, pt_progress_wrap(&r.pg, &be, deadline), &e);
  pt_progress_end(&r.pg);
  if (rc) {
    print_error(&e);
    goto out;
  }
  /* A partial file (ours, or a checkpoint) is ours to replace; a finished
   * sweep obeys --force. */
  unsigned flags = (o->force || resume || sw.stopped || r.written) ? PT_WRITE_FORCE : 0;
  if (keep && sw.stopped) {
    fprintf(stderr, "pcie-tune profile: interrupted after %llu repetitions; --explore-channels cannot be "
                    "resumed yet, nothing written\n", (unsigned long long)sw.samples);
    status = interrupted ? 128 + (int)interrupted : 1;
    goto out;
  }
  if ((rc = save(&r, !sw.stopped, flags, &e))) {
    /* One rank: NCCL copies without choosing an algorithm and never asks
     * a tuner (enqueue.cc), so no candidate could be forced. */
    if (r.bi.nranks == 1 && !strcmp(o->backend, "nccl"))
      fprintf(stderr, "pcie-tune profile: nothing to write for one GPU: NCCL never asks a tuner on a one-rank "
                      "communicator, so every candidate came back unsupported; profile two GPUs or more "
                      "(e.g. --gpus 0-1)\n");
    else
      print_error(&e);
    if (interrupted) status = 128 + (int)interrupted;
    goto out;
  }
  if (sw.stopped && !strcmp(o->out, "-")) {
    fprintf(stderr, "pcie-tune profile: %s after %llu repetitions; partial profile written to "
                    "standard output (only a file can be resumed)\n",
            interrupted ? "interrupted" : "budget reached", (unsigned long long)sw.samples);
    status = interrupted ? 128 + (int)interrupted : 1;
    goto out;
  } else if (sw.stopped) {
    fprintf(stderr, "pcie-tune profile: %s after %llu repetitions; partial profile written to %s\n"
                    "continue with: pcie-tune profile --resume --out %s\n",
            interrupted ? "interrupted" : "budget reached", (unsigned long long)sw.samples, o->out, o->out);
    status = interrupted ? 128 + (int)interrupted : 1;
    goto out;
  }
  if (keep) {
    if (!o->quiet && xv)
      fprintf(stderr, "pcie-tune profile: measured with %s=%lld (%d communicator channels; %llu repetitions in "
                      "%llu measurements)\n", o->xvar->name, xv, r.bi.comm_channels, (unsigned long long)sw.samples,
              (unsigned long long)sw.calls);
    else if (!o->quiet)
      fprintf(stderr, "pcie-tune profile: measured with %s (%d communicator channels; %llu repetitions in "
                      "%llu measurements)\n", o->xvar->skip_to_comm_channels ? "NCCL's own channel count" :
              "NCCL's default", r.bi.comm_channels, (unsigned long long)sw.samples, (unsigned long long)sw.calls);
    status = 0;
    goto out;
  }
  if (!o->quiet) /* "wrote -" would read as a file named '-' */
    fprintf(stderr, "pcie-tune profile: wrote %s (%llu repetitions in %llu measurements)\n",
            !strcmp(o->out, "-") ? "the profile to standard output" : o->out,
            (unsigned long long)sw.samples, (unsigned long long)sw.calls);
  if (ll128_note)
    fprintf(stderr, "pcie-tune profile: note: ll128 is unsupported unless NCCL_PROTO enables it (NCCL disables "
                    "LL128 on PCIe); to measure it: NCCL_PROTO=LL,LL128,Simple pcie-tune profile ...\n");
  status = 0;
out:
  pt_sweep_release(&sw);
  if (be.close) be.close(be.self);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  return status;
}

#define MAX_EXPLORE_ITEMS 1024

struct items {
  struct pt_explore_item *it;
  size_t n;
};

static int add_item(void *ctx, const struct pt_workload_item *item, char *why, size_t len) {
  struct items *l = ctx;
  if (l->n == MAX_EXPLORE_ITEMS) {
    snprintf(why, len, "more than %d workload lines; --explore-channels judges at most that many", MAX_EXPLORE_ITEMS);
    return -1;
  }
  l->it[l->n++] = (struct pt_explore_item){item->coll, item->bytes, item->count};
  return 0;
}

/* --explore VAR=LIST (--explore-channels: NCCL_MIN_NCHANNELS): the sweep
 * with the setting unset, then with VAR=v for each v; each profile is
 * judged on the workload by the latency its table's measured choices give
 * (measure/explore.h), against NCCL's default of the first run. A value
 * must gain more than the margin; the winner is written to --out with its
 * nccl_env. */
static int explore(struct opts *o, const char *args) {
  static struct pt_explore_item items[MAX_EXPLORE_ITEMS];
  struct items l = {items, 0};
  const struct pt_explore_var *xvar = o->xvar;
  const char *var = xvar->name;
  struct pt_profile prof[1 + PT_MAX_CHANNELS];
  long long xval[1 + PT_MAX_CHANNELS];
  double total[1 + PT_MAX_CHANNELS], dflt[1 + PT_MAX_CHANNELS], base = 0;
  struct pt_error_rec e;
  char why[256], kv[32];
  size_t n = 0;
  int status = 1, nccl = !strcmp(o->backend, "nccl");
  int mode = (o->mode_mask & (1u << PT_MODE_GRAPH)) ? PT_MODE_GRAPH : PT_MODE_EAGER;
  FILE *sum = strcmp(o->out, "-") ? stdout : stderr; /* '-' is the profile's */
  memset(prof, 0, sizeof prof);
  if (o->workload) {
    if (pt_workload_read(o->workload, add_item, &l, &e)) {
      print_error(&e);
      return 1;
    }
  } else {
    l.n = pt_explore_default_workload(items);
  }
  for (size_t i = 0; i < l.n; i++)
    if (!(o->coll_mask & (1u << items[i].coll)))
      return bad("the workload has %s, which --collectives does not measure", pt_coll_name(items[i].coll));
  if (nccl && getenv(var))
    fprintf(stderr, "pcie-tune profile: note: %s=%s is set; --explore sets it per run "
                    "and measures the first run without it\n", var, getenv(var));
  for (size_t i = 0; i <= o->nexplore; i++) {
    long long k = i ? o->explore[i - 1] : 0;
    /* NCCL_MIN_NCHANNELS only adds channels: at or below NCCL's own count
     * the communicator, and so the sweep, would be the first one again;
     * NCCL's default buffer size is the first run too. */
    if (k && xvar->skip_to_comm_channels && prof[0].comm_channels && k <= prof[0].comm_channels) {
      fprintf(stderr, "pcie-tune profile: %s=%lld skipped: NCCL already builds %d channels\n", var, k,
              prof[0].comm_channels);
      continue;
    }
    if (k && k == xvar->same_as_unset) {
      fprintf(stderr, "pcie-tune profile: %s=%lld skipped: NCCL's default, the first run\n", var, k);
      continue;
    }
    /* The nccl backend's workers inherit this process's environment, as
     * NCCL reads it: plain decimal. */
    pt_explore_var_format(k, kv, sizeof kv);
    if (nccl && k) setenv(var, kv, 1);
    else if (nccl) unsetenv(var);
    if ((status = run(o, args, 0, k, &prof[n]))) goto out;
    status = 1;
    xval[n] = k;
    /* Each run's NCCL default too: what the setting alone does, without
     * the plugin, so the plugin is credited only with its own share. */
    if (pt_explore_total(&prof[n], mode, items, l.n, 1, &dflt[n], why, sizeof why) ||
        pt_explore_total(&prof[n], mode, items, l.n, 0, &total[n], why, sizeof why)) {
      if (k) fprintf(stderr, "pcie-tune profile: cannot judge the run with %s=%lld on the workload: %s\n", var, k, why);
      else fprintf(stderr, "pcie-tune profile: cannot judge the run with %s unset on the workload: %s\n", var, why);
      goto out;
    }
    if (!n) base = dflt[0];
    n++;
  }
  size_t w = pt_explore_pick(total, n, pt_profile_margin(&prof[0]));
  fprintf(sum, "%s exploration, %s mode, on %s (%zu line%s):\n",
          xvar->skip_to_comm_channels ? "channel" : var, mode == PT_MODE_GRAPH ? "graph" : "eager",
          o->workload ? o->workload : "the verify step (tokens 1,4,8,16,32,64,128 x 14336 B)", l.n,
          l.n == 1 ? "" : "s");
  fprintf(sum, "  %-20s %8s %14s %10s %13s\n", var, "channels", "workload us", "vs default", "plugin's share");
  fprintf(sum, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default\n", "unset", prof[0].comm_channels, base, 1.0, "-");
  for (size_t i = 0; i < n; i++) {
    pt_explore_var_format(xval[i], kv, sizeof kv);
    if (i && xvar->skip_to_comm_channels)
      fprintf(sum, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default at %d channels, no plugin\n", kv,
              prof[i].comm_channels, dflt[i], base / dflt[i], "-", prof[i].comm_channels);
    else if (i)
      fprintf(sum, "  %-20s %8d %14.2f %9.3fx %13s  NCCL's default with %s=%s, no plugin\n", kv,
              prof[i].comm_channels, dflt[i], base / dflt[i], "-", var, kv);
    fprintf(sum, "  %-20s %8d %14.2f %9.3fx %12.3fx  tuned%s\n", xval[i] ? kv : "unset", prof[i].comm_channels,
            total[i], base / total[i], dflt[i] / total[i], i == w ? "  <- chosen" : "");
  }
  if ((status = pt_profile_write(&prof[w], o->out, o->force ? PT_WRITE_FORCE : 0, &e))) {
    print_error(&e);
    status = 1;
    goto out;
  }
  pt_explore_var_format(xval[w], kv, sizeof kv);
  if (xval[w])
    fprintf(sum, "of the %.2fx, %s=%s alone gives %.2fx and the plugin %.2fx on top\n"
                 "run the job with (%s):\nexport %s=%s\n",
            base / total[w], var, kv, base / dflt[w], dflt[w] / total[w], xvar->otherwise, var, kv);
  else
    fprintf(sum, xvar->keep_line, pt_profile_margin(&prof[0]) * 100), fputc('\n', sum);
  if (!o->quiet)
    fprintf(stderr, "pcie-tune profile: wrote %s\n", strcmp(o->out, "-") ? o->out : "the profile to standard output");
  status = 0;
out:
  for (size_t i = 0; i <= n && i <= o->nexplore; i++) pt_profile_release(&prof[i]);
  return status;
}

int cmd_profile(int argc, char **argv) {
  struct opts o, given;
  char args[sizeof ((struct pt_sweepfile_state *)0)->args];
  defaults(&o);
  int rc = parse(argc, argv, &o);
  if (rc < 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (rc) return rc;
  if (!o.out) return bad("missing --out FILE");
  if (o.resume) {
    struct pt_sweepfile_state fs;
    struct pt_error_rec e;
    char stored[sizeof fs.args]; /* the resumed options point into it */
    given = o;
    if (given.nexplore) return bad("--explore-channels cannot be resumed yet; run it again from the start");
    /* Everything but --out, --budget, --timeout and --quiet comes from the
     * file: a sweep whose points hung may be continued with a longer
     * deadline. */
    if (given.backend || given.box || given.gpus || given.full || given.force || given.name || given.nccl_lib ||
        given.plugin || given.cudart_lib)
      return bad("--resume takes the sweep's options from %s; give only --out, --budget, --timeout, --quiet", o.out);
    for (int i = 1; i < argc; i++)
      if (strcmp(argv[i], "--resume") && strcmp(argv[i], "--out") && strcmp(argv[i], "--budget") &&
          strcmp(argv[i], "--timeout") && strcmp(argv[i], "--quiet") &&
          (i == 1 || (strcmp(argv[i - 1], "--out") && strcmp(argv[i - 1], "--budget") && strcmp(argv[i - 1], "--timeout"))))
        return bad("--resume takes the sweep's options from the file; '%s' is not allowed", argv[i]);
    if (!strcmp(o.out, "-")) return bad("--resume needs the profile file the sweep wrote, not '-'");
    /* Before measuring: the file will be replaced (include/pcie/files.h). */
    if (pt_output_check(o.out, PT_OUT_FORCE, NULL, 0, &e)) {
      print_error(&e);
      return 1;
    }
    if ((rc = pt_sweepfile_state(o.out, &fs, &e))) {
      print_error(&e);
      return 1;
    }
    if (fs.complete) {
      fprintf(stderr, "pcie-tune profile: %s is complete; nothing to resume\n", o.out);
      return 1;
    }
    defaults(&o);
    if (parse_stored(fs.args, &o, stored) || !o.backend ||
        (!o.box && !o.gpus)) {
      fprintf(stderr, "pcie-tune profile: %s: unusable sweep record '%s'\n", given.out, fs.args);
      return 1;
    }
    o.out = given.out;
    o.budget = given.budget;
    o.quiet = given.quiet;
    snprintf(args, sizeof args, "%s", fs.args);
    if (given.timeout_given) {
      if (strcmp(o.backend, "nccl") && !o.isolate)
        return bad("--timeout applies to sweeps in workers (--backend nccl, or sim --isolate); %s has none", o.out);
      /* The record keeps the new deadline for the next --resume too. */
      o.timeout_s = given.timeout_s;
      if (canonical(&o, args, sizeof args)) return bad("the options do not fit in the resume record");
    }
    return run(&o, args, 1, 0, NULL);
  }
  if (!o.backend) return bad("missing --backend (nccl or sim)");
  if (o.nexplore && o.budget) return bad("--budget stops a sweep for --resume, and --explore-channels cannot be resumed yet");
  if (o.nexplore && o.isolate) return bad("--explore-channels does not combine with --isolate yet");
  if (o.sizes_range && o.nsizes) return bad("--sizes MIN:MAX and a size list (--sizes LIST, --workload) exclude each other");
  if (!strcmp(o.backend, "nccl")) {
    if (!o.gpus) return bad("missing --gpus LIST for the nccl backend (e.g. --gpus 0-7)");
    if (o.box || o.isolate || o.ninject) return bad("--box, --isolate and --inject are for --backend sim");
  } else if (!strcmp(o.backend, "sim")) {
    if (o.nccl_lib || o.plugin || o.cudart_lib || o.single || o.in_place || o.nccl_mem)
      return bad("--nccl-lib, --cudart-lib, --plugin, --process-model, --in-place and --buffers are for --backend nccl");
    if (!o.box) return bad("missing --box NAME|FILE for the sim backend");
    if (o.gpus) return bad("--gpus is for --backend nccl");
    if (o.ninject && !o.isolate) return bad("--inject needs --isolate (faults happen in workers)");
  } else {
    return bad("unknown backend '%s' (nccl or sim)", o.backend);
  }
  /* Before measuring, not at the first checkpoint: a missing or read-only
   * directory, a FIFO or device, the --box or --workload file itself. */
  struct pt_error_rec oe;
  const char *inputs[2] = {o.box, o.workload};
  rc = pt_output_check(o.out, o.force ? PT_OUT_FORCE : 0, inputs, 2, &oe);
  if (rc == PT_EEXIST) {
    fprintf(stderr, "pcie-tune profile: %s exists; use --force to overwrite it, or --resume to continue it\n", o.out);
    return 1;
  }
  if (rc) {
    print_error(&oe);
    return 1;
  }
  if (!o.nch) {
    /* Every count up to the communicator's; run() drops those above the box's. */
    for (int c = 1; c <= 16; c++) o.channels[o.nch++] = c;
  }
  char gpu_name[128];
  if (!o.name && o.box) {
    const char *slash = strrchr(o.box, '/');
    o.name = slash ? slash + 1 : o.box;
  } else if (!o.name) {
    snprintf(gpu_name, sizeof gpu_name, "nccl-gpus-%s", o.gpus);
    o.name = gpu_name;
  }
  if (canonical(&o, args, sizeof args))
    return bad("the options do not fit in the %zu-byte resume record; shorten --box, --name or --inject",
               sizeof args);
  return o.nexplore ? explore(&o, args) : run(&o, args, 0, 0, NULL);
}
