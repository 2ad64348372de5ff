/*
 * pcie-tune import: reads nccl-tests logs (one setting each), builds a
 * profile and writes it atomically. Owns option parsing, file reading and
 * printing; parsing is import/nccltests.c, the profile is import/import_build.c.
 * docs/cli-import.md is the manual.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmds.h"
#include "host_verdict.h"
#include "prov_text.h"
#include "opt.h"
#include "import/import_build.h"
#include "pcie/files.h"
#include "pcie/hostinfo.h"
#include "import/nccl_example.h"

/* Far above any nccl-tests log; keeps a wrong file (a core dump) out. */
#define IMP_MAX_LOG (64u << 20)

struct args {
  const char *out, *name, *example;
  int force, in_place, quiet, without_default, box_here;
  size_t nlogs;
  const char **path;       /* argv strings */
  struct imp_setting *cli; /* per log */
  struct imp_setting pending; /* the --setting for the next log */
  const char *pending_spec;
  char **owned;               /* paths made from a directory's entries */
  size_t nowned;
};

/* --setting SPEC: the setting of the log that follows. */
static int setting(void *opts, const char *v, char *why, size_t len) {
  struct args *a = opts;
  char msg[256];
  if (a->pending_spec) {
    snprintf(why, len, "--setting '%s' is not followed by a log", a->pending_spec);
    return CLI_WHOLE;
  }
  if (imp_setting_parse(v, &a->pending, msg, sizeof msg)) {
    snprintf(why, len, "--setting: %s", msg);
    return CLI_WHOLE;
  }
  a->pending_spec = v;
  return 0;
}

static int add_log(void *opts, const char *s, char *why, size_t len) {
  struct args *a = opts;
  for (size_t k = 0; k < a->nlogs && !strcmp(s, "-"); k++)
    if (!strcmp(a->path[k], "-")) return snprintf(why, len, "'-' (stdin) can be given only once"), -1;
  a->path[a->nlogs] = s;
  a->cli[a->nlogs++] = a->pending;
  a->pending = IMP_SETTING_NONE;
  a->pending_spec = NULL;
  return 0;
}

#define F(x) offsetof(struct args, x)

static const struct cli_opt import_rows[] = {
    CLI_ROW("out", 0, CLI_STR, "FILE", F(out), 0, 0, NULL, 0, 0,
            "profile to write (refused if it exists, unless --force;\nnever one of the logs; '-': standard output)"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0, "overwrite FILE"),
    CLI_ROW("quiet", 'q', CLI_FLAG, NULL, F(quiet), 0, 0, NULL, 0, 0, "no summary of what was written"),
    CLI_ROW("in-place", 0, CLI_FLAG, NULL, F(in_place), 0, 0, NULL, 0, 0, "use the in-place times (default: out-of-place)"),
    CLI_ROW("box-here", 0, CLI_FLAG, NULL, F(box_here), 0, 0, NULL, 0, 0,
            "record this host's GPUs as the profile's box (read as the\nplugin reads them), for an import on the box "
            "that ran\nnccl-tests; refused on a host without NVIDIA GPUs or\nwithout the logs' GPUs (default: the box "
            "the logs give)"),
    CLI_ROW("without-default", 0, CLI_FLAG, NULL, F(without_default), 0, 0, NULL, 0, 0,
            "write the profile even where no log is NCCL's default run\n(refused otherwise): kept as data, the plugin "
            "leaves those\nsizes to NCCL, and check fails it"),
    CLI_ROW("name", 0, CLI_STR, "NAME", F(name), 0, 0, NULL, 0, 0, "profile name (default: FILE's base name)"),
    CLI_ROW("setting", 0, CLI_CUSTOM, "SPEC", 0, 0, 0, NULL, CLI_MULTI, 0,
            "the setting of the next LOG: algo=, proto=, channels=", .parse = setting),
    CLI_ROW("from-nccl-example", 0, CLI_STR, "CONF", F(example), 0, 0, NULL, 0, 0,
            "turn the CSV of NCCL's example tuner (NCCL_TUNER_CONFIG_FILE)\ninto a profile of rules with the same "
            "meaning"),
    CLI_END_ROW,
};

