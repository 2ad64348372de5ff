/*
 * The importer's rules below the command: --setting syntax, a log's
 * setting from its NCCL_* lines, and which collective a run measured.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "import/import_build.h"
#include "import/import_coll.h"
#include "import/import_setting.h"
#include "import/nccltests.h"
#include "support/pt_test.h"

static void parse(struct nt_log *log, const char *text) {
  struct pt_error_rec err;
  int rc = nt_parse(log, text, strlen(text), "t.txt", &err);
  ck_assert_msg(rc == 0, "%d: %s", err.line, err.msg);
}

/* A one-row run on 2 ranks; prog "" leaves out the program line. */
static void run_log(struct nt_log *log, const char *prog, const char *row) {
  char text[2048];
  snprintf(text, sizeof text,
           "%s%s%s"
           "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0\n"
           "#  Rank  0 Group  0 Pid 1 on box device  0 [0x1a] GPU\n"
           "#  Rank  1 Group  0 Pid 1 on box device  1 [0x1b] GPU\n"
           "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
           "%s\n# Out of bounds values : 0 OK\n# Avg bus bandwidth : 0.1\n",
           *prog ? "# Collective test starting: " : "", prog, *prog ? "\n" : "", row);
  parse(log, text);
}

START_TEST(setting_syntax) {
  struct imp_setting s;
  char msg[256];
  ck_assert_int_eq(imp_setting_parse("algo=Ring,proto=LL128,channels=4", &s, msg, sizeof msg), 0);
  ck_assert_int_eq(s.algo, pt_algo_parse("ring"));
  ck_assert_int_eq(s.proto, pt_proto_parse("ll128"));
  ck_assert_int_eq(s.channels, 4);
  ck_assert_int_eq(imp_setting_parse("proto=simple", &s, msg, sizeof msg), 0);
  ck_assert_int_eq(s.algo, -1);
  ck_assert_int_eq(s.channels, -1);
  static const struct {
    const char *spec, *msg;
  } bad[] = {
      {"", "empty setting"},           {",", "empty setting"},
      {"algo", "expected key=value"},  {"algo=ring,algo=tree", "'algo' given twice"},
      {"proto=ll256", "unknown protocol 'll256'"}, {"channels=0", "channels must be 1..64"},
      {"channels=4x", "channels must be 1..64 ('4x')"}, {"channels=", "channels must be"},
      {"chunk=4", "unknown key 'chunk'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(imp_setting_parse(bad[i].spec, &s, msg, sizeof msg) == -1, "'%s' accepted", bad[i].spec);
    ck_assert_msg(strstr(msg, bad[i].msg) != NULL, "'%s': '%s'", bad[i].spec, msg);
  }
}
END_TEST

static int resolve(const char *pre, struct imp_setting cli, struct imp_setting *out, int *dflt,
                   struct pt_error_rec *err) {
  struct nt_log log;
  char text[256];
  snprintf(text, sizeof text, "%s", pre);
  char full[2048];
  snprintf(full, sizeof full,
           "%s# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0\n#  Rank  0 Pid 1 on b device 0 [0x1] G\n"
           "# size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
           "8 2 float sum -1 1 0 0 0 1 0 0 0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth : 0\n",
           text);
  parse(&log, full);
  int forced;
  int rc = imp_setting_resolve(&log, &cli, PT_ALLREDUCE, out, dflt, &forced, err);
  ck_assert_int_eq(forced, 0);
  nt_log_release(&log);
  return rc;
}

START_TEST(setting_resolution) {
  struct imp_setting s, none = IMP_SETTING_NONE;
  struct pt_error_rec err;
  int d;
  ck_assert_int_eq(resolve("", none, &s, &d, &err), 0);
  ck_assert_int_eq(d, 1);
  ck_assert_int_eq(resolve("NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MIN_NCHANNELS=2 NCCL_MAX_NCHANNELS=8\n", none, &s, &d, &err), 0);
  ck_assert_int_eq(d, 0);
  ck_assert_int_eq(s.channels, 8); /* the ceiling NCCL ran under */
  struct imp_setting cli = {pt_algo_parse("ring"), pt_proto_parse("ll"), 4};
  ck_assert_int_eq(resolve("NCCL_MIN_NCHANNELS=4\n", cli, &s, &d, &err), 0);
  ck_assert_int_eq(s.channels, 4);
  ck_assert_int_eq(resolve("NCCL_MIN_NCHANNELS=8 NCCL_MAX_NCHANNELS=4\n", none, &s, &d, &err), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "NCCL_MIN_NCHANNELS 8 is above NCCL_MAX_NCHANNELS 4"));
  ck_assert_int_eq(resolve("NCCL_MIN_NCHANNELS=8\n", cli, &s, &d, &err), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "--setting says channels=4 but the log sets NCCL_MIN_NCHANNELS=8"));
  ck_assert_int_eq(resolve("NCCL_MAX_NCHANNELS=99\n", none, &s, &d, &err), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "NCCL_MAX_NCHANNELS '99' is not a channel count 1..64"));
  ck_assert_int_eq(resolve("NCCL_ALGO=^Tree\n", none, &s, &d, &err), PT_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "NCCL_ALGO '^Tree' is not one algorithm"));
  ck_assert_int_eq(err.line, 1);
  ck_assert_int_eq(resolve("NCCL_PROTO=Simple\n", none, &s, &d, &err), PT_EINVAL);
  ck_assert_str_eq(err.file, "t.txt");
  ck_assert_ptr_nonnull(strstr(err.msg, "incomplete setting: no algo channels"));
  char buf[32];
  imp_setting_format(&cli, buf, sizeof buf);
  ck_assert_str_eq(buf, "ring/ll/4");
}
END_TEST

