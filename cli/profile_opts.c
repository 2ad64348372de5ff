/*
 * pcie-tune profile's options: the table, the syntaxes of its own, the
 * checks across options, and --resume, which takes the options from the
 * partial profile's record (cli/profile.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/workload.h"
#include "nccl/common.h"
#include "pcie/files.h"
#include "pcie/profile.h"
#include "engine.h"
#include "measure/backend_nccl.h"
#include "measure/gpu_nccl.h"
#include "nccl_pick.h"
#include "profile.h"

/* A comma list of names into a bit mask through name(); "all" = every one. */
static int name_list(const char *s, int (*name)(const char *), unsigned all, unsigned *mask) {
  char buf[256];
  if (!strcmp(s, "all")) {
    *mask = all;
    return 0;
  }
  if (strlen(s) >= sizeof buf) return -1; /* truncating would drop names silently */
  snprintf(buf, sizeof buf, "%s", s);
  *mask = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int v = name(t);
    if (v < 0 || !(all & (1u << v))) return -1;
    *mask |= 1u << v;
  }
  return *mask ? 0 : -1;
}

static int why_is(char *why, size_t len, const char *text) {
  snprintf(why, len, "%s", text);
  return -1;
}

static int collectives(void *opts, const char *v, char *why, size_t len) {
  if (!name_list(v, pt_coll_parse, (1u << PT_NCOLL) - 1, &((struct profile_opts *)opts)->coll_mask)) return 0;
  return why_is(why, len, "allreduce, allgather, reducescatter, broadcast, reduce or all");
}

static int algos(void *opts, const char *v, char *why, size_t len) {
  unsigned all = (1u << NCCL_ALGO_TREE) | (1u << NCCL_ALGO_RING);
  if (!name_list(v, pt_algo_parse, all, &((struct profile_opts *)opts)->algo_mask)) return 0;
  return why_is(why, len, "ring, tree or all: the algorithms a PCIe node has");
}

static int protos(void *opts, const char *v, char *why, size_t len) {
  if (!name_list(v, pt_proto_parse, 7u, &((struct profile_opts *)opts)->proto_mask)) return 0;
  return why_is(why, len, "ll, ll128, simple or all");
}

/* "1,2,4" or "1-16" into counts[0..*n), each 1..PT_MAX_CHANNELS once,
 * ascending. */
static int count_list(const char *s, int *counts, size_t *n) {
  char buf[256], seen[PT_MAX_CHANNELS + 1] = {0};
  if (strlen(s) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    unsigned lo, hi;
    int used;
    if (sscanf(t, "%u%n-%u%n", &lo, &used, &hi, &used) < 1 || t[used] || t[0] == '-') return -1;
    if (!strchr(t, '-')) hi = lo;
    if (lo < 1 || hi > PT_MAX_CHANNELS || hi < lo) return -1;
    for (unsigned k = lo; k <= hi; k++) seen[k] = 1;
  }
  *n = 0;
  for (int k = 1; k <= PT_MAX_CHANNELS; k++)
    if (seen[k]) counts[(*n)++] = k;
  return *n ? 0 : -1;
}

static int channels(void *opts, const char *v, char *why, size_t len) {
  struct profile_opts *o = opts;
  if (!count_list(v, o->channels, &o->nch)) return 0;
  return why_is(why, len, "comma list of 1..64");
}

/* The values of one setting to explore; --explore and --explore-channels
 * are one option under two spellings. */
static int explore_list(struct profile_opts *o, const char *var, const char *list, char *why, size_t len) {
  if (o->explore_var) {
    snprintf(why, len, "--explore and --explore-channels exclude each other (give one)");
    return CLI_WHOLE;
  }
  if (!(o->explore_var = pt_explore_var_find(var))) {
    snprintf(why, len, "VAR=LIST with VAR one of %s", pt_explore_var_names());
    return -1;
  }
  return pt_explore_values(o->explore_var, list, o->explore, &o->nexplore, why, len);
}

