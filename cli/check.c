/*
 * pcie-tune check: validates profiles exactly as the plugin loads them and
 * reports every file's first error as file:line: reason, a partial sweep (the
 * plugin refuses it) and a profile without NCCL's default (the plugin leaves
 * those sizes to NCCL: nothing shows a candidate is faster there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opt.h"
#include "check_dir.h"
#include "cmds.h"
#include "host_verdict.h"
#include "json.h"
#include "nccl/common.h"
#include "prov_text.h"
#include "pcie/hostinfo.h"
#include "pcie/profile.h"
#include "pcie/table.h"


static void mode_rule_warnings(const char *path, const struct pt_profile *p,
                               const struct pt_table *t, int json);

static void json_line(const char *path, const char *status, const char *msg,
                      const struct pt_profile *p, const struct pt_table *t) {
  printf("{\"file\": ");
  cli_json_str(path);
  printf(", \"status\": \"%s\"", status);
  if (msg) {
    printf(", \"message\": ");
    cli_json_str(msg);
  }
  if (p && t) {
    printf(", \"name\": ");
    cli_json_str(p->name);
    printf(", \"hash\": \"%016llx\", \"decision_intervals\": %zu, \"tables\": %zu",
           (unsigned long long)p->hash, t->ninterval, t->nsets);
    printf(", \"comm_channels\": %d, \"nccl_default\": %s", p->comm_channels,
           pt_profile_lacks_default(p) ? "false" : "true");
    char prov[1400];
    cli_prov_box(p, prov, sizeof prov);
    printf(", \"nccl_version\": ");
    cli_json_str(p->prov.nccl_version);
    printf(", \"box_gpus\": %d, \"measured_on\": ", p->prov.box ? p->prov.box->ngpus : 0);
    cli_json_str(prov);
    printf(", \"rule_warnings\": [");
    mode_rule_warnings(path, p, t, 1);
    printf("]");
    static const char *const screen[] = {"none", "pass", "fail"};
    char ll[600];
    printf(", \"ll128_screen\": \"%s\", \"ll128_choices\": %zu, \"ll128_warning\": ",
           screen[p->ll128_screen], pt_profile_ll128_choices(p));
    if (cli_ll128_text(p, path, ll, sizeof ll)) cli_json_str(ll);
    else printf("null");
  }
  printf("}\n");
}

/* "FILE: ok (...)" and where it was measured: the plugin uses a measured
 * profile only on that box and that NCCL (docs/decisions.md). */
/* The Tree/Ring combinations the profile never saw NCCL run, over all
 * collectives (table.c, unseen_combos): where NCCL's cost table makes one
 * of them its best, the plugin leaves the call to NCCL. */
static void unseen_line(const struct pt_table *t) {
  unsigned m = 0;
  for (int c = 0; c < PT_NCOLL; c++)
    for (size_t i = 0; t->set[c] && i < t->set[c]->n; i++) m |= t->set[c]->hot[i].unseen;
  if (!m) return;
  printf("  not run by NCCL when measured:");
  for (int i = 0, n = 0; i < 2 * NCCL_NUM_PROTOCOLS; i++)
    if (m >> i & 1)
      printf("%s %s/%s", n++ ? "," : "", pt_algo_name(i / NCCL_NUM_PROTOCOLS),
             pt_proto_name(i % NCCL_NUM_PROTOCOLS));
  printf(" (where NCCL's cost table makes one of them its best, the call is left to NCCL)\n");
}

static void ok_line(const char *path, const struct pt_profile *p, const struct pt_table *t) {
  char prov[1400];
  cli_prov_box(p, prov, sizeof prov);
  printf("%s: ok (name '%s', hash %016llx, %zu decision intervals in %zu collective%s)\n"
         "  measured on: %s; NCCL %s, backend %s\n",
         path, p->name, (unsigned long long)p->hash, t->ninterval, t->nsets,
         t->nsets == 1 ? "" : "s", prov,
         p->prov.nccl_version, p->prov.backend);
  unseen_line(t);
}

/* The last line for a valid profile: will the plugin use it here (issue
 * 26 §2). Returns 1 when it would refuse it. */
static int host_line(const struct pt_profile *p, int quiet) {
  char v[3000];
  int no = cli_host_verdict(p, 0, v, sizeof v);
  if (!quiet) printf("  %s\n", v);
  else if (no) fprintf(stderr, "%s\n", v);
  return no;
}

/* Of the merged intervals inside rule r's range, how many the rule decides
 * (*total gets how many there are). */