START_TEST(collective_of_run) {
  static const struct {
    const char *prog, *row;
    int coll;
  } cases[] = {
      {"all_reduce_perf", "8 2 float sum -1 1 0 0 0 1 0 0 0", PT_ALLREDUCE},
      {"/x/reduce_scatter_perf_mpi", "8 1 float sum -1 1 0 0 0 1 0 0 0", PT_REDUCESCATTER},
      {"reduce_perf", "8 2 float sum 0 1 0 0 0 1 0 0 0", PT_REDUCE},
      {"", "8 2 float sum -1 1 0 0 0 1 0 0 0", PT_ALLREDUCE},        /* count x 4 = size */
      {"", "8 1 float sum -1 1 0 0 0 1 0 0 0", PT_REDUCESCATTER},    /* count x 4 x 2 ranks */
      {"", "16 4 bfloat16 sum -1 1 0 0 0 1 0 0 0", PT_REDUCESCATTER},
      {"", "8 1 float none -1 1 0 0 0 1 0 0 0", PT_ALLGATHER},
      {"", "8 2 float none 0 1 0 0 0 1 0 0 0", PT_BROADCAST},
      {"", "8 2 float max 1 1 0 0 0 1 0 0 0", PT_REDUCE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct nt_log log;
    struct pt_error_rec err;
    run_log(&log, cases[i].prog, cases[i].row);
    int c = imp_run_coll(&log, &log.runs[0], &err);
    ck_assert_msg(c == cases[i].coll, "case %zu: %d (%s)", i, c, c < 0 ? err.msg : "");
    nt_log_release(&log);
  }
  static const struct {
    const char *prog, *row, *msg;
    int line;
  } bad[] = {
      {"alltoall_perf", "8 2 float none -1 1 0 0 0 1 0 0 0", "unsupported test program", 1},
      {"", "8 2 weird sum -1 1 0 0 0 1 0 0 0", "unknown data type ('weird')", 5},
      {"", "8 3 float sum -1 1 0 0 0 1 0 0 0", "matches neither", 5},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct nt_log log;
    struct pt_error_rec err;
    run_log(&log, bad[i].prog, bad[i].row);
    ck_assert_int_eq(imp_run_coll(&log, &log.runs[0], &err), PT_EINVAL);
    ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "%s", err.msg);
    ck_assert_int_eq(err.line, bad[i].line);
    nt_log_release(&log);
  }
}
END_TEST

/* An all_reduce log on 2 ranks whose first lines are pre (NCCL INFO lines). */
static void info_log(struct nt_log *log, const char *pre, const char *name) {
  char text[4096];
  snprintf(text, sizeof text,
           "%s# Collective test starting: all_reduce_perf\n"
           "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0\n"
           "#  Rank  0 Group  0 Pid 1 on box device  0 [0x1a] GPU\n"
           "#  Rank  1 Group  0 Pid 1 on box device  1 [0x1b] GPU\n"
           "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
           "8 2 float sum -1 1 0 0 0 1 0 0 0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth : 0.1\n",
           pre);
  struct pt_error_rec err;
  int rc = nt_parse(log, text, strlen(text), name, &err);
  ck_assert_msg(rc == 0, "%d: %s", err.line, err.msg);
}

