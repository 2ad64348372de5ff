/* What every command shares, run as a user runs pcie-tune: --help against
 * what the parser accepts (cli/opt.h: every option of the command's table
 * is listed in `pcie-tune CMD --help`, every option listed is accepted),
 * one wording for each kind of usage error, for an existing output file,
 * and for a standard output that cannot be written. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmds.h"
#include "cli/opt.h"
#include "support/pt_test.h"

static const struct cli_cmd *const cmds[] = {&profile_cli, &import_cli,   &show_cli, &check_cli,
                                             &simulate_cli, &doctor_cli, &box_cli,  &worker_cli,
                                             &screen_cli};

static char *dir;
static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* The options --help lists: "  --name", "  -q, --name" at a line's start. */
static size_t listed(const char *help, char names[][64], size_t max) {
  size_t n = 0;
  for (const char *l = help; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *p = l;
    if (strncmp(p, "  -", 3)) continue;
    p += 2;
    if (p[1] != '-' && !strncmp(p + 2, ", --", 4)) p += 4; /* "-q, --quiet" */
    size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
    ck_assert_msg(!strncmp(p, "--", 2) && len > 0, "unreadable option line: %.60s", l);
    ck_assert(n < max);
    snprintf(names[n++], 64, "%.*s", (int)len, p + 2);
  }
  return n;
}

static char *help_of(const char *name) {
  char *out, *err;
  ck_assert_int_eq(pt_test_cli_run(dir, 30, &out, &err, "%s --help", name), 0);
  free(err);
  return out;
}

START_TEST(every_option_in_the_table_is_listed) {
  size_t total = 0;
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    char *help = help_of(cmds[c]->name), names[128][64];
    size_t n = listed(help, names, 128);
    struct cli_state st;
    cli_rows(cmds[c], &st);
    for (size_t k = 0; k < st.nrows; k++) {
      size_t j = 0;
      while (j < n && strcmp(names[j], st.row[k]->name)) j++;
      ck_assert_msg(j < n, "pcie-tune %s accepts --%s, which its --help does not list", cmds[c]->name,
                    st.row[k]->name);
      total++;
    }
    /* And nothing listed that the table lacks (--help itself aside). */
    ck_assert_uint_eq(n, st.nrows + 1);
    free(help);
  }
  ck_assert_uint_ge(total, 60);
}
END_TEST

START_TEST(every_listed_option_is_accepted) {
  size_t total = 0;
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    char *help = help_of(cmds[c]->name), names[128][64];
    size_t n = listed(help, names, 128);
    ck_assert_msg(n >= 2, "pcie-tune %s --help lists %zu options", cmds[c]->name, n);
    for (size_t j = 0; j < n; j++) {
      char *out, *err;
      /* A value that no option's form takes whole, so that a listed
       * option can only fail on its value or on what else is missing. */
      pt_test_cli_run(dir, 30, &out, &err, "%s --%s 1 </dev/null", cmds[c]->name, names[j]);
      ck_assert_msg(!strstr(err, "unknown option"), "pcie-tune %s --help lists --%s, which it refuses:\n%s",
                    cmds[c]->name, names[j], err);
      free(out);
      free(err);
      total++;
    }
    free(help);
  }
  ck_assert_uint_ge(total, 60);
}
END_TEST

