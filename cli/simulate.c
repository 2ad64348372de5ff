/*
 * pcie-tune simulate: loads the built plugin the way NCCL does (dlopen
 * through the simulated host), points it at a profile, and runs a workload
 * on a simulated box, printing the time per step for NCCL's default, the
 * tuned choice and the oracle. Owns the workload and the report; the
 * judging of one collective is sim/simeval.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opt.h"
#include "cmds.h"
#include "json.h"
#include "measure/workload.h"
#include "pcie/files.h"
#include "sim/simeval.h"

#define MAX_ITEMS 256
#define PLUGIN_NAME "PcieTuner" /* tuner/tuner_v*.c, .name */

struct sim_opts {
  const char *profile, *box, *workload, *plugin, *tokens;
  unsigned long long calls;
  uint64_t bpt;
  int mode, json, quiet;
};

static int one_profile(void *opts, const char *arg, char *why, size_t len) {
  struct sim_opts *o = opts;
  if (!o->profile) o->profile = arg;
  else snprintf(why, len, "more than one profile given ('%s')", arg);
  return o->profile == arg ? 0 : -1;
}

static int bytes_per_token(void *opts, const char *v, char *why, size_t len) {
  if (!pt_size_parse(v, 1, 1ULL << 30, &((struct sim_opts *)opts)->bpt)) return 0;
  snprintf(why, len, "1..1G");
  return -1;
}

#define F(x) offsetof(struct sim_opts, x)

static const struct cli_opt simulate_rows[] = {
    CLI_ROW("box", 0, CLI_STR, "NAME|FILE", F(box), 0, 0, NULL, 0, 0, "a built-in box name or a box file (docs/sim.md)"),
    CLI_ROW("workload", 0, CLI_STR, "FILE", F(workload), 0, 0, NULL, 0, 0,
            "steps from a file: lines 'STEP COLLECTIVE BYTES COUNT';\nconsecutive lines with the same STEP form one "
            "step\n(BYTES, like --bytes-per-token, takes K, M, G suffixes)"),
    CLI_ROW("tokens", 0, CLI_STR, "LIST", F(tokens), 0, 0, "1,4,8,16,32,64,128", 0, 0,
            "the default workload's token counts, one step each"),
    CLI_ROW("bytes-per-token", 0, CLI_CUSTOM, "N", 0, 0, 0, "14336", 0, 0, "all-reduce bytes per token",
            .parse = bytes_per_token),
    CLI_ROW("calls", 0, CLI_UINT, "N", F(calls), 1, 1000000, "123", 0, 0, "all-reduces per step"),
    CLI_ROW("graph", 0, CLI_SET, NULL, F(mode), PT_MODE_GRAPH, 0, "", 0, 0, "CUDA-graph launches"),
    CLI_ROW("eager", 0, CLI_SET, NULL, F(mode), PT_MODE_EAGER, 0, NULL, 0, 0, "eager launches"),
    CLI_ROW("plugin", 0, CLI_STR, "SO", F(plugin), 0, 0, NULL, 0, 0,
            "plugin to load (default: $PCIE_TUNER_SO, else\nlibnccl-tuner-pcie.so next to pcie-tune or in ../lib)"),
    CLI_ROW("json", 0, CLI_FLAG, NULL, F(json), 0, 0, NULL, 0, 0, "the same results as one JSON object"),
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0, "print only the total"),
    CLI_END_ROW,
};

const struct cli_cmd simulate_cli = {
    "simulate",
    "usage: pcie-tune simulate PROFILE --box NAME|FILE [--workload FILE]\n"
    "                          [--tokens LIST] [--bytes-per-token N] [--calls N]\n"
    "                          [--graph|--eager] [--plugin SO] [--json] [-q|--quiet]\n"
    "\n"
    "Drives the plugin through a simulated NCCL host over a workload on a\n"
    "simulated box and prints the time per step for NCCL's default, the tuned\n"
    "choice and the oracle (the best any choice could do).\n"
    "\n"
    "Default workload: one verify step of a Kimi-K2-class model, --calls\n"
    "all-reduces of tokens x --bytes-per-token B, one step per token count\n"
    "in --tokens.\n",
    "With NCCL_DEBUG=INFO, NCCL's and the plugin's log lines come first, as NCCL\n"
    "prints them (pcie-tune doctor reads them).\n",
    simulate_rows,
    one_profile,
};