#define CH(n) "box:1:2 [0] NCCL INFO " #n " coll channels, " #n " collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer\n"
#define FORCE(n) "NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MAX_NCHANNELS=" #n "\n"

/* Builds from n logs given as (pre, name) pairs; returns imp_build's code. */
static int build_from(size_t n, const char *const *pre, struct pt_profile *p, int *dropped,
                      struct pt_error_rec *err) {
  struct imp_input in[4];
  char name[4][16];
  for (size_t i = 0; i < n; i++) {
    snprintf(name[i], sizeof name[i], "l%zu.txt", i);
    info_log(&in[i].log, pre[i], name[i]);
    in[i].cli = IMP_SETTING_NONE;
  }
  struct imp_options o = {.name = "t", .date = "2026-12-01", .dropped = dropped};
  memset(p, 0, sizeof *p);
  int rc = imp_build(p, in, n, &o, err);
  for (size_t i = 0; i < n; i++) nt_log_release(&in[i].log);
  return rc;
}

/* The default run's channels and variables, and the settings above them. */
START_TEST(default_communicator) {
  struct pt_profile p;
  struct pt_error_rec err;
  int dropped[4];
  /* A setting forced to 6 channels goes, one at 2 stays. */
  const char *const a[] = {CH(4) CH(4), FORCE(2) CH(2),
                           "NCCL_ALGO=Ring NCCL_PROTO=Simple NCCL_MAX_NCHANNELS=6 NCCL_MIN_NCHANNELS=6\n"};
  ck_assert_msg(build_from(3, a, &p, dropped, &err) == 0, "%s:%d: %s", err.file, err.line, err.msg);
  ck_assert_int_eq(p.comm_channels, 4);
  ck_assert_int_eq(p.env_recorded, 0); /* no "set by environment" line in the default log */
  ck_assert_int_eq(dropped[0], 0);
  ck_assert_int_eq(dropped[1], 0);
  ck_assert_int_eq(dropped[2], 6);
  ck_assert_uint_eq(p.series[PT_ALLREDUCE][PT_MODE_EAGER]->ncand, 1);
  pt_profile_release(&p);

  /* A forced log whose own line says it ran more channels than the default. */
  const char *const b[] = {CH(4), FORCE(2) CH(2), FORCE(4) CH(6)};
  ck_assert_int_eq(build_from(3, b, &p, dropped, &err), 0);
  ck_assert_int_eq(dropped[2], 6);
  pt_profile_release(&p);

  /* Two default logs of different configurations. */
  const char *const c[] = {CH(4), CH(2), FORCE(2)};
  ck_assert_int_eq(build_from(3, c, &p, dropped, &err), PT_EINVAL);
  ck_assert_str_eq(err.file, "l1.txt");
  ck_assert_int_eq(err.line, 1);
  ck_assert_msg(strstr(err.msg, "NCCL's default run has 2 channels here but 4 in l0.txt:1"), "%s", err.msg);

  const char *const d[] = {CH(4) "box:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB\n",
                           "box:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS\n", FORCE(2)};
  ck_assert_int_eq(build_from(3, d, &p, dropped, &err), PT_EINVAL);
  ck_assert_msg(strstr(err.msg, "NCCL_P2P_LEVEL set to 'SYS' in this default run but to 'PHB'"), "%s",
                err.msg);

  /* Default logs without a count next to one with it: the count holds;
   * the variables are recorded. */
  const char *const e[] = {CH(4) "box:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB\n", "",
                           FORCE(4)};
  ck_assert_int_eq(build_from(3, e, &p, dropped, &err), 0);
  ck_assert_int_eq(p.comm_channels, 4);
  ck_assert_int_eq(p.env_recorded, 1);
  ck_assert_str_eq(pt_profile_env(&p, "NCCL_P2P_LEVEL"), "PHB");
  pt_profile_release(&p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("import_build");
  TCase *tc = tcase_create("rules");
  tcase_add_test(tc, setting_syntax);
  tcase_add_test(tc, setting_resolution);
  tcase_add_test(tc, collective_of_run);
  tcase_add_test(tc, default_communicator);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
