/* The profile format: loading, every validation error with its file:line,
 * rendering round trips and the atomic, no-clobber writer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/profile.h"
#include "pcie/table.h"
#include "support/pt_test.h"

#define HEAD                                                                              \
  "version = 1;\nname = \"t\";\n"                                                        \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = " \
  "\"2026-11-30\"; mode = \"graph\"; };\n"

static const char *valid =
    HEAD "allreduce = { graph = {\n"          /* line 4 */
    "  sizes = [ 1024L, 65536L, 1048576L ];\n" /* line 5 */
    "  nccl_default = ( 30.0, 50.0, 200.0 );\n"
    "  candidates = (\n"
    "    { algo = \"ring\"; proto = \"LL\"; channels = 4; latency = ( 20.0, 30.0, 400.0 ); },\n"
    "    { algo = \"Ring\"; proto = \"simple\"; channels = 2; latency = ( 60, \"-\", 150.5 ); }\n"
    "  );\n"
    "}; };\n";

START_TEST(loads_valid_profile) {
  struct pt_profile p;
  struct pt_error_rec e;
  ck_assert_int_eq(pt_profile_load_string(&p, valid, "v.cfg", &e), 0);
  const struct pt_series *s = p.series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_null(p.series[PT_ALLREDUCE][PT_MODE_EAGER]);
  ck_assert_uint_eq(s->nsizes, 3);
  ck_assert_uint_eq(s->sizes[2], 1048576);
  ck_assert_uint_eq(s->ncand, 2);
  ck_assert_int_eq(s->cand[0].proto, 0); /* "LL" in any case */
  ck_assert_int_eq(s->cand[1].algo, 1);
  ck_assert_int_eq(s->cand[1].points[0].state, PT_PT_OK);
  ck_assert_double_eq(s->cand[1].points[0].lat_us, 60.0); /* an int is a latency too */
  ck_assert_int_eq(s->cand[1].points[1].state, PT_PT_MISSING);
  ck_assert_double_eq_tol(s->nccl_default[2].lat_us, 200.0, 1e-9);
  ck_assert_int_eq(p.match_nranks, 0);
  ck_assert(p.hash != 0);
  pt_profile_release(&p);
}
END_TEST

struct bad_case {
  const char *text;
  int line;
  const char *msg;
};

#define AR(body) HEAD "allreduce = { graph = {\n" body "\n}; };\n"
#define CAND(x) "  sizes = [ 1024L, 2048L ];\n  candidates = (\n" x "\n  );"

/* A valid rule, so that only the line before it can be wrong. */
#define RULE                                                                                   \
  "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 100L; algo = \"ring\"; " \
  "proto = \"ll\"; } );\n"

