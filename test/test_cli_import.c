/*
 * pcie-tune import as a user runs it: the built binary ($PCIE_TUNE) on the
 * fixtures in test/data/nccltests, its exit status and stderr, and the
 * profile it wrote (read back with pt_profile_load) or did not write.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl/common.h"
#include "pcie/profile.h"
#include "support/pt_test.h"

static char *tmp;

static void setup(void) { tmp = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(tmp);
  free(tmp);
}

/* Runs "pcie-tune import ARGS" from test/data/nccltests; returns the status. */
static int import(const char *args, char **out, char **err) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s/test/data/nccltests' && '%s' import %s", pt_test_srcdir(),
           pt_test_cli(), args);
  return pt_test_run(cmd, out, err);
}

/* Runs a shell command from test/data/nccltests (fixture setup). */
static int import_sh(const char *sh) {
  char cmd[4608];
  snprintf(cmd, sizeof cmd, "cd '%s/test/data/nccltests' && %s", pt_test_srcdir(), sh);
  return pt_test_run(cmd, NULL, NULL);
}

static char *outpath(const char *name) {
  char *p = malloc(strlen(tmp) + strlen(name) + 2);
  sprintf(p, "%s/%s", tmp, name);
  return p;
}

/* Asserts failure with status, a stderr containing what, and no --out. */
static void expect_fail(int status, const char *args_after_out, const char *what) {
  char *out = outpath("p.cfg"), args[3072], *err = NULL;
  snprintf(args, sizeof args, "--out '%s' %s", out, args_after_out);
  int rc = import(args, NULL, &err);
  ck_assert_msg(rc == status, "status %d, expected %d; stderr: %s", rc, status, err);
  ck_assert_msg(strstr(err, what) != NULL, "stderr '%s' lacks '%s'", err, what);
  ck_assert_msg(access(out, F_OK) != 0, "%s was written", out);
  free(err);
  free(out);
}

static void load(struct pt_profile *p, const char *path) {
  struct pt_error_rec e;
  memset(p, 0, sizeof *p);
  int rc = pt_profile_load(p, path, &e);
  ck_assert_msg(rc == 0, "%s:%d: %s", e.file, e.line, e.msg);
}