static int explore(void *opts, const char *v, char *why, size_t len) {
  char var[64];
  const char *eq = strchr(v, '=');
  snprintf(var, sizeof var, "%.*s", eq ? (int)(eq - v) : 0, v);
  return explore_list(opts, var, eq ? eq + 1 : "", why, len);
}

/* --chunks LIST: Ring/Simple chunk sizes for getChunkSize, 4K..2M bytes
 * (K/M allowed), multiples of 512 (the grain enqueue.cc rounds Simple's
 * chunk down to); a plugin may only shrink NCCL's chunk, half the 4 MiB
 * default buffer (sim/ring_chunks.c). */
static int chunks(void *opts, const char *v, char *why, size_t len) {
  struct profile_opts *o = opts;
  char buf[256];
  o->nchunks = 0;
  if (strlen(v) >= sizeof buf) return why_is(why, len, "comma list of up to 4 chunk sizes in bytes, 4K..2M");
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *end;
    unsigned long long n = strtoull(t, &end, 10);
    int sh = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : 0;
    if (sh) end++;
    if (end == t || *t == '-' || *end || n > (2u << 20) || (n << sh) < 4096 || (n << sh) > (2u << 20) ||
        (n << sh) % 512 || o->nchunks == PROFILE_MAX_CHUNKS)
      return why_is(why, len, "comma list of up to 4 chunk sizes in bytes, 4K..2M, multiples of 512");
    uint32_t c = (uint32_t)(n << sh);
    size_t k = 0;
    while (k < o->nchunks && o->chunks[k] < c) k++;
    if (k < o->nchunks && o->chunks[k] == c) continue;
    memmove(&o->chunks[k + 1], &o->chunks[k], (o->nchunks - k) * sizeof o->chunks[0]);
    o->chunks[k] = c;
    o->nchunks++;
  }
  return o->nchunks ? 0 : why_is(why, len, "comma list of up to 4 chunk sizes in bytes, 4K..2M");
}

static int explore_channels(void *opts, const char *v, char *why, size_t len) {
  return explore_list(opts, "NCCL_MIN_NCHANNELS", v, why, len);
}

/* --sizes MIN:MAX, or a LIST merged with --workload's sizes. */
static int sizes(void *opts, const char *v, char *why, size_t len) {
  struct profile_opts *o = opts;
  const char *colon = strchr(v, ':');
  char buf[1024];
  if (strlen(v) >= sizeof buf) return why_is(why, len, "too long");
  snprintf(buf, sizeof buf, "%s", v);
  if (colon) {
    buf[colon - v] = 0;
    if (pt_size_parse(buf, 1, PT_WORKLOAD_MAX_BYTES, &o->min_bytes) ||
        pt_size_parse(buf + (colon - v) + 1, 1, PT_WORKLOAD_MAX_BYTES, &o->max_bytes) || o->max_bytes < o->min_bytes)
      return why_is(why, len, "expected MIN:MAX in bytes, e.g. 8:256M");
    return 0;
  }
  int n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n >= 0; t = strtok_r(NULL, ",", &save)) {
    uint64_t b;
    int bad = pt_size_parse(t, 1, PT_WORKLOAD_MAX_BYTES, &b) || pt_sizes_add(o->sizes, &o->nsizes, PT_SWEEP_MAX_SIZES, b);
    n = bad ? -1 : n + 1;
  }
  if (n > 0) return 0;
  snprintf(why, len, "MIN:MAX, or a comma list of at most %d sizes", PT_SWEEP_MAX_SIZES);
  return -1;
}

static int workload(void *opts, const char *v, char *why, size_t len) {
  struct profile_opts *o = opts;
  struct pt_error_rec we;
  if (!pt_workload_sizes(v, o->sizes, &o->nsizes, PT_SWEEP_MAX_SIZES, &we)) {
    o->workload = v;
    return 0;
  }
  char msg[1200];
  pt_error_format(&we, msg, sizeof msg);
  snprintf(why, len, "--workload: %s", msg);
  return CLI_WHOLE;
}