static const struct bad_case bad[] = {
    {"version = 2;\nname = \"x\";\n", 1, "unsupported profile version 2"},
    {"name = \"x\";\n", 0, "missing 'version'"},
    {"", 0, "the file is empty (no settings)"},
    {"# only a comment\n\n", 0, "the file is empty (no settings)"},
    {HEAD "bogus = 1;\n", 4, "unknown key 'bogus' in the profile"},
    {"version = 1;\nname = 5;\n", 2, "name must be a string"},
    {"version = 1;\nname = \"x\";\n", 0, "missing 'provenance'"},
    {"version = 1;\nname = \"x\";\nprovenance = { tool = \"t\"; };\n", 3, "missing 'backend'"},
    {HEAD, 0, "no measurements and no rules"},
    {HEAD "match = { nranks = 0; };\n", 4, "nranks must be in 1..1048576, not 0"},
    {HEAD "match = { gpus = 8; };\n", 4, "unknown key 'gpus' in match"},
    {AR("  sizes = [ 1024L, 1024L ];\n  candidates = ( { algo = \"ring\"; proto = \"ll\"; "
        "channels = 1; latency = ( 1.0, 2.0 ); } );"),
     5, "sizes must be strictly ascending (1024 after 1024"},
    {AR("  sizes = [ 4096L, 1024L ];\n  candidates = ( { algo = \"ring\"; proto = \"ll\"; "
        "channels = 1; latency = ( 1.0, 2.0 ); } );"),
     5, "strictly ascending"},
    {AR("  sizes = [ 0L, 1024L ];"), 5, "sizes[0] must be at least 1 byte"},
    {AR("  sizes = ( 1024L, \"x\" );"), 5, "must be an integer, not a string"},
    {AR("  sizes = [ ];"), 5, "sizes must not be empty"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, -2.0 ); }")),
     7, "latency[1] must be a finite number >= 0, not -2"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0 ); }")), 7,
     "latency has 1 values but sizes has 2"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, \"bad\" ); }")),
     7, "unknown value 'bad'"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll256\"; channels = 1; latency = ( 1.0, 2.0 ); }")),
     7, "unknown proto 'll256' (expected ll, ll128 or simple)"},
    {AR(CAND("    { algo = \"star\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); }")), 7,
     "unknown algo 'star'"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 65; latency = ( 1.0, 2.0 ); }")), 7,
     "channels must be in 0..64, not 65"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = -1; latency = ( 1.0, 2.0 ); }")), 7,
     "channels must be in 0..64, not -1"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = \"4\"; latency = ( 1.0, 2.0 ); }")),
     7, "channels must be an integer, not a string"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); "
             "colour = 1; }")),
     7, "unknown key 'colour' in candidate"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); },\n"
             "    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 3.0, 4.0 ); }")),
     8, "duplicate candidate ring/ll/1 (first at line 7)"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; latency = ( 1.0, 2.0 ); "
             "spread = ( 0.1 ); }")),
     7, "spread has 1 values but sizes has 2"},
    {AR(CAND("    { algo = \"ring\"; proto = \"ll\"; channels = 1; }")), 7, "missing 'latency'"},
    {AR("  sizes = [ 1024L ];\n  candidates = ( );"), 6, "candidates must not be empty"},
    {AR("  sizes = [ 1024L ];\n  nccl_default = ( 1.0, 2.0 );\n  candidates = ( );"), 6,
     "nccl_default has 2 values but sizes has 1"},
    {HEAD "allreduce = { warm = { }; };\n", 4, "unknown key 'warm' in allreduce"},
    {HEAD "allreduce = { };\n", 4, "neither 'graph' nor 'eager'"},
    {HEAD "rules = ( { collective = \"allreduce\"; min_bytes = 10L; max_bytes = 5L; algo = "
          "\"ring\"; proto = \"ll\"; channels = 2; } );\n",
     4, "min_bytes 10 is above max_bytes 5"},
    {HEAD "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 100L; algo = "
          "\"ring\"; proto = \"ll\"; channels = 2; },\n"
          "{ collective = \"allreduce\"; min_bytes = 50L; max_bytes = 200L; algo = "
          "\"ring\"; proto = \"simple\"; channels = 2; },\n"
          "{ collective = \"allreduce\"; min_bytes = 50L; max_bytes = 200L; algo = "
          "\"tree\"; proto = \"simple\"; },\n"
          "{ collective = \"allreduce\"; min_bytes = 60L; max_bytes = 70L; algo = "
          "\"tree\"; proto = \"ll\"; mode = \"graph\"; },\n"
          "{ collective = \"allreduce\"; min_bytes = 0L; max_bytes = 1000L; algo = "
          "\"ring\"; proto = \"ll128\"; nranks = 8; } );\n",
     8, "more than 4 allreduce rules can apply to the same size"},
    {HEAD "rules = ( { collective = \"alltoall\"; min_bytes = 0L; max_bytes = 100L; algo = "
          "\"ring\"; proto = \"ll\"; channels = 2; } );\n",
     4, "unknown collective 'alltoall'"},
    {HEAD "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 100L; algo = "
          "\"ring\"; proto = \"ll\"; channels = 2; mode = \"warm\"; } );\n",
     4, "unknown mode 'warm'"},
    {HEAD "allreduce = { graph = { sizes = [ 1L ] \n", 5, "syntax error"},
    /* Issue 30 §5: margin validation and pipe-op bounds, each with its line. */
    {HEAD "margin = 1;\n" RULE, 4, "margin must be in [0, 1) (0.02 = 2 %), not 1"},
    {HEAD "margin = -0.1;\n" RULE, 4, "margin must be in [0, 1) (0.02 = 2 %), not -0.1"},
    {HEAD "margin = \"0.05\";\n" RULE, 4, "margin must be a number, not a string"},
    {HEAD "rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 100L; algo = "
          "\"ring\"; proto = \"ll\"; min_pipe_ops = 5; max_pipe_ops = 3; } );\n",
     4, "min_pipe_ops 5 is above max_pipe_ops 3"},
};