START_TEST(real_logs) {
  char *out = outpath("rtx4090.cfg"), args[2048], *so = NULL, *se = NULL;
  /* The k8s log ran on other GPUs (0x1a, 0xb2 against 0x1a, 0x1b): no
   * candidate of this box. */
  expect_fail(1,
              "real/rtx4090-2x-default-kalavai-docker.txt --setting algo=ring,proto=LL,channels=2 "
              "real/rtx4090-2x-default-kalavai-k8s.txt",
              "real/rtx4090-2x-default-kalavai-k8s.txt:12: rank 1 ran on GPU 0xb2 (host nccl-benchmark), "
              "which the runs of real/rtx4090-2x-default-kalavai-docker.txt did not use: logs of one set of "
              "GPUs make one profile; import each box's (or each GPU set's) logs into a profile of its own");
  /* The published format read in full: the docker log, also standing in
   * for a forced run of the same box. */
  snprintf(args, sizeof args,
           "--out '%s' real/rtx4090-2x-default-kalavai-docker.txt "
           "--setting algo=ring,proto=LL,channels=2 real/rtx4090-2x-default-kalavai-docker.txt",
           out);
  int rc = import(args, &so, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_ptr_nonnull(strstr(so, "allreduce eager on 2 ranks: 29 sizes, 1 candidate and NCCL's default"));
  struct pt_profile p;
  load(&p, out);
  ck_assert_str_eq(p.name, "rtx4090");
  ck_assert_int_eq(p.match_nranks, 2);
  ck_assert_str_eq(p.prov.backend, "nccl-tests");
  ck_assert_str_eq(p.prov.tool, "pcie-tune import");
  ck_assert_str_eq(p.prov.nccl_version, "unknown"); /* the published logs carry none */
  ck_assert_str_eq(p.prov.mode, "eager");
  ck_assert_ptr_null(p.series[PT_ALLREDUCE][PT_MODE_GRAPH]);
  const struct pt_series *s = p.series[PT_ALLREDUCE][PT_MODE_EAGER];
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(s->nsizes, 29);
  ck_assert_uint_eq(s->sizes[0], 8);
  ck_assert_uint_eq(s->sizes[28], 2147483648ULL);
  ck_assert_double_eq_tol(s->nccl_default[0].lat_us, 8.97, 1e-9);     /* out-of-place */
  ck_assert_double_eq_tol(s->nccl_default[28].lat_us, 957746, 1e-6);
  ck_assert_uint_eq(s->ncand, 1);
  ck_assert_int_eq(s->cand[0].algo, pt_algo_parse("ring"));
  ck_assert_int_eq(s->cand[0].proto, pt_proto_parse("ll"));
  ck_assert_int_eq(s->cand[0].channels, 2);
  ck_assert_double_eq_tol(s->cand[0].points[0].lat_us, 8.97, 1e-9);
  pt_profile_release(&p);
  free(so);
  free(se);

  /* --in-place takes the other column; --force replaces the file. */
  snprintf(args, sizeof args,
           "--force --in-place --name other --out '%s' real/rtx4090-2x-default-kalavai-docker.txt "
           "--setting algo=ring,proto=LL,channels=2 real/rtx4090-2x-default-kalavai-docker.txt",
           out);
  rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  load(&p, out);
  ck_assert_str_eq(p.name, "other");
  s = p.series[PT_ALLREDUCE][PT_MODE_EAGER];
  ck_assert_double_eq_tol(s->nccl_default[0].lat_us, 8.83, 1e-9);
  ck_assert_double_eq_tol(s->cand[0].points[0].lat_us, 8.83, 1e-9);
  pt_profile_release(&p);
  free(se);
  free(out);
}
END_TEST

START_TEST(synth_both_modes) {
  char *out = outpath("box.cfg"), args[2048], *se = NULL;
  snprintf(args, sizeof args,
           "--out '%s' synth/ar8-eager-default.txt synth/ar8-eager-ring-ll-4.txt "
           "synth/ar8-eager-ring-simple-2-crlf.txt --setting proto=ll128,algo=ring,channels=4 "
           "synth/ar8-eager-two-runs.txt synth/ar8-graph-default-mpi.txt "
           "synth/ar8-graph-ring-ll-4-mpi.txt",
           out);
  int rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  struct pt_profile p;
  load(&p, out);
  ck_assert_int_eq(p.match_nranks, 8); /* 8 processes x 1 GPU in the MPI logs */
  ck_assert_str_eq(p.prov.nccl_version, "2.28.9");
  ck_assert_str_eq(p.prov.mode, "both");
  const struct pt_series *e = p.series[PT_ALLREDUCE][PT_MODE_EAGER];
  const struct pt_series *g = p.series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(g);
  ck_assert_uint_eq(e->nsizes, 13);
  ck_assert_uint_eq(e->ncand, 3);
  ck_assert_int_eq(e->cand[1].proto, pt_proto_parse("simple"));
  ck_assert_int_eq(e->cand[1].channels, 2);
  ck_assert_uint_eq(e->sizes[6], 65536);
  ck_assert_int_eq(e->cand[1].points[6].state, PT_PT_WRONG); /* #wrong 12 */
  ck_assert_int_eq(e->cand[1].points[5].state, PT_PT_OK);
  /* Two runs, overlapping at 64 KiB with equal rows, make one candidate. */
  ck_assert_int_eq(e->cand[2].proto, pt_proto_parse("ll128"));
  for (size_t i = 0; i < e->nsizes; i++) ck_assert_int_eq(e->cand[2].points[i].state, PT_PT_OK);
  /* Graph mode, -c 0: #wrong N/A keeps the time. */
  ck_assert_uint_eq(g->ncand, 1);
  ck_assert_int_eq(g->cand[0].channels, 4);
  ck_assert_double_eq_tol(g->cand[0].points[0].lat_us, 10.11, 1e-9);
  ck_assert_double_eq_tol(g->nccl_default[0].lat_us, 18.05, 1e-9);
  pt_profile_release(&p);
  free(se);
  free(out);
}
END_TEST

/* NCCL_DEBUG=INFO logs: the default run's "N coll channels" line becomes
 * communicator.channels and its "set by environment" lines nccl_env; a
 * setting measured with more channels than that is left out with a
 * warning naming its log. */
START_TEST(info_logs_communicator) {
  char *out = outpath("info.cfg"), args[2048], *so = NULL, *se = NULL;
  snprintf(args, sizeof args,
           "--out '%s' info/ar8-eager-default.txt info/ar8-eager-ring-ll-4.txt "
           "info/ar8-eager-ring-simple-8.txt",
           out);
  int rc = import(args, &so, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(se, "info/ar8-eager-ring-simple-8.txt: warning: measured with 8 channels, "
                           "more than the 4 of NCCL's default run's communicator") != NULL,
                "stderr: %s", se);
  ck_assert_msg(strstr(se, "ring-ll-4") == NULL, "the 4-channel log was warned about: %s", se);
  ck_assert_msg(strstr(so, "communicator channels 4 (info/ar8-eager-default.txt:20); nccl_env: 2 "
                           "variables") != NULL,
                "stdout: %s", so);
  struct pt_profile p;
  load(&p, out);
  ck_assert_int_eq(p.comm_channels, 4);
  ck_assert_int_eq(p.env_recorded, 1);
  ck_assert_uint_eq(p.nenv, 2);
  ck_assert_str_eq(pt_profile_env(&p, "NCCL_IGNORE_CPU_AFFINITY"), "1"); /* "to 1." */
  ck_assert_str_eq(pt_profile_env(&p, "NCCL_P2P_LEVEL"), "PHB");
  ck_assert_ptr_null(pt_profile_env(&p, "NCCL_ALGO")); /* the candidates' settings stay out */
  const struct pt_series *e = p.series[PT_ALLREDUCE][PT_MODE_EAGER];
  ck_assert_uint_eq(e->ncand, 1);
  ck_assert_int_eq(e->cand[0].channels, 4);
  ck_assert_int_eq(e->cand[0].proto, pt_proto_parse("ll"));
  ck_assert_ptr_nonnull(strstr(p.prov.note, "ring/simple/8, left out: 8 > 4 channels"));
  pt_profile_release(&p);
  free(so);
  free(se);

  /* Only the 8-channel setting: nothing left, nothing written. */
  expect_fail(1, "info/ar8-eager-default.txt info/ar8-eager-ring-simple-8.txt",
              "info/ar8-eager-ring-simple-8.txt: every setting was measured with more channels "
              "than the 4 of NCCL's default run");
  /* The same through --setting on a log without its own count. */
  expect_fail(1, "info/ar8-eager-default.txt --setting algo=ring,proto=simple,channels=6 "
                 "real/rtx4090-2x-default-kalavai-k8s.txt",
              "run on 2 ranks mixed with 8-rank runs");
  free(out);
}
END_TEST

/* --setting channels above the default run's count drops that log too,
 * and the mixing checks still come first. */
START_TEST(info_setting_above) {
  char *out = outpath("set.cfg"), args[2048], *se = NULL;
  snprintf(args, sizeof args,
           "--out '%s' info/ar8-eager-default.txt synth/ar8-eager-ring-ll-4.txt "
           "--setting algo=ring,proto=simple,channels=6 synth/ar8-eager-default.txt",
           out);
  int rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(se, "synth/ar8-eager-default.txt: warning: measured with 6 channels") != NULL,
                "stderr: %s", se);
  struct pt_profile p;
  load(&p, out);
  ck_assert_int_eq(p.comm_channels, 4);
  ck_assert_uint_eq(p.series[PT_ALLREDUCE][PT_MODE_EAGER]->ncand, 1);
  ck_assert_int_eq(p.series[PT_ALLREDUCE][PT_MODE_EAGER]->cand[0].channels, 4);
  pt_profile_release(&p);
  free(se);
  free(out);
}
END_TEST

