/* pcie-tune check DIR and check SPEC --nranks N [--nnodes M], run as a user
 * runs them: a directory is checked as the plugin reads it, and the profile
 * check says it would choose, with ties and refusals, is the one the plugin
 * (dlopen of the built .so) chooses (docs/profile-format.md, "Selection"). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "support/pt_test.h"

static char *dir, *out, *err;

static const char *named(const char *name, const char *match) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "version = 1;\nname = \"%s\";\nmatch = { %s };\n"
           "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"x\"; date = \"d\"; "
           "mode = \"graph\"; };\n"
           "allreduce = { graph = { sizes = [ 1024L ]; nccl_default = ( 6.0 ); candidates = ( { algo = \"ring\"; "
           "proto = \"ll\"; channels = 1; latency = ( 5.0 ); } ); }; };\n",
           name, match);
  return buf;
}

static void setup(void) {
  dir = pt_test_tmpdir();
  out = err = NULL;
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

#define run(...) pt_test_cli_rerun(dir, 10, &out, &err, __VA_ARGS__)

static void write_set(void) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/profiles", dir) > 0);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  free(pt_test_write(p, "a-any.cfg", named("any", "")));
  free(pt_test_write(p, "b-ranks8.cfg", named("ranks8", "nranks = 8;")));
  free(pt_test_write(p, "c-8x1.cfg", named("both8x1", "nranks = 8; nnodes = 1;")));
  free(pt_test_write(p, "d-4x1.cfg", named("both4x1", "nranks = 4; nnodes = 1;")));
  free(pt_test_write(p, "notes.txt", "not a profile"));
  free(p);
}

START_TEST(directory_is_checked_as_the_plugin_reads_it) {
  write_set();
  ck_assert_int_eq(run("check profiles"), 0);
  ck_assert_msg(strstr(out, "profiles/a-any.cfg: ok") && strstr(out, "profiles/b-ranks8.cfg: ok") &&
                    strstr(out, "profiles/c-8x1.cfg: ok") && strstr(out, "profiles/d-4x1.cfg: ok"),
                "%s", out);
  ck_assert_ptr_null(strstr(out, "notes.txt"));
  free(pt_test_write(dir, "profiles/e-bad.cfg", "version = 1;\nname = \"x\"\n"));
  ck_assert_int_eq(run("check profiles"), 1);
  ck_assert_msg(strstr(err, "profiles/e-bad.cfg:"), "%s", err);
  char *empty = NULL;
  ck_assert(asprintf(&empty, "%s/empty", dir) > 0);
  ck_assert_int_eq(mkdir(empty, 0755), 0);
  ck_assert_int_eq(run("check empty"), 1);
  ck_assert_msg(strstr(err, "empty: no *.cfg profile"), "%s", err);
  free(empty);
}
END_TEST

START_TEST(says_which_profile_and_why) {
  write_set();
  ck_assert_int_eq(run("check profiles --nranks 8 --nnodes 1"), 0);
  ck_assert_msg(strstr(out, "result: profiles/c-8x1.cfg (name 'both8x1'"), "%s", out);
  ck_assert_msg(strstr(out, "the most specific of 3 fitting profiles"), "%s", out);
  ck_assert_msg(strstr(out, "does not fit:  profiles/d-4x1.cfg ('both4x1', match nranks = 4, nnodes = 1)"),
                "%s", out);
  ck_assert_int_eq(run("check profiles --nranks=8 --nnodes=2"), 0);
  ck_assert_msg(strstr(out, "result: profiles/b-ranks8.cfg"), "%s", out);
  ck_assert_int_eq(run("check profiles --nranks 2"), 0);
  ck_assert_msg(strstr(out, "result: profiles/a-any.cfg"), "%s", out);
  /* One file, named as PCIE_TUNER_PROFILE would name it, not fitting. */
  ck_assert_int_eq(run("check profiles/d-4x1.cfg --nranks 8"), 1);
  ck_assert_msg(strstr(out, "WARN") && strstr(out, "d-4x1.cfg does not match nRanks=8 nNodes=1 (its match: nranks = 4, nnodes = 1)"),
                "%s", out);
}
END_TEST

START_TEST(ties_and_refusals_are_explained) {
  write_set();
  free(pt_test_write(dir, "profiles/e-8x1.cfg", named("again8x1", "nranks = 8; nnodes = 1;")));
  ck_assert_int_eq(run("check profiles --nranks 8"), 1);
  ck_assert_msg(strstr(out, "profiles/c-8x1.cfg and profiles/e-8x1.cfg both match nRanks=8 nNodes=1 equally"),
                "%s", out);
  /* The tie does not concern 4 ranks. */
  ck_assert_int_eq(run("check profiles --nranks 4"), 0);
  ck_assert_msg(strstr(out, "result: profiles/d-4x1.cfg"), "%s", out);
  /* A refused file (here a FIFO) leaves every communicator to NCCL. */
  char *fifo = NULL;
  ck_assert(asprintf(&fifo, "%s/profiles/f-pipe.cfg", dir) > 0);
  ck_assert_int_eq(mkfifo(fifo, 0644), 0);
  ck_assert_int_eq(run("check profiles --nranks 4"), 1);
  ck_assert_msg(strstr(out, "refused:       profiles/f-pipe.cfg: is a FIFO"), "%s", out);
  ck_assert_msg(strstr(out, "leaves this communicator to NCCL:\n  profiles/f-pipe.cfg: is a FIFO"), "%s", out);
  free(fifo);
  ck_assert_int_eq(run("check profiles --nnodes 2"), 2);
  ck_assert_int_eq(run("check profiles --nranks 0"), 2);
}
END_TEST

