/*
 * pcie-tune profile: opens a measurement backend, runs the sweep engine
 * (measure/sweep.c) and writes the profile atomically; --explore hands its
 * runs to measure/explore.h. Ctrl-C (or --budget) stops between
 * measurements and leaves a partial profile that --resume continues. The
 * options are cli/profile_opts.c's; what to measure is the engine's
 * business and how to measure the backend's.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/backend_nccl.h"
#include "measure/backends.h"
#include "engine.h"
#include "measure/explore.h"
#include "measure/screen.h"
#include "cmds.h"
#include "measure/isolate.h"
#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/files.h"
#include "pcie/sim_box.h"
#include "progress.h"
#include "measure/sweepfile.h"
#include "measure/workload.h"
#include "profile.h"

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

/* Where an exploration stands: the variable, and its value for this sweep
 * (has 0: NCCL's own). */
struct explore_at {
  const struct pt_explore_var *var;
  int has;
  long long value;
};

/* Opens the backend the options name; at (exploring) derives a simulated
 * box's NCCL view with the variable set (the nccl backend's workers get it
 * from the environment instead). Returns 0, or an exit status. */
static int open_backend(const struct profile_opts *o, const struct explore_at *at, struct pt_backend *be) {
  struct pt_error_rec e;
  int rc;
  /* The worker's options: the rows of the table it receives (cli/opt.h). */
  const char *args[2 + 2 * CLI_MAX_ROWS + 2 * PT_MAX_FAULTS];
  char store[2 * PROFILE_RECORD_LEN];
  int nccl = !strcmp(o->backend, "nccl"), first = nccl ? 0 : 2; /* the nccl backend adds its --backend */
  args[0] = "--backend", args[1] = "sim";
  if (cli_emit_argv(&profile_cli, o, &o->st, CLI_WORKER, nccl ? CLI_NCCL : CLI_SIM, args + first,
                    sizeof args / sizeof args[0] - 2, store, sizeof store) < 0) {
    fprintf(stderr, "pcie-tune profile: the worker's options do not fit\n");
    return 2;
  }
  if (nccl) {
    struct pt_nccl_opts no;
    cli_measure_nccl_opts(&o->m, args, (double)o->timeout_s, &interrupted, &no);
    rc = pt_backend_nccl_open(be, &no, &e);
  } else {
    struct pt_box box;
    if ((rc = pt_box_resolve(&box, o->m.box, &e))) {
      if (rc == PT_EIO && !strchr(o->m.box, '/') && !strstr(o->m.box, ".cfg")) {
        fprintf(stderr, "pcie-tune profile: unknown box '%s' (built-in:", o->m.box);
        for (size_t i = 0; i < pt_box_builtin_count(); i++) fprintf(stderr, " %s", pt_box_builtin_at(i)->name);
        fprintf(stderr, "; or a box file)\n");
        return 2;
      }
      cli_print_error("pcie-tune profile", &e);
      return 1;
    }
    if (at && at->has) {
      /* sim/nccl_derive.c models the variable on the box's hardware. */
      at->var->box(&box, at->value);
      if (!box.has_hw || pt_box_derive(&box, &e)) {
        fprintf(stderr, "pcie-tune profile: box '%s': %s%s%s\n", o->m.box,
                box.has_hw ? e.msg : "its NCCL view is typed by hand, so ", box.has_hw ? "" : at->var->name,
                box.has_hw ? "" : " cannot change it; --explore needs a box derived from hardware (docs/sim.md)");
        return 2;
      }
    }
    if (!o->isolate) return pt_backend_sim_open(be, &box, o->m.seed) ? 1 : 0;
    /* The same worker harness as the GPU backend, over the simulator. */
    struct pt_isolate_opts io = {.args = args, .timeout_s = (double)o->timeout_s,
                                 .start_timeout_s = 30, .stderr_fd = -1, .stop = &interrupted};
    rc = pt_backend_isolated_open(be, &io, &e);
  }
  if (!rc) return 0;
  if (interrupted) { /* Ctrl-C while the first worker started: nothing measured */
    fprintf(stderr, "pcie-tune profile: interrupted while the worker started; nothing measured\n");
    return 128 + (int)interrupted;
  }
  cli_print_error("pcie-tune profile", &e);
  return rc == PT_EINVAL ? 2 : 1;
}