/* Without INFO lines the count stays unknown, and the summary says what to do. */
START_TEST(no_info_unknown) {
  char *out = outpath("plain.cfg"), args[2048], *so = NULL, *se = NULL;
  snprintf(args, sizeof args, "--out '%s' synth/ar8-eager-default.txt synth/ar8-eager-ring-ll-4.txt",
           out);
  int rc = import(args, &so, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(so, "communicator channels unknown: NCCL's default run logged no \"coll "
                           "channels\" line; rerun it with NCCL_DEBUG=INFO") != NULL,
                "stdout: %s", so);
  struct pt_profile p;
  load(&p, out);
  ck_assert_int_eq(p.comm_channels, 0);
  ck_assert_int_eq(p.env_recorded, 0);
  pt_profile_release(&p);
  free(so);
  free(se);
  /* No default log at all, kept as data: unknown too, with the other reason. */
  snprintf(args, sizeof args, "--force --without-default --out '%s' synth/ar8-eager-ring-ll-4.txt", out);
  rc = import(args, &so, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(so, "communicator channels unknown: no log of NCCL's default run") != NULL,
                "stdout: %s", so);
  free(so);
  free(se);
  free(out);
}
END_TEST

/* Issue 26 §1: the forced run alone (the most likely mistake) is refused,
 * naming the run to add, and nothing is written; kept as data with
 * --without-default, check fails it and show marks its sizes NCCL's. The
 * plugin side is test_tuner_never_slower (never_slower_without_nccl_default). */
