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
#include <sys/stat.h>

#include "opt.h"
#include "cmds.h"
#include "doctor.h"

struct doctor_opts {
  int quiet, strict, host, json, force;
  const char *workload_out, *profile;
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
    CLI_ROW("strict", 0, CLI_FLAG, NULL, F(strict), 0, 0, NULL, 0, 0,
            "exit 6 when a communicator is degraded, or a host finding\n"
            "degrades P2P or risks a hang"),
    CLI_ROW("host", 0, CLI_FLAG, NULL, F(host), 0, 0, NULL, 0, 0,
            "also read this machine (sysfs; PCIE_TUNER_SYSFS_ROOT): each GPU's\n"
            "link, NCCL's path and transport per GPU pair, ACS on their bridges\n"
            "(root reads it), the IOMMU, NUMA, BAR1"),
    CLI_ROW("json", 0, CLI_FLAG, NULL, F(json), 0, 0, NULL, 0, 0,
            "print one JSON document (schema pcie-tune-doctor/1, docs/cli.md)\n"
            "instead of the text"),
    CLI_ROW("workload-out", 0, CLI_STR, "FILE", F(workload_out), 0, 0, NULL, 0, 0,
            "write what each communicator enqueued (NCCL_DEBUG_SUBSYS with COLL)\n"
            "as a workload file for profile/simulate --workload"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0,
            "replace an existing --workload-out FILE"),
    CLI_ROW("profile", 0, CLI_STR, "P", F(profile), 0, 0, NULL, 0, 0,
            "per step of the job's collectives (COLL lines): the time by NCCL's\n"
            "default and by profile P's choice, from P's measurements"),
    CLI_END_ROW,
};

const struct cli_cmd doctor_cli = {
    "doctor",
    "usage: pcie-tune doctor [-q|--quiet] [--strict] [--host] [--json]\n"
    "                        [--workload-out FILE [--force]] [--profile P] [LOG...]\n"
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
    "--strict, 6 a degraded communicator or host (unless 5). Several runs in the\n"
    "input (earlier runs' files beside today's) are told apart into jobs by commId;\n"
    "the status is the worst job's, leaving out a run superseded on the same GPUs.\n",
    doctor_rows,
    add_log,
};

/* The --json document being gathered; NULL for text. */
static struct dr_json *json;
/* --workload-out FILE (NULL: none) and --force. */
static const char *workload_out;
static int force_out;
/* --profile P: per-step times of the job's collectives (NULL: none). */
static const char *step_profile;

static void take_line(void *arg, const char *line) {
  struct nl_line l;
  if (nl_parse(line, &l)) dr_take(arg, &l);
  else dr_engine_line(arg, line);
}

/* Prints job's communicators; *bad the number whose ranks disagree,
 * *degraded those NCCL built degraded, *tuned those fully tuned. */
static int report(struct dr_doctor *d, int job, int quiet, int *bad, int *degraded, int *tuned) {
  struct dr_comms c;
  int rc = 0;
  *bad = *degraded = *tuned = 0;
  if (dr_comms(d, job, &c) < 0) {
    rc = -1;
    goto out;
  }
  for (size_t k = 0; k < c.n; k++) {
    int was = *tuned;
    int b = dr_plugin_comm(d, &c, k, quiet, tuned);
    int g = b < 0 ? -1 : dr_comm_report(d, &c, k, quiet);
    if (b < 0 || g < 0) {
      rc = -1;
      goto out;
    }
    *bad += b;
    *degraded += g;
    if (json) {
      const struct dr_member *m = &d->mem[c.order[c.start[k]]];
      struct dr_comm_out o;
      memset(&o, 0, sizeof o);
      SET(o.id, m->commid);
      o.nranks = m->nranks, o.nnodes = m->nnodes, o.seen = dr_ranks_seen(d, &c, k);
      o.disagree = b, o.degraded = g, o.tuned = *tuned > was;
      if (o.tuned) SET(o.profile, m->out.name), SET(o.hash, m->out.hash);
      dr_json_comm(json, &o);
    }
    if (!quiet) {
      dr_prov_report(d, &c, k);
      printf("  communicator verdict: %s%s\n",
             b ? "RANKS DISAGREE" : *tuned > was ? "TUNED" : "LEFT TO NCCL", g ? ", DEGRADED" : "");
    }
  }
out:
  dr_comms_free(&c);
  if (rc) fprintf(stderr, "pcie-tune doctor: out of memory\n");
  return rc;
}