#define bad(...) cli_bad(&simulate_cli, __VA_ARGS__)

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || errno || *s == '-' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

struct items {
  struct pt_workload_item *it;
  size_t n, max;
};

static int add_item(void *ctx, const struct pt_workload_item *item, char *why, size_t len) {
  struct items *l = ctx;
  if (l->n == l->max) {
    snprintf(why, len, "more than %zu workload lines", l->max);
    return -1;
  }
  l->it[l->n++] = *item;
  return 0;
}

/* Reads a workload file (measure/workload.c, the reader profile --workload
 * shares); returns the item count or -1 after printing "file:line: what". */
static int read_workload(const char *path, struct pt_workload_item *it, size_t max) {
  struct pt_error_rec e;
  struct items l = {it, 0, max};
  char buf[1200];
  if (pt_workload_read(path, add_item, &l, &e)) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune simulate: %s\n", buf);
    return -1;
  }
  return (int)l.n;
}

static const char *plugin_path(const char *given, char *buf, size_t len) {
  if (given) return given;
  const char *env = getenv("PCIE_TUNER_SO");
  if (env && *env) return env;
  ssize_t n = readlink("/proc/self/exe", buf, len - 32);
  if (n <= 0) return NULL;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  /* The build tree keeps both in build/; an install has bin/ and lib/. */
  snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "libnccl-tuner-pcie.so");
  if (access(buf, F_OK) != 0)
    snprintf(slash + 1, len - (size_t)(slash + 1 - buf), "../lib/libnccl-tuner-pcie.so");
  return buf;
}

/* NCCL_DEBUG as NCCL reads it (src/debug.cc, ncclDebugInit): INFO shows
 * INFO and WARN, WARN only WARN; unset or anything else shows nothing. */
static int debug_level(void) {
  const char *v = getenv("NCCL_DEBUG");
  if (!v) return -1;
  if (!strcasecmp(v, "INFO") || !strcasecmp(v, "TRACE")) return NCCL_LOG_INFO;
  if (!strcasecmp(v, "WARN")) return NCCL_LOG_WARN;
  return -1;
}

/* One line the way NCCL's logger prefixes it, "host:pid:tid [dev] NCCL
 * INFO msg" (src/debug.cc, ncclDebugLog), on stdout as NCCL does without
 * NCCL_DEBUG_FILE. WARN lines lack NCCL's file:line: the simulated host does
 * not record them. The simulated NCCL is one process, rank 0, device 0. */
