/* pcie-tune doctor over inputs that hold more than one run, or one run's
 * lines repeated, reordered, prefixed or with CRLF ends: a rank counts once
 * (issue 30 §2), runs are told apart into jobs (issue 27 §1), and the exit
 * status is the worst current job's. Run as a user runs it, over the
 * fixtures of test/data/ncclog (README.md there says where they come from). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "support/pt_json.h"
#include "support/pt_test.h"

struct text {
  char **line;
  size_t n;
};

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static void add_file(struct text *t, const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  char *buf = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&buf, &cap, f)) >= 0) {
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    t->line = realloc(t->line, (t->n + 1) * sizeof *t->line);
    ck_assert(t->line != NULL);
    t->line[t->n++] = strdup(buf);
  }
  free(buf);
  fclose(f);
}

/* A fixture (a file, or a directory of per-process files) as one list. */
static struct text fixture(const char *name) {
  struct text t = {NULL, 0};
  char *path = pt_test_path(pt_test_srcdir(), "test/data/ncclog");
  char *full = pt_test_path(path, name);
  struct stat st;
  ck_assert_int_eq(stat(full, &st), 0);
  if (S_ISDIR(st.st_mode)) {
    struct dirent **ents;
    int n = scandir(full, &ents, NULL, alphasort);
    ck_assert_int_ge(n, 0);
    for (int i = 0; i < n; i++) {
      if (ents[i]->d_name[0] != '.') {
        char *f = pt_test_path(full, ents[i]->d_name);
        add_file(&t, f);
        free(f);
      }
      free(ents[i]);
    }
    free(ents);
  } else {
    add_file(&t, full);
  }
  free(full);
  free(path);
  return t;
}

static void free_text(struct text *t) {
  for (size_t i = 0; i < t->n; i++) free(t->line[i]);
  free(t->line);
}

enum variant { V_SAME, V_DOUBLED, V_TWICE, V_REVERSED, V_SHUFFLED, V_PREFIX, V_CRLF, V_ONE_DOUBLED };

/* Writes a variant of t to dir/name: arg is the line doubled for V_ONE_DOUBLED. */
static void write_variant(const char *dir, const char *name, const struct text *t, enum variant v,
                          size_t arg) {
  char *path = pt_test_path(dir, name);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  size_t *order = malloc((t->n + 1) * sizeof *order);
  ck_assert(order != NULL);
  for (size_t i = 0; i < t->n; i++) order[i] = v == V_REVERSED ? t->n - 1 - i : i;
  if (v == V_SHUFFLED) {
    unsigned long long s = 0x9e3779b97f4a7c15ull; /* a fixed permutation */
    for (size_t i = t->n; i > 1; i--) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      size_t j = (size_t)(s >> 33) % i, x = order[i - 1];
      order[i - 1] = order[j];
      order[j] = x;
    }
  }
  for (int pass = 0; pass < (v == V_TWICE ? 2 : 1); pass++)
    for (size_t i = 0; i < t->n; i++) {
      const char *l = t->line[order[i]];
      int reps = v == V_DOUBLED || (v == V_ONE_DOUBLED && i == arg) ? 2 : 1;
      for (int r = 0; r < reps; r++)
        fprintf(f, "%s%s%s", v == V_PREFIX ? "(VllmWorker rank=0 pid=1) " : "", l,
                v == V_CRLF ? "\r\n" : "\n");
    }
  free(order);
  ck_assert_int_eq(fclose(f), 0);
  free(path);
}

/* The exit status and the last verdict line of "doctor FILE". */
static int verdict_of(const char *dir, const char *file, char *verdict, size_t len) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 20, &out, &err, "doctor %s", file);
  const char *v = NULL;
  for (const char *c = out; (c = strstr(c, "verdict: ")); c++)
    if (c == out || c[-1] == '\n') v = c;
  ck_assert_msg(v != NULL, "no verdict for %s:\n%s%s", file, out, err);
  size_t n = strcspn(v, "\n");
  snprintf(verdict, len, "%.*s", (int)n, v);
  free(out);
  free(err);
  return rc;
}