static size_t rule_reach(const struct pt_table *t, const struct pt_rule *r, size_t *total) {
  const struct pt_ivset *set = t->set[r->coll];
  size_t n = 0;
  *total = 0;
  for (size_t i = 0; set && i < set->n; i++) {
    const struct pt_interval *iv = &set->iv[i];
    if (iv->hi < r->min_bytes || iv->lo > r->max_bytes) continue;
    ++*total;
    for (int k = 0; k < iv->n; k++)
      if (iv->c[k].from_rule && iv->c[k].algo == r->algo && iv->c[k].proto == r->proto) {
        n++;
        break;
      }
  }
  return n;
}

/* A rule for one mode only: regBuff, which names the mode, differs between
 * ranks, so both modes decide from one merged list and such a rule holds
 * only where the other mode decides the same (docs/decisions.md). `import
 * --from-nccl-example` writes them from lines conditioned on regBuff. Says
 * so where it does not apply everywhere: on stderr, or with json as the elements
 * of a JSON array on stdout. */
static void mode_rule_warnings(const char *path, const struct pt_profile *p,
                               const struct pt_table *t, int json) {
  int n = 0;
  for (size_t i = 0; i < p->nrules; i++) {
    const struct pt_rule *r = &p->rules[i];
    if (r->mode < 0) continue;
    size_t total, reach = rule_reach(t, r, &total);
    if (reach == total) continue; /* the other mode agrees everywhere (a paired rule) */
    char msg[600];
    snprintf(msg, sizeof msg,
             "warning: the %s rule for %s mode only (%s/%s, %llu..%llu B) decides only where %s "
             "mode decides the same: regBuff, which names the mode, differs between ranks, so both "
             "modes decide from one list; here it decides %zu of the %zu decision intervals in its "
             "range (the rest: %s mode's choice, or NCCL's). Drop 'mode' to apply it in both modes",
             pt_coll_name(r->coll), pt_mode_name(r->mode), pt_algo_name(r->algo),
             pt_proto_name(r->proto), (unsigned long long)r->min_bytes,
             (unsigned long long)r->max_bytes, pt_mode_name(!r->mode), reach, total,
             pt_mode_name(!r->mode));
    if (json) {
      char where[1200];
      snprintf(where, sizeof where, "%s:%d: %s", path, r->line, msg);
      printf("%s", n++ ? ", " : "");
      cli_json_str(where);
    } else {
      fprintf(stderr, "%s:%d: %s\n", path, r->line, msg);
    }
  }
}

/* Which series lack NCCL's default, and the run that fixes it. */
static void no_default_msg(const struct pt_profile *p, char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "NCCL's default was not measured for");
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++)
      if (pt_series_lacks_default(p->series[c][m]) && n < len)
        n += (size_t)snprintf(buf + n, len - n, " %s %s,", pt_coll_name(c), pt_mode_name(m));
  if (n < len)
    snprintf(buf + n - 1, len - n + 1,
             ": a candidate is chosen only where NCCL's own choice was measured too, so the "
             "plugin leaves those sizes to NCCL. Measure NCCL's default (the same nccl-tests "
             "command without NCCL_ALGO, NCCL_PROTO or NCCL_*_NCHANNELS, with NCCL_DEBUG=INFO; "
             "-G N for graph mode) and import it with the other logs");
}

/* --refused-is-error: a valid profile the plugin would refuse on this host
 * fails the check (for scripts). */
static int refused_is_error;