START_TEST(forced_log_alone_refused) {
  char *out = outpath("forced.cfg"), args[2048], *so = NULL, *se = NULL;
  snprintf(args, sizeof args, "--out '%s' synth/ar8-eager-ring-ll-4.txt", out);
  ck_assert_int_eq(import(args, &so, &se), 1);
  ck_assert_msg(strstr(se, "synth/ar8-eager-ring-ll-4.txt: no log of NCCL's default run in eager mode") &&
                    strstr(se, "run without NCCL_ALGO, NCCL_PROTO, NCCL_*_NCHANNELS or --setting") &&
                    strstr(se, "--without-default"),
                "%s", se);
  ck_assert_int_ne(access(out, F_OK), 0);
  free(so);
  free(se);
  snprintf(args, sizeof args, "--without-default --out '%s' synth/ar8-eager-ring-ll-4.txt", out);
  ck_assert_msg(import(args, &so, &se) == 0, "%s", se);
  free(so);
  free(se);
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "check '%s'", out) > 0);
  ck_assert_int_eq(pt_test_cli_run(tmp, 60, &so, &se, "%s", cmd), 1);
  ck_assert_msg(strstr(se, "NCCL's default was not measured for allreduce eager: a candidate is chosen "
                           "only where NCCL's own choice was measured too"),
                "%s", se);
  free(so), free(se), free(cmd);
  ck_assert(asprintf(&cmd, "show '%s'", out) > 0);
  ck_assert_int_eq(pt_test_cli_run(tmp, 60, &so, &se, "%s", cmd), 0);
  ck_assert_msg(strstr(so, "1 KiB          4 MiB  (NCCL decides)") &&
                    strstr(so, "NCCL: its default was not measured here") && !strstr(so, "ring/ll/4 "),
                "%s", so);
  free(so), free(se), free(cmd);
  free(out);
}
END_TEST

START_TEST(existing_out_kept) {
  char *out = pt_test_write(tmp, "keep.cfg", "sentinel\n"), args[1024], *se = NULL;
  snprintf(args, sizeof args,
           "--out '%s' synth/ar8-eager-default.txt synth/ar8-eager-ring-ll-4.txt", out);
  int rc = import(args, NULL, &se);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(se, "keep.cfg: already exists; pass --force to overwrite it"), "%s", se);
  FILE *f = fopen(out, "r");
  char line[64] = "";
  ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
  fclose(f);
  ck_assert_str_eq(line, "sentinel\n");
  free(se);
  free(out);
}
END_TEST

START_TEST(bad_inputs) {
  expect_fail(1, "real/not-nccl-tests/rtxpro6000bw-8x-default-torchNCCL-b12x-pcie-calibration.txt",
              "rtxpro6000bw-8x-default-torchNCCL-b12x-pcie-calibration.txt:17: table row outside an "
              "nccl-tests table");
  expect_fail(1, "real/not-nccl-tests/rtxpro6000-4x-nccl-vs-pcieoneshot-voipmonitor-asus-crossover.txt",
              "crossover.txt:1: not nccl-tests output");
  expect_fail(1, "real/rtx4090-2x-default-kalavai-docker.txt "
                 "--setting algo=ring,proto=ll,channels=4 real/rtx4090-4x-default-kalavai-docker.txt",
              "real/rtx4090-4x-default-kalavai-docker.txt:8: run on 4 ranks mixed with 2-rank runs "
              "(first in real/rtx4090-2x-default-kalavai-docker.txt)");
  expect_fail(1, "synth/ar8-eager-ring-ll-4.txt synth/ag8-eager-ring-ll-4.txt",
              "synth/ag8-eager-ring-ll-4.txt:4: allgather run mixed with allreduce runs");
  expect_fail(1, "synth/ar8-eager-ring-ll-4.txt synth/ar4-eager-ring-ll-4.txt",
              "synth/ar4-eager-ring-ll-4.txt:4: run on 4 ranks mixed with 8-rank runs");
  /* The same setting twice, with other values at the same sizes. */
  expect_fail(1, "synth/ar8-eager-ring-ll-4.txt --setting algo=ring,proto=ll,channels=4 synth/ar8-eager-two-runs.txt",
              "synth/ar8-eager-two-runs.txt:16: size 1024 measured twice with different values (first "
              "at synth/ar8-eager-ring-ll-4.txt:26)");
  expect_fail(1, "real/rtx4090-2x-default-kalavai-docker.txt",
              "no setting measured in eager mode besides NCCL's default");
  expect_fail(1, "--setting algo=tree synth/ar8-eager-ring-ll-4.txt",
              "synth/ar8-eager-ring-ll-4.txt:11: --setting says tree but the log sets NCCL_ALGO=Ring");
  expect_fail(1, "--setting channels=8 synth/ar8-eager-ring-ll-4.txt",
              "--setting says channels=8 but the log sets NCCL_MAX_NCHANNELS=4");
  expect_fail(1, "synth/ar8-eager-default.txt --setting proto=ll synth/ar8-eager-default.txt",
              "synth/ar8-eager-default.txt: incomplete setting: no algo channels");
  expect_fail(1, "synth/no-such-file.txt", "synth/no-such-file.txt: cannot open");
}
END_TEST