/* One wording for each kind of usage error, on every command. */
START_TEST(usage_errors_read_alike) {
  static const struct {
    const char *args, *want;
  } cases[] = {
      {"show --frob", "pcie-tune show: unknown option '--frob'\n(see 'pcie-tune show --help')\n"},
      {"simulate --frob=2", "pcie-tune simulate: unknown option '--frob'\n(see 'pcie-tune simulate --help')\n"},
      {"show --nranks", "pcie-tune show: --nranks needs a value (--nranks N)\n(see 'pcie-tune show --help')\n"},
      {"box --out", "pcie-tune box: --out needs a value (--out FILE)\n(see 'pcie-tune box --help')\n"},
      {"check --nranks 0 p.cfg", "pcie-tune check: bad --nranks '0' (1..1048576)\n(see 'pcie-tune check --help')\n"},
      {"profile --warmup=1001 --out p.cfg",
       "pcie-tune profile: bad --warmup '1001' (0..1000)\n(see 'pcie-tune profile --help')\n"},
      {"profile --buffers malloc --out p.cfg",
       "pcie-tune profile: bad --buffers 'malloc' (cudaMalloc or ncclMemAlloc)\n(see 'pcie-tune profile --help')\n"},
      {"import --out a.cfg --out b.cfg x.txt",
       "pcie-tune import: --out given twice (give it once)\n(see 'pcie-tune import --help')\n"},
      {"doctor -q -q x.log", "pcie-tune doctor: --quiet given twice (give it once)\n(see 'pcie-tune doctor --help')\n"},
      {"show p.cfg --graph --eager",
       "pcie-tune show: --graph and --eager exclude each other (give one)\n(see 'pcie-tune show --help')\n"},
      {"check --json=yes p.cfg", "pcie-tune check: bad --json 'yes' (it takes no value)\n(see 'pcie-tune check --help')\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out, *err;
    ck_assert_int_eq(pt_test_cli_run(dir, 30, &out, &err, "%s", cases[i].args), 2);
    ck_assert_msg(!strcmp(err, cases[i].want), "pcie-tune %s:\n%s\nwant:\n%s", cases[i].args, err, cases[i].want);
    free(out);
    free(err);
  }
}
END_TEST

/* A full disk under standard output is an error on every command, in the
 * shared writer's words (before, show, check, simulate, box NAME and
 * doctor said nothing and exited 0). */
START_TEST(unwritable_stdout_fails_every_command) {
  static const char *const cmds_[] = {
      "show %s/profiles/example-8x-pcie.cfg",
      "show --json %s/profiles/example-8x-pcie.cfg",
      "check %s/profiles/example-8x-pcie.cfg",
      "simulate %s/profiles/example-8x-pcie.cfg --box gen5-8x-p2p",
      "box gen5-8x-p2p",
      "doctor %s/test/data/ncclog/loaded-v2.24.log",
      "import --out - %1$s/test/data/nccltests/synth/ar8-eager-default.txt "
      "%1$s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt",
      "--help",
  };
  for (size_t i = 0; i < sizeof cmds_ / sizeof cmds_[0]; i++) {
    char args[512], *out, *err;
    snprintf(args, sizeof args, cmds_[i], pt_test_srcdir());
    /* The same command to a writable output first: it works there. */
    ck_assert_msg(pt_test_cli_run(dir, 60, &out, &err, "%s", args) != 2, "%s: %s", args, err);
    free(out);
    free(err);
    int rc = pt_test_cli_run(dir, 60, &out, &err, "%s >/dev/full", args);
    ck_assert_msg(rc != 0 && strstr(err, "No space left on device"), "pcie-tune %s >/dev/full: exit %d\n%s", args,
                  rc, err);
    free(out);
    free(err);
  }
}
END_TEST

/* An existing output is refused in one wording, the shared writer's, by
 * every command that writes a file. */
START_TEST(existing_output_reads_alike) {
  char *src = NULL, *out, *err;
  ck_assert(asprintf(&src, "%s", pt_test_srcdir()) > 0);
  free(pt_test_write(dir, "taken", "keep me\n"));
  const char *const cmds_[] = {
      "profile --backend sim --box gen4-4x-shm --out taken",
      "import --out taken %1$s/test/data/nccltests/synth/ar8-eager-default.txt "
      "%1$s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt",
      "show %s/profiles/example-8x-pcie.cfg --svg taken",
      "box --from-topo %s/test/data/nccl-real/rand13-sm86-8x-2cpu-intel.xml --out taken",
  };
  for (size_t i = 0; i < sizeof cmds_ / sizeof cmds_[0]; i++) {
    char args[512];
    snprintf(args, sizeof args, cmds_[i], src);
    ck_assert_int_eq(pt_test_cli_run(dir, 60, &out, &err, "%s", args), 1);
    ck_assert_msg(strstr(err, "taken: already exists; pass --force to overwrite it\n"), "pcie-tune %s:\n%s", args,
                  err);
    free(out);
    free(err);
  }
  char *kept = NULL;
  ck_assert(asprintf(&kept, "%s/taken", dir) > 0);
  FILE *f = fopen(kept, "r");
  char line[32] = "";
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  ck_assert_str_eq(line, "keep me\n");
  free(kept);
  free(src);
}
END_TEST

static char *slurp(const char *rel) {
  char *path = NULL, *buf;
  ck_assert(asprintf(&path, "%s/%s", pt_test_srcdir(), rel) > 0);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  buf = calloc(1, (size_t)n + 1);
  ck_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  free(path);
  return buf;
}

/* docs/cli.md's option table (profile's; the man page is made from the
 * page) against the command's table, which --help prints: the same
 * options, and each default where the row has one. */
START_TEST(docs_option_table_matches_the_options) {
  char *doc = slurp("docs/cli.md");
  char *sec = strstr(doc, "\n## profile\n"), *end = sec ? strstr(sec + 1, "\n## ") : NULL;
  ck_assert_ptr_nonnull(sec);
  if (end) *end = 0;
  struct cli_state st;
  cli_rows(&profile_cli, &st);
  unsigned char documented[CLI_MAX_ROWS] = {0};
  size_t rows = 0;
  for (char *l = strstr(sec, "\n| `-"); l; l = strstr(l + 1, "\n| `-")) {
    char *cell_end = strstr(l + 3, " | "), *def = cell_end ? cell_end + 3 : NULL;
    char *def_end = def ? strstr(def, " | ") : NULL;
    ck_assert_ptr_nonnull(def_end);
    rows++;
    /* Every option the first cell names ("`--graph`, `--eager`, `--both`"). */
    for (char *o = strstr(l, "`--"); o && o < cell_end; o = strstr(o + 1, "`--")) {
      size_t len = strspn(o + 3, "abcdefghijklmnopqrstuvwxyz0123456789-"), k = 0;
      while (k < st.nrows && (strlen(st.row[k]->name) != len || strncmp(st.row[k]->name, o + 3, len))) k++;
      ck_assert_msg(k < st.nrows, "docs/cli.md documents profile --%.*s, which profile does not accept", (int)len,
                    o + 3);
      documented[k] = 1;
      const struct cli_opt *r = st.row[k];
      if (r->def && r->kind != CLI_SET) {
        char want[80];
        snprintf(want, sizeof want, "%s", r->def);
        *def_end = 0;
        ck_assert_msg(strstr(def, want), "docs/cli.md gives --%s the default '%s'; the table says %s", r->name, def,
                      want);
        *def_end = ' ';
      }
    }
  }
  for (size_t k = 0; k < st.nrows; k++)
    ck_assert_msg(documented[k], "profile --%s is not in docs/cli.md's option table", st.row[k]->name);
  ck_assert_uint_ge(rows, 30);
  free(doc);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_options");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, every_option_in_the_table_is_listed);
  tcase_add_test(tc, every_listed_option_is_accepted);
  tcase_add_test(tc, usage_errors_read_alike);
  tcase_add_test(tc, unwritable_stdout_fails_every_command);
  tcase_add_test(tc, existing_output_reads_alike);
  tcase_add_test(tc, docs_option_table_matches_the_options);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
