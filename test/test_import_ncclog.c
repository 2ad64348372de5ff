/* import/ncclog.c's one table of NCCL line formats against a line of every
 * format, per NCCL tag where it changed (test/data/ncclog/formats.txt), and
 * against the lines of every fixture doctor's suite reads. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/ncclog.h"
#include "support/pt_test.h"

static const char *const kinds[] = {
    [NL_OTHER] = "OTHER",
    [NL_VERSION] = "VERSION",
    [NL_TUNER_ENV] = "TUNER_ENV",
    [NL_TUNER_USING_V] = "TUNER_USING_V",
    [NL_TUNER_USING] = "TUNER_USING",
    [NL_TUNER_NOSYM] = "TUNER_NOSYM",
    [NL_TUNER_LOADED] = "TUNER_LOADED",
    [NL_TUNER_UNSUPPORTED] = "TUNER_UNSUPPORTED",
    [NL_TUNER_NOTFOUND] = "TUNER_NOTFOUND",
    [NL_TUNER_INTERNAL] = "TUNER_INTERNAL",
    [NL_TUNER_MSG] = "TUNER_MSG",
    [NL_COMM] = "COMM",
    [NL_COMM_INIT] = "COMM_INIT",
    [NL_CHANNELS] = "CHANNELS",
    [NL_RING] = "RING",
    [NL_TREES] = "TREES",
    [NL_TRANSPORT] = "TRANSPORT",
    [NL_GRAPH] = "GRAPH",
    [NL_GRAPH_FALLBACK] = "GRAPH_FALLBACK",
    [NL_P2P_DISABLED] = "P2P_DISABLED",
    [NL_ENV] = "ENV",
    [NL_COLL] = "COLL",
    [NL_PT_PROFILE] = "PT_PROFILE",
    [NL_PT_REFUSE] = "PT_REFUSE",
    [NL_PT_TRACE] = "PT_TRACE",
    [NL_PT_MSG] = "PT_MSG",
};

static FILE *open_data(const char *name) {
  char *path = NULL;
  ck_assert(asprintf(&path, "%s/test/data/ncclog/%s", pt_test_srcdir(), name) > 0);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  free(path);
  return f;
}

START_TEST(every_format_of_every_tag) {
  FILE *f = open_data("formats.txt");
  char buf[2048];
  int rows = 0, seen[sizeof kinds / sizeof kinds[0]] = {0};
  ck_assert_int_eq(nl_init(), 0);
  while (fgets(buf, sizeof buf, f)) {
    if (buf[0] == '#') continue;
    buf[strcspn(buf, "\n")] = 0;
    char *tag = strtok(buf, "\t"), *kind = strtok(NULL, "\t"), *fields = strtok(NULL, "\t");
    char *line = strtok(NULL, "");
    ck_assert_msg(tag && kind && fields && line, "formats.txt: a row needs 4 columns");
    struct nl_line l;
    ck_assert_msg(nl_parse(line, &l), "%s: not read as NCCL's: %s", tag, line);
    ck_assert_msg(!strcmp(kinds[l.kind], kind), "%s: '%s' read as %s, not %s", tag, line,
                  kinds[l.kind], kind);
    seen[l.kind] = 1;
    /* Fields: ';' separated; an empty one is a field NCCL's line lacks. */
    int i = 0;
    for (char *p = fields, *end;; p = end + 1, i++) {
      end = strchr(p, ';');
      if (end) *end = 0;
      ck_assert_msg(i < NL_MAX_FIELDS, "%s: too many fields", tag);
      ck_assert_msg(!strcmp(l.field[i], p), "%s: '%s' field %d is '%s', not '%s'", tag, line, i,
                    l.field[i], p);
      if (!end) break;
    }
    rows++;
  }
  fclose(f);
  ck_assert_int_ge(rows, 40);
  /* Every communicator format has its row. */
  for (int k = NL_COMM_INIT; k <= NL_P2P_DISABLED; k++)
    ck_assert_msg(seen[k], "formats.txt lacks a %s row", kinds[k]);
  nl_release();
}
END_TEST

/* Each fixture's NCCL lines are NCCL's: every line with the prefix parses,
 * and the communicator lines are known formats, not NL_OTHER. */
START_TEST(fixtures_are_read_whole) {
  static const char *const logs[] = {
      "vllm-tp8-v2.28-plugin-first.log", "torchrun-dual-socket-v2.30.log",
      "nccltests-g4-fallback-v2.24.log", "containers-net-v2.21.log", "ray-rank-differs-v2.30.log",
  };
  ck_assert_int_eq(nl_init(), 0);
  for (size_t i = 0; i < sizeof logs / sizeof logs[0]; i++) {
    FILE *f = open_data(logs[i]);
    char buf[2048];
    int nccl = 0;
    while (fgets(buf, sizeof buf, f)) {
      buf[strcspn(buf, "\n")] = 0;
      struct nl_line l;
      int is = strstr(buf, " NCCL INFO ") || strstr(buf, " NCCL WARN ");
      ck_assert_int_eq(nl_parse(buf, &l), is);
      if (!is) continue;
      nccl++;
      int known_other = strstr(l.msg, "Connected all") || strstr(l.msg, "NCCL_CUMEM_ENABLE");
      ck_assert_msg(l.kind != NL_OTHER || known_other, "%s: '%s' matched no format", logs[i], buf);
    }
    fclose(f);
    ck_assert_int_gt(nccl, 10);
  }
  nl_release();
}
END_TEST

int main(void) {
  Suite *s = suite_create("import_ncclog");
  TCase *tc = tcase_create("formats");
  tcase_add_test(tc, every_format_of_every_tag);
  tcase_add_test(tc, fixtures_are_read_whole);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
