/*
 * The nccl-tests parser (import/nccltests.c): the published logs in
 * test/data/nccltests/real, hand-made logs in synth/, broken inputs built
 * in memory from them, and the fuzzer's regression inputs.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/nccltests.h"
#include "support/pt_test.h"

static char *slurp(const char *rel, size_t *len) {
  const char *root = getenv("PT_SRCDIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = NULL;
  size_t n = 0, cap = 0, got;
  do {
    if (n + 4096 > cap) buf = realloc(buf, cap = (cap + 4096) * 2);
    ck_assert_ptr_nonnull(buf);
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
  } while (got);
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int parse_str(struct nt_log *log, const char *text, struct pt_error_rec *err) {
  return nt_parse(log, text, strlen(text), "mem.txt", err);
}

/* Asserts that text fails at line with a message containing what. */
static void expect_error(const char *text, int line, const char *what) {
  struct nt_log log;
  struct pt_error_rec err;
  int rc = parse_str(&log, text, &err);
  ck_assert_msg(rc == PT_EINVAL, "expected an error '%s', got rc %d", what, rc);
  ck_assert_str_eq(err.file, "mem.txt");
  ck_assert_msg(err.line == line, "expected line %d, got %d (%s)", line, err.line, err.msg);
  ck_assert_msg(strstr(err.msg, what) != NULL, "message '%s' lacks '%s'", err.msg, what);
  ck_assert_ptr_null(log.runs);
  ck_assert_ptr_null(log.name);
}

/* A minimal valid run; tests splice lines into it. */
#define HDR                                                                                    \
  "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg " \
  "iters: 1 validation: 1 graph: 0\n"                                                          \
  "#\n# Using devices\n"                                                                       \
  "#  Rank  0 Group  0 Pid      1 on       box device  0 [0x1a] NVIDIA GeForce RTX 4090\n"     \
  "#  Rank  1 Group  0 Pid      1 on       box device  1 [0x1b] NVIDIA GeForce RTX 4090\n"
#define COLS                                                                                   \
  "#       size         count      type   redop    root     time   algbw   busbw #wrong     " \
  "time   algbw   busbw #wrong\n"
#define ROW8 "           8             2     float     sum      -1     8.97    0.00    0.00      0     8.83    0.00    0.00      0\n"
#define ROW16 "          16             4     float     sum      -1     9.48    0.00    0.00      0     9.10    0.00    0.00      0\n"
#define FOOT "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.18707 \n#\n"
#define RUN HDR COLS ROW8 ROW16 FOOT