#define F(x) offsetof(struct profile_opts, x)
#define REC CLI_RECORD
#define GRAPH (1u << PT_MODE_GRAPH)
#define EAGER (1u << PT_MODE_EAGER)

static const struct cli_opt profile_rows[] = {
    CLI_ROW("backend", 0, CLI_STR, "nccl|sim", F(backend), 0, 0, NULL, REC, 0,
     "the GPUs through NCCL (docs/gpu.md), or a simulated box"),
    CLI_INCLUDE(cli_measure_rows),
    CLI_ROW("engine", 0, CLI_CHOICE, CLI_ENGINES, F(engine), 0, 0, "none", REC, CLI_NCCL,
     "nccl: set in the workers the NCCL variables that engine sets\n(vllm: NCCL_CUMEM_ENABLE=0; sglang: also NCCL_NVLS_ENABLE=0),\n"
     "recorded in nccl_env; none matches a job that runs NCCL with\nthis environment as it is (torchrun, nccl-tests); docs/gpu.md"),
    CLI_ROW("isolate", 0, CLI_FLAG, NULL, F(isolate), 0, 0, NULL, REC, CLI_SIM,
     "sim: measure in worker processes too, as nccl always does"),
    CLI_ROW("timeout", 0, CLI_UINT, "SECONDS", F(timeout_s), 1, 86400, "60", REC | CLI_RESUME, 0,
     "base deadline per measurement and between heartbeats, scaled\nup with size (docs/gpu.md); a hang is "
     "retried once"),
    CLI_ROW("checkpoint", 0, CLI_UINT, "SECONDS", F(checkpoint_s), 0, 86400, "30", REC, 0,
     "write the partial profile this often, so --resume survives\neven a killed profiler (0: after every "
     "measurement)"),
    CLI_ROW("out", 0, CLI_STR, "FILE", F(out), 0, 0, NULL, CLI_RESUME, 0,
     "profile to write (never overwritten without --force)"),
    CLI_ROW("sizes", 0, CLI_CUSTOM, "MIN:MAX|LIST", 0, 0, 0, "8:256M", REC, 0,
     "sizes in bytes, powers of two from MIN, or exactly the comma\nLIST (K/M/G suffixes)", .parse = sizes),
    CLI_ROW("workload", 0, CLI_CUSTOM, "FILE", 0, 0, 0, NULL, REC, 0,
     "also measure every size of a workload file (the format of\n'pcie-tune simulate --workload')", .parse = workload),
    CLI_ROW("graph", 0, CLI_SET, NULL, F(mode_mask), GRAPH, 0, "", REC, 0, "measure CUDA-graph launches"),
    CLI_ROW("eager", 0, CLI_SET, NULL, F(mode_mask), EAGER, 0, NULL, REC, 0, "measure eager launches"),
    CLI_ROW("both", 0, CLI_SET, NULL, F(mode_mask), GRAPH | EAGER, 0, NULL, REC, 0, "measure both launch modes"),
    CLI_ROW("collectives", 0, CLI_CUSTOM, "LIST", 0, 0, 0, "allreduce", REC, 0,
     "allreduce,allgather,reducescatter,broadcast,reduce or all", .parse = collectives),
    CLI_ROW("algos", 0, CLI_CUSTOM, "LIST", 0, 0, 0, "ring,tree", REC, 0, "ring,tree", .parse = algos),
    CLI_ROW("protos", 0, CLI_CUSTOM, "LIST", 0, 0, 0, "ll,ll128,simple", REC, 0,
     "ll,ll128,simple or all (disabled ones report unsupported)", .parse = protos),
    CLI_ROW("channels", 0, CLI_CUSTOM, "LIST", 0, 0, 0, "1-16", REC, 0,
     "channel counts (those above the box's are dropped)", .parse = channels),
    CLI_ROW("chunks", 0, CLI_CUSTOM, "LIST", 0, 0, 0, NULL, REC, 0,
     "also measure each ring/simple candidate with these chunk sizes\n(getChunkSize, tuner ABI v6/v7; bytes, K/M allowed)",
     .parse = chunks),
    CLI_ROW("reps", 0, CLI_UINT, "N", F(reps), 1, PT_SWEEP_MAX_REPS, "7", REC, 0,
     "repetitions per point (median and spread kept)"),
    CLI_ROW("screen-reps", 0, CLI_UINT, "N", F(screen_reps), 1, PT_SWEEP_MAX_REPS, "3", REC, 0,
     "repetitions when screening (adaptive only)"),
    CLI_ROW("full", 0, CLI_FLAG, NULL, F(full), 0, 0, NULL, REC, 0, "measure the full grid instead of sweeping adaptively"),
    CLI_ROW("explore", 0, CLI_CUSTOM, "VAR=LIST", 0, 0, 0, NULL, 0, 0,
     "sweep again with the NCCL variable VAR set to each value of\nLIST (VAR: NCCL_MIN_NCHANNELS), judge each on the "
     "workload\n(--workload, else the verify-step sizes) and keep the best;\nprints the export line (docs/cli.md)",
     .parse = explore),
    CLI_ROW("explore-channels", 0, CLI_CUSTOM, "LIST", 0, 0, 0, NULL, 0, 0, "--explore NCCL_MIN_NCHANNELS=LIST",
     .parse = explore_channels),
    CLI_ROW("name", 0, CLI_STR, "NAME", F(name), 0, 0, NULL, REC, 0, "profile name (default: the box's name)"),
    CLI_ROW("budget", 0, CLI_UINT, "N", F(budget), 1, ~0ULL, NULL, CLI_RESUME, 0,
     "stop after N repetitions, leaving a partial profile"),
    CLI_ROW("resume", 0, CLI_FLAG, NULL, F(resume), 0, 0, NULL, CLI_RESUME, 0, "continue the partial profile --out FILE"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0,
     "overwrite an existing --out FILE; nccl: measure even another\nNCCL minor version than the engine's"),
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, CLI_RESUME, 0, "no progress on stderr"),
    CLI_END_ROW,
};