const struct cli_cmd import_cli = {
    "import",
    "usage: pcie-tune import --out FILE [--force] [--in-place] [--name NAME]\n"
    "                        [--without-default] [--box-here]\n"
    "                        [--setting algo=A,proto=P,channels=N] LOG\n"
    "                        [[--setting ...] LOG]...\n"
    "       pcie-tune import --out FILE [--force] [--name NAME] --from-nccl-example CONF\n"
    "\n"
    "Builds a profile from nccl-tests logs (all_reduce_perf, all_gather_perf,\n"
    "reduce_scatter_perf, broadcast_perf or reduce_perf), one log per setting.\n"
    "A log's setting comes from the --setting just before it, or from NCCL_ALGO,\n"
    "NCCL_PROTO and NCCL_MAX_NCHANNELS lines in the log; a log with neither is\n"
    "NCCL's default; it is required in each mode (a candidate is chosen only\n"
    "where NCCL's default was measured too). LOG '-' reads standard input; a\n"
    "directory stands for its files (not hidden, not *.cfg). Run nccl-tests with\n"
    "NCCL_DEBUG=INFO: its channel count becomes the profile's communicator.channels,\n"
    "and logs measured with more channels are left out.\n",
    "See docs/cli-import.md.\n",
    import_rows,
    add_log,
};

/* Returns 0, 2 (usage, already reported) or -1 (--help printed). */
static int parse_args(int argc, char **argv, struct args *a) {
  struct cli_state st;
  a->path = calloc((size_t)argc, sizeof *a->path);
  a->cli = calloc((size_t)argc, sizeof *a->cli);
  if (!a->path || !a->cli) {
    fprintf(stderr, "pcie-tune import: out of memory\n");
    return 1;
  }
  a->pending = IMP_SETTING_NONE;
  int rc = cli_parse(&import_cli, argc, argv, a, &st, 1);
  if (rc) return rc;
  if (a->pending_spec) return cli_bad(&import_cli, "--setting '%s' is not followed by a log", a->pending_spec);
  if (!a->out) return cli_bad(&import_cli, "--out FILE is required");
  if (a->example && (a->nlogs || a->in_place || a->box_here || a->without_default))
    return cli_bad(&import_cli, "--from-nccl-example takes no nccl-tests logs, --in-place, --box-here or "
                   "--without-default");
  if (!a->example && !a->nlogs) return cli_bad(&import_cli, "no nccl-tests log given");
  return 0;
}

/* Appends one log to a->path and a->cli; -1 out of memory. */
static int push_log(struct args *a, const char *path, struct imp_setting set) {
  const char **p = realloc(a->path, (a->nlogs + 1) * sizeof *p);
  if (p) a->path = p;
  struct imp_setting *c = p ? realloc(a->cli, (a->nlogs + 1) * sizeof *c) : NULL;
  if (!c) return -1;
  a->cli = c;
  a->path[a->nlogs] = path, a->cli[a->nlogs++] = set;
  return 0;
}

/* A directory's entries that may be logs: not hidden, not a profile
 * (*.cfg: an earlier import may have written one beside the logs). */
static int log_name(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return e->d_name[0] != '.' && !(n > 4 && !strcmp(e->d_name + n - 4, ".cfg"));
}

/* Appends dir's regular files (log_name's, in name order; subdirectories
 * are not entered), each NCCL's default unless its log says otherwise.
 * Returns 0, or 1 after saying why. */