/* Broken logs written here: truncation, a size twice in one table, MIN alone. */
START_TEST(bad_written_logs) {
  static const char head[] =
      "NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MAX_NCHANNELS=2\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg "
      "iters: 1 validation: 1 graph: 0\n"
      "#  Rank  0 Group  0 Pid 1 on box device  0 [0x1a] GPU\n"
      "#  Rank  1 Group  0 Pid 1 on box device  1 [0x1b] GPU\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "8 2 float sum -1 8.97 0.00 0.00 0 8.83 0.00 0.00 0\n";
  static const char foot[] = "# Out of bounds values : 0 OK\n# Avg bus bandwidth : 0.1\n";
  char text[2048], args[2048];
  char *trunc = pt_test_write(tmp, "trunc.txt", head);
  snprintf(text, sizeof text, "%s8 2 float sum -1 9.00 0.00 0.00 0 8.83 0.00 0.00 0\n%s", head, foot);
  char *dup = pt_test_write(tmp, "dup.txt", text);
  snprintf(text, sizeof text, "NCCL_MIN_NCHANNELS=4\n%s%s", head + strlen("NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MAX_NCHANNELS=2\n"), foot);
  char *min = pt_test_write(tmp, "min.txt", text);
  snprintf(text, sizeof text, "NCCL_PROTO=LL,LL128\n%s%s", head + strlen("NCCL_ALGO=Ring NCCL_PROTO=LL NCCL_MAX_NCHANNELS=2\n"), foot);
  char *list = pt_test_write(tmp, "list.txt", text);
  snprintf(args, sizeof args, "'%s'", trunc);
  expect_fail(1, args, "trunc.txt:6: table ends without its summary lines (truncated)");
  snprintf(args, sizeof args, "'%s'", dup);
  expect_fail(1, args, "dup.txt:7: size 8 measured twice with different values (first at");
  snprintf(args, sizeof args, "--setting algo=ring,proto=ll '%s'", min);
  expect_fail(1, args, "min.txt:1: NCCL_MIN_NCHANNELS alone does not fix the channel count");
  snprintf(args, sizeof args, "'%s'", list);
  expect_fail(1, args, "list.txt:1: NCCL_PROTO 'LL,LL128' is not one protocol");
  free(trunc);
  free(dup);
  free(min);
  free(list);
}
END_TEST

START_TEST(usage) {
  char *so = NULL, *se = NULL;
  ck_assert_int_eq(import("", NULL, &se), 2);
  ck_assert_ptr_nonnull(strstr(se, "--out FILE is required"));
  free(se);
  ck_assert_int_eq(import("--help", &so, NULL), 0);
  ck_assert_ptr_nonnull(strstr(so, "usage: pcie-tune import --out FILE"));
  free(so);
  expect_fail(2, "", "no nccl-tests log given");
  expect_fail(2, "synth/ar8-eager-default.txt --setting algo=ring", "--setting 'algo=ring' is not followed by a log");
  expect_fail(2, "--setting algo=ring --setting proto=ll synth/ar8-eager-default.txt",
              "--setting 'algo=ring' is not followed by a log");
  expect_fail(2, "--setting algo=rnig synth/ar8-eager-default.txt", "--setting: unknown algorithm 'rnig'");
  expect_fail(2, "--setting chans=4 synth/ar8-eager-default.txt", "unknown key 'chans'");
  expect_fail(2, "--setting channels=65 synth/ar8-eager-default.txt", "channels must be 1..64");
  expect_fail(2, "--setting channels=4,channels=4 synth/ar8-eager-default.txt", "'channels' given twice");
  expect_fail(2, "--bogus synth/ar8-eager-default.txt", "unknown option '--bogus'");
  expect_fail(2, "--out x.cfg synth/ar8-eager-default.txt", "--out given twice");
  expect_fail(2, "--name", "--name needs a value");
}
END_TEST