static int check_one(const char *path, int quiet, int json) {
  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  char line[1200];
  int rc = pt_profile_load(&p, path, &e);
  if (rc) {
    pt_error_format(&e, line, sizeof line);
    if (json) json_line(path, "invalid", line, NULL, NULL);
    else fprintf(stderr, "%s\n", line);
    return 1;
  }
  rc = pt_table_build(&t, &p);
  if (rc) {
    if (json) json_line(path, "error", pt_strerror(rc), NULL, NULL);
    else fprintf(stderr, "%s: %s\n", path, pt_strerror(rc));
    pt_profile_release(&p);
    return 1;
  }
  int status = 0;
  if (!json) mode_rule_warnings(path, &p, &t, 0);
  /* A warning, not a failure: the plugin uses the rest of the profile and
   * leaves those sizes to NCCL, which is safe; an error would fail every
   * import of nccl-tests logs that merely holds LL128 runs. */
  if (!json && cli_ll128_text(&p, path, line, sizeof line)) fprintf(stderr, "%s: warning: %s\n", path, line);
  if (pt_profile_partial(&p, line, sizeof line)) {
    /* The plugin refuses it: not usable until finished. */
    if (json) json_line(path, "partial", line, &p, &t);
    else fprintf(stderr, "%s: %s; the plugin leaves every decision to NCCL until then\n", path, line);
    status = 1;
  } else if (pt_profile_lacks_default(&p)) {
    /* Kept as data (import --without-default): valid, but it decides
     * nothing there, which a user who meant to tune must hear as a failure. */
    no_default_msg(&p, line, sizeof line);
    if (json) json_line(path, "no_default", line, &p, &t);
    else fprintf(stderr, "%s: %s\n", path, line);
    status = 1;
  } else if (json) {
    json_line(path, "ok", NULL, &p, &t);
  } else if (!quiet) {
    ok_line(path, &p, &t);
  }
  if (!json && !status && host_line(&p, quiet) && refused_is_error) status = 1;
  pt_table_release(&t);
  pt_profile_release(&p);
  return status;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

#define USAGE                                                                        \
  "usage: pcie-tune check [--quiet] [--json] [--refused-is-error] PROFILE|DIR...\n"                        \
  "       pcie-tune check PROFILE|DIR --nranks N [--nnodes M]\n"                      \
  "\n"                                                                                \
  "Validates each profile as the plugin would load it (docs/profile-format.md).\n"    \
  "Prints 'FILE: ok' with the profile's name, hash and decision intervals (one\n"     \
  "list per collective, as the plugin's init line counts them), or\n"                 \
  "'FILE:LINE: reason' on stderr. A partial sweep is reported with how much of\n"     \
  "it is measured: the plugin refuses it until 'pcie-tune profile --resume'\n"        \
  "finishes it. A DIR is checked as the plugin reads it: every *.cfg directly\n"      \
  "in it. With --nranks, says instead which profile the plugin would choose\n"        \
  "with PCIE_TUNER_PROFILE=PROFILE|DIR for that communicator, and why (each\n"        \
  "file's verdict, ties, refusals).\n"
#define EPILOG                                                                       \
  "A series whose NCCL default was never measured decides nothing (the plugin\n"       \
  "leaves it to NCCL) and fails the check. LL128 choices without a passing\n"         \
  "correctness screen (provenance.extra.ll128_screen) get a warning: the plugin\n"    \
  "leaves them to NCCL until 'pcie-tune screen' records one.\n"                       \
  "Exit status: 0 all usable (or a profile chosen), 1 any invalid, partial or\n"       \
  "without NCCL's default (or none chosen), 2 bad usage.\n"

struct check_opts {
  int quiet, json, refused_is_error;
  unsigned long long nranks, nnodes;
  const char **paths;
  int files;
};

static int add_path(void *opts, const char *arg, char *why, size_t len) {
  struct check_opts *o = opts;
  (void)why, (void)len;
  o->paths[o->files++] = arg;
  return 0;
}

#define F(x) offsetof(struct check_opts, x)

static const struct cli_opt check_rows[] = {
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0,
            "print nothing for usable profiles (warnings still go to stderr)"),
    CLI_ROW("json", 0, CLI_FLAG, NULL, F(json), 0, 0, NULL, 0, 0, "one JSON object per profile on stdout instead of text"),
    CLI_ROW("refused-is-error", 0, CLI_FLAG, NULL, F(refused_is_error), 0, 0, NULL, 0, 0,
            "exit 1 also for a valid profile the plugin would refuse on this\nhost (the last line of each profile says "
            "whether it uses it,\nand if not why and what to do)"),
    CLI_ROW("nranks", 0, CLI_UINT, "N", F(nranks), 1, 1u << 20, NULL, 0, 0,
            "the communicator's nRanks"),
    CLI_ROW("nnodes", 0, CLI_UINT, "M", F(nnodes), 1, 1u << 20, NULL, 0, 0, "the communicator's nNodes (default 1)"),
    CLI_END_ROW,
};

const struct cli_cmd check_cli = {
    "check",
    USAGE,
    EPILOG,
    check_rows,
    add_path,
};

int cmd_check(int argc, char **argv) {
  struct check_opts o;
  struct cli_state st;
  int bad = 0;
  memset(&o, 0, sizeof o);
  /* Options may come before or after the profiles (check DIR --nranks 8). */
  if (!(o.paths = calloc((size_t)argc, sizeof *o.paths))) return 1;
  int rc = cli_parse(&check_cli, argc, argv, &o, &st, 1);
  if (rc) {
    free(o.paths);
    return rc == CLI_HELP ? 0 : rc;
  }
  if (!o.files || (o.nnodes && !o.nranks)) {
    free(o.paths);
    return cli_bad(&check_cli, "%s", o.files ? "--nnodes needs --nranks" : "no profile given");
  }
  refused_is_error = o.refused_is_error;
  for (int k = 0; k < o.files; k++) {
    if (o.nranks) bad |= check_select(o.paths[k], (size_t)o.nranks, o.nnodes ? (size_t)o.nnodes : 1, o.quiet);
    else if (is_dir(o.paths[k])) bad |= check_dir(o.paths[k], o.quiet, o.json, check_one);
    else bad |= check_one(o.paths[k], o.quiet, o.json);
  }
  free(o.paths);
  return bad;
}
