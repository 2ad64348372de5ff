/* The docs against the tool: every `sh` block of docs/cli.md runs, line by
 * line, with the exit status it claims; the validation errors
 * docs/profile-format.md quotes are what `check` prints; README.md and
 * docs/ link only to files in the repository. */
#include <check.h>
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/pt_test.h"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = NULL;
  size_t cap = 0, n = 0, k;
  char chunk[4096];
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (n + k + 1 > cap) {
      cap = (n + k + 1) * 2;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
    memcpy(buf + n, chunk, k);
    n += k;
  }
  fclose(f);
  if (!buf) buf = calloc(1, 1);
  buf[n] = 0;
  return buf;
}

static char *src_path(const char *rel) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", pt_test_srcdir(), rel) > 0);
  return p;
}

/* Runs one documented line in dir; "# exit N" at its end is the status
 * it must end with (0 otherwise). */
static void run_line(const char *dir, const char *line, const char *bindir) {
  char *cmd = strdup(line), *out, *err, *shell = NULL;
  int want = 0;
  char *hash = strstr(cmd, "# exit ");
  if (hash) {
    want = atoi(hash + 7);
    *hash = 0;
  }
  ck_assert(asprintf(&shell, "cd '%s' && PATH='%s':\"$PATH\" PCIE_TUNER_SO='%s' %s", dir, bindir,
                     pt_test_so(), cmd) > 0);
  int rc = pt_test_run(shell, &out, &err);
  ck_assert_msg(rc == want, "docs/cli.md: '%s' exited %d, the doc says %d\nstdout:\n%s\nstderr:\n%s",
                line, rc, want, out, err);
  free(out);
  free(err);
  free(shell);
  free(cmd);
}