START_TEST(stdin_log) {
  char *out = outpath("stdin.cfg"), cmd[4096], *se = NULL;
  snprintf(cmd, sizeof cmd,
           "cd '%s/test/data/nccltests' && '%s' import --out '%s' synth/ar8-eager-default.txt - "
           "< synth/ar8-eager-ring-ll-4.txt",
           pt_test_srcdir(), pt_test_cli(), out);
  int rc = pt_test_run(cmd, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  struct pt_profile p;
  load(&p, out);
  ck_assert_uint_eq(p.series[PT_ALLREDUCE][PT_MODE_EAGER]->ncand, 1);
  ck_assert_ptr_nonnull(strstr(p.prov.note, "<stdin> (ring/ll/4)"));
  pt_profile_release(&p);
  free(se);
  se = NULL;
  /* stdin holds one log: naming it twice is a usage error, nothing written. */
  char *out2 = outpath("stdin2.cfg");
  snprintf(cmd, sizeof cmd, "cd '%s/test/data/nccltests' && '%s' import --out '%s' - - < /dev/null",
           pt_test_srcdir(), pt_test_cli(), out2);
  ck_assert_int_eq(pt_test_run(cmd, NULL, &se), 2);
  ck_assert_ptr_nonnull(strstr(se, "'-' (stdin) can be given only once"));
  ck_assert_int_ne(access(out2, F_OK), 0);
  free(se);
  free(out2);
  free(out);
}
END_TEST

/* Runs a shell command that prepares a log in tmp; asserts it worked. */
static void sh(const char *fmt, const char *a) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, fmt, pt_test_srcdir(), a, tmp);
  ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

/* Inputs as users paste them (issue 19 §4): a whole table without its two
 * summary lines is imported with a warning, a cut one is still refused; a
 * table's rows alone are called a fragment; "1 candidate", not "1
 * candidates". */
START_TEST(pasted_tables) {
  char args[3072], *out = outpath("whole.cfg"), *so = NULL, *se = NULL;
  sh("grep -v -e '^# Out of bounds' -e '^# Avg bus' '%s/test/data/nccltests/synth/%s' > '%s/nosum.txt'",
     "ar8-eager-ring-ll-4.txt");
  snprintf(args, sizeof args, "--out '%s' synth/ar8-eager-default.txt '%s/nosum.txt'", out, tmp);
  int rc = import(args, &so, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(se, "nosum.txt:38: warning: the table has every size up to maxBytes (4194304) but ends "
                           "without its summary lines"),
                "%s", se);
  ck_assert_msg(strstr(so, "13 sizes, 1 candidate and NCCL's default"), "%s", so);
  free(so), free(se);
  /* The last row gone too: that is a cut table. */
  sh("grep -v -e '^# Out of bounds' -e '^# Avg bus' -e '^ *4194304 ' '%s/test/data/nccltests/synth/%s' > "
     "'%s/cut.txt'",
     "ar8-eager-ring-ll-4.txt");
  snprintf(args, sizeof args, "synth/ar8-eager-default.txt '%s/cut.txt'", tmp);
  expect_fail(1, args, "cut.txt:37: table ends without its summary lines (truncated)");
  /* Only the rows, copied from a terminal. */
  sh("grep '^ *[0-9]' '%s/test/data/nccltests/synth/%s' > '%s/rows.txt'", "ar8-eager-ring-ll-4.txt");
  snprintf(args, sizeof args, "synth/ar8-eager-default.txt '%s/rows.txt'", tmp);
  expect_fail(1, args, "rows.txt:1: a fragment? no run header before this row");
  free(out);
  /* A default run alone is refused with what to add, and the README says
   * up front what import needs. */
  expect_fail(1, "synth/ar8-eager-default.txt", "no setting measured in eager mode besides NCCL's default");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "tr '\\n' ' ' < '%s/README.md'", pt_test_srcdir());
  ck_assert_int_eq(pt_test_run(cmd, &so, NULL), 0);
  ck_assert_msg(strstr(so, "`pcie-tune import` needs two kinds of nccl-tests runs") &&
                    strstr(so, "**NCCL's default run**") && strstr(so, "**one forced run per candidate**") &&
                    strstr(so, "A default run alone cannot tune anything"),
                "README.md does not say what import needs");
  free(so);
}
END_TEST

/* The channel clamp used when the communicator's count is unknown is the
 * smallest count of a usable candidate: ring/simple/2 with one #wrong row
 * is left out, and must not clamp ring/ll/4 (measured with 4) to 2. */