/* The path the plugin logs for PCIE_TUNER_PROFILE=spec, or "" when passive. */
static void plugin_choice(const char *spec, size_t nranks, size_t nnodes, char *buf, size_t len) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_log_entry e;
  char errbuf[512];
  buf[0] = 0;
  setenv("PCIE_TUNER_PROFILE", spec, 1);
  ph_log_clear();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, errbuf, sizeof errbuf) == 0, "%s", errbuf);
  ck_assert_int_eq(ph_comm_init(&c, &pl, nranks, nnodes, 1), 0);
  ck_assert_int_eq(ph_log_get(0, &e), 0);
  const char *p = strstr(e.msg, "profile ");
  if (e.level == NCCL_LOG_INFO && p && strstr(p, " name '"))
    snprintf(buf, len, "%.*s", (int)(strstr(p, " name '") - p - 8), p + 8);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}

START_TEST(check_and_plugin_agree) {
  write_set();
  free(pt_test_write(dir, "profiles/e-nodes2.cfg", named("nodes2", "nnodes = 2;")));
  free(pt_test_write(dir, "profiles/f-16x2.cfg", named("n16x2", "nranks = 16; nnodes = 2;")));
  free(pt_test_write(dir, "profiles/g-16.cfg", named("r16", "nranks = 16;")));
  char *spec = NULL;
  ck_assert(asprintf(&spec, "%s/profiles", dir) > 0);
  static const size_t comms[][2] = {{8, 1}, {8, 2}, {4, 1}, {4, 2}, {16, 2}, {16, 1}, {16, 4}, {2, 1}};
  for (size_t k = 0; k < sizeof comms / sizeof comms[0]; k++) {
    char plugin[1024], *want = NULL;
    plugin_choice(spec, comms[k][0], comms[k][1], plugin, sizeof plugin);
    int rc = run("check '%s' --nranks %zu --nnodes %zu", spec, comms[k][0], comms[k][1]);
    if (plugin[0]) {
      ck_assert(asprintf(&want, "result: %s (name", plugin) > 0);
      ck_assert_msg(rc == 0 && strstr(out, want), "%zux%zu: plugin chose %s; check says: %s",
                    comms[k][0], comms[k][1], plugin, out);
    } else {
      ck_assert_msg(rc == 1 && strstr(out, "result: no profile"),
                    "%zux%zu: plugin passive; check says: %s", comms[k][0], comms[k][1], out);
    }
    free(want);
  }
  free(spec);
}
END_TEST

/* Issue 30 §5: a profile whose match names 2 nodes never serves a
 * single-node communicator, in check and in the plugin (with nnodes
 * compared by >= it would, and tie with c-8x1.cfg). */
START_TEST(two_node_profile_refused_on_one_node) {
  write_set();
  char *one = NULL;
  free(pt_test_write(dir, "profiles/e-8x2.cfg", named("both8x2", "nranks = 8; nnodes = 2;")));
  ck_assert_int_eq(run("check profiles --nranks 8 --nnodes 1"), 0);
  ck_assert_msg(strstr(out, "result: profiles/c-8x1.cfg (name 'both8x1'"), "%s", out);
  ck_assert_msg(strstr(out, "does not fit:  profiles/e-8x2.cfg ('both8x2', match nranks = 8, nnodes = 2)"),
                "%s", out);
  ck_assert_int_eq(run("check profiles/e-8x2.cfg --nranks 8 --nnodes 1"), 1);
  ck_assert_msg(strstr(out, "e-8x2.cfg does not match nRanks=8 nNodes=1 (its match: nranks = 8, nnodes = 2)"),
                "%s", out);
  ck_assert_int_eq(run("check profiles/e-8x2.cfg --nranks 8 --nnodes 2"), 0);
  char plugin[1024];
  ck_assert(asprintf(&one, "%s/profiles/e-8x2.cfg", dir) > 0);
  plugin_choice(one, 8, 1, plugin, sizeof plugin);
  ck_assert_str_eq(plugin, "");
  plugin_choice(one, 8, 2, plugin, sizeof plugin);
  ck_assert_str_eq(plugin, one);
  free(one);
}
END_TEST

/* Issue 30 §1: check reads as the plugin does, so a group of 2000 long
 * names that share a prefix (libconfig's duplicate check is quadratic:
 * `check` ran 595 s on 32000 of them) is refused by the pre-scan, with its
 * line, before libconfig parses. */
START_TEST(check_refuses_a_costly_group) {
  char *text = NULL, *p;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  fputs("version = 1;\nname = \"h\";\nprovenance = { tool = \"t\"; backend = \"sim\"; "
        "nccl_version = \"x\"; date = \"d\"; mode = \"graph\";\n extra = { m = { ",
        f);
  for (int i = 0; i < 2000; i++) fprintf(f, "a%0239d%08x = 1; ", 0, i);
  fputs("}; }; };\nallreduce = { graph = { sizes = [ 1024L ]; candidates = ( { algo = \"ring\"; "
        "proto = \"ll\"; channels = 1; latency = ( 5.0 ); } ); }; };\n",
        f);
  ck_assert_int_eq(fclose(f), 0);
  p = pt_test_write(dir, "costly.cfg", text);
  ck_assert_int_eq(run("check costly.cfg"), 1);
  ck_assert_msg(strstr(err, "costly.cfg:4: the group that opens here has 2000 members"), "%s", err);
  free(p);
  free(text);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_check");
  TCase *tc = tcase_create("check_dir");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, directory_is_checked_as_the_plugin_reads_it);
  tcase_add_test(tc, says_which_profile_and_why);
  tcase_add_test(tc, ties_and_refusals_are_explained);
  tcase_add_test(tc, check_and_plugin_agree);
  tcase_add_test(tc, two_node_profile_refused_on_one_node);
  tcase_add_test(tc, check_refuses_a_costly_group);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