START_TEST(cli_md_sh_blocks_run) {
  char *path = src_path("docs/cli.md"), *text = slurp(path), *dir = pt_test_tmpdir();
  char *cli = strdup(pt_test_cli());
  const char *bindir = dirname(cli);
  int blocks = 0, lines = 0;
  for (char *p = strstr(text, "\n```sh\n"); p; p = strstr(p, "\n```sh\n")) {
    char *body = p + 7, *end = strstr(body, "\n```");
    ck_assert_ptr_nonnull(end);
    *end = 0;
    blocks++;
    for (char *save = NULL, *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      while (*l == ' ') l++;
      if (!*l || *l == '#') continue;
      run_line(dir, l, bindir);
      lines++;
    }
    p = end + 1;
  }
  /* The page must keep its worked session; an empty extraction proves nothing. */
  ck_assert_int_ge(blocks, 1);
  ck_assert_int_ge(lines, 5);
  free(cli);
  free(text);
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* True when opt occurs in text as a whole option: not as the prefix of a
 * longer one (--warmup inside --warmup-ms does not count). */
static int mentions(const char *text, const char *opt) {
  size_t len = strlen(opt);
  for (const char *p = strstr(text, opt); p; p = strstr(p + 1, opt)) {
    char before = p == text ? ' ' : p[-1], after = p[len];
    if ((before == '-' || (before >= 'a' && before <= 'z')) ||
        after == '-' || (after >= 'a' && after <= 'z') || (after >= '0' && after <= '9'))
      continue;
    return 1;
  }
  return 0;
}

/* Every option a command's --help names is in its "## CMD" section of
 * docs/cli.md, so the manual cannot fall behind the tool again. The
 * commands are those `pcie-tune --help` lists, plus the internal worker. */
START_TEST(cli_md_documents_every_option) {
  char *path = src_path("docs/cli.md"), *doc = slurp(path), *out, *err, *cmd = NULL;
  char cmds[16][32];
  int ncmds = 0, checked = 0;
  ck_assert(asprintf(&cmd, "'%s' --help", pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  free(cmd);
  char *list = strstr(out, "commands:\n");
  ck_assert_ptr_nonnull(list);
  for (char *save = NULL, *l = strtok_r(list + 10, "\n", &save); l && !strncmp(l, "  ", 2);
       l = strtok_r(NULL, "\n", &save))
    if (ncmds < 15 && sscanf(l, " %31s", cmds[ncmds]) == 1) ncmds++;
  snprintf(cmds[ncmds++], sizeof cmds[0], "worker");
  free(out);
  free(err);
  ck_assert_int_ge(ncmds, 8);
  for (int c = 0; c < ncmds; c++) {
    char *head = NULL;
    ck_assert(asprintf(&head, "\n## %s\n", cmds[c]) > 0);
    char *sec = strstr(doc, head);
    ck_assert_msg(sec != NULL, "docs/cli.md has no '## %s' section", cmds[c]);
    char *end = strstr(sec + strlen(head), "\n## ");
    char *section = strndup(sec, end ? (size_t)(end - sec) : strlen(sec));
    ck_assert(asprintf(&cmd, "'%s' %s --help", pt_test_cli(), cmds[c]) > 0);
    ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
    const char *help = out[0] ? out : err;
    int nopts = 0;
    for (const char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
      size_t len = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
      if (len == 2 || (p > help && p[-1] != ' ' && p[-1] != '[' && p[-1] != '|' && p[-1] != '\'' && p[-1] != '\n'))
        continue;
      char opt[64];
      snprintf(opt, sizeof opt, "%.*s", (int)(len < sizeof opt ? len : sizeof opt - 1), p);
      nopts++;
      if (!strcmp(opt, "--help")) continue;
      ck_assert_msg(mentions(section, opt), "pcie-tune %s --help names %s, which docs/cli.md's '## %s' does not",
                    cmds[c], opt, cmds[c]);
    }
    ck_assert_msg(nopts >= 1, "no option found in 'pcie-tune %s --help'", cmds[c]);
    checked += nopts;
    free(out);
    free(err);
    free(cmd);
    free(section);
    free(head);
  }
  ck_assert_int_ge(checked, 60);
  free(doc);
  free(path);
}
END_TEST

/* Every pcie-tune line of README.md's sh blocks (the quick start and the
 * sections a new user copies from) names a real command and only options
 * its --help names: a copied line must not end in "unknown option". */
START_TEST(readme_commands_use_real_options) {
  char *path = src_path("README.md"), *text = slurp(path);
  int lines = 0;
  for (char *p = strstr(text, "\n```sh\n"); p; p = strstr(p, "\n```sh\n")) {
    char *body = p + 7, *end = strstr(body, "\n```");
    ck_assert_ptr_nonnull(end);
    *end = 0;
    for (char *save = NULL, *l = strtok_r(body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      char *at = strstr(l, "pcie-tune "), *hash = strchr(l, '#'), sub[32], *out, *err, *cmd = NULL;
      if (!at || (hash && hash < at) || sscanf(at + 10, "%31s", sub) != 1) continue;
      if (hash) *hash = 0;
      ck_assert(asprintf(&cmd, "'%s' %s --help", pt_test_cli(), sub) > 0);
      ck_assert_msg(pt_test_run(cmd, &out, &err) == 0, "README.md: '%s': no command '%s'", l, sub);
      for (const char *o = strstr(at, " --"); o; o = strstr(o + 1, " --")) {
        char opt[64];
        snprintf(opt, sizeof opt, "%.*s", (int)(2 + strspn(o + 3, "abcdefghijklmnopqrstuvwxyz0123456789-")), o + 1);
        ck_assert_msg(mentions(out, opt), "README.md: '%s': pcie-tune %s has no option %s", l, sub, opt);
      }
      lines++;
      free(out);
      free(err);
      free(cmd);
    }
    p = end + 1;
  }
  ck_assert_int_ge(lines, 8);
  free(text);
  free(path);
}
END_TEST

START_TEST(profile_format_quotes_real_errors) {
  static const char head[] =
      "version = 1;\nname = \"x\";\nprovenance = { tool = \"t\"; backend = \"b\"; nccl_version = \"v\"; "
      "date = \"d\"; mode = \"graph\"; };\n";
  static const struct {
    const char *name, *body;
  } files[] = {
      {"sizes.cfg", "allreduce = { graph = { sizes = [ 8L, 4L ];\n candidates = ( { algo = \"ring\"; "
                    "proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); } ); }; };\n"},
      {"proto.cfg", "allreduce = { graph = { sizes = [ 4L, 8L ];\n candidates = ( { algo = \"ring\"; "
                    "proto = \"ll256\"; channels = 1; latency = ( 1.0, 2.0 ); } ); }; };\n"},
      {"latency.cfg", "allreduce = { graph = { sizes = [ 4L, 8L ];\n candidates = ( { algo = \"ring\"; "
                      "proto = \"ll\"; channels = 1; latency = ( 1.0 ); } ); }; };\n"},
  };
  char *doc_path = src_path("docs/profile-format.md"), *doc = slurp(doc_path), *dir = pt_test_tmpdir();
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char *text = NULL, *cmd = NULL, *out, *err;
    ck_assert(asprintf(&text, "%s%s", head, files[i].body) > 0);
    free(pt_test_write(dir, files[i].name, text));
    ck_assert(asprintf(&cmd, "cd '%s' && '%s' check %s", dir, pt_test_cli(), files[i].name) > 0);
    ck_assert_int_eq(pt_test_run(cmd, &out, &err), 1);
    ck_assert_msg(err[0] && strstr(doc, err), "profile-format.md does not quote what check prints: %s", err);
    free(out);
    free(err);
    free(cmd);
    free(text);
  }
  free(doc);
  free(doc_path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Every relative link target in one Markdown file exists. */
static int check_links(const char *rel) {
  char *path = src_path(rel), *text = slurp(path), *copy = strdup(path);
  const char *base = dirname(copy);
  int n = 0;
  ck_assert_msg(!strstr(text, "../shared") && !strstr(text, "shared/data"),
                "%s points outside the repository (../shared)", rel);
  for (char *p = strstr(text, "]("); p; p = strstr(p + 2, "](")) {
    char *t = p + 2, *end = strchr(t, ')');
    if (!end) break;
    char target[512];
    size_t len = (size_t)(end - t);
    if (len == 0 || len >= sizeof target) continue;
    memcpy(target, t, len);
    target[len] = 0;
    char *anchor = strchr(target, '#');
    if (anchor) *anchor = 0;
    if (!target[0] || strstr(target, "://") || !strncmp(target, "mailto:", 7)) continue;
    char *full = NULL;
    struct stat st;
    ck_assert(asprintf(&full, "%s/%s", base, target) > 0);
    ck_assert_msg(stat(full, &st) == 0, "%s links to %s, which is not in the repository", rel, target);
    free(full);
    n++;
  }
  free(copy);
  free(text);
  free(path);
  return n;
}

START_TEST(links_stay_in_the_repository) {
  int links = check_links("README.md");
  char *docs = src_path("docs");
  DIR *d = opendir(docs);
  ck_assert_ptr_nonnull(d);
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".md")) continue;
    char *rel = NULL;
    ck_assert(asprintf(&rel, "docs/%s", e->d_name) > 0);
    links += check_links(rel);
    free(rel);
  }
  closedir(d);
  free(docs);
  ck_assert_int_ge(links, 10);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_docs");
  TCase *tc = tcase_create("docs");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, cli_md_sh_blocks_run);
  tcase_add_test(tc, cli_md_documents_every_option);
  tcase_add_test(tc, profile_format_quotes_real_errors);
  tcase_add_test(tc, links_stay_in_the_repository);
  tcase_add_test(tc, readme_commands_use_real_options);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