/* Before any LL128 candidate is measured, the correctness screen
 * (measure/screen.h); a failure records LL128 unusable on this box and
 * drops its candidates from the sweep. Returns 0 or an exit status. */
static int screen_ll128(const struct profile_opts *o, const struct pt_backend *be, struct pt_sweep_opts *so,
                        struct pt_cand_spec *cands, struct pt_screen *out) {
  struct pt_error_rec e;
  if (pt_screen_sweep(be, so, cands, &so->ncand, out, &e)) {
    cli_print_error("pcie-tune profile", &e);
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
  const struct profile_opts *o;
  const char *args;
  const struct pt_sweep *sw;
  const struct pt_backend *be;
  struct pt_backend_info bi;
  struct pt_progress pg;
  double last_write;
  int warned, written;
  /* --explore: the profile is built into *keep, not written, and at
   * shaped the communicator. */
  struct pt_profile *keep;
  const struct explore_at *at;
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
    if (!(prof.prov.buffers = strdup(r->o->m.nccl_mem ? "ncclMemAlloc" : "cudaMalloc"))) rc = PT_ENOMEM;
  }
  /* A simulated box's view does not come from this process's environment
   * (sweepfile.c): record the variable its derivation was given. */
  if (!rc && r->at && r->at->has && !prof.env_recorded) {
    prof.env_recorded = 1;
    if (!(prof.env = calloc(1, sizeof *prof.env)) || !(prof.env[0].name = strdup(r->at->var->name)) ||
        asprintf(&prof.env[0].value, "%lld", r->at->value) < 0)
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
    cli_print_error("pcie-tune profile", &e);
    r->warned = 1;
  }
}

/* The sweep engine's options from the profile's; 0 or the exit status. */
static int sweep_opts(const struct profile_opts *o, const struct pt_backend_info *bi, struct pt_sweep_opts *so,
                      struct pt_cand_spec *cands, size_t max) {
  pt_sweep_opts_default(so);
  so->min_bytes = o->min_bytes;
  so->max_bytes = o->max_bytes;
  so->sizes = o->sizes;
  so->nsizes = o->nsizes;
  so->coll_mask = o->coll_mask;
  so->mode_mask = (unsigned)o->mode_mask;
  so->reps = (unsigned)o->reps;
  so->screen_reps = (unsigned)(o->screen_reps < o->reps ? o->screen_reps : o->reps);
  so->full = o->full;
  so->budget = o->budget;
  so->stop = &interrupted;
  so->cands = cands;
  so->ncand = pt_sweep_cands(o->algo_mask, o->proto_mask, o->channels, o->nch, bi->max_channels, cands, max);
  if (o->nchunks && !pt_chunk_asked(bi->nccl_version)) {
    fprintf(stderr, "pcie-tune profile: --chunks: NCCL %s never asks a tuner for its chunk (getChunkSize came "
                    "with tuner ABI v6 in NCCL 2.30); nothing to measure: profile without --chunks\n", bi->nccl_version);
    return 2;
  }
  so->measures = profile_chunk_measured;
  so->measures_arg = (void *)bi;
  if ((so->ncand = profile_chunk_variants(o, bi, cands, so->ncand, max))) return 0;
  fprintf(stderr, "pcie-tune profile: no candidate left: every --channels value is above the "
                  "target's %d channels\n", bi->max_channels);
  return 2;
}

/* What NCCL_ALGO/NCCL_PROTO do to a GPU sweep; returns 1 when the summary
 * must explain why ll128 came back unsupported. */
static int nccl_env_notes(const struct profile_opts *o) {
  const char *proto_env = getenv("NCCL_PROTO"), *algo_env = getenv("NCCL_ALGO");
  if (strcmp(o->backend, "nccl")) return 0;
  if (algo_env || proto_env)
    fprintf(stderr, "pcie-tune profile: warning: NCCL_ALGO=%s NCCL_PROTO=%s are set: candidates they exclude "
                    "come back unsupported\n", algo_env ? algo_env : "(unset)", proto_env ? proto_env : "(unset)");
  /* NCCL disables LL128 on PCIe unless NCCL_PROTO enables it: say so in the
   * summary, rather than leave "unsupported" unexplained. */
  return (o->proto_mask & (1u << NCCL_PROTO_LL128)) &&
         (!proto_env || !strstr(proto_env, "LL128") || strchr(proto_env, '^'));
}

