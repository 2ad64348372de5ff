/*
 * pcie-tune screen: runs the LL128 correctness screen (measure/screen.h)
 * on this box's GPUs for a profile made elsewhere (an import of nccl-tests
 * logs run with NCCL_PROTO including LL128, hand rules) and writes the
 * profile with the screen recorded in provenance.extra.ll128_screen. The
 * plugin chooses LL128 only from a profile whose screen passed
 * (pt_profile_ll128_usable); a failed screen is recorded too, and then
 * LL128 is never run there. Owns its options and what it prints; the
 * screen is measure/'s, the writing tuner/'s.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "measure/backend_nccl.h"
#include "measure/screen.h"
#include "measure_opts.h"
#include "nccl_pick.h"
#include "opt.h"
#include "pcie/files.h"
#include "pcie/hostinfo.h"

struct screen_opts {
  struct cli_measure m; /* first: cli_measure_rows' offsets are into it */
  const char *profile, *out;
  int force, quiet;
  unsigned long long timeout_s;
};

static int one_profile(void *opts, const char *arg, char *why, size_t len) {
  struct screen_opts *o = opts;
  if (!o->profile) o->profile = arg;
  else snprintf(why, len, "more than one profile given ('%s')", arg);
  return o->profile == arg ? 0 : -1;
}

#define F(x) offsetof(struct screen_opts, x)

static const struct cli_opt screen_rows[] = {
    CLI_ROW("out", 0, CLI_STR, "FILE", F(out), 0, 0, NULL, 0, 0,
            "the profile with the screen recorded (refused if it exists,\nunless --force; --out PROFILE --force "
            "records it in the\nprofile itself, atomically; '-': standard output)"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0, "overwrite FILE"),
    CLI_ROW("timeout", 0, CLI_UINT, "SECONDS", F(timeout_s), 1, 86400, "60", 0, 0,
            "deadline of one screened size in a worker (scaled with size)"),
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0, "print only errors and a failed screen"),
    CLI_INCLUDE(cli_measure_gpu_rows),
    CLI_END_ROW,
};

const struct cli_cmd screen_cli = {
    "screen",
    "usage: pcie-tune screen PROFILE --gpus LIST --out FILE [--force] [--nccl-lib PATH] [options]\n"
    "\n"
    "Screens the profile's LL128 choices for correctness on this box's GPUs, as\n"
    "'pcie-tune profile' does before it measures LL128 (docs/gpu.md, \"LL128 on\n"
    "PCIe\"): per collective, each algorithm's LL128 choice with the most\n"
    "channels, many replays with inputs that change every replay, every output\n"
    "of every rank checked. Writes the profile with the result in\n"
    "provenance.extra.ll128_screen: the plugin chooses LL128 only from a\n"
    "profile whose screen passed; a failed screen records LL128 as unusable on\n"
    "this box, with the reason. Run it with the NCCL and NCCL_PROTO the job\n"
    "uses (NCCL before 2.31 runs LL128 on PCIe only with NCCL_PROTO naming it).\n",
    "Exit status: 0 screen passed (or nothing to screen), 1 screen failed (recorded\n"
    "and written) or could not run, 2 bad usage.\n",
    screen_rows,
    one_profile,
};

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

static int parse(int argc, char **argv, struct screen_opts *o, struct cli_state *st) {
  int rc = cli_parse(&screen_cli, argc, argv, o, st, 1);
  if (rc) return rc;
  if (!o->profile) return cli_bad(&screen_cli, "no profile given");
  if (!o->out) return cli_bad(&screen_cli, "--out FILE is required (--out PROFILE --force: the profile itself)");
  if (!o->m.gpus) return cli_bad(&screen_cli, "missing --gpus LIST (e.g. --gpus 0-7)");
  return 0;
}

/* The GPU backend with the options given (the worker's rows). Returns 0 or
 * an exit status. */
static int open_gpus(struct screen_opts *o, const struct cli_state *st, struct pt_backend *be) {
  static struct cli_nccl eng;
  const char *args[2 * CLI_MAX_ROWS + 2];
  char store[4096];
  struct pt_nccl_opts no;
  struct pt_error_rec e;
  if (!o->m.nccl_lib || !strcmp(o->m.nccl_lib, "auto")) o->m.nccl_lib = cli_engine_nccl(&eng) ? eng.path : NULL;
  if (cli_emit_argv(&screen_cli, o, st, CLI_WORKER, CLI_NCCL, args, sizeof args / sizeof args[0], store,
                    sizeof store) < 0) {
    fprintf(stderr, "pcie-tune screen: the worker's options do not fit\n");
    return 2;
  }
  cli_measure_nccl_opts(&o->m, args, (double)o->timeout_s, &interrupted, &no);
  int rc = pt_backend_nccl_open(be, &no, &e);
  if (!rc) return 0;
  cli_print_error("pcie-tune screen", &e);
  return rc == PT_EINVAL ? 2 : 1;
}