START_TEST(wrong_candidate_does_not_lower_the_clamp) {
  char args[3072], cmd[4096], *out = outpath("p.cfg"), *so = NULL, *se = NULL;
  sh("sed 's/^\\( *65536 *16384 *float *sum *-1 *[0-9.]* *[0-9.]* *[0-9.]* *\\)0 /\\11 /' "
     "'%s/test/data/nccltests/synth/%s' > '%s/s2.txt'",
     "ar8-eager-ring-simple-2-crlf.txt");
  snprintf(args, sizeof args, "--out '%s' synth/ar8-eager-default.txt synth/ar8-eager-ring-ll-4.txt '%s/s2.txt'",
           out, tmp);
  int rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  free(se);
  snprintf(cmd, sizeof cmd, "'%s' show '%s' --eager", pt_test_cli(), out);
  ck_assert_int_eq(pt_test_run(cmd, &so, &se), 0);
  ck_assert_msg(strstr(so, "excluded: ring/simple/2: wrong at 64 KiB"), "%s", so);
  ck_assert_msg(strstr(so, "the rest gets at most 4 (the smallest measured)"), "%s", so);
  ck_assert_msg(!strstr(so, "excluded: ring/ll/4"), "%s", so);
  ck_assert_msg(strstr(so, "ring/ll/4"), "%s", so);
  free(so), free(se), free(out);
}
END_TEST

/* All-gather (issue 17 §3): NCCL does not clamp the tuner's count there, so
 * a forced run without a channel variable becomes a candidate measured with
 * NCCL's own count (channels = 0), which the plugin ranks; a run with a
 * forced count (NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS, --setting
 * channels=) is left out with a warning naming it; with nothing else left,
 * the import is refused and says how to measure. */
START_TEST(allgather_with_nccls_count) {
  char *out = outpath("ag.cfg"), args[2048], cmd[4096], *so = NULL, *se = NULL;
  snprintf(args, sizeof args,
           "--out '%s' synth/ag8-eager-default.txt synth/ag8-eager-ring-ll.txt synth/ag8-eager-ring-ll-4.txt "
           "--setting algo=ring,proto=ll,channels=2 synth/ag8-eager-default.txt",
           out);
  int rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  ck_assert_msg(strstr(se, "synth/ag8-eager-ring-ll-4.txt: warning: measured allgather with 4 channels forced"),
                "stderr: %s", se);
  ck_assert_msg(strstr(se, "synth/ag8-eager-default.txt: warning: measured allgather with 2 channels forced"),
                "stderr: %s", se);
  struct pt_profile p;
  load(&p, out);
  const struct pt_series *s = p.series[PT_ALLGATHER][PT_MODE_EAGER];
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(s->ncand, 1);
  ck_assert_int_eq(s->cand[0].algo, NCCL_ALGO_RING);
  ck_assert_int_eq(s->cand[0].proto, NCCL_PROTO_LL);
  ck_assert_int_eq(s->cand[0].channels, 0);
  ck_assert_msg(strstr(p.prov.note, "synth/ag8-eager-ring-ll-4.txt (ring/ll/4, left out: a forced count)"), "%s",
                p.prov.note);
  pt_profile_release(&p);
  free(se);
  /* The table the plugin compiles ranks it, on NCCL's count. */
  snprintf(cmd, sizeof cmd, "'%s' show '%s' --collective allgather --eager", pt_test_cli(), out);
  ck_assert_int_eq(pt_test_run(cmd, &so, &se), 0);
  ck_assert_msg(strstr(so, "ring/ll                  NCCL's"), "%s", so);
  free(so), free(se);
  /* A --setting without channels is complete for all-gather. */
  snprintf(args, sizeof args, "--force --out '%s' synth/ag8-eager-default.txt --setting algo=ring,proto=ll "
           "synth/ag8-eager-default.txt", out);
  rc = import(args, NULL, &se);
  ck_assert_msg(rc == 0, "status %d: %s", rc, se);
  free(se);
  free(out);
  expect_fail(1, "synth/ag8-eager-default.txt synth/ag8-eager-ring-ll-4.txt",
              "no setting left in eager mode: every allgather setting forced a channel count");
}
END_TEST

/* A forced run under another NCCL setting than NCCL's default run (here
 * NCCL_P2P_LEVEL=SYS against the default's PHB: another transport) would
 * credit the candidate with the setting's gain: refused, with the line. A
 * variable only one of the logs shows proves nothing (NCCL logs a
 * parameter when it reads it): the untouched pair imports. */