START_TEST(real_logs_parse) {
  static const struct {
    const char *file;
    int nranks;
    double first_oop, first_ip, last_oop;
    double avg;
  } want[] = {
      {"test/data/nccltests/real/rtx4090-2x-default-kalavai-docker.txt", 2, 8.97, 8.83, 957746, 1.18707},
      {"test/data/nccltests/real/rtx4090-2x-default-kalavai-k8s.txt", 2, 10.98, 10.36, 557166, 1.96915},
      {"test/data/nccltests/real/rtx4090-4x-default-kalavai-docker.txt", 4, 18.90, 19.54, 1246110, 1.40135},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    size_t len;
    char *buf = slurp(want[i].file, &len);
    struct nt_log log;
    struct pt_error_rec err;
    int rc = nt_parse(&log, buf, len, want[i].file, &err);
    ck_assert_msg(rc == 0, "%s:%d: %s", err.file, err.line, err.msg);
    ck_assert_uint_eq(log.nruns, 1);
    const struct nt_run *r = &log.runs[0];
    ck_assert_int_eq(r->line, 8); /* after the 7 source lines */
    ck_assert_int_eq(r->nthread, 1);
    ck_assert_int_eq(r->ngpus, want[i].nranks);
    ck_assert_int_eq(r->nranks, want[i].nranks);
    ck_assert_int_eq(r->nprocs, 1);
    ck_assert_uint_eq(r->min_bytes, 8);
    ck_assert_uint_eq(r->max_bytes, 2147483648ULL);
    ck_assert_uint_eq(r->step, 2);
    ck_assert_int_eq(r->step_factor, 1);
    ck_assert_int_eq(r->warmup, 5);
    ck_assert_int_eq(r->iters, 20);
    ck_assert_int_eq(r->agg_iters, 1);
    ck_assert_int_eq(r->validation, 1);
    ck_assert_int_eq(r->graph, 0);
    ck_assert_str_eq(r->dev[0].gpu, "NVIDIA GeForce RTX 4090");
    ck_assert_uint_eq(r->nrows, 29);
    ck_assert_uint_eq(r->rows[0].size, 8);
    ck_assert_uint_eq(r->rows[0].count, 2);
    ck_assert_str_eq(r->rows[0].type, "float");
    ck_assert_str_eq(r->rows[0].redop, "sum");
    ck_assert_int_eq(r->rows[0].root, -1);
    ck_assert_double_eq_tol(r->rows[0].oop.time_us, want[i].first_oop, 1e-9);
    ck_assert_double_eq_tol(r->rows[0].ip.time_us, want[i].first_ip, 1e-9);
    ck_assert_uint_eq(r->rows[28].size, 2147483648ULL);
    ck_assert_double_eq_tol(r->rows[28].oop.time_us, want[i].last_oop, 1e-9);
    for (size_t k = 0; k < r->nrows; k++) {
      ck_assert_uint_eq(r->rows[k].size, 8ULL << k);
      ck_assert_uint_eq(r->rows[k].oop.flags | r->rows[k].ip.flags, 0);
      ck_assert(r->rows[k].oop.wrong == 0 && r->rows[k].ip.wrong == 0);
    }
    ck_assert_double_eq(r->oob, 0);
    ck_assert_int_eq(r->oob_failed, 0);
    ck_assert_double_eq_tol(r->avg_busbw, want[i].avg, 1e-9);
    for (int v = 0; v < NT_NENV; v++) ck_assert_int_eq(log.env[v].line, 0);
    ck_assert_str_eq(log.nccl_version, "");
    nt_log_release(&log);
    ck_assert_ptr_null(log.runs);
    free(buf);
  }
}
END_TEST

/* The published tables that are not nccl-tests output must be refused. */
START_TEST(real_non_nccltests_rejected) {
  static const struct {
    const char *file;
    int line;
    const char *what;
  } want[] = {
      {"test/data/nccltests/real/not-nccl-tests/rtxpro6000bw-8x-default-torchNCCL-b12x-pcie-calibration.txt",
       17, "table row outside an nccl-tests table"},
      {"test/data/nccltests/real/not-nccl-tests/rtxpro6000-4x-nccl-vs-pcieoneshot-voipmonitor-asus-crossover.txt",
       1, "not nccl-tests output"},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    size_t len;
    char *buf = slurp(want[i].file, &len);
    struct nt_log log;
    struct pt_error_rec err;
    ck_assert_int_eq(nt_parse(&log, buf, len, "x.txt", &err), PT_EINVAL);
    ck_assert_str_eq(err.file, "x.txt");
    ck_assert_int_eq(err.line, want[i].line);
    ck_assert_msg(strstr(err.msg, want[i].what) != NULL, "%s", err.msg);
    free(buf);
  }
}
END_TEST

/* The newer header lines, NCCL_DEBUG lines inside the header and the table,
 * settings from NCCL INFO lines, "to 4." integer values. */