static int add_dir(struct args *a, const char *dir) {
  struct dirent **e = NULL;
  int k = scandir(dir, &e, log_name, alphasort), oom = 0;
  size_t before = a->nlogs;
  if (k < 0) {
    fprintf(stderr, "%s: cannot list the directory: %s\n", dir, strerror(errno));
    return 1;
  }
  for (int i = 0; i < k; i++) {
    struct stat st;
    char *p = NULL, **o = NULL;
    if (!oom && asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e[i]->d_name) < 0)
      p = NULL, oom = 1;
    if (p && !stat(p, &st) && S_ISREG(st.st_mode)) {
      if ((o = realloc(a->owned, (a->nowned + 1) * sizeof *o)) && !push_log(a, p, IMP_SETTING_NONE))
        a->owned = o, o[a->nowned++] = p, p = NULL;
      else
        a->owned = o ? o : a->owned, oom = 1;
    }
    free(p);
    free(e[i]);
  }
  free(e);
  if (oom) fprintf(stderr, "pcie-tune import: out of memory\n");
  else if (a->nlogs == before)
    fprintf(stderr, "%s: no log in this directory (its regular files, not hidden, not *.cfg): "
                    "put the nccl-tests outputs there, or name them\n", dir);
  return oom || a->nlogs == before;
}

/* A directory given as LOG stands for its logs (add_dir). A --setting is
 * one log's, so it cannot come before a directory. Returns 0, or 1 after
 * saying why. */
static int expand_dirs(struct args *a) {
  size_t n = a->nlogs;
  const char **given = a->path;
  struct imp_setting *set = a->cli;
  int rc = 0;
  a->path = NULL, a->cli = NULL, a->nlogs = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    struct stat st;
    int is_dir = strcmp(given[i], "-") && !stat(given[i], &st) && S_ISDIR(st.st_mode);
    if (is_dir && (set[i].algo >= 0 || set[i].proto >= 0 || set[i].channels >= 0)) {
      fprintf(stderr, "pcie-tune import: --setting before the directory %s: a setting is one log's; "
                      "name that log, or let its NCCL_ALGO/NCCL_PROTO lines say it\n", given[i]);
      rc = 1;
    } else if (is_dir) {
      rc = add_dir(a, given[i]);
    } else if (push_log(a, given[i], set[i])) {
      fprintf(stderr, "pcie-tune import: out of memory\n");
      rc = 1;
    }
  }
  free(given);
  free(set);
  return rc;
}

/* Reads all of path ('-': stdin) into a malloc'ed buffer; a FIFO or a
 * device given by name is refused at once (include/pcie/files.h; a
 * directory was replaced by its logs), standard input is the user's own
 * pipe. */
static int read_all(const char *path, char **buf, size_t *len) {
  struct pt_error_rec e;
  char line[1200];
  if (!pt_file_read(path, IMP_MAX_LOG, PT_READ_STDIN, buf, len, &e)) return 0;
  pt_error_format(&e, line, sizeof line);
  fprintf(stderr, "%s\n", line);
  return -1;
}

/* "box.cfg" and "dir/box.cfg" name the profile "box". */
static char *default_name(const char *out) {
  const char *base = strrchr(out, '/');
  base = base ? base + 1 : out;
  size_t n = strcspn(base, ".");
  char *s = malloc(n + 1);
  if (s) snprintf(s, n + 1, "%s", base);
  return s;
}

static int load_logs(const struct args *a, struct imp_input *in) {
  for (size_t i = 0; i < a->nlogs; i++) {
    char *buf = NULL;
    size_t len = 0;
    struct pt_error_rec err;
    const char *name = strcmp(a->path[i], "-") ? a->path[i] : "<stdin>";
    if (read_all(a->path[i], &buf, &len)) return -1;
    int rc = nt_parse(&in[i].log, buf, len, name, &err);
    free(buf);
    if (rc) {
      cli_print_error(NULL, &err);
      return -1;
    }
    in[i].cli = a->cli[i];
    for (size_t r = 0; r < in[i].log.nruns; r++)
      if (in[i].log.runs[r].no_summary_line)
        fprintf(stderr,
                "%s:%d: warning: the table has every size up to maxBytes (%llu) but ends without its "
                "summary lines ('Out of bounds values', 'Avg bus bandwidth'); imported as complete\n",
                name, in[i].log.runs[r].no_summary_line,
                (unsigned long long)in[i].log.runs[r].max_bytes);
  }
  return 0;
}