const struct cli_cmd profile_cli = {
    "profile",
    "usage: pcie-tune profile --backend nccl --gpus LIST --out FILE [options]\n"
    "       pcie-tune profile --backend sim --box NAME|FILE --out FILE [options]\n"
    "       pcie-tune profile --resume --out FILE [--budget N] [--timeout S] [--quiet]\n"
    "\n"
    "Measures NCCL's default and every candidate (algo, proto, channels) at each\n"
    "message size and writes a profile (docs/profile-format.md).\n",
    NULL,
    profile_rows,
    NULL,
};

static unsigned scope(const struct profile_opts *o) { return strcmp(o->backend, "nccl") ? CLI_SIM : CLI_NCCL; }

int profile_record(struct profile_opts *o) {
  return cli_emit_line(&profile_cli, o, &o->st, CLI_RECORD, scope(o), o->record, sizeof o->record) < 0 ? -1 : 0;
}

/* The record's words as an argv, parsed like a command line into o. */
static int parse_stored(const char *record, struct profile_opts *o) {
  char *argv[128];
  int argc = 0;
  snprintf(o->stored, sizeof o->stored, "%s", record);
  argv[argc++] = (char *)"profile";
  for (char *save = NULL, *t = strtok_r(o->stored, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    if (argc == 128) return -1; /* more words than any record we write */
    argv[argc++] = t;
  }
  return cli_parse(&profile_cli, argc, argv, o, &o->st, 0);
}

/* --resume: everything but the rows flagged CLI_RESUME comes from the
 * file (a sweep whose points hung may be continued with a longer deadline). */
static int resume(struct profile_opts *o) {
  static struct profile_opts given;
  struct pt_sweepfile_state fs;
  struct pt_error_rec e;
  const char *other = cli_given_without(&o->st, CLI_RESUME);
  if (o->nexplore) return cli_bad(&profile_cli, "--explore-channels cannot be resumed yet; run it again from the start");
  if (other)
    return cli_bad(&profile_cli, "--resume takes the sweep's options from %s; '--%s' is not allowed (give only "
                   "--out, --budget, --timeout, --quiet)", o->out, other);
  if (!strcmp(o->out, "-")) return cli_bad(&profile_cli, "--resume needs the profile file the sweep wrote, not '-'");
  /* Before measuring: the file will be replaced (include/pcie/files.h). */
  if (pt_output_check(o->out, PT_OUT_FORCE, NULL, 0, &e) || pt_sweepfile_state(o->out, &fs, &e)) {
    cli_print_error("pcie-tune profile", &e);
    return 1;
  }
  if (fs.complete) {
    fprintf(stderr, "pcie-tune profile: %s is complete; nothing to resume\n", o->out);
    return 1;
  }
  given = *o;
  memset(o, 0, sizeof *o);
  if (parse_stored(fs.args, o) || !o->backend || (!o->m.box && !o->m.gpus)) {
    fprintf(stderr, "pcie-tune profile: %s: unusable sweep record '%s'\n", given.out, fs.args);
    return 1;
  }
  o->out = given.out;
  o->budget = given.budget;
  o->quiet = given.quiet;
  o->resume = 1;
  snprintf(o->record, sizeof o->record, "%s", fs.args);
  if (!cli_given(&given.st, "timeout")) return 0;
  if (strcmp(o->backend, "nccl") && !o->isolate)
    return cli_bad(&profile_cli, "--timeout applies to sweeps in workers (--backend nccl, or sim --isolate); %s has "
                   "none", o->out);
  /* The record keeps the new deadline for the next --resume too. */
  o->timeout_s = given.timeout_s;
  return profile_record(o) ? cli_bad(&profile_cli, "the options do not fit in the resume record") : 0;
}

/* The checks across options of a new sweep; 0 or the exit status. */
static int check_new(const struct profile_opts *o) {
  const struct cli_measure *m = &o->m;
  if (!o->backend) return cli_bad(&profile_cli, "missing --backend (nccl or sim)");
  if (o->nexplore && o->budget)
    return cli_bad(&profile_cli, "--budget stops a sweep for --resume, and --explore-channels cannot be resumed yet");
  if (o->nexplore && o->isolate) return cli_bad(&profile_cli, "--explore-channels does not combine with --isolate yet");
  if (!strcmp(o->backend, "nccl")) {
    if (!m->gpus) return cli_bad(&profile_cli, "missing --gpus LIST for the nccl backend (e.g. --gpus 0-7)");
    if (m->box || o->isolate || m->ninject)
      return cli_bad(&profile_cli, "--box, --isolate and --inject are for --backend sim");
    if (m->same_gpu && m->single)
      return cli_bad(&profile_cli, "--same-gpu-ranks needs a process per rank (each its own NCCL_HOSTID), not "
                     "--process-model single");
  } else if (!strcmp(o->backend, "sim")) {
    if (m->nccl_lib || m->plugin || m->cudart_lib || m->single || m->in_place || m->nccl_mem || m->same_gpu ||
        o->engine)
      return cli_bad(&profile_cli, "--nccl-lib, --cudart-lib, --plugin, --process-model, --in-place, --buffers, "
                     "--same-gpu-ranks and --engine are for --backend nccl");
    if (!m->box) return cli_bad(&profile_cli, "missing --box NAME|FILE for the sim backend");
    if (m->gpus) return cli_bad(&profile_cli, "--gpus is for --backend nccl");
    if (m->ninject && !o->isolate) return cli_bad(&profile_cli, "--inject needs --isolate (faults happen in workers)");
  } else {
    return cli_bad(&profile_cli, "unknown backend '%s' (nccl or sim)", o->backend);
  }
  return 0;
}

/* --nccl-lib auto (or none given): the NCCL the engine loads when a Python
 * environment with torch (or VLLM_NCCL_SO_PATH) names one, else the
 * loader's. Says which NCCL will be measured and which the engine loads,
 * and refuses (without --force) to measure another minor version than the
 * engine's: the plugin would refuse the profile at the job's first init.
 * The resolved path is what the resume record and the worker get.
 * Returns 0 or 1. */
static int pick_nccl(struct profile_opts *o) {
  static struct cli_nccl eng, meas;
  int dev[PT_GPU_MAX];
  /* A bad --gpus is the backend's to report, alone. */
  if (pt_nccl_parse_gpus(o->m.gpus, dev, PT_GPU_MAX, 1) < 0) return 0;
  int have_eng = cli_engine_nccl(&eng);
  if (!o->m.nccl_lib || !strcmp(o->m.nccl_lib, "auto")) o->m.nccl_lib = have_eng ? eng.path : NULL;
  int have_meas = cli_nccl_at(o->m.nccl_lib, &meas);
  if (!o->quiet) {
    if (have_meas)
      fprintf(stderr, "pcie-tune profile: measuring NCCL %d.%d.%d from %s\n", meas.major, meas.minor,
              meas.patch, meas.path);
    if (have_eng)
      fprintf(stderr, "pcie-tune profile: the engine loads NCCL %d.%d.%d from %s (%s)\n", eng.major,
              eng.minor, eng.patch, eng.path, eng.from);
    else
      fprintf(stderr, "pcie-tune profile: no Python environment with torch found (python3 on PATH) and "
                      "no VLLM_NCCL_SO_PATH: make sure the job loads this NCCL, or give --nccl-lib the "
                      "libnccl.so.2 it loads\n");
  }
  if (have_eng && have_meas && (eng.major != meas.major || eng.minor != meas.minor) && !o->force) {
    fprintf(stderr,
            "pcie-tune profile: would measure NCCL %d.%d.%d (%s), but the engine loads NCCL %d.%d.%d "
            "(%s, %s): the plugin refuses a profile of another minor version at the job's first "
            "init. Give --nccl-lib %s (or leave --nccl-lib out), or --force to measure anyway\n",
            meas.major, meas.minor, meas.patch, meas.path, eng.major, eng.minor, eng.patch, eng.path,
            eng.from, eng.path);
    return 1;
  }
  return 0;
}

/* A range and a list of sizes exclude each other. */
static int sizes_clash(const struct profile_opts *o) {
  for (size_t g = 0; g < o->st.ngiven; g++)
    if (!strcmp(o->st.row[o->st.given[g].row]->name, "sizes") && strchr(o->st.given[g].value, ':'))
      return o->nsizes > 0;
  return 0;
}

int profile_options(int argc, char **argv, struct profile_opts *o) {
  struct pt_error_rec e;
  memset(o, 0, sizeof *o);
  int rc = cli_parse(&profile_cli, argc, argv, o, &o->st, 1);
  if (rc) return rc;
  if (!o->out) return cli_bad(&profile_cli, "missing --out FILE");
  if (o->resume) return resume(o);
  if ((rc = check_new(o))) return rc;
  if (sizes_clash(o))
    return cli_bad(&profile_cli, "--sizes MIN:MAX and a size list (--sizes LIST, --workload) exclude each other");
  /* Before measuring, not at the first checkpoint: a missing or read-only
   * directory, a FIFO or device, the --box or --workload file itself. */
  const char *inputs[2] = {o->m.box, o->workload};
  rc = pt_output_check(o->out, o->force ? PT_OUT_FORCE : 0, inputs, 2, &e);
  if (rc) {
    cli_print_error("pcie-tune profile", &e);
    return 1;
  }
  if (!o->name && o->m.box) {
    const char *slash = strrchr(o->m.box, '/');
    o->name = slash ? slash + 1 : o->m.box;
  } else if (!o->name) {
    snprintf(o->name_buf, sizeof o->name_buf, "nccl-gpus-%s", o->m.gpus);
    o->name = o->name_buf;
  }
  if (!strcmp(o->backend, "nccl") && pick_nccl(o)) return 1;
  if (profile_record(o))
    return cli_bad(&profile_cli, "the options do not fit in the %zu-byte resume record; shorten --box, --name or "
                   "--inject", sizeof o->record);
  return 0;
}