static const char *fixtures[] = {"v2.30-8rank",
                                 "vllm-ray-tp2-v2.28-trace.log",
                                 "loaded-v2.24.log",
                                 "not-found-v2.30.log",
                                 "not-found-abs-v2.28.log",
                                 "dlopen-error-v2.30.log",
                                 "wrong-abi-v2.30.log",
                                 "wrong-abi-v2.24.log",
                                 "no-profile-fits-v2.30.log",
                                 "ambiguous-v2.30.log",
                                 "ranks-differ-v2.30.log",
                                 "ray-worker-without-env-v2.28.log",
                                 "ray-rank-differs-v2.30.log",
                                 "reworded-v2.30.log",
                                 "vllm-tp8-v2.28-plugin-first.log",
                                 "torchrun-dual-socket-v2.30.log",
                                 "nccltests-g4-fallback-v2.24.log",
                                 "containers-net-v2.21.log",
                                 "two-comms-interleaved-v2.30.log"};

/* Metamorphic: repeating, reordering, prefixing or CRLF-ending the lines of
 * one run does not change its verdict or exit status. */
START_TEST(repetition_order_prefix_crlf_keep_the_verdict) {
  char *dir = pt_test_tmpdir();
  static const enum variant vs[] = {V_DOUBLED, V_TWICE, V_REVERSED, V_SHUFFLED, V_PREFIX, V_CRLF};
  static const char *vname[] = {"every line doubled", "the log twice", "reversed", "shuffled",
                                "an engine prefix", "CRLF"};
  for (size_t f = 0; f < sizeof fixtures / sizeof *fixtures; f++) {
    struct text t = fixture(fixtures[f]);
    char want[512], got[512];
    write_variant(dir, "base.log", &t, V_SAME, 0);
    int rc = verdict_of(dir, "base.log", want, sizeof want);
    for (size_t v = 0; v < sizeof vs / sizeof *vs; v++) {
      write_variant(dir, "variant.log", &t, vs[v], 0);
      int rc2 = verdict_of(dir, "variant.log", got, sizeof got);
      ck_assert_msg(rc == rc2 && !strcmp(want, got), "%s, %s: exit %d '%s', was %d '%s'",
                    fixtures[f], vname[v], rc2, got, rc, want);
    }
    free_text(&t);
  }
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Each single line of the vLLM TP8 log doubled in turn (16 of its lines
 * flipped WORKING into MISMATCH). */
START_TEST(any_single_line_doubled_keeps_the_verdict) {
  char *dir = pt_test_tmpdir();
  struct text t = fixture("vllm-tp8-v2.28-plugin-first.log");
  char got[512];
  for (size_t i = 0; i < t.n; i++) {
    write_variant(dir, "variant.log", &t, V_ONE_DOUBLED, i);
    int rc = verdict_of(dir, "variant.log", got, sizeof got);
    ck_assert_msg(rc == 0 && !strcmp(got, "verdict: WORKING"), "line %zu doubled: exit %d '%s'",
                  i + 1, rc, got);
  }
  free_text(&t);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A duplicated comm line does not make an 8-rank communicator show 9 or 16
 * ranks, nor a rank with "no word from the plugin". */
START_TEST(a_rank_counts_once) {
  char *dir = pt_test_tmpdir();
  struct text t = fixture("v2.30-8rank");
  write_variant(dir, "all.log", &t, V_DOUBLED, 0);
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 20, &out, &err, "doctor all.log");
  ck_assert_int_eq(rc, 0);
  has(out, "communicator 7d3c19a2e4b05f61: nRanks 8 nNodes 1, 8 ranks in the log");
  has(out, "ranks 0-7: profile 'gen5-8x' hash 9f2c4e1a07b3d865");
  ck_assert_ptr_null(strstr(out, "no word from the plugin"));
  ck_assert_str_eq(err, "");
  free(out);
  free(err);
  free_text(&t);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Runs a shell script in a fresh directory holding the fixtures' earlier
 * run (./old: today's 8-rank run with the plugin not found, other pids and
 * commId, host HOST) and today's (./new), then "pcie-tune doctor ARGS". */
static int two_runs(const char *host, const char *script, char **out, char **err, const char *args) {
  char *dir = pt_test_tmpdir(), *cmd = NULL;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && mkdir old new && for f in '%s'/test/data/ncclog/v2.30-8rank/*; do "
                     "b=$(basename $f); cp $f new/$b; "
                     "sed -e 's/^gpu-a:310/%s:300/' -e 's/7d3c19a2e4b05f61/11aa22bb33cc44dd/g' "
                     "-e 's/set by environment to .*/set by environment to pcie/' "
                     "-e 's|TUNER/Plugin: Using PcieTuner (v6)|TUNER/Plugin: Could not find: pcie "
                     "libnccl-tuner-pcie.so|' -e '/Successfully loaded/d' -e '/PcieTuner:/d' "
                     "$f > old/$(echo $b | sed 's/310/300/'); done && %s && '%s' doctor %s",
                     dir, pt_test_srcdir(), host, script, pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  pt_test_rmtree(dir);
  free(dir);
  return rc;
}

/* issue 27 §1: an earlier run's files (plugin not found) beside today's
 * working run: today's decides, the earlier one is reported as such. */
START_TEST(an_earlier_run_does_not_fail_a_fixed_job) {
  char *out, *err;
  int rc = two_runs("gpu-a", "touch -d '1 hour ago' old/* && mv old/* new/* .", &out, &err,
                    "nccl.*");
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "2 jobs in the input");
  has(out, "=== job 1 of 2: 8 processes on gpu-a, pids 30000-30007; an earlier run on GPUs that job 2 "
           "used after it: not counted in the exit status ===");
  has(out, "=== job 2 of 2 (the most recent): 8 processes on gpu-a, pids 31000-31007 ===");
  has(out, "job 1 verdict: NOT LOADED: NCCL ran with its own tuning (superseded: not counted)");
  has(out, "job 2 verdict: WORKING");
  has(out, "communicator 7d3c19a2e4b05f61: nRanks 8 nNodes 1, 8 ranks in the log");
  has(out, "communicator 11aa22bb33cc44dd: nRanks 8 nNodes 1, 8 ranks in the log");
  has(out, "  communicator verdict: TUNED");
  has(out, "  communicator verdict: LEFT TO NCCL");
  has(out, "verdict: WORKING (job 2 of 2, the worst current one; 1 earlier run on the same GPUs "
           "not counted)");
  ck_assert_ptr_null(strstr(err, "loaded in 8 of 16"));
  free(out);
  free(err);
  /* The other way round: the broken run is today's, and it decides. */
  rc = two_runs("gpu-a", "touch -d '1 hour ago' new/* && mv old/* new/* .", &out, &err, "nccl.*");
  ck_assert_msg(rc == 3, "exit %d:\n%s%s", rc, out, err);
  has(out, "verdict: NOT LOADED: NCCL ran with its own tuning (job 2 of 2");
  free(out);
  free(err);
}
END_TEST

/* Two jobs' outputs concatenated in one file: the order in the file. */
START_TEST(concatenated_runs_in_one_file) {
  char *out, *err;
  int rc = two_runs("gpu-a", "cat old/* new/* > all.log", &out, &err, "all.log");
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "job 1 verdict: NOT LOADED");
  free(out);
  free(err);
  rc = two_runs("gpu-a", "cat new/* old/* > all.log", &out, &err, "all.log");
  ck_assert_msg(rc == 3, "exit %d:\n%s%s", rc, out, err);
  has(out, "job 1 verdict: WORKING (superseded: not counted)");
  free(out);
  free(err);
  /* -q: the one verdict line. */
  rc = two_runs("gpu-a", "cat old/* new/* > all.log", &out, &err, "-q all.log");
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(out, "verdict: WORKING (job 2 of 2, the worst current one; 1 earlier run on "
                        "the same GPUs not counted)\n");
  free(out);
  free(err);
}
END_TEST