START_TEST(synth_debug_lines_and_settings) {
  size_t len;
  char *buf = slurp("test/data/nccltests/synth/ar8-eager-ring-ll-4.txt", &len);
  struct nt_log log;
  struct pt_error_rec err;
  int rc = nt_parse(&log, buf, len, "ll4.txt", &err);
  ck_assert_msg(rc == 0, "%s:%d: %s", err.file, err.line, err.msg);
  ck_assert_str_eq(log.nccl_version, "2.28.9+cuda12.9");
  ck_assert_int_eq(log.nccl_version_line, 8);
  ck_assert_str_eq(log.env[NT_ENV_ALGO].value, "Ring");
  ck_assert_str_eq(log.env[NT_ENV_PROTO].value, "LL");
  ck_assert_int_eq(log.env[NT_ENV_PROTO].line, 10); /* the first of two equal lines */
  ck_assert_str_eq(log.env[NT_ENV_MIN_NCHANNELS].value, "4");
  ck_assert_str_eq(log.env[NT_ENV_MAX_NCHANNELS].value, "4");
  ck_assert_uint_eq(log.nruns, 1);
  ck_assert_str_eq(log.runs[0].tests_version, "2.13.11");
  ck_assert_int_eq(log.runs[0].nccl_library, 22809);
  ck_assert_str_eq(log.runs[0].program, "all_reduce_perf");
  ck_assert_int_eq(log.runs[0].program_line, 2);
  ck_assert_uint_eq(log.runs[0].ndev, 8);
  ck_assert_uint_eq(log.runs[0].nrows, 13);
  nt_log_release(&log);
  free(buf);
}
END_TEST

/* CRLF endings, settings from export/assignment lines, a wrong row. */
START_TEST(synth_crlf_exports_wrong) {
  size_t len;
  char *buf = slurp("test/data/nccltests/synth/ar8-eager-ring-simple-2-crlf.txt", &len);
  ck_assert_ptr_nonnull(strstr(buf, "\r\n"));
  struct nt_log log;
  struct pt_error_rec err;
  int rc = nt_parse(&log, buf, len, "crlf.txt", &err);
  ck_assert_msg(rc == 0, "%s:%d: %s", err.file, err.line, err.msg);
  ck_assert_str_eq(log.env[NT_ENV_ALGO].value, "Ring");
  ck_assert_int_eq(log.env[NT_ENV_ALGO].line, 1);
  ck_assert_str_eq(log.env[NT_ENV_PROTO].value, "Simple");
  ck_assert_str_eq(log.env[NT_ENV_MIN_NCHANNELS].value, "2");
  ck_assert_int_eq(log.env[NT_ENV_MAX_NCHANNELS].line, 4);
  const struct nt_run *r = &log.runs[0];
  ck_assert_str_eq(r->dev[7].gpu, "NVIDIA RTX PRO 6000 Blackwell Server Edition"); /* no '\r' */
  ck_assert_uint_eq(r->rows[6].size, 65536);
  ck_assert_double_eq(r->rows[6].oop.wrong, 12);
  ck_assert_double_eq(r->rows[6].ip.wrong, 12);
  ck_assert_double_eq(r->rows[5].oop.wrong, 0);
  ck_assert_double_eq(r->oob, 1);
  ck_assert_int_eq(r->oob_failed, 1);
  nt_log_release(&log);
  free(buf);
}
END_TEST