/* How bad an exit status is, for the worst job: a disagreement, then a
 * degraded communicator (--strict), not loaded, idle, working. */
static int severity(int rc) {
  static const int order[] = {[EXIT_WORKING] = 0, [EXIT_IDLE] = 1, [EXIT_NOT_LOADED] = 2,
                              [EXIT_DEGRADED] = 3, [EXIT_MISMATCH] = 4};
  return order[rc];
}

/* One job's report and verdict line; returns its exit status, -1 out of
 * memory. */
static int judge_job(struct dr_doctor *d, int job, int quiet, int strict, char *verdict, size_t len) {
  size_t np;
  size_t loaded = dr_plugin_header(d, job, &np, quiet);
  int bad, degraded, tuned, rc;
  struct dr_job_out *jo = json ? &json->jobs[json->njobs - 1] : NULL;
  if (report(d, job, quiet, &bad, &degraded, &tuned)) return -1;
  if (jo) {
    jo->nproc = np, jo->loaded = loaded;
    for (size_t i = 0; i < d->nproc; i++)
      if ((job < 0 || d->procs[i].job == job) && d->procs[i].version[0]) SET(jo->version, d->procs[i].version);
    dr_log_findings(d, job, &jo->fs);
  }
  if (!quiet) {
    struct dr_findings fs = {NULL, 0, 0};
    dr_plugin_footer(d, job);
    dr_log_findings(d, job, &fs);
    if (fs.n) printf("\nfindings:\n");
    for (size_t i = 0; i < fs.n; i++) dr_print_finding(&fs.f[i]);
    free(fs.f);
  }
  const char *v;
  /* Some ranks with the plugin and some without is a disagreement too. */
  if (bad || (loaded && loaded < np)) {
    v = "MISMATCH: ranks disagree (see above)";
    rc = EXIT_MISMATCH;
    if (!bad)
      fprintf(stderr, "pcie-tune doctor: %sERROR: the plugin is loaded in %zu of %zu processes; "
                      "NCCL needs the same decision on every rank\n",
              d->label ? d->label : "", loaded, np);
  } else if (!loaded) {
    v = "NOT LOADED: NCCL ran with its own tuning";
    rc = EXIT_NOT_LOADED;
  } else if (!tuned) {
    v = "LOADED BUT IDLE: every communicator was left to NCCL";
    rc = EXIT_IDLE;
  } else {
    v = "WORKING";
    rc = EXIT_WORKING;
  }
  if (degraded)
    snprintf(verdict, len, "%s; %d communicator%s DEGRADED by what NCCL built (see above)", v,
             degraded, degraded == 1 ? "" : "s");
  else
    snprintf(verdict, len, "%s", v);
  if (strict && degraded && rc != EXIT_MISMATCH) rc = EXIT_DEGRADED;
  if (jo) jo->rc = rc;
  return rc;
}

static void job_title(const struct dr_doctor *d, const struct dr_jobs *j, size_t k) {
  const char *host = "";
  long lo = 0, hi = 0;
  size_t hosts = 0;
  for (size_t i = 0; i < d->nproc; i++) {
    const struct dr_proc *p = &d->procs[i];
    if (p->job != (int)k) continue;
    if (!host[0] || strcmp(host, p->host)) hosts++, host = p->host;
    if (!lo || p->pid < lo) lo = p->pid;
    if (p->pid > hi) hi = p->pid;
  }
  printf("\n=== job %zu of %zu%s: %zu process%s on %s%s, pids %ld-%ld", k + 1, j->n,
         k + 1 == j->n ? " (the most recent)" : "", j->job[k].nproc, j->job[k].nproc == 1 ? "" : "es",
         host, hosts > 1 ? " and other hosts" : "", lo, hi);
  if (j->job[k].superseded_by >= 0)
    printf("; an earlier run on GPUs that job %d used after it: not counted in the exit status",
           j->job[k].superseded_by + 1);
  printf(" ===\n");
}