/* Two jobs on different hosts at the same time: both count, the worst
 * decides, and each error says which job it is about. */
START_TEST(concurrent_jobs_exit_with_the_worst) {
  char *out, *err;
  int rc = two_runs("gpu-b", "touch -d '1 hour ago' old/* && mv old/* new/* .", &out, &err,
                    "nccl.*");
  ck_assert_msg(rc == 3, "exit %d:\n%s%s", rc, out, err);
  ck_assert_ptr_null(strstr(out, "not counted"));
  has(out, "verdict: NOT LOADED: NCCL ran with its own tuning (job 1 of 2, the worst current one)");
  free(out);
  free(err);
  /* A rank of today's job with another profile: a mismatch, named by job. */
  rc = two_runs("gpu-b",
                "sed -i 's/hash 9f2c4e1a07b3d865/hash 0000000000000001/' new/nccl.gpu-a.31004 && "
                "mv old/* new/* .",
                &out, &err, "nccl.*");
  ck_assert_msg(rc == 5, "exit %d:\n%s%s", rc, out, err);
  has(err, "pcie-tune doctor: job 2: ERROR: the ranks of communicator 7d3c19a2e4b05f61");
  has(out, "  communicator verdict: RANKS DISAGREE");
  free(out);
  free(err);
}
END_TEST