START_TEST(synth_two_runs_and_mpi) {
  size_t len;
  char *buf = slurp("test/data/nccltests/synth/ar8-eager-two-runs.txt", &len);
  struct nt_log log;
  struct pt_error_rec err;
  int rc = nt_parse(&log, buf, len, "two.txt", &err);
  ck_assert_msg(rc == 0, "%s:%d: %s", err.file, err.line, err.msg);
  ck_assert_uint_eq(log.nruns, 2);
  ck_assert_uint_eq(log.runs[0].nrows, 7);
  ck_assert_uint_eq(log.runs[1].nrows, 7);
  ck_assert_uint_eq(log.runs[1].rows[0].size, 65536);
  ck_assert_int_eq(log.runs[1].line, 29);
  ck_assert_str_eq(log.runs[0].tests_version, "");
  nt_log_release(&log);
  free(buf);

  buf = slurp("test/data/nccltests/synth/ar8-graph-ring-ll-4-mpi.txt", &len);
  rc = nt_parse(&log, buf, len, "mpi.txt", &err);
  ck_assert_msg(rc == 0, "%s:%d: %s", err.file, err.line, err.msg);
  const struct nt_run *r = &log.runs[0];
  ck_assert_int_eq(r->nthread * r->ngpus, 1);
  ck_assert_int_eq(r->nranks, 8);
  ck_assert_int_eq(r->nprocs, 8);
  ck_assert_int_eq(r->graph, 10);
  ck_assert_int_eq(r->validation, 0);
  ck_assert_uint_eq(r->rows[0].oop.flags, NT_WRONG_NA);
  ck_assert_uint_eq(r->rows[0].ip.flags, NT_WRONG_NA);
  ck_assert_str_eq(log.env[NT_ENV_ALGO].value, "ring"); /* from the command line's assignments */
  ck_assert_str_eq(log.env[NT_ENV_MAX_NCHANNELS].value, "4");
  ck_assert_int_eq(log.env[NT_ENV_MIN_NCHANNELS].line, 0);
  nt_log_release(&log);
  free(buf);
}
END_TEST

START_TEST(crlf_equals_lf) {
  const char *lf = RUN;
  char crlf[4096];
  size_t o = 0;
  for (const char *p = lf; *p; p++) {
    if (*p == '\n') crlf[o++] = '\r';
    crlf[o++] = *p;
  }
  crlf[o] = '\0';
  struct nt_log a, b;
  struct pt_error_rec err;
  ck_assert_int_eq(parse_str(&a, lf, &err), 0);
  ck_assert_int_eq(parse_str(&b, crlf, &err), 0);
  ck_assert_uint_eq(a.runs[0].nrows, b.runs[0].nrows);
  ck_assert_int_eq(memcmp(a.runs[0].rows, b.runs[0].rows, a.runs[0].nrows * sizeof *a.runs[0].rows), 0);
  ck_assert_str_eq(b.runs[0].dev[1].gpu, "NVIDIA GeForce RTX 4090");
  nt_log_release(&a);
  nt_log_release(&b);
}
END_TEST

START_TEST(na_cells) {
  struct nt_log log;
  struct pt_error_rec err;
  const char *text = HDR COLS
      "           8             2     float     sum      -1      N/A     N/A     N/A    N/A     8.83    0.00    0.00    N/A\n" FOOT;
  ck_assert_int_eq(parse_str(&log, text, &err), 0);
  const struct nt_row *r = &log.runs[0].rows[0];
  ck_assert_uint_eq(r->oop.flags, NT_TIME_NA | NT_BW_NA | NT_WRONG_NA);
  ck_assert_uint_eq(r->ip.flags, NT_WRONG_NA);
  ck_assert_double_eq_tol(r->ip.time_us, 8.83, 1e-9);
  nt_log_release(&log);
}
END_TEST

START_TEST(old_device_lines_and_timestamps) {
  struct nt_log log;
  struct pt_error_rec err;
  const char *text =
      "# nThread 2 nGpus 1 minBytes 8 maxBytes 8 step: 1048576(bytes) warmup iters: 5 iters: 20 agg "
      "iters: 1 validation: 1 graph: 0 unalign: 0\n"
      "#   Rank  1 Pid  77 on node1 device  1 [0x1b] Tesla T4\n"
      "#   Rank  0 Pid  77 on node1 device  0 [0x1a] Tesla T4\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong timestamp\n"
      "           8             2     float     sum      -1    1.2e+08    0.00    0.00      0     8.83    0.00    0.00      0 2025-01-02 03:04:05\n"
      FOOT;
  int rc = parse_str(&log, text, &err);
  ck_assert_msg(rc == 0, "%d: %s", err.line, err.msg);
  const struct nt_run *r = &log.runs[0];
  ck_assert_int_eq(r->step_factor, 0);
  ck_assert_uint_eq(r->step, 1048576);
  ck_assert_int_eq(r->nranks, 2);
  ck_assert_int_eq(r->timestamps, 1);
  ck_assert_str_eq(r->dev[0].gpu, "Tesla T4");
  ck_assert_double_eq(r->rows[0].oop.time_us, 1.2e8);
  nt_log_release(&log);
}
END_TEST