static int same_shape(const struct imp_shape *x, const struct imp_shape *y) {
  return x->coll == y->coll && x->nranks == y->nranks && !strcmp(x->version, y->version);
}

/* After imp_build refused logs of several shapes (collective, rank count,
 * NCCL version), which make no one profile: prints which logs go together
 * and what to do with each kind of difference (nothing when the logs are
 * of one shape: the refusal was another). */
static void several_shapes(const struct imp_input *in, size_t n) {
  struct imp_shape *sh = calloc(n, sizeof *sh);
  struct pt_error_rec e;
  size_t kinds = 0;
  int diff[3] = {0, 0, 0}; /* collective, ranks, version */
  for (size_t i = 0; sh && i < n; i++)
    if (imp_log_shape(&in[i].log, &sh[i], &e)) goto none;
  for (size_t i = 0; sh && i < n; i++) {
    size_t k = 0;
    while (k < i && !same_shape(&sh[k], &sh[i])) k++;
    kinds += k == i;
    diff[0] |= sh[i].coll != sh[0].coll, diff[1] |= sh[i].nranks != sh[0].nranks;
    diff[2] |= strcmp(sh[i].version, sh[0].version) != 0;
  }
  if (kinds < 2) goto none;
  fprintf(stderr, "pcie-tune import: the logs hold %zu kinds of run, and a profile holds one kind:\n", kinds);
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < i && !same_shape(&sh[k], &sh[i])) k++;
    if (k < i) continue;
    fprintf(stderr, "  %s on %d ranks, NCCL %s:", pt_coll_name(sh[i].coll), sh[i].nranks,
            sh[i].version[0] ? sh[i].version : "not in the log");
    for (size_t j = i; j < n; j++)
      if (same_shape(&sh[j], &sh[i])) fprintf(stderr, " %s", in[j].log.name);
    fprintf(stderr, "\n");
  }
  if (diff[0])
    fprintf(stderr, "several collectives: the plugin uses one profile per communicator, and an imported "
                    "profile holds one collective: import one collective's logs (a tensor-parallel "
                    "engine's are all-reduces)\n");
  if (diff[1])
    fprintf(stderr, "several rank counts: import each into its own profile (pcie-tune import --out "
                    "DIR/NAME-Nr.cfg LOGS), all in one directory DIR, and set PCIE_TUNER_PROFILE=DIR: "
                    "the plugin picks the profile whose match fits each communicator\n");
  if (diff[2])
    fprintf(stderr, "several NCCL versions: the plugin refuses a profile measured with another NCCL "
                    "minor version than the job's: import the logs of the NCCL the job loads (pcie-tune "
                    "check on the profile names it)\n");
none:
  free(sh);
}

/* The one collective an imported profile holds (import_build.h). */
static int profile_coll(const struct pt_profile *p) {
  for (int c = 0; c < PT_NCOLL; c++)
    if (p->series[c][PT_MODE_GRAPH] || p->series[c][PT_MODE_EAGER]) return c;
  return -1;
}

/* Where the communicator's channel count came from, or why it is unknown
 * (then the plugin clamps more; docs/decisions.md, "Channels"). */
static void summary_communicator(const struct pt_profile *p, const char *out,
                                 const struct imp_input *in, size_t n) {
  const struct nt_log *from = NULL;
  int any_default = 0;
  for (size_t i = 0; i < n; i++) {
    struct imp_setting set;
    int is_default = 0;
    struct pt_error_rec e;
    int forced;
    if (imp_setting_resolve(&in[i].log, &in[i].cli, profile_coll(p), &set, &is_default, &forced, &e) || !is_default)
      continue;
    any_default = 1;
    if (!from && in[i].log.comm_channels) from = &in[i].log;
  }
  if (p->comm_channels && from)
    printf("%s: communicator channels %d (%s:%d)", out, p->comm_channels, from->name,
           from->comm_channels_line);
  else if (any_default)
    printf("%s: communicator channels unknown: NCCL's default run logged no \"coll channels\" line; "
           "rerun it with NCCL_DEBUG=INFO so the plugin can keep to its channel count",
           out);
  else
    printf("%s: communicator channels unknown: no log of NCCL's default run (one without a setting); "
           "add one run with NCCL_DEBUG=INFO",
           out);
  if (p->env_recorded) printf("; nccl_env: %zu variable%s", p->nenv, p->nenv == 1 ? "" : "s");
  printf("\n");
}

