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

#include "args.h"
#include "cmds.h"
#include "doctor.h"

static const char usage[] =
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
    "it is degraded (SHM or NET between GPUs of one host, a search that fell back).\n"
    "\n"
    "  -q, --quiet   print only the verdict line\n"
    "  --strict      exit 6 when a communicator is degraded\n"
    "\n"
    "Exit status: 0 working (at least one communicator tuned, all ranks agree),\n"
    "1 no NCCL log lines or unreadable input, 2 bad usage, 3 plugin not loaded,\n"
    "4 loaded but every communicator left to NCCL, 5 ranks disagree; with\n"
    "--strict, 6 a degraded communicator (unless 5).\n";

static void take_line(void *arg, const char *line) {
  struct nl_line l;
  if (nl_parse(line, &l)) dr_take(arg, &l);
}

/* Prints every communicator; *bad the number whose ranks disagree,
 * *degraded those NCCL built degraded, *tuned those fully tuned. */
static int report(struct dr_doctor *d, int quiet, int *bad, int *degraded, int *tuned) {
  struct dr_comms c;
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

static int judge(struct dr_doctor *d, int quiet, int strict) {
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
  int quiet = 0, strict = 0, i = 1, rc;
  struct dr_doctor d;
  for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
    if (!strcmp(argv[i], "--")) {
      i++;
      break;
    }
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
      continue;
    }
    if (!strcmp(argv[i], "--strict")) {
      strict = 1;
      continue;
    }
    return cli_usage_error("doctor", "unknown option '%s'", argv[i]);
  }
  if (i == argc) return cli_usage_error("doctor", "no log given (give '-' to read stdin)");
  if (nl_init()) {
    fprintf(stderr, "pcie-tune doctor: internal error: a log pattern does not compile\n");
    return EXIT_NOINPUT;
  }
  memset(&d, 0, sizeof d);
  rc = EXIT_WORKING;
  for (; i < argc && rc == EXIT_WORKING; i++)
    if (dr_read(argv[i], take_line, &d)) rc = EXIT_NOINPUT;
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
  return rc;
}