START_TEST(truncated_tables) {
  /* Cut after a row before maxBytes (16): the last row is named. */
  expect_error(HDR COLS ROW8, 7, "table ends without its summary lines (truncated)");
  expect_error(HDR COLS ROW8 RUN, 7, "table ends without its summary lines (truncated)");
  /* Cut inside a row. */
  expect_error(HDR COLS ROW8 "          16             4     float     sum      -1     9.48", 8,
               "truncated row: 6 of 13 columns");
  /* Cut between the two summary lines before maxBytes. */
  expect_error(HDR COLS ROW8 "# Out of bounds values : 0 OK\n", 7, "truncated");
  /* A new run starts while a table is open. */
  expect_error(HDR COLS ROW8 RUN, 7, "truncated");
  /* Header but no table. */
  expect_error(HDR, 1, "run has no result table");
  expect_error(HDR RUN, 1, "run has no result table");
  expect_error(HDR COLS FOOT, 7, "table has no rows");
}
END_TEST

/* Every size up to maxBytes but no summary lines (a table copied without
 * its last two lines): kept, marked for the importer's warning; with the
 * summary, not marked. */
START_TEST(complete_table_without_summary) {
  static const char *const texts[] = {HDR COLS ROW8 ROW16, HDR COLS ROW8 ROW16 "# Out of bounds values : 0 OK\n",
                                      HDR COLS ROW8 ROW16 RUN};
  static const int lines[] = {8, 8, 8};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    struct nt_log log;
    struct pt_error_rec err;
    int rc = parse_str(&log, texts[i], &err);
    ck_assert_msg(rc == 0, "%zu: %s:%d: %s", i, err.file, err.line, err.msg);
    ck_assert_uint_eq(log.runs[0].nrows, 2);
    ck_assert_int_eq(log.runs[0].no_summary_line, lines[i]);
    if (i == 2) ck_assert_int_eq(log.runs[1].no_summary_line, 0);
    nt_log_release(&log);
  }
  /* A byte step: 8, 12, 16 must all be there. */
  const char *hdr_bytes = "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 4(bytes) warmup iters: 5 iters: 20 agg "
                          "iters: 1 validation: 1 graph: 0\n";
  char text[4096];
  snprintf(text, sizeof text, "%s%s", hdr_bytes, strchr(HDR, '\n') + 1);
  snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s%s", COLS, ROW8, ROW16);
  expect_error(text, 8, "truncated");
}
END_TEST

START_TEST(not_nccltests) {
  expect_error("", 0, "not nccl-tests output");
  expect_error("hello\nworld\n", 1, "not nccl-tests output");
  expect_error("# just comments\n#\n", 1, "not nccl-tests output");
  expect_error("x\n" COLS ROW8 FOOT, 2, "table without its run header");
  expect_error("x\n" ROW8, 2, "a fragment? no run header before this row");
  expect_error(RUN ROW8, 12, "table row outside an nccl-tests table");
  expect_error(HDR COLS ROW8 "garbage here\n" ROW16 FOOT, 8, "truncated row: 2 of 13");
  expect_error(HDR COLS ROW8 "x" "\0" "y\n" FOOT, 8, "truncated row");
}
END_TEST

START_TEST(nul_byte) {
  char text[] = RUN;
  text[40] = '\0';
  struct nt_log log;
  struct pt_error_rec err;
  ck_assert_int_eq(nt_parse(&log, text, sizeof text - 1, "nul.txt", &err), PT_EINVAL);
  ck_assert_int_eq(err.line, 1);
  ck_assert_ptr_nonnull(strstr(err.msg, "NUL byte"));
}
END_TEST