static int judge(struct dr_doctor *d, int quiet, int strict) {
  struct dr_jobs j;
  char verdict[256], worst_v[256] = "", label[32];
  int worst = -1, worst_job = 0;
  if (dr_jobs(d, &j)) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    return EXIT_NOINPUT;
  }
  d->last_job = (int)j.n - 1;
  if (j.n > 1 && !quiet)
    printf("%zu jobs in the input (told apart by commId; ordered by file time, then input order; "
           "see docs/cli.md)\n",
           j.n);
  for (size_t k = 0; k < j.n; k++) {
    if (j.n > 1) {
      snprintf(label, sizeof label, "job %zu: ", k + 1);
      d->label = label;
      if (!quiet) job_title(d, &j, k);
    }
    if (json && !dr_json_job(json)) return EXIT_NOINPUT;
    if (json) json->jobs[k].superseded_by = j.job[k].superseded_by;
    int rc = judge_job(d, j.n > 1 ? (int)k : -1, quiet, strict, verdict, sizeof verdict);
    if (rc < 0) {
      dr_jobs_free(&j);
      fprintf(stderr, "pcie-tune doctor: out of memory\n");
      return EXIT_NOINPUT;
    }
    if (j.n > 1 && !quiet)
      printf("\njob %zu verdict: %s%s\n", k + 1, verdict,
             j.job[k].superseded_by >= 0 ? " (superseded: not counted)" : "");
    /* The worst current job; ties go to the most recent. */
    if (j.job[k].superseded_by < 0 && (worst < 0 || severity(rc) >= severity(worst))) {
      worst = rc, worst_job = (int)k;
      SET(worst_v, verdict);
    }
  }
  d->label = NULL;
  if (json) {
    json->logs_rc = worst, json->worst_job = worst_job;
    dr_jobs_free(&j);
    return worst;
  }
  printf("%sverdict: %s", quiet ? "" : "\n", worst_v);
  if (j.n > 1) {
    size_t old = 0;
    for (size_t k = 0; k < j.n; k++) old += j.job[k].superseded_by >= 0;
    printf(" (job %d of %zu, the worst current one", worst_job + 1, j.n);
    if (old) printf("; %zu earlier run%s on the same GPUs not counted", old, old == 1 ? "" : "s");
    printf(")");
  }
  printf("\n");
  dr_jobs_free(&j);
  return worst;
}

/* doctor --host: this machine's GPUs, paths, ACS and IOMMU. */
static int judge_host(int quiet, int strict) {
  struct dr_host *h = malloc(sizeof *h);
  struct dr_findings fs = {NULL, 0, 0};
  char err[256];
  int rc = EXIT_NOINPUT;
  if (!h) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    return rc;
  }
  if (dr_host_read(h, NULL, err, sizeof err)) {
    fprintf(stderr, "pcie-tune doctor: --host: %s (set PCIE_TUNER_SYSFS_ROOT to read a copy of "
                    "another machine's sys/ and proc/)\n", err);
  } else if (!h->fp.ngpus) {
    fprintf(stderr, "pcie-tune doctor: --host: no NVIDIA GPU under %s/sys/bus/pci/devices\n", h->root);
  } else {
    int bad = dr_host_report(h, &fs, quiet);
    if (fs.oom) {
      fprintf(stderr, "pcie-tune doctor: out of memory\n");
    } else if (json) {
      rc = strict && bad ? EXIT_DEGRADED : EXIT_WORKING;
      json->host = h, json->host_fs = fs, json->host_rc = rc;
      return rc; /* freed with the document */
    } else {
      printf("%shost verdict: %s", quiet ? "" : "\n", bad ? "" : "no finding degrades P2P");
      if (bad)
        printf("%d finding%s P2P or risk%s a hang%s", bad, bad == 1 ? " degrades" : "s degrade",
               bad == 1 ? "s" : "", quiet ? "" : " (see above)");
      printf("\n");
      rc = strict && bad ? EXIT_DEGRADED : EXIT_WORKING;
    }
  }
  free(fs.f);
  free(h);
  return rc;
}