static void summary(const struct pt_profile *p, const char *out) {
  for (int c = 0; c < PT_NCOLL; c++)
    for (int m = 0; m < PT_NMODES; m++) {
      const struct pt_series *s = p->series[c][m];
      if (s)
        printf("%s: %s %s on %d ranks: %zu sizes, %zu candidate%s%s\n", out, pt_coll_name(c),
               pt_mode_name(m), p->match_nranks, s->nsizes, s->ncand, s->ncand == 1 ? "" : "s",
               s->nccl_default ? " and NCCL's default" : "");
    }
}

/* --from-nccl-example: the rules of NCCL's example tuner, as a profile. */
static int import_example(const struct args *a, const char *name, const char *date,
                          struct pt_profile *p) {
  char *buf = NULL, note[1200];
  size_t len = 0;
  struct pt_error_rec err;
  if (read_all(a->example, &buf, &len)) return 1;
  const char *file = strcmp(a->example, "-") ? a->example : "<stdin>";
  int rc = imp_nccl_example(buf, len, file, p, &err);
  free(buf);
  if (rc) {
    cli_print_error(NULL, &err);
    return 1;
  }
  snprintf(note, sizeof note, "rules from NCCL's example tuner configuration %s", file);
  p->version = PT_PROFILE_VERSION;
  p->name = pt_strdup(name);
  p->prov.tool = pt_strdup("pcie-tune import");
  p->prov.backend = pt_strdup("nccl-example-tuner");
  p->prov.nccl_version = pt_strdup("any");
  p->prov.date = pt_strdup(date);
  p->prov.mode = pt_strdup("both");
  p->prov.note = pt_strdup(note);
  if (!p->name || !p->prov.tool || !p->prov.backend || !p->prov.nccl_version || !p->prov.date ||
      !p->prov.mode || !p->prov.note) {
    fprintf(stderr, "pcie-tune import: out of memory\n");
    return 1;
  }
  /* The format's rules (e.g. how many rules may stack on one size) are
   * reported against the configuration's own line numbers. */
  if (pt_profile_validate(p, &err)) {
    snprintf(err.file, sizeof err.file, "%s", file);
    cli_print_error(NULL, &err);
    return 1;
  }
  return 0;
}

/* --box-here: this host's GPUs, read with the plugin's own sysfs reader
 * (tuner/hostinfo.c), for a user importing on the box that ran nccl-tests.
 * Returns 0, or -1 after saying why (no NVIDIA GPU here included). */
static int read_box_here(struct pt_box_fp *fp) {
  char why[512];
  if (pt_host_read(NULL, fp, why, sizeof why)) {
    fprintf(stderr, "pcie-tune import: --box-here: cannot read this host's GPUs: %s\n", why);
    return -1;
  }
  if (!fp->ngpus) {
    fprintf(stderr,
            "pcie-tune import: --box-here: this host has no NVIDIA GPU (PCI bus read as the plugin "
            "reads it): run the import on the box that ran nccl-tests, or leave --box-here out to "
            "record the box the logs give\n");
    return -1;
  }
  return 0;
}