START_TEST(bad_numbers) {
#define R(sz, t, w) sz "   2     float     sum      -1  " t "    0.00    0.00      " w "     8.83    0.00    0.00      0\n"
  expect_error(HDR COLS R("12a", "8.97", "0") FOOT, 7, "bad size");
  expect_error(HDR COLS R("99999999999999999999", "8.97", "0") FOOT, 7, "bad size");
  expect_error(HDR COLS R("-8", "8.97", "0") FOOT, 7, "bad size");
  expect_error(HDR COLS R("8", "-1.0", "0") FOOT, 7, "bad time value ('-1.0')");
  expect_error(HDR COLS R("8", "nan", "0") FOOT, 7, "bad time value");
  expect_error(HDR COLS R("8", "inf", "0") FOOT, 7, "bad time value");
  expect_error(HDR COLS R("8", "1e999", "0") FOOT, 7, "bad time value");
  expect_error(HDR COLS R("8", "8.97x", "0") FOOT, 7, "bad time value");
  expect_error(HDR COLS R("8", "8.97", "-3") FOOT, 7, "bad #wrong value");
  expect_error(HDR COLS "8 2 float sum x 1 1 1 0 1 1 1 0\n" FOOT, 7, "bad root");
  expect_error(HDR COLS "8 2 float sum -1 1 1 1 0 1 1 1 0 extra\n" FOOT, 7, "row has 14 columns");
  expect_error(HDR COLS ROW8 "# Out of bounds values : x OK\n", 8, "bad 'Out of bounds values'");
  expect_error(HDR COLS ROW8 "# Out of bounds values : 0 OK\n# Avg bus bandwidth : -1\n", 9,
               "bad 'Avg bus bandwidth'");
  expect_error(HDR COLS ROW8 "# Avg bus bandwidth : 1\n", 8, "before 'Out of bounds values'");
#undef R
}
END_TEST

START_TEST(bad_headers) {
  expect_error("# nThread 1 nGpus 2 minBytes 8\n", 1, "run header lacks 'maxBytes'");
  expect_error("# nThread 0 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n",
               1, "bad value of 'nThread'");
  expect_error("# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(meters) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n",
               1, "bad value of 'step:'");
  expect_error("# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: x validation: 1 graph: 0\n",
               1, "bad value of 'iters'");
  expect_error("# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph:\n",
               1, "lacks the value of 'graph:'");
  /* Devices must list every rank once, nThread x nGpus per process. */
  expect_error("# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n"
               "#  Rank  0 Group  0 Pid 1 on box device  0 [0x1a] GPU\n" COLS ROW8 FOOT,
               3, "1 device lines are not a multiple of nThread x nGpus (2)");
  expect_error("# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n"
               "#  Rank  0 Group  0 Pid 1 on box device  0 [0x1a] GPU\n"
               "#  Rank  0 Group  0 Pid 2 on box device  0 [0x1a] GPU\n" COLS ROW8 FOOT,
               3, "rank 0 listed twice");
  expect_error("# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n" COLS ROW8 FOOT,
               2, "no '#  Rank' device lines");
  expect_error("# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: "
               "20 agg iters: 1 validation: 1 graph: 0\n"
               "#  Rank  0 Group  0 Pid 1 on box device  0 GPU\n",
               2, "lacks the '[bus id]'");
  expect_error(HDR "#       size         count      type   redop     time   algbw   busbw  error     "
                   "time   algbw   busbw  error\n",
               6, "unsupported table layout");
  expect_error(HDR COLS ROW8 COLS, 7, "truncated");
  expect_error(RUN "# Collective test starting: all_reduce_perf\n", 12, "without a run after it");
  expect_error("# nccl-tests version 2.13.8 nccl-headers=22105 nccl-library=abc\n" RUN, 1,
               "bad nccl-library code");
}
END_TEST