/* issue 30 §5: the plugin loaded in only some processes, with no
 * communicator in the log to compare them by: still a mismatch (5). */
START_TEST(loaded_in_some_processes_without_a_shared_communicator) {
  char *dir = pt_test_tmpdir(), *out, *err;
  char *log = pt_test_write(
      dir, "some.log",
      "box9:100:100 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
      "box9:100:100 [0] NCCL INFO NCCL_TUNER_PLUGIN set by environment to "
      "/opt/pcie-tuner/lib/libnccl-tuner-pcie.so\n"
      "box9:100:100 [0] NCCL INFO TUNER/Plugin: Using PcieTuner (v6)\n"
      "box9:100:100 [0] NCCL INFO Successfully loaded external tuner plugin "
      "/opt/pcie-tuner/lib/libnccl-tuner-pcie.so\n"
      "box9:101:101 [1] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
      "box9:101:101 [1] NCCL INFO NCCL_TUNER_PLUGIN set by environment to pcie\n"
      "box9:101:101 [1] NCCL INFO TUNER/Plugin: Could not find: pcie libnccl-tuner-pcie.so\n");
  int rc = pt_test_cli_run(dir, 20, &out, &err, "doctor some.log");
  ck_assert_msg(rc == 5, "exit %d:\n%s%s", rc, out, err);
  has(err, "ERROR: the plugin is loaded in 1 of 2 processes");
  has(out, "verdict: MISMATCH");
  free(out);
  free(err);
  free(log);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* issue 30 §5: mismatched and degraded is a mismatch under --strict (5), not
 * degraded (6). */
START_TEST(mismatch_wins_over_degraded_under_strict) {
  char *dir = pt_test_tmpdir(), *out, *err;
  int rc = pt_test_cli_run(dir, 20, &out, &err,
                           "doctor --strict '%s/test/data/ncclog/torchrun-dual-socket-v2.30.log'",
                           pt_test_srcdir());
  ck_assert_int_eq(rc, 6); /* degraded alone */
  free(out);
  free(err);
  char *cmd = NULL;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && sed '/5202:5202.*PcieTuner/s/hash 51c0ffee00d4a7b2/hash "
                     "0123456789abcdef/' '%s/test/data/ncclog/torchrun-dual-socket-v2.30.log' > "
                     "mixed.log && '%s' doctor --strict mixed.log",
                     dir, pt_test_srcdir(), pt_test_cli()) > 0);
  rc = pt_test_run(cmd, &out, &err);
  ck_assert_msg(rc == 5, "exit %d:\n%s%s", rc, out, err);
  has(out, "verdict: MISMATCH: ranks disagree (see above); 1 communicator DEGRADED");
  free(cmd);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

static const char *jstr(const struct pt_json *doc, const char *path) {
  const struct pt_json *j = pt_json_at(doc, path);
  ck_assert_msg(j && j->type == PT_JSON_STR, "%s: not a string", path);
  return j->str;
}

static double jnum(const struct pt_json *doc, const char *path) {
  const struct pt_json *j = pt_json_at(doc, path);
  ck_assert_msg(j && (j->type == PT_JSON_NUM || j->type == PT_JSON_BOOL), "%s: not a number", path);
  return j->num;
}