int cmd_import(int argc, char **argv) {
  struct args a = {0};
  struct imp_input *in = NULL;
  struct pt_profile p = {0};
  static struct pt_box_fp here;
  struct pt_error_rec err;
  char date[16] = "", *name = NULL;
  int *dropped = NULL, *forced = NULL;
  int ret = parse_args(argc, argv, &a);
  if (ret) {
    ret = ret < 0 ? 0 : ret;
    goto out;
  }
  ret = 1;
  if (expand_dirs(&a)) goto out;
  in = calloc(a.nlogs ? a.nlogs : 1, sizeof *in);
  name = a.name ? strdup(a.name) : default_name(strcmp(a.out, "-") ? a.out : "imported");
  time_t now = time(NULL);
  struct tm tm;
  if (!in || !name || !gmtime_r(&now, &tm) || !strftime(date, sizeof date, "%Y-%m-%d", &tm)) {
    fprintf(stderr, "pcie-tune import: out of memory\n");
    goto out;
  }
  /* Before reading anything: an --out that is one of the inputs, a FIFO or
   * device, or in a missing directory (include/pcie/files.h). */
  int rc = a.example ? pt_output_check(a.out, a.force ? PT_OUT_FORCE : 0, &a.example, 1, &err)
                     : pt_output_check(a.out, a.force ? PT_OUT_FORCE : 0, a.path, a.nlogs, &err);
  if (rc) {
    cli_print_error(NULL, &err);
    goto out;
  }
  if (a.example) {
    if (import_example(&a, name, date, &p)) goto out;
  } else {
    if (load_logs(&a, in)) goto out;
    dropped = calloc(a.nlogs, sizeof *dropped);
    forced = calloc(a.nlogs, sizeof *forced);
    if (!dropped || !forced) {
      fprintf(stderr, "pcie-tune import: out of memory\n");
      goto out;
    }
    struct imp_options o = {.in_place = a.in_place, .name = name, .date = date, .dropped = dropped,
                             .forced = forced, .without_default = a.without_default};
    if (a.box_here && read_box_here(&here)) goto out;
    if (a.box_here) o.box = &here;
    if (imp_build(&p, in, a.nlogs, &o, &err)) {
      cli_print_error(NULL, &err);
      several_shapes(in, a.nlogs);
      goto out;
    }
    for (size_t i = 0; i < a.nlogs; i++)
      if (forced[i])
        fprintf(stderr,
                "%s: warning: measured %s with %d channels forced (--setting channels, NCCL_MIN_NCHANNELS or "
                "NCCL_MAX_NCHANNELS): NCCL does not clamp the tuner's count there and the plugin never "
                "writes one, so only runs with NCCL's own count are used; left out of the profile\n",
                in[i].log.name, pt_coll_name(profile_coll(&p)), forced[i]);
      else if (dropped[i])
        fprintf(stderr,
                "%s: warning: measured with %d channels, more than the %d of NCCL's default run's "
                "communicator: a default job never runs it; left out of the profile\n",
                in[i].log.name, dropped[i], p.comm_channels);
  }
  rc = pt_profile_write(&p, a.out, a.force ? PT_WRITE_FORCE : 0, &err);
  if (rc) {
    cli_print_error(NULL, &err);
    goto out;
  }
  /* With '-', stdout holds the profile alone. */
  if (!a.quiet && strcmp(a.out, "-")) {
    if (a.example)
      printf("%s: %zu rules from NCCL's example tuner configuration %s\n", a.out, p.nrules, a.example);
    else {
      summary(&p, a.out);
      summary_communicator(&p, a.out, in, a.nlogs);
    }
    char v[3000];
    cli_host_verdict(&p, 0, v, sizeof v);
    printf("%s: %s\n", a.out, v);
  }
  /* Last, what to run: imported LL128 runs were never screened. */
  char ll[600];
  if (!a.quiet && cli_ll128_text(&p, strcmp(a.out, "-") ? a.out : NULL, ll, sizeof ll))
    fprintf(strcmp(a.out, "-") ? stdout : stderr, "%s: %s\n", strcmp(a.out, "-") ? a.out : "pcie-tune import", ll);
  ret = 0;
out:
  for (size_t i = 0; in && i < a.nlogs; i++) nt_log_release(&in[i].log);
  free(in);
  free(dropped);
  free(forced);
  free(name);
  free(a.path);
  free(a.cli);
  for (size_t i = 0; i < a.nowned; i++) free(a.owned[i]);
  free(a.owned);
  pt_profile_release(&p);
  return ret;
}