START_TEST(settings_conflicts) {
  struct nt_log log;
  struct pt_error_rec err;
  expect_error("NCCL_PROTO=LL\n" RUN "host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n", 13,
               "NCCL_PROTO set to 'Simple' here but to 'LL' at line 1");
  expect_error("NCCL version 2.19.3+cuda12.3\n" RUN "NCCL version 2.21.5+cuda12.4\n", 13,
               "NCCL version '2.21.5+cuda12.4' differs from '2.19.3+cuda12.3' at line 1");
  /* Case differences, quotes and empty values are not conflicts. */
  const char *ok = "export NCCL_ALGO='Ring'\nNCCL_PROTO=\n" RUN
                   "h:1:2 [0] NCCL INFO NCCL_ALGO set by environment to ring\n"
                   "# NCCL_PROTO=LL in a comment is not a setting\n"
                   "NCCL_DEBUG=INFO NCCL_MIN_NCHANNELS=8 ./all_reduce_perf -g 2\n";
  int rc = parse_str(&log, ok, &err);
  ck_assert_msg(rc == 0, "%d: %s", err.line, err.msg);
  ck_assert_str_eq(log.env[NT_ENV_ALGO].value, "Ring");
  ck_assert_int_eq(log.env[NT_ENV_PROTO].line, 0);
  ck_assert_str_eq(log.env[NT_ENV_MIN_NCHANNELS].value, "8");
  ck_assert_int_eq(log.env[NT_ENV_MIN_NCHANNELS].line, 16);
  nt_log_release(&log);
  ck_assert_str_eq(nt_env_name(NT_ENV_MAX_NCHANNELS), "NCCL_MAX_NCHANNELS");
  ck_assert_ptr_null(nt_env_name(NT_NENV));
}
END_TEST

/* The INFO lines import keeps: the channel count of every NCCL version's
 * init line (2.18 has no collnet count), the smallest when several
 * communicators printed one, and each NCCL_* variable once, with the '.'
 * ncclLoadParam puts after an integer dropped. */
START_TEST(info_channels_and_env) {
  struct nt_log log;
  struct pt_error_rec err;
  const char *text =
      RUN
      "box:1:7 [0] NCCL INFO 2 coll channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer\n"
      "box:1:8 [1] NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 "
      "p2p channels per peer\n"
      "box:1:1 [0] NCCL INFO NCCL_NCHANNELS_PER_NET_PEER set by environment to 2.\n"
      "box:1:1 [1] NCCL INFO NCCL_NCHANNELS_PER_NET_PEER set by environment to 2.\n"
      "box:1:1 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /etc/topo.xml\n"
      "box:1:1 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 4.\n"
      "my script: 3 coll channels, as NCCL would say\n"
      "box:1:1 [0] init.cc:9 NCCL WARN 1 coll channels, 1 collnet channels\n";
  int rc = parse_str(&log, text, &err);
  ck_assert_msg(rc == 0, "%d: %s", err.line, err.msg);
  ck_assert_int_eq(log.comm_channels, 2);
  ck_assert_int_eq(log.comm_channels_line, 12);
  ck_assert_uint_eq(log.nvars, 3);
  ck_assert_str_eq(log.vars[0].name, "NCCL_NCHANNELS_PER_NET_PEER");
  ck_assert_str_eq(log.vars[0].value, "2");
  ck_assert_int_eq(log.vars[0].line, 14);
  ck_assert_str_eq(log.vars[1].value, "/etc/topo.xml");
  ck_assert_str_eq(log.vars[2].name, "NCCL_MAX_NCHANNELS");
  ck_assert_str_eq(log.vars[2].value, "4");
  ck_assert_str_eq(log.env[NT_ENV_MAX_NCHANNELS].value, "4"); /* the setting as before */
  nt_log_release(&log);

  /* Without INFO lines: unknown. */
  rc = parse_str(&log, RUN, &err);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(log.comm_channels, 0);
  ck_assert_uint_eq(log.nvars, 0);
  nt_log_release(&log);

  expect_error(RUN "box:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB\n"
                   "box:2:1 [1] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS\n",
               13, "NCCL_P2P_LEVEL set by environment to 'SYS' here but to 'PHB' at line 12");
  expect_error(RUN "box:1:1 [0] NCCL INFO 99 coll channels, 99 collnet channels, 0 nvls channels\n", 12,
               "NCCL reports 99 coll channels");
}
END_TEST