START_TEST(rejects_bad_profile) {
  const struct bad_case *c = &bad[_i];
  struct pt_profile p;
  struct pt_error_rec e;
  char line[2048];
  int rc = pt_profile_load_string(&p, c->text, "bad.cfg", &e);
  pt_error_format(&e, line, sizeof line);
  ck_assert_msg(rc != 0, "case %d loaded but should fail with '%s'", _i, c->msg);
  ck_assert_msg(strstr(e.msg, c->msg), "case %d: expected '%s' in '%s'", _i, c->msg, line);
  ck_assert_msg(e.line == c->line, "case %d: expected line %d, got '%s'", _i, c->line, line);
  ck_assert_str_eq(e.file, "bad.cfg");
  ck_assert_ptr_null(p.name); /* nothing half-loaded is left behind */
}
END_TEST

START_TEST(round_trip_keeps_everything) {
  struct pt_profile p, q;
  struct pt_error_rec e;
  char *text = NULL, *text2 = NULL;
  const char *full =
      HEAD "match = { nranks = 8; };\n"
           "allreduce = { eager = { sizes = [ 8L, 4294967296L ];\n"
           "  candidates = ( { algo = \"tree\"; proto = \"ll128\"; channels = 3; chunk = 4096L;\n"
           "    latency = ( 1.25, \"wrong\" ); spread = ( 0.5, 0.0 ); } ); }; };\n"
           "rules = ( { collective = \"reduce\"; min_bytes = 0L; max_bytes = 9L; algo = \"ring\";"
           " proto = \"simple\"; channels = 1; mode = \"eager\"; chunk = 512L; } );\n";
  char *with_extra = NULL;
  ck_assert(asprintf(&with_extra, "%s", full) > 0);
  /* provenance.extra survives verbatim */
  char *pos = strstr(with_extra, "mode = \"graph\"; };");
  ck_assert_ptr_nonnull(pos);
  char *x = NULL;
  ck_assert(asprintf(&x, "%.*smode = \"graph\"; extra = { gpus = ( \"RTX \\\"6000\\\"\", \"b\" );"
                         " bus = [ 1, 2 ]; sub = { f = 1.5; ok = true; }; }; };%s",
                     (int)(pos - with_extra), with_extra, pos + strlen("mode = \"graph\"; };")) > 0);
  ck_assert_int_eq(pt_profile_load_string(&p, x, "a.cfg", &e), 0);
  ck_assert_int_eq(pt_profile_render(&p, &text), 0);
  ck_assert_msg(pt_profile_load_string(&q, text, "b.cfg", &e) == 0, "%s:%d %s\n%s", e.file, e.line,
                e.msg, text);
  ck_assert_int_eq(pt_profile_render(&q, &text2), 0);
  ck_assert_str_eq(text, text2);
  ck_assert_int_eq(q.match_nranks, 8);
  const struct pt_series *s = q.series[PT_ALLREDUCE][PT_MODE_EAGER];
  ck_assert_uint_eq(s->sizes[1], 4294967296ULL);
  ck_assert_uint_eq(s->cand[0].chunk, 4096);
  ck_assert_int_eq(s->cand[0].points[1].state, PT_PT_WRONG);
  ck_assert_double_eq(s->cand[0].points[0].spread, 0.5);
  ck_assert_int_eq(q.rules[0].mode, PT_MODE_EAGER);
  ck_assert_uint_eq(q.rules[0].chunk, 512);
  ck_assert_ptr_nonnull(strstr(q.prov.extra, "RTX \\\"6000\\\""));
  free(text);
  free(text2);
  free(x);
  free(with_extra);
  pt_profile_release(&p);
  pt_profile_release(&q);
}
END_TEST