/* issue 27 §5: the same two runs as one JSON document, read by a parser. */
START_TEST(json_document_for_two_runs) {
  char *out, *err, msg[128];
  int rc = two_runs("gpu-a", "touch -d '1 hour ago' old/* && mv old/* new/* .", &out, &err,
                    "--json nccl.*");
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  struct pt_json *doc = pt_json_parse(out, msg, sizeof msg);
  ck_assert_msg(doc != NULL, "%s in:\n%s", msg, out);
  ck_assert_str_eq(jstr(doc, "schema"), "pcie-tune-doctor/1");
  ck_assert_int_eq((int)jnum(doc, "exit"), 0);
  ck_assert_str_eq(jstr(doc, "verdict"), "working");
  ck_assert_int_eq((int)jnum(doc, "worst_job"), 2);
  ck_assert_uint_eq(pt_json_at(doc, "jobs")->n, 2);
  ck_assert_str_eq(jstr(doc, "jobs.0.verdict"), "not_loaded");
  ck_assert_int_eq((int)jnum(doc, "jobs.0.counted"), 0);
  ck_assert_int_eq((int)jnum(doc, "jobs.0.superseded_by"), 2);
  ck_assert_int_eq((int)jnum(doc, "jobs.0.plugin_loaded_in"), 0);
  ck_assert_str_eq(jstr(doc, "jobs.0.communicators.0.verdict"), "left_to_nccl");
  ck_assert_int_eq(pt_json_at(doc, "jobs.0.communicators.0.profile")->type, PT_JSON_NULL);
  ck_assert_str_eq(jstr(doc, "jobs.1.verdict"), "working");
  ck_assert_int_eq((int)jnum(doc, "jobs.1.most_recent"), 1);
  ck_assert_str_eq(jstr(doc, "jobs.1.communicators.0.comm_id"), "7d3c19a2e4b05f61");
  ck_assert_int_eq((int)jnum(doc, "jobs.1.communicators.0.ranks_in_log"), 8);
  ck_assert_str_eq(jstr(doc, "jobs.1.communicators.0.profile.hash"), "9f2c4e1a07b3d865");
  ck_assert_int_eq(pt_json_at(doc, "host")->type, PT_JSON_NULL);
  ck_assert_uint_eq(pt_json_at(doc, "workload")->n, 0); /* no COLL lines */
  ck_assert_ptr_null(strstr(out, "verdict: WORKING")); /* no text in the document */
  pt_json_free(doc);
  free(out);
  free(err);
  /* Findings with quotes in their evidence stay one valid document. */
  rc = two_runs("gpu-b",
                "sed -i 's/NCCL version 2.30.7+cuda13.0/NCCL version 2.26.2+cuda12.8/' new/* && "
                "mv old/* new/* .",
                &out, &err, "--json --strict nccl.*");
  ck_assert_int_eq(rc, 3);
  doc = pt_json_parse(out, msg, sizeof msg);
  ck_assert_msg(doc != NULL, "%s in:\n%s", msg, out);
  ck_assert_int_eq((int)jnum(doc, "exit"), 3);
  ck_assert_str_eq(jstr(doc, "jobs.1.findings.0.id"), "nccl-2.26.2-ima-512k");
  ck_assert_str_eq(jstr(doc, "jobs.1.findings.0.severity"), "warn");
  ck_assert(strstr(jstr(doc, "jobs.1.findings.0.evidence"), "\"NCCL version 2.26.2+cuda12.8\""));
  ck_assert_str_eq(jstr(doc, "jobs.1.findings.0.source"), "NVIDIA/nccl#2418 (closed 2026-09)");
  pt_json_free(doc);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor_jobs");
  TCase *tc = tcase_create("doctor_jobs");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, repetition_order_prefix_crlf_keep_the_verdict);
  tcase_add_test(tc, any_single_line_doubled_keeps_the_verdict);
  tcase_add_test(tc, a_rank_counts_once);
  tcase_add_test(tc, an_earlier_run_does_not_fail_a_fixed_job);
  tcase_add_test(tc, concatenated_runs_in_one_file);
  tcase_add_test(tc, concurrent_jobs_exit_with_the_worst);
  tcase_add_test(tc, loaded_in_some_processes_without_a_shared_communicator);
  tcase_add_test(tc, mismatch_wins_over_degraded_under_strict);
  tcase_add_test(tc, json_document_for_two_runs);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
