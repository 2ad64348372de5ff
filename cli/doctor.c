/*
 * pcie-tune doctor: reads the NCCL_DEBUG=INFO logs of a real job and says
 * whether the plugin was loaded, which profile each rank of each
 * communicator uses, what it refused and why, what it decided (with
 * PCIE_TUNER_TRACE=1), and what NCCL built for each communicator (channels,
 * rings, trees, transports) with what the user can change. The line formats
 * are import/ncclog.c's; cli/doctor.h lists the files that gather and judge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "cmds.h"
#include "doctor.h"

struct doctor_opts {
  int quiet, strict;
  const char **logs;
  int nlogs;
};

static int add_log(void *opts, const char *arg, char *why, size_t len) {
  struct doctor_opts *o = opts;
  (void)why, (void)len;
  o->logs[o->nlogs++] = arg;
  return 0;
}

#define F(x) offsetof(struct doctor_opts, x)

static const struct cli_opt doctor_rows[] = {
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0, "print only the verdict line"),
    CLI_ROW("strict", 0, CLI_FLAG, NULL, F(strict), 0, 0, NULL, 0, 0, "exit 6 when a communicator is degraded"),
    CLI_END_ROW,
};

const struct cli_cmd doctor_cli = {
    "doctor",
    "usage: pcie-tune doctor [-q|--quiet] [--strict] LOG...\n"
    "\n"
    "Reads the logs of a job run with NCCL_DEBUG=INFO (best with\n"
    "NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,GRAPH, and PCIE_TUNER_TRACE=1 to see\n"
    "decisions): one file, one file per process (NCCL_DEBUG_FILE=/tmp/nccl.%h.%p),\n"
    "or the job's whole output with NCCL's lines among the rest, engine prefixes\n"
    "and timestamps included; '-' reads stdin. Reports the NCCL version,\n"
    "whether NCCL loaded the plugin and with which tuner ABI (or why not), the\n"
    "profile each rank of each communicator uses and its hash, every refusal with\n"
    "its reason, the traced decisions, and per communicator what NCCL built:\n"
    "channels, rings, trees, the transport of every pair, and what to change when\n"
    "it is degraded (SHM or NET between GPUs of one host, a search that fell back).\n",
    "Exit status: 0 working (at least one communicator tuned, all ranks agree),\n"
    "1 no NCCL log lines or unreadable input, 2 bad usage, 3 plugin not loaded,\n"
    "4 loaded but every communicator left to NCCL, 5 ranks disagree; with\n"
    "--strict, 6 a degraded communicator (unless 5).\n",
    doctor_rows,
    add_log,
};

static void take_line(void *arg, const char *line) {
  struct nl_line l;
  if (nl_parse(line, &l)) dr_take(arg, &l);
}

/* Prints every communicator; *bad the number whose ranks disagree,
 * *degraded those NCCL built degraded, *tuned those fully tuned. */
static int report(struct doctor *d, int quiet, int *bad, int *degraded, int *tuned) {
  struct comms c;
  int rc = 0;
  *bad = *degraded = *tuned = 0;
  if (dr_comms(d, &c) < 0) {
    rc = -1;
    goto out;
  }
  for (size_t k = 0; k < c.n; k++) {
    int b = dr_plugin_comm(d, &c, k, quiet, tuned);
    int g = b < 0 ? -1 : dr_comm_report(d, &c, k, quiet);
    if (b < 0 || g < 0) {
      rc = -1;
      goto out;
    }
    *bad += b;
    *degraded += g;
    if (!quiet) dr_prov_report(d, &c, k);
  }
out:
  dr_comms_free(&c);
  if (rc) fprintf(stderr, "pcie-tune doctor: out of memory\n");
  return rc;
}

static int judge(struct doctor *d, int quiet, int strict) {
  size_t loaded = dr_plugin_header(d, quiet);
  int bad, degraded, tuned;
  if (report(d, quiet, &bad, &degraded, &tuned)) return EXIT_NOINPUT;
  if (!quiet) dr_plugin_footer(d);
  const char *verdict;
  int rc;
  /* Some ranks with the plugin and some without is a disagreement too. */
  if (bad || (loaded && loaded < d->nproc)) {
    verdict = "MISMATCH: ranks disagree (see above)";
    rc = EXIT_MISMATCH;
    if (!bad)
      fprintf(stderr, "pcie-tune doctor: ERROR: the plugin is loaded in %zu of %zu processes; "
                      "NCCL needs the same decision on every rank\n",
              loaded, d->nproc);
  } else if (!loaded) {
    verdict = "NOT LOADED: NCCL ran with its own tuning";
    rc = EXIT_NOT_LOADED;
  } else if (!tuned) {
    verdict = "LOADED BUT IDLE: every communicator was left to NCCL";
    rc = EXIT_IDLE;
  } else {
    verdict = "WORKING";
    rc = EXIT_WORKING;
  }
  printf("%sverdict: %s", quiet ? "" : "\n", verdict);
  if (degraded)
    printf("; %d communicator%s DEGRADED by what NCCL built (see above)", degraded,
           degraded == 1 ? "" : "s");
  printf("\n");
  if (strict && degraded && rc != EXIT_MISMATCH) rc = EXIT_DEGRADED;
  return rc;
}

int cmd_doctor(int argc, char **argv) {
  struct doctor_opts o;
  struct cli_state st;
  struct doctor d;
  int rc;
  memset(&o, 0, sizeof o);
  if (!(o.logs = calloc((size_t)argc, sizeof *o.logs))) return EXIT_NOINPUT;
  if ((rc = cli_parse(&doctor_cli, argc, argv, &o, &st, 1)) || !o.nlogs) {
    free(o.logs);
    if (rc) return rc == CLI_HELP ? 0 : rc;
    return cli_bad(&doctor_cli, "no log given (give '-' to read stdin)");
  }
  int quiet = o.quiet, strict = o.strict;
  if (nl_init()) {
    fprintf(stderr, "pcie-tune doctor: internal error: a log pattern does not compile\n");
    free(o.logs);
    return EXIT_NOINPUT;
  }
  memset(&d, 0, sizeof d);
  rc = EXIT_WORKING;
  for (int i = 0; i < o.nlogs && rc == EXIT_WORKING; i++)
    if (dr_read(o.logs[i], take_line, &d)) rc = EXIT_NOINPUT;
  if (rc == EXIT_WORKING) dr_tie(&d);
  if (d.oom) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    rc = EXIT_NOINPUT;
  } else if (d.too_many) {
    fprintf(stderr, "pcie-tune doctor: more than 200000 processes in the input: is it a log?\n");
    rc = EXIT_NOINPUT;
  } else if (rc == EXIT_WORKING && !d.nproc) {
    fprintf(stderr,
            "pcie-tune doctor: no NCCL log lines (\"host:pid:tid [dev] NCCL INFO ...\") in the "
            "input: run the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV\n");
    rc = EXIT_NOINPUT;
  } else if (rc == EXIT_WORKING) {
    rc = judge(&d, quiet, strict);
  }
  dr_free(&d);
  nl_release();
  free(o.logs);
  return rc;
}