START_TEST(forced_run_under_other_settings) {
  char *dir = outpath("set"), cmd[4096], args[1024];
  snprintf(cmd, sizeof cmd,
           "mkdir '%s' && cp info/ar8-eager-default.txt '%s'/ && sed '8a pcie8:4242:4242 [0] NCCL INFO "
           "NCCL_P2P_LEVEL set by environment to SYS' info/ar8-eager-ring-ll-4.txt > '%s'/ll.txt",
           dir, dir, dir);
  ck_assert_int_eq(import_sh(cmd), 0);
  snprintf(args, sizeof args, "'%s'", dir);
  expect_fail(1, args, "/set/ll.txt:9: NCCL_P2P_LEVEL set to 'SYS' in this run but to 'PHB' in NCCL's "
                       "default run: a candidate is compared with NCCL's default only under the same "
                       "settings; rerun one of them so");
  /* The untouched forced log, beside a default log whose device lines
   * give no bus id of a known form (nothing to compare the GPUs with):
   * imported. */
  snprintf(cmd, sizeof cmd,
           "cp info/ar8-eager-ring-ll-4.txt '%s'/ll.txt && sed 's/\\[0000:4[0-9]:00\\]/[gpu]/' "
           "info/ar8-eager-default.txt > '%s'/ar8-eager-default.txt",
           dir, dir);
  ck_assert_int_eq(import_sh(cmd), 0);
  char *out = outpath("set.cfg"), *so = NULL, *se = NULL;
  snprintf(args, sizeof args, "--out '%s' '%s'", out, dir);
  ck_assert_msg(import(args, &so, &se) == 0, "%s", se);
  free(so);
  free(se);
  free(out);
  free(dir);
}
END_TEST

/* A directory of logs from several runs, as a user collects them: LOG may
 * be the directory. Runs on two rank counts make no one profile: import
 * lists which logs go together and what to do; a truncated log is named
 * with its line and what to do; a profile written beside the logs (*.cfg)
 * is not read back as a log; what is left makes the profile. */
START_TEST(directory_of_runs) {
  char *logs = outpath("logs"), *out = NULL, *err = NULL, cmd[4096], args[1024];
  snprintf(cmd, sizeof cmd,
           "mkdir '%s' && cp info/ar8-eager-default.txt info/ar8-eager-ring-ll-4.txt "
           "synth/ar4-eager-ring-ll-4.txt '%s'/ && head -c 3000 info/ar8-eager-ring-ll-4.txt > '%s'/cut.txt",
           logs, logs, logs);
  ck_assert_int_eq(import_sh(cmd), 0);
  snprintf(args, sizeof args, "'%s'", logs);
  /* The truncated log is read first (name order) and refused with its line. */
  expect_fail(1, args, "/logs/cut.txt:32: table ends without its summary lines (truncated); rerun it, "
                       "or leave this log out");
  snprintf(cmd, sizeof cmd, "rm '%s'/cut.txt", logs);
  ck_assert_int_eq(import_sh(cmd), 0);
  expect_fail(1, args, "/logs/ar8-eager-default.txt:4: run on 8 ranks mixed with 4-rank runs (first in ");
  expect_fail(1, args, "pcie-tune import: the logs hold 2 kinds of run, and a profile holds one kind:\n"
                       "  allreduce on 4 ranks, NCCL 2.28.9: ");
  expect_fail(1, args, "/logs/ar4-eager-ring-ll-4.txt\n  allreduce on 8 ranks, NCCL 2.28.9: ");
  expect_fail(1, args, "several rank counts: import each into its own profile");
  snprintf(cmd, sizeof cmd, "rm '%s'/ar4-eager-ring-ll-4.txt", logs);
  ck_assert_int_eq(import_sh(cmd), 0);
  snprintf(args, sizeof args, "--out '%s/box.cfg' '%s'", logs, logs);
  ck_assert_msg(import(args, &out, &err) == 0, "%s", err);
  ck_assert_msg(strstr(out, "box.cfg: allreduce eager on 8 ranks: 13 sizes, 1 candidate and NCCL's default"),
                "%s", out);
  free(out);
  free(err);
  /* Again with the profile beside the logs: still two logs, not three. */
  snprintf(args, sizeof args, "--force --out '%s/box.cfg' '%s'", logs, logs);
  ck_assert_msg(import(args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
  snprintf(args, sizeof args, "--setting algo=ring '%s'", logs);
  expect_fail(1, args, "--setting before the directory");
  free(logs);
}
END_TEST

int main(void) {
  Suite *s = suite_create("import");
  TCase *tc = tcase_create("cli");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, real_logs);
  tcase_add_test(tc, synth_both_modes);
  tcase_add_test(tc, info_logs_communicator);
  tcase_add_test(tc, info_setting_above);
  tcase_add_test(tc, no_info_unknown);
  tcase_add_test(tc, forced_log_alone_refused);
  tcase_add_test(tc, existing_out_kept);
  tcase_add_test(tc, bad_inputs);
  tcase_add_test(tc, bad_written_logs);
  tcase_add_test(tc, usage);
  tcase_add_test(tc, stdin_log);
  tcase_add_test(tc, pasted_tables);
  tcase_add_test(tc, wrong_candidate_does_not_lower_the_clamp);
  tcase_add_test(tc, allgather_with_nccls_count);
  tcase_add_test(tc, directory_of_runs);
  tcase_add_test(tc, forced_run_under_other_settings);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