/* After the sweep: the profile written (or kept for --explore), and what
 * to say. Returns the exit status. */
static int finish(struct run_state *r, int resume, int ll128_note) {
  struct pt_error_rec e;
  int rc;
  /* A partial file (ours, or a checkpoint) is ours to replace; a finished
   * sweep obeys --force. */
  unsigned flags = (r->o->force || resume || r->sw->stopped || r->written) ? PT_WRITE_FORCE : 0;
  if (r->keep && r->sw->stopped) {
    fprintf(stderr, "pcie-tune profile: interrupted after %llu repetitions; --explore-channels cannot be "
                    "resumed yet, nothing written\n", (unsigned long long)r->sw->samples);
    return interrupted ? 128 + (int)interrupted : 1;
  }
  if ((rc = save(r, !r->sw->stopped, flags, &e))) {
    /* One rank: NCCL copies without choosing an algorithm and never asks
     * a tuner (enqueue.cc), so no candidate could be forced. */
    if (r->bi.nranks == 1 && !strcmp(r->o->backend, "nccl"))
      fprintf(stderr, "pcie-tune profile: nothing to write for one GPU: NCCL never asks a tuner on a one-rank "
                      "communicator, so every candidate came back unsupported; profile two GPUs or more "
                      "(e.g. --gpus 0-1)\n");
    else
      cli_print_error("pcie-tune profile", &e);
    return interrupted ? 128 + (int)interrupted : 1;
  }
  if (r->sw->stopped && !strcmp(r->o->out, "-")) {
    fprintf(stderr, "pcie-tune profile: %s after %llu repetitions; partial profile written to "
                    "standard output (only a file can be resumed)\n",
            interrupted ? "interrupted" : "budget reached", (unsigned long long)r->sw->samples);
    return interrupted ? 128 + (int)interrupted : 1;
  } else if (r->sw->stopped) {
    fprintf(stderr, "pcie-tune profile: %s after %llu repetitions; partial profile written to %s\n"
                    "continue with: pcie-tune profile --resume --out %s\n",
            interrupted ? "interrupted" : "budget reached", (unsigned long long)r->sw->samples, r->o->out, r->o->out);
    return interrupted ? 128 + (int)interrupted : 1;
  }
  if (r->keep) {
    char lb[96];
    snprintf(lb, sizeof lb, "%s=%lld", r->at->var->name, r->at->value);
    if (!r->o->quiet)
      fprintf(stderr, "pcie-tune profile: measured with %s (%d communicator channels; %llu repetitions in "
                      "%llu measurements)\n", r->at->has ? lb : r->at->var->unset, r->bi.comm_channels,
              (unsigned long long)r->sw->samples, (unsigned long long)r->sw->calls);
    return 0;
  }
  if (!r->o->quiet) /* "wrote -" would read as a file named '-' */
    fprintf(stderr, "pcie-tune profile: wrote %s (%llu repetitions in %llu measurements)\n",
            !strcmp(r->o->out, "-") ? "the profile to standard output" : r->o->out,
            (unsigned long long)r->sw->samples, (unsigned long long)r->sw->calls);
  if (ll128_note)
    fprintf(stderr, "pcie-tune profile: note: ll128 is unsupported unless NCCL_PROTO enables it (NCCL disables "
                    "LL128 on PCIe); to measure it: NCCL_PROTO=LL,LL128,Simple pcie-tune profile ...\n");
  return 0;
}

/* The sweep itself, once options are final. With keep, the finished
 * profile goes to *keep (the caller releases it) instead of --out, and
 * at is as open_backend's. */