START_TEST(writer_is_atomic_and_never_clobbers) {
  struct pt_profile p;
  struct pt_error_rec e;
  char *dir = pt_test_tmpdir(), *path = NULL;
  ck_assert_int_eq(pt_profile_load_string(&p, valid, "v.cfg", &e), 0);
  ck_assert(asprintf(&path, "%s/out.cfg", dir) > 0);
  ck_assert_int_eq(pt_profile_write(&p, path, 0, &e), 0);
  ck_assert_int_eq(pt_profile_write(&p, path, 0, &e), PT_EEXIST);
  ck_assert_ptr_nonnull(strstr(e.msg, "--force"));
  free(p.name);
  p.name = strdup("renamed");
  ck_assert_int_eq(pt_profile_write(&p, path, PT_WRITE_FORCE, &e), 0);
  struct pt_profile q;
  ck_assert_int_eq(pt_profile_load(&q, path, &e), 0);
  ck_assert_str_eq(q.name, "renamed");
  pt_profile_release(&q);
  /* An invalid profile is refused before anything touches the disk. */
  p.series[PT_ALLREDUCE][PT_MODE_GRAPH]->cand[0].channels = 99;
  ck_assert_int_eq(pt_profile_write(&p, path, PT_WRITE_FORCE, &e), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "channels must be in 0..64"));
  ck_assert_int_eq(pt_profile_load(&q, path, &e), 0);
  ck_assert_str_eq(q.name, "renamed");
  pt_profile_release(&q);
  /* No temporary files are left beside it. */
  char *out = NULL, *cmd = NULL;
  ck_assert(asprintf(&cmd, "ls -A '%s'", dir) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, NULL), 0);
  ck_assert_str_eq(out, "out.cfg\n");
  /* Unwritable target directory: a clear I/O error. */
  ck_assert_int_eq(pt_profile_write(&p, "/nonexistent-dir/x.cfg", 0, &e), PT_EINVAL);
  p.series[PT_ALLREDUCE][PT_MODE_GRAPH]->cand[0].channels = 4;
  ck_assert_int_eq(pt_profile_write(&p, "/nonexistent-dir/x.cfg", 0, &e), PT_EIO);
  ck_assert_ptr_nonnull(strstr(e.msg, "directory /nonexistent-dir does not exist"));
  free(out);
  free(cmd);
  free(path);
  pt_profile_release(&p);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(file_errors_name_the_file) {
  struct pt_profile p;
  struct pt_error_rec e;
  char *dir = pt_test_tmpdir();
  ck_assert_int_eq(pt_profile_load(&p, "/nonexistent/p.cfg", &e), PT_EIO);
  ck_assert_str_eq(e.file, "/nonexistent/p.cfg");
  ck_assert_ptr_nonnull(strstr(e.msg, "cannot open"));
  char *path = pt_test_write(dir, "nul.cfg", "version = 1;");
  FILE *f = fopen(path, "ab");
  fputc(0, f);
  fputs("name = \"x\";", f);
  fclose(f);
  ck_assert_int_eq(pt_profile_load(&p, path, &e), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "NUL byte"));
  free(path);
  path = pt_test_write(dir, "bad.cfg", "version = 1;\nname = \"x\"\n;;");
  ck_assert_int_eq(pt_profile_load(&p, path, &e), PT_ESYNTAX);
  ck_assert_int_eq(e.line, 3);
  ck_assert_str_eq(e.file, path);
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(shipped_profiles_are_valid) {
  char *cmd = NULL, *out = NULL;
  ck_assert(asprintf(&cmd, "ls %s/profiles/*.cfg", pt_test_srcdir()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, NULL), 0);
  int n = 0;
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    struct pt_profile p;
    struct pt_error_rec e;
    ck_assert_msg(pt_profile_load(&p, l, &e) == 0, "%s:%d: %s", e.file, e.line, e.msg);
    struct pt_table t;
    ck_assert_int_eq(pt_table_build(&t, &p), 0);
    ck_assert_uint_gt(t.ninterval, 0);
    pt_table_release(&t);
    pt_profile_release(&p);
    n++;
  }
  ck_assert_int_ge(n, 1);
  free(cmd);
  free(out);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("profile");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, loads_valid_profile);
  tcase_add_loop_test(tc, rejects_bad_profile, 0, (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, round_trip_keeps_everything);
  tcase_add_test(tc, writer_is_atomic_and_never_clobbers);
  tcase_add_test(tc, file_errors_name_the_file);
  tcase_add_test(tc, shipped_profiles_are_valid);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
