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

int main(void) {
  Suite *s = suite_create("cli_doctor_jobs");
  TCase *tc = tcase_create("doctor_jobs");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, repetition_order_prefix_crlf_keep_the_verdict);
  tcase_add_test(tc, any_single_line_doubled_keeps_the_verdict);
  tcase_add_test(tc, a_rank_counts_once);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