static int run(struct profile_opts *o, const char *args, int resume, const struct explore_at *at,
               struct pt_profile *keep) {
  struct pt_backend be = {0};
  struct pt_sweep sw = {0};
  struct pt_sweep_opts so;
  struct pt_cand_spec cands[2 * 3 * PT_MAX_CHANNELS * (1 + PROFILE_MAX_CHUNKS)];
  struct pt_error_rec e;
  struct run_state r = {.o = o, .args = args, .sw = &sw, .be = &be, .keep = keep, .at = at};
  int status, rc;
  /* Before the first worker starts (NCCL's init can take minutes): Ctrl-C
   * stops the profiler at any time, and its workers with it. */
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  /* The engine's variables, before the workers start: they inherit this
   * environment, and the profile's nccl_env records it (cli/engine.h). */
  char eng[600];
  const char *engine = cli_engine_name(o->engine);
  cli_engine_apply(engine, eng, sizeof eng);
  if (eng[0] && !o->quiet) fprintf(stderr, "pcie-tune profile: --engine %s: %s\n", engine, eng);
  if ((status = open_backend(o, at, &be))) goto out;
  status = 1;
  be.info(be.self, &r.bi);
  if ((status = sweep_opts(o, &r.bi, &so, cands, sizeof cands / sizeof cands[0]))) goto out;
  status = 1;
  int ll128_note = nccl_env_notes(o);
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
    cli_print_error("pcie-tune profile", &e);
    goto out;
  }
  /* Workers (nccl, or sim --isolate) have a deadline per measurement. */
  double deadline = o->isolate || strcmp(o->backend, "sim") ? (double)o->timeout_s : 0;
  rc = pt_sweep_run(&sw, pt_progress_wrap(&r.pg, &be, deadline), &e);
  pt_progress_end(&r.pg);
  if (rc) {
    cli_print_error("pcie-tune profile", &e);
    goto out;
  }
  status = finish(&r, resume, ll128_note);
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
    snprintf(why, len, "more than %d workload lines; --explore judges at most that many", MAX_EXPLORE_ITEMS);
    return -1;
  }
  l->it[l->n++] = (struct pt_explore_item){item->coll, item->bytes, item->count};
  return 0;
}

struct explore_ctx {
  struct profile_opts *o;
  const char *args;
  struct explore_at at;
};

/* pt_explore's sweep: one run with the variable as given. */
static int explore_sweep(void *arg, int has, long long value, struct pt_profile *out) {
  struct explore_ctx *c = arg;
  c->at.has = has;
  c->at.value = value;
  return run(c->o, c->args, 0, &c->at, out);
}

/* --explore: the sweeps and their judging are measure/explore.h's; here
 * the workload, the report and the winner written to --out with its
 * nccl_env. */
static int explore(struct profile_opts *o, const char *args) {
  static struct pt_explore_item items[MAX_EXPLORE_ITEMS];
  static struct pt_explore_result res;
  struct items l = {items, 0};
  struct pt_error_rec e;
  struct explore_ctx c = {o, args, {o->explore_var, 0, 0}};
  FILE *sum = strcmp(o->out, "-") ? stdout : stderr; /* '-' is the profile's */
  if (o->workload && pt_workload_read(o->workload, add_item, &l, &e)) {
    cli_print_error("pcie-tune profile", &e);
    return 1;
  }
  if (!o->workload) l.n = pt_explore_default_workload(items);
  for (size_t i = 0; i < l.n; i++)
    if (!(o->coll_mask & (1u << items[i].coll)))
      return cli_bad(&profile_cli, "the workload has %s, which --collectives does not measure",
                     pt_coll_name(items[i].coll));
  struct pt_explore_run r = {o->explore_var, o->explore, o->nexplore, items, l.n, o->workload,
                             (o->mode_mask & (1u << PT_MODE_GRAPH)) ? PT_MODE_GRAPH : PT_MODE_EAGER,
                             !strcmp(o->backend, "nccl"), "pcie-tune profile", explore_sweep, &c};
  int status = pt_explore(&r, &res);
  if (!status) {
    pt_explore_report(sum, &r, &res);
    if (pt_profile_write(&res.prof[res.winner], o->out, o->force ? PT_WRITE_FORCE : 0, &e)) {
      cli_print_error("pcie-tune profile", &e);
      status = 1;
    }
  }
  if (!status) {
    pt_explore_advice(sum, &r, &res);
    if (!o->quiet)
      fprintf(stderr, "pcie-tune profile: wrote %s\n", strcmp(o->out, "-") ? o->out : "the profile to standard output");
  }
  pt_explore_result_release(&res);
  return status;
}

int cmd_profile(int argc, char **argv) {
  static struct profile_opts o; /* large; one per process */
  int rc = profile_options(argc, argv, &o);
  if (rc) return rc == CLI_HELP ? 0 : rc;
  if (o.resume) return run(&o, o.record, 1, NULL, NULL);
  return o.nexplore ? explore(&o, o.record) : run(&o, o.record, 0, NULL, NULL);
}