static void nccl_line(int level, const char *msg) {
  static char host[64];
  if (!host[0] && gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
  host[strcspn(host, ".")] = 0; /* NCCL keeps the name up to the first dot */
  printf("%s:%d:%d [0] NCCL %s %s\n", host, (int)getpid(), (int)getpid(),
         level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

/* Prints what the plugin logged since the last call (at the NCCL_DEBUG
 * level) and clears the record, so a long traced run cannot fill it. */
static void flush_log(int level) {
  struct ph_log_entry e;
  for (size_t i = 0; level >= 0 && ph_log_get(i, &e) == 0; i++)
    if (e.level <= level) nccl_line(e.level, e.msg);
  ph_log_clear();
}

static void choice(char *buf, size_t len, const struct pt_sim_choice *c) {
  if (c->algo < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, "%s/%s/%d", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_choice(const struct pt_sim_choice *c) {
  if (c->algo < 0) {
    printf("null");
    return;
  }
  printf("{\"algo\": \"%s\", \"proto\": \"%s\", \"channels\": %d, \"us\": %.3f}", pt_algo_name(c->algo),
         pt_proto_name(c->proto), c->channels, c->us > 0 ? c->us : 0);
}

static double us_of(const struct pt_sim_choice *c) { return c->us > 0 ? c->us : 0; }

/* The job's NCCL_* variables shape NCCL's view of a box derived from
 * hardware, as they shape the real NCCL's (and as profile's
 * --explore-channels derives its runs): rehearsing what explore
 * recommends needs export NCCL_MIN_NCHANNELS=k to reach the view.
 * Returns 0, or 2 after saying why a value cannot be applied. */
static int job_env(struct pt_box *box, const char *boxname) {
  static const char *const names[] = {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_P2P_LEVEL", "NCCL_PROTO",
                                      "NCCL_ALGO", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"};
  struct pt_error_rec e;
  int any = 0;
  /* NCCL_BUFFSIZE changes the truth, not the view (sim/ring_chunks.c), on
   * any box. NCCL reads it with strtoll and ignores what follows the
   * digits (misc/param.cc ncclLoadParam): "1M" would be one byte. */
  const char *bs = getenv("NCCL_BUFFSIZE");
  if (bs && *bs) {
    char *end;
    long long n = strtoll(bs, &end, 0);
    if (*end || n < 65536) {
      fprintf(stderr, "pcie-tune simulate: NCCL_BUFFSIZE=%s: NCCL reads it as %lld bytes; give the size in bytes, "
                      "at least 65536 (1 MiB: NCCL_BUFFSIZE=1048576)\n", bs, n);
      return 2;
    }
    box->nccl_buffsize = (uint64_t)n;
  }
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    if (!v || !*v) continue;
    if (!box->has_hw) {
      fprintf(stderr, "pcie-tune simulate: warning: %s=%s is not applied: box '%s' has an NCCL view typed by hand "
                      "(docs/sim.md)\n", names[i], v, boxname);
      continue;
    }
    char *end;
    long n = strtol(v, &end, 10);
    if (i < 2 && (*end || n < 1 || n > 64)) {
      fprintf(stderr, "pcie-tune simulate: %s=%s: expected a channel count 1..64\n", names[i], v);
      return 2;
    }
    if (i >= 5 && *end) {
      fprintf(stderr, "pcie-tune simulate: %s=%s: expected an integer (1 disables)\n", names[i], v);
      return 2;
    }
    if (i == 0) box->hw.min_nchannels = (int)n;
    else if (i == 1) box->hw.max_nchannels = (int)n;
    else if (i == 2) snprintf(box->hw.p2p_level, sizeof box->hw.p2p_level, "%s", v);
    else if (i == 3) snprintf(box->hw.proto, sizeof box->hw.proto, "%s", v);
    else if (i == 4) snprintf(box->hw.algo, sizeof box->hw.algo, "%s", v);
    /* NCCL reads both as integers: 1 disables, any other value leaves the
     * transport on (paths.cc ncclGetLevel, shm.cc shmCanConnect). */
    else if (i == 5) box->hw.p2p_disable = n == 1;
    else box->hw.shm_disable = n == 1;
    any = 1;
  }
  if (any && pt_box_derive(box, &e)) {
    fprintf(stderr, "pcie-tune simulate: box '%s' with the job's NCCL_* variables: %s\n", boxname, e.msg);
    return 2;
  }
  return 0;
}

/* One simulated run: the box, the plugin on it, the workload and its sums. */
struct sim_run {
  const struct sim_opts *o;
  struct pt_workload_item *items;
  int nitems;
  struct pt_box box;
  struct ph_plugin pl;
  struct ph_comm comm;
  const char *so;
  char sobuf[PATH_MAX];
  int level;             /* NCCL_DEBUG's, -1 with --json (stdout carries the JSON only) */
  char warning[1100];    /* why the plugin tunes nothing, if it said so */
  double tot[3], worst;  /* default, tuned, oracle; the worst step's speedup */
  int faults, nstep, worst_step;
  int marked, last_in;   /* items at 0.5-2 MiB (marked '*'); the last item was one */
  char oos[400];         /* the model's out-of-sample error there (sim/oos.c) */
  int bytes_w;           /* the bytes column's width: its widest "BYTESxCOUNT" */
};

/* The workload: --workload's file, or the verify step from --tokens.
 * Returns 0 or the exit status (reported). */
static int build_items(struct sim_run *r, struct pt_workload_item *items) {
  const struct sim_opts *o = r->o;
  char buf[256];
  r->items = items;
  if (o->workload) return (r->nitems = read_workload(o->workload, items, MAX_ITEMS)) < 0 ? 1 : 0;
  if (strlen(o->tokens) >= sizeof buf) return bad("bad --tokens '%s' (too long)", o->tokens);
  snprintf(buf, sizeof buf, "%s", o->tokens);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    uint64_t tok;
    struct pt_workload_item *it = &items[r->nitems];
    if (parse_u64(t, 1, 1 << 20, &tok) || r->nitems >= MAX_ITEMS)
      return bad("bad --tokens '%s' (a comma list of 1..1048576)", o->tokens);
    snprintf(it->step, sizeof it->step, "tokens=%llu", (unsigned long long)tok);
    it->coll = PT_ALLREDUCE;
    it->bytes = tok * o->bpt;
    it->count = (unsigned long)o->calls;
    r->nitems++;
  }
  return 0;
}

/* The box by name or file, with the job's NCCL_* variables applied. */
static int open_box(struct pt_box *box, const char *boxname) {
  struct pt_error_rec e;
  char buf[1200];
  int brc = pt_box_resolve(box, boxname, &e);
  if (brc == PT_EIO && !strchr(boxname, '/') && !strstr(boxname, ".cfg")) {
    /* A bare name that is not a file: say which names there are. */
    fprintf(stderr, "pcie-tune simulate: unknown box '%s' (built-in:", boxname);
    for (size_t i = 0; i < pt_box_builtin_count(); i++) fprintf(stderr, " %s", pt_box_builtin_at(i)->name);
    fprintf(stderr, "; or a box file)\n");
    return 2;
  }
  if (brc) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune simulate: %s\n", buf);
    return 1;
  }
  return job_env(box, boxname) ? 2 : 0;
}

/* Loads the plugin and initialises it on the simulated box. Returns 0, or
 * 1 (reported) with the plugin closed. */
static int start_plugin(struct sim_run *r) {
  struct pt_profile chk;
  struct pt_error_rec e;
  char buf[1200];
  /* Fail here with the loader's own message rather than a silent no-op
   * plugin: the plugin leaves NCCL alone when its profile is invalid. */
  memset(&chk, 0, sizeof chk);
  if (pt_profile_load(&chk, r->o->profile, &e)) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune simulate: %s\n", buf);
    return 1;
  }
  pt_profile_release(&chk);
  r->so = plugin_path(r->o->plugin, r->sobuf, sizeof r->sobuf);
  if (!r->so || ph_plugin_open(&r->pl, r->so, 0, buf, sizeof buf)) {
    fprintf(stderr, "pcie-tune simulate: cannot load the plugin: %s\n", r->so ? buf : "no path (use --plugin)");
    return 1;
  }
  setenv("PCIE_TUNER_PROFILE", r->o->profile, 1);
  /* The plugin checks the profile against the host it runs on: here the
   * simulated box, presented as its sysfs tree. */
  char sysroot[PATH_MAX] = "";
  int rc = ph_box_present(&r->box, sysroot, sizeof sysroot, buf, sizeof buf);
  if (rc) {
    fprintf(stderr, "pcie-tune simulate: %s\n", buf);
  } else {
    rc = ph_comm_init(&r->comm, &r->pl, (size_t)r->box.nranks, (size_t)r->box.nnodes, 1);
    ph_box_withdraw(sysroot); /* read at init only */
    if (rc) fprintf(stderr, "pcie-tune simulate: the plugin's init failed\n");
  }
  if (rc) ph_plugin_close(&r->pl);
  return rc ? 1 : 0;
}

/* What NCCL prints around the tuner's init (src/plugin/tuner.cc,
 * src/plugin/tuner/tuner_v*.cc, src/init.cc initTransportsRank). */
static void init_lines(const struct sim_run *r) {
  char line[PATH_MAX + 64];
  if (r->level < NCCL_LOG_INFO) return;
  snprintf(line, sizeof line, "TUNER/Plugin: Using %s (v%d)", PLUGIN_NAME, r->pl.version);
  nccl_line(NCCL_LOG_INFO, line);
  snprintf(line, sizeof line, "Successfully loaded external tuner plugin %s", r->so);
  nccl_line(NCCL_LOG_INFO, line);
  snprintf(line, sizeof line, "comm 0x1 rank 0 nRanks %d nNodes %d localRanks %d localRank 0 MNNVL 0",
           r->box.nranks, r->box.nnodes, r->box.nranks);
  nccl_line(NCCL_LOG_INFO, line);
}

/* The plugin's warnings at init, said even without NCCL_DEBUG. */
static void plugin_warnings(struct sim_run *r) {
  struct ph_log_entry le;
  const char *caveat = pt_box_truth_caveat(&r->box);
  if (caveat) fprintf(stderr, "pcie-tune simulate: note: box '%s': %s\n", r->box.name, caveat);
  /* Every figure at 0.5-2 MiB is marked '*' in the size column; this says
   * what it may be off by (sim/oos.c). */
  pt_box_oos_line(&r->box, r->oos, sizeof r->oos);
  for (size_t i = 0; ph_log_get(i, &le) == 0; i++) {
    /* tuner/core.c ends every refusal so; say it even without NCCL_DEBUG,
     * or a profile for another box reports 1.00x without a word. */
    const char *leave = strstr(le.msg, "; leaving "), *why = le.msg;
    if (!strncmp(why, PLUGIN_NAME ": ", strlen(PLUGIN_NAME) + 2)) why += strlen(PLUGIN_NAME) + 2;
    if (le.level != NCCL_LOG_WARN) continue;
    if (leave && strstr(leave, "to NCCL")) {
      snprintf(r->warning, sizeof r->warning, "the plugin tunes nothing on this %d-rank box: %.*s", r->box.nranks,
               (int)(leave - why), why);
      fprintf(stderr, "pcie-tune simulate: warning: %s\n", r->warning);
    } else {
      /* A difference the plugin only warns about (NCCL_* variables, the
       * driver): a job's log would show it, so say it here too. */
      fprintf(stderr, "pcie-tune simulate: the plugin warns: %s\n", why);
    }
  }
}

static void json_head(const struct sim_run *r) {
  struct ph_log_entry le;
  printf("{\n  \"box\": ");
  cli_json_str(r->box.name);
  printf(", \"nranks\": %d, \"nnodes\": %d, \"mode\": \"%s\",\n  \"profile\": ", r->box.nranks, r->box.nnodes,
         pt_mode_name(r->o->mode));
  cli_json_str(r->o->profile);
  printf(", \"plugin\": ");
  cli_json_str(r->so);
  printf(", \"tuner_abi\": %d,\n  \"plugin_log\": [", r->pl.version);
  for (size_t i = 0; ph_log_get(i, &le) == 0; i++) {
    printf("%s{\"level\": \"%s\", \"msg\": ", i ? ", " : "", le.level == NCCL_LOG_WARN ? "WARN" : "INFO");
    cli_json_str(le.msg);
    printf("}");
  }
  printf("],\n  \"warning\": ");
  if (r->warning[0]) cli_json_str(r->warning);
  else printf("null");
  printf(",\n  \"steps\": [");
  ph_log_clear();
}

/* An item's bytes cell: "BYTES", or "BYTESxCOUNT" for a repeated call. */
static int bytes_cell(const struct pt_workload_item *it, char *buf, size_t len) {
  if (it->count > 1) return snprintf(buf, len, "%llux%lu", (unsigned long long)it->bytes, it->count);
  return snprintf(buf, len, "%llu", (unsigned long long)it->bytes);
}

static void text_head(struct sim_run *r) {
  char size[48];
  flush_log(r->level);
  r->bytes_w = 10; /* -q prints the total row alone, at the same width */
  for (int s = 0; s < r->nitems; s++) {
    int w = bytes_cell(&r->items[s], size, sizeof size);
    if (w > r->bytes_w) r->bytes_w = w;
  }
  if (r->o->quiet) return;
  printf("box %s (%d ranks): %s\nprofile %s, plugin %s (tuner v%d), %s mode\n\n", r->box.name, r->box.nranks,
         r->box.desc, r->o->profile, r->so, r->pl.version, pt_mode_name(r->o->mode));
  printf("%-14s %*s  %-16s %-16s %-16s %11s %11s %11s %8s %8s\n", "step", r->bytes_w, "bytes", "NCCL default", "tuned",
         "oracle", "default", "tuned", "oracle", "speedup", "t/oracle");
}

/* One item of a step, as JSON or a table row (the step's sums follow on
 * its last row). */
static void print_item(const struct sim_run *r, const struct pt_sim_eval *ev, int s, int first) {
  const struct pt_workload_item *it = &r->items[s];
  char c0[48], c1[48], c2[48], size[48];
  if (r->o->json) {
    printf("%s{\"collective\": \"%s\", \"bytes\": %llu, \"count\": %lu, \"nccl\": ", s == first ? "" : ", ",
           pt_coll_name(it->coll), (unsigned long long)it->bytes, it->count);
    json_choice(&ev->nccl);
    printf(", \"tuned\": ");
    json_choice(&ev->tuned);
    printf(", \"oracle\": ");
    json_choice(&ev->oracle);
    printf("}");
    return;
  }
  if (r->o->quiet) return;
  choice(c0, sizeof c0, &ev->nccl);
  choice(c1, sizeof c1, &ev->tuned);
  choice(c2, sizeof c2, &ev->oracle);
  bytes_cell(it, size, sizeof size);
  printf("%-14s %*s  %-16s %-16s %-16s", s == first ? it->step : "", r->bytes_w, size, c0, c1, c2);
  if (s + 1 < r->nitems && !strcmp(r->items[s + 1].step, r->items[first].step)) printf("%s\n", r->last_in ? " *" : "");
}

/* The items of the step starting at first; returns the next step's. */
static int run_step(struct sim_run *r, int first) {
  double step[3] = {0, 0, 0};
  int s = first;
  if (r->o->json) {
    printf("%s\n    {\"step\": ", r->nstep ? "," : "");
    cli_json_str(r->items[first].step);
    printf(", \"items\": [");
  }
  for (; s < r->nitems && !strcmp(r->items[s].step, r->items[first].step); s++) {
    const struct pt_workload_item *it = &r->items[s];
    struct pt_sim_eval ev;
    pt_sim_eval(&r->comm, &r->box, it->coll, r->o->mode, it->bytes, &ev);
    flush_log(r->level);
    if (ev.tuned.state != PT_PT_OK) {
      fprintf(stderr, "pcie-tune simulate: the plugin chose %s/%s at %llu B, which is %s on this box\n",
              pt_algo_name(ev.tuned.algo), pt_proto_name(ev.tuned.proto), (unsigned long long)it->bytes,
              pt_point_state_name(ev.tuned.state));
      r->faults++;
    }
    step[0] += (double)it->count * us_of(&ev.nccl);
    step[1] += (double)it->count * us_of(&ev.tuned);
    step[2] += (double)it->count * us_of(&ev.oracle);
    r->last_in = it->bytes >= (512u << 10) && it->bytes <= (2u << 20);
    r->marked += r->last_in;
    print_item(r, &ev, s, first);
  }
  if (r->o->json)
    printf("], \"default_us\": %.3f, \"tuned_us\": %.3f, \"oracle_us\": %.3f, \"speedup\": %.4f}", step[0], step[1],
           step[2], step[1] > 0 ? step[0] / step[1] : 0);
  else if (!r->o->quiet)
    printf(" %8.1f \u00b5s %8.1f \u00b5s %8.1f \u00b5s %7.2fx %8.3f%s\n", step[0], step[1], step[2],
           step[1] > 0 ? step[0] / step[1] : 0, step[2] > 0 ? step[1] / step[2] : 0, r->last_in ? " *" : "");
  for (int k = 0; k < 3; k++) r->tot[k] += step[k];
  if (step[1] > 0 && (r->worst_step < 0 || step[0] / step[1] < r->worst)) {
    r->worst = step[0] / step[1];
    r->worst_step = first;
  }
  r->nstep++;
  return s;
}

/* The total row, and a warning where the profile loses. */
static void totals(const struct sim_run *r) {
  const double *tot = r->tot;
  if (r->o->json)
    printf("\n  ],\n  \"total\": {\"default_us\": %.3f, \"tuned_us\": %.3f, \"oracle_us\": %.3f, "
           "\"speedup\": %.4f},\n  \"faults\": %d\n}\n",
           tot[0], tot[1], tot[2], tot[1] > 0 ? tot[0] / tot[1] : 0, r->faults);
  else
    printf("%-14s %*s  %-16s %-16s %-16s %8.1f \u00b5s %8.1f \u00b5s %8.1f \u00b5s %7.2fx %8.3f\n", "total", r->bytes_w, "", "",
           "", "", tot[0], tot[1], tot[2], tot[1] > 0 ? tot[0] / tot[1] : 0, tot[2] > 0 ? tot[1] / tot[2] : 0);
  if (!r->o->json && !r->o->quiet && r->marked) printf("* 0.5-2 MiB: %s\n", r->oos);
  if (tot[1] > 0 && tot[0] / tot[1] < 0.995)
    fprintf(stderr,
            "pcie-tune simulate: warning: the profile is slower than NCCL's own choice on this workload "
            "(%.2fx in total); do not use it on this box\n",
            tot[0] / tot[1]);
  /* A total can hide a step that loses: the job pays each step as it
   * comes. 0.98: the never-slower property's tolerance (noise). */
  else if (r->worst_step >= 0 && r->worst < 0.98)
    fprintf(stderr,
            "pcie-tune simulate: warning: the profile is slower than NCCL's own choice at step %s "
            "(%.2fx) though faster in total (%.2fx); do not use it on this box\n",
            r->items[r->worst_step].step, r->worst, tot[0] / tot[1]);
}

int cmd_simulate(int argc, char **argv) {
  static struct pt_workload_item items[MAX_ITEMS];
  static struct sim_run r;
  struct sim_opts o;
  struct cli_state st;
  memset(&o, 0, sizeof o);
  int rc = cli_parse(&simulate_cli, argc, argv, &o, &st, 1);
  if (rc) return rc == CLI_HELP ? 0 : rc;
  if (!o.profile) return bad("missing PROFILE");
  if (!o.box) return bad("missing --box NAME|FILE");
  memset(&r, 0, sizeof r);
  r.o = &o;
  r.worst_step = -1;
  if ((rc = build_items(&r, items)) || (rc = open_box(&r.box, o.box)) || (rc = start_plugin(&r))) return rc;
  r.level = o.json ? -1 : debug_level();
  init_lines(&r);
  plugin_warnings(&r);
  if (o.json) json_head(&r);
  else text_head(&r);
  for (int s = 0; s < r.nitems;) s = run_step(&r, s);
  totals(&r);
  ph_comm_finalize(&r.comm);
  ph_plugin_close(&r.pl);
  return r.faults ? 1 : 0;
}