static int judge_logs(int n, const char **logs, int quiet, int strict);

int cmd_doctor(int argc, char **argv) {
  struct doctor_opts o;
  struct cli_state st;
  int rc;
  memset(&o, 0, sizeof o);
  if (!(o.logs = calloc((size_t)argc, sizeof *o.logs))) return EXIT_NOINPUT;
  if ((rc = cli_parse(&doctor_cli, argc, argv, &o, &st, 1))) {
    free(o.logs);
    return rc == CLI_HELP ? 0 : rc;
  }
  int quiet = o.quiet, strict = o.strict, host = o.host;
  workload_out = o.workload_out, force_out = o.force, step_profile = o.profile;
  if ((workload_out || step_profile) && !o.nlogs)
    rc = cli_bad(&doctor_cli, "--workload-out and --profile read the collectives from LOGs: give one");
  else if (!o.nlogs && !host)
    rc = cli_bad(&doctor_cli, "no log given (give '-' to read stdin, or --host)");
  if (rc) {
    free(o.logs);
    return rc;
  }
  struct dr_json doc;
  memset(&doc, 0, sizeof doc);
  doc.logs_rc = doc.host_rc = -1;
  if (o.json) json = &doc, quiet = 1;
  rc = o.nlogs ? judge_logs(o.nlogs, o.logs, quiet, strict) : EXIT_WORKING;
  if (host && rc != EXIT_NOINPUT) {
    int hrc = judge_host(quiet, strict);
    if (hrc == EXIT_NOINPUT || !o.nlogs || severity(hrc) > severity(rc)) rc = hrc;
  }
  if (json) {
    doc.rc = rc;
    if (doc.oom) {
      fprintf(stderr, "pcie-tune doctor: out of memory\n");
      rc = EXIT_NOINPUT;
    } else if (rc != EXIT_NOINPUT) {
      dr_json_print(&doc);
    }
    free((void *)doc.host);
    dr_json_free(&doc);
    json = NULL;
  }
  free(o.logs);
  return rc;
}

/* Reads and judges the logs; returns the exit status. */
static int judge_logs(int n, const char **logs, int quiet, int strict) {
  struct dr_doctor d;
  int rc, i = 0, argc = n;
  const char **argv = logs;
  if (nl_init()) {
    fprintf(stderr, "pcie-tune doctor: internal error: a log pattern does not compile\n");
    return EXIT_NOINPUT;
  }
  memset(&d, 0, sizeof d);
  rc = EXIT_WORKING;
  for (; i < argc && rc == EXIT_WORKING; i++) {
    struct stat st;
    d.mtime = strcmp(argv[i], "-") && !stat(argv[i], &st)
                  ? (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec
                  : 0;
    d.file = i, d.last_proc = -1;
    if (dr_read(argv[i], take_line, &d)) rc = EXIT_NOINPUT;
  }
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
    struct dr_workload w;
    int want = workload_out || step_profile || json;
    if (want && dr_workload_build(&d, &w)) {
      fprintf(stderr, "pcie-tune doctor: out of memory\n");
      rc = EXIT_NOINPUT;
    } else if (workload_out && dr_workload_write(&d, &w, workload_out, force_out)) {
      rc = EXIT_NOINPUT;
    } else {
      rc = judge(&d, quiet, strict);
      if (step_profile && !json && !quiet && dr_workload_profile(&w, step_profile)) rc = EXIT_NOINPUT;
    }
    if (want && json && rc != EXIT_NOINPUT) {
      json->workload = w; /* freed with the document */
      w.items = NULL;
    }
    if (want) free(w.items);
  }
  dr_free(&d);
  nl_release();
  return rc;
}