/* A screen says something about the box it ran on only: refuse to record
 * one in a profile of another box (the plugin would use the profile there,
 * not here). Returns 0 or 1. */
static int same_box(const struct pt_profile *p, const struct pt_backend_info *bi, const char *path) {
  char diff[800];
  if (!p->prov.box || !bi->box.ngpus) return 0;
  if (!(pt_fp_compare(p->prov.box, &bi->box, diff, sizeof diff) & PT_FP_DIFF_BOX)) return 0;
  fprintf(stderr, "pcie-tune screen: %s was measured on another box (%s): a screen here says nothing about "
                  "that box; screen it on the box it was measured on\n", path, diff);
  return 1;
}

static int report(const struct screen_opts *o, const struct pt_screen *s) {
  if (s->state == PT_SCREEN_FAIL) {
    fprintf(stderr, "pcie-tune screen: LL128 failed its correctness screen: %s; recorded as unusable on this box "
                    "in %s: the plugin never runs LL128 from it\n", s->reason, o->out);
    return 1;
  }
  if (!o->quiet)
    fprintf(stderr, "pcie-tune screen: LL128 screened (%s; %u replays with changing inputs at each of %zu sizes): "
                    "every output of every rank correct; recorded in %s: the plugin now chooses LL128 from it\n",
            s->cands, s->replays, s->nsizes, strcmp(o->out, "-") ? o->out : "the profile on standard output");
  return 0;
}

/* Loads, screens, records, writes. Returns the exit status. */
static int screen(struct screen_opts *o, const struct cli_state *st) {
  struct pt_profile p = {0};
  struct pt_backend be = {0};
  struct pt_backend_info bi;
  struct pt_screen s;
  struct pt_error_rec e;
  int status = 1;
  if (pt_profile_load(&p, o->profile, &e)) {
    cli_print_error("pcie-tune screen", &e);
    return 1;
  }
  /* Before hours of NCCL init: an --out that cannot be written. */
  if (pt_output_check(o->out, o->force ? PT_OUT_FORCE : 0, NULL, 0, &e)) {
    cli_print_error("pcie-tune screen", &e);
    goto out;
  }
  if (!pt_profile_ll128_choices(&p)) {
    fprintf(stderr, "pcie-tune screen: %s holds no LL128 choice: nothing to screen, nothing written\n", o->profile);
    status = 0;
    goto out;
  }
  if ((status = open_gpus(o, st, &be))) goto out;
  status = 1;
  be.info(be.self, &bi);
  if (same_box(&p, &bi, o->profile)) goto out;
  if (pt_screen_profile(&be, &p, &s, &e)) {
    cli_print_error("pcie-tune screen", &e);
    goto out;
  }
  if (s.state == PT_SCREEN_DISABLED || s.state == PT_SCREEN_NONE) {
    fprintf(stderr, "pcie-tune screen: %s; nothing screened, nothing written: run it with the job's NCCL_PROTO "
                    "(e.g. NCCL_PROTO=LL,LL128,Simple pcie-tune screen ...)\n", s.reason[0] ? s.reason : "no LL128 ran");
    goto out;
  }
  if (pt_screen_record(&s, &p)) {
    fprintf(stderr, "pcie-tune screen: %s: cannot record the screen (provenance.extra)\n", o->profile);
    goto out;
  }
  if (pt_profile_write(&p, o->out, o->force ? PT_WRITE_FORCE : 0, &e)) {
    cli_print_error("pcie-tune screen", &e);
    goto out;
  }
  status = report(o, &s);
out:
  if (be.close) be.close(be.self);
  pt_profile_release(&p);
  return status;
}

int cmd_screen(int argc, char **argv) {
  static struct screen_opts o; /* large; one per process */
  struct cli_state st;
  struct sigaction sa, old_int, old_term;
  int rc = parse(argc, argv, &o, &st);
  if (rc) return rc == CLI_HELP ? 0 : rc;
  /* Ctrl-C stops the screen and its workers; nothing is written. */
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  rc = screen(&o, &st);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  return interrupted ? 128 + (int)interrupted : rc;
}