/* Every input the fuzzer once crashed on (and the hand-made nasty ones kept
 * next to them) must parse or fail cleanly, with a usable error record. */
/* What each kept input must give, exactly (issue 30 §5): an input that
 * crashed once is pinned to its one right answer, not to "either". `make
 * fuzz` adds a crashing input to the folder; this table must then say what
 * it gives once fixed. */
static const struct {
  const char *name;
  int rc, line;      /* PT_EINVAL and its line, or 0 */
  const char *msg;   /* part of the error */
  size_t nruns, rows; /* on success: runs, rows of the first */
} fuzz_expect[] = {
    {"handmade-cr-and-empty-settings.txt", PT_EINVAL, 7, "summary line outside a table", 0, 0},
    /* The last row ends at EOF without a newline: still a row. */
    {"handmade-eof-in-row-no-newline.txt", 0, 0, NULL, 1, 1},
};

START_TEST(fuzz_regressions) {
  const char *root = getenv("PT_SRCDIR");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/test/data/nccltests/fuzz-regressions", root ? root : ".");
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  struct dirent *e;
  size_t n = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md")) continue;
    size_t k = 0;
    while (k < sizeof fuzz_expect / sizeof fuzz_expect[0] && strcmp(fuzz_expect[k].name, e->d_name)) k++;
    ck_assert_msg(k < sizeof fuzz_expect / sizeof fuzz_expect[0],
                  "%s: no expected outcome; add it to fuzz_expect", e->d_name);
    char rel[1200];
    size_t len;
    snprintf(rel, sizeof rel, "test/data/nccltests/fuzz-regressions/%s", e->d_name);
    char *buf = slurp(rel, &len);
    struct nt_log log;
    struct pt_error_rec err;
    int rc = nt_parse(&log, buf, len, e->d_name, &err);
    ck_assert_msg(rc == fuzz_expect[k].rc, "%s: rc %d, expected %d (%s)", e->d_name, rc,
                  fuzz_expect[k].rc, rc ? err.msg : "");
    if (rc) {
      ck_assert_msg(strstr(err.msg, fuzz_expect[k].msg), "%s: '%s'", e->d_name, err.msg);
      ck_assert_str_eq(err.file, e->d_name);
      ck_assert_int_eq(err.line, fuzz_expect[k].line);
    } else {
      ck_assert_uint_eq(log.nruns, fuzz_expect[k].nruns);
      ck_assert_uint_eq(log.runs[0].nrows, fuzz_expect[k].rows);
      nt_log_release(&log);
    }
    free(buf);
    n++;
  }
  closedir(d);
  ck_assert_uint_eq(n, sizeof fuzz_expect / sizeof fuzz_expect[0]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("nccltests");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, real_logs_parse);
  tcase_add_test(tc, real_non_nccltests_rejected);
  tcase_add_test(tc, synth_debug_lines_and_settings);
  tcase_add_test(tc, synth_crlf_exports_wrong);
  tcase_add_test(tc, synth_two_runs_and_mpi);
  tcase_add_test(tc, crlf_equals_lf);
  tcase_add_test(tc, na_cells);
  tcase_add_test(tc, old_device_lines_and_timestamps);
  tcase_add_test(tc, truncated_tables);
  tcase_add_test(tc, complete_table_without_summary);
  tcase_add_test(tc, not_nccltests);
  tcase_add_test(tc, nul_byte);
  tcase_add_test(tc, bad_numbers);
  tcase_add_test(tc, bad_headers);
  tcase_add_test(tc, settings_conflicts);
  tcase_add_test(tc, info_channels_and_env);
  tcase_add_test(tc, fuzz_regressions);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
