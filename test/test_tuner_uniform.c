/* What NCCL does with the plugin's answer (issue 17 §2 regBuff, §3), through
 * dlopen of the built plugin and the simulated NCCL host: regBuff (per rank)
 * never changes a decision, no channel count where NCCL does not clamp it,
 * grouped calls left to NCCL unless a rule names them, getChunkSize answered
 * for the decision NCCL is running, measured sizes covered by their own
 * measurements, and NCCL 2.31's IGNORE entries never touched. */
#include <check.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "nccl/tuner_v6.h"
#include "pcie/host.h"
#include "support/pt_test.h"

#define HEAD(extra)                                                                       \
  "version = 1;\nname = \"u\";\n"                                                        \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.30.7\"; date = " \
  "\"2026-12-01\"; mode = \"both\"; };\n" extra

static char *dir;

static void setup(void) {
  dir = pt_test_tmpdir();
  pt_test_reset_tuner();
}

static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static void use_profile(const char *text) { pt_test_use_profile(dir, "u.cfg", text); }

static void open_comm(struct ph_plugin *pl, struct ph_comm *c, int nranks) {
  char err[512];
  ck_assert_msg(ph_plugin_open(pl, pt_test_so(), 6, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(c, pl, (size_t)nranks, 1, 5), ncclSuccess);
}

static void close_comm(struct ph_plugin *pl, struct ph_comm *c) {
  ck_assert_int_eq(ph_comm_finalize(c), ncclSuccess);
  ph_plugin_close(pl);
}

/* getCollInfo as NCCL calls it, with numPipeOps and regBuff, on NCCL's
 * table for an 8-rank PCIe node. Returns whether the table changed. */
static int call(struct ph_comm *c, int coll, size_t n, int pipe, int reg, float t[7][3],
                int *nch) {
  float before[7][3];
  const ncclTuner_v6_t *v6 = c->pl->sym;
  pt_test_nccl_table(t, coll, n, (int)c->nranks, 0);
  memcpy(before, t, sizeof before);
  *nch = 0;
  ck_assert_int_eq(v6->getCollInfo(c->ctx, (ncclFunc_t)coll, n, pipe, (float **)t, 7, 3, reg, nch),
                   ncclSuccess);
  return memcmp(before, t, sizeof before) != 0;
}

/* §2: graph and eager series that rank differently. Two ranks (two
 * contexts of one plugin), one with registered buffers (regBuff = 1 on an
 * eager call), the other without: every decision must be the same. */
START_TEST(ranks_with_different_reg_buff_decide_alike) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = {\n"
              " graph = { sizes = [ 1024L, 65536L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"tree\"; proto = \"ll\"; channels = 2; latency = ( 8.0, 20.0, 400.0 ); },\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 9.0, 21.0, 300.0 ); } ); };\n"
              " eager = { sizes = [ 1024L, 65536L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 9.0, 21.0, 300.0 ); },\n"
              "  { algo = \"tree\"; proto = \"ll\"; channels = 2; latency = ( 10.0, 26.0, 500.0 ); } ); };\n"
              "};\n");
  struct ph_plugin pl;
  struct ph_comm a, b;
  open_comm(&pl, &a, 8);
  ck_assert_int_eq(ph_comm_init(&b, &pl, 8, 1, 5), ncclSuccess);
  int acted = 0, acted_small = 0;
  for (size_t n = 512; n <= (4u << 20); n += n / 7 + 1) {
    float ta[7][3], tb[7][3];
    int ca, cb;
    int ea = call(&a, ncclFuncAllReduce, n, 1, 0, ta, &ca);
    int eb = call(&b, ncclFuncAllReduce, n, 1, 1, tb, &cb);
    ck_assert_msg(ea == eb && !memcmp(ta, tb, sizeof ta) && ca == cb,
                  "%zu B: regBuff 0 and 1 decide differently (%d ch vs %d ch)", n, ca, cb);
    acted += ea;
    acted_small += ea && n <= 65536;
  }
  /* Up to 64 KiB the modes agree on nothing (graph: tree/LL first, eager:
   * ring/LL first): NCCL decides, the plugin never picks one mode's choice.
   * Above the graph series' crossover both rank ring/LL, then tree/LL. */
  ck_assert_int_eq(acted_small, 0);
  ck_assert_int_gt(acted, 5);
  ck_assert_int_eq(ph_comm_finalize(&b), ncclSuccess);
  close_comm(&pl, &a);
}
END_TEST

/* §2, the other half: where graph and eager agree, both decide. */
START_TEST(agreeing_modes_still_decide) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = {\n"
              " graph = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 9.0, 300.0 ); } ); };\n"
              " eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 12.0, 330.0 ); } ); };\n"
              "};\n");
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  open_comm(&pl, &c, 8);
  for (int reg = 0; reg < 2; reg++) {
    ck_assert(call(&c, ncclFuncAllReduce, 65536, 1, reg, t, &nch));
    ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_LL], 0.0f);
    ck_assert_int_eq(nch, 4);
  }
  close_comm(&pl, &c);
}
END_TEST

/* §3 reproducer: a profile measured with 4 channels, a communicator with 2
 * (NCCL_MAX_NCHANNELS=2, no nccl_env to notice it). NCCL's AllGatherV path
 * takes the all-gather count unclamped: the plugin must never write one.
 * Before, it returned 4. */
START_TEST(all_gather_never_gets_a_channel_count) {
  static const char *ar = "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
                          "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 1.0, 10.0 ); } ); }; };\n";
  char text[2048];
  snprintf(text, sizeof text, "%s%s",
           HEAD("communicator = { channels = 4; };\n")
           "allgather = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
           "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 1.0, 10.0 ); } ); }; };\n",
           ar);
  use_profile(text);
  setenv("NCCL_MAX_NCHANNELS", "2", 1);
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  open_comm(&pl, &c, 8);
  for (size_t n = 1024; n <= (1u << 20); n *= 4) {
    for (int pipe = 1; pipe <= 3; pipe += 2) {
      call(&c, ncclFuncAllGather, n, pipe, 0, t, &nch);
      ck_assert_msg(nch == 0, "all-gather %zu B numPipeOps %d: %d channels written", n, pipe, nch);
    }
    /* All-reduce is clamped by NCCL (scheduleCollTasksToPlan): it keeps its
     * count. */
    ck_assert(call(&c, ncclFuncAllReduce, n, 1, 0, t, &nch));
    ck_assert_int_eq(nch, 4);
  }
  close_comm(&pl, &c);
  /* ring/LL/4 was measured with 4 channels it would not get, so it is not
   * used at all; a candidate measured with NCCL's own count (channels = 0)
   * is, with NCCL's count. */
  snprintf(text, sizeof text, "%s%s",
           HEAD("communicator = { channels = 4; };\n")
           "allgather = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
           "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 1.0, 10.0 ); },\n"
           "  { algo = \"ring\"; proto = \"simple\"; channels = 0; latency = ( 2.0, 12.0 ); } ); }; };\n",
           ar);
  use_profile(text);
  open_comm(&pl, &c, 8);
  for (size_t n = 1024; n <= (1u << 20); n *= 4) {
    ck_assert(call(&c, ncclFuncAllGather, n, 1, 0, t, &nch));
    ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], 0.0f);
    ck_assert_int_eq(nch, 0);
  }
  close_comm(&pl, &c);
}
END_TEST

/* §3: NCCL calls the tuner once for a group of same-(function, op, type)
 * tasks with numPipeOps > 1. A ranking measured on single calls says
 * nothing there; only a rule with a numPipeOps range decides. */
START_TEST(grouped_calls_are_left_to_nccl_unless_a_rule_says) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 1.0, 10.0 ); } ); }; };\n"
              "rules = ( { collective = \"allreduce\"; min_bytes = 4096L; max_bytes = 8192L; "
              "algo = \"tree\"; proto = \"simple\"; channels = 2; min_pipe_ops = 4; },\n"
              "          { collective = \"allreduce\"; min_bytes = 16384L; max_bytes = 32768L; "
              "algo = \"tree\"; proto = \"ll\"; channels = 2; } );\n");
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  open_comm(&pl, &c, 8);
  for (size_t n = 1024; n <= (1u << 20); n *= 2) {
    for (int pipe = 2; pipe <= 16; pipe *= 2) {
      int changed = call(&c, ncclFuncAllReduce, n, pipe, 0, t, &nch);
      int rule = n >= 4096 && n <= 8192 && pipe >= 4;
      ck_assert_msg(changed == rule && (rule ? nch == 2 : nch == 0),
                    "%zu B, numPipeOps %d: changed %d, %d ch", n, pipe, changed, nch);
      if (rule) ck_assert_float_eq(t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE], 0.0f);
    }
    /* Single calls still get the measured ranking (and the rules). */
    ck_assert(call(&c, ncclFuncAllReduce, n, 1, 0, t, &nch));
  }
  close_comm(&pl, &c);
}
END_TEST

/* §3 reproducer: ring/simple/2 (chunk 65536) wins up to 256 KiB, ring/
 * simple/4 (chunk 262144) above, communicator channels = 4. At 1 MiB the
 * plugin decides ring/simple/4; NCCL then asks getChunkSize with one
 * channel's part (256 KiB, nChannels = 1), where the table decides
 * ring/simple/2. Before, the plugin answered 65536 for the /4 decision. */
START_TEST(chunk_is_the_running_decisions) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = { eager = { sizes = [ 65536L, 131072L, 262144L, 524288L, 1048576L, "
              "2097152L, 4194304L, 8388608L, 16777216L ];\n"
              " nccl_default = ( 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6 );\n"
              " candidates = (\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 2; chunk = 65536L;\n"
              "    latency = ( 10.0, 14.0, 22.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0 ); },\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 4; chunk = 262144L;\n"
              "    latency = ( 12.0, 16.0, 24.0, 40.0, 70.0, 130.0, 250.0, 490.0, 970.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  open_comm(&pl, &c, 8);
  ck_assert(call(&c, ncclFuncAllReduce, 1 << 20, 1, 0, t, &nch));
  ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], 0.0f);
  ck_assert_int_eq(nch, 4);
  ck_assert(call(&c, ncclFuncAllReduce, 256 << 10, 1, 0, t, &nch));
  ck_assert_int_eq(nch, 2);
  /* A 256 KiB part: of a 1 MiB /4 call or of a 512 KiB one that NCCL ran on
   * two channels; the plugin cannot tell, so NCCL's own chunk stays. */
  size_t chunk = 131072;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 256 << 10, NCCL_ALGO_RING,
                                 NCCL_PROTO_SIMPLE, &chunk), ncclSuccess);
  ck_assert_uint_ne(chunk, 65536);
  ck_assert_uint_eq(chunk, 131072);
  /* A 2 MiB part comes from calls of 2..8 MiB, all ring/simple/4. */
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 2 << 20, NCCL_ALGO_RING,
                                 NCCL_PROTO_SIMPLE, &chunk), ncclSuccess);
  ck_assert_uint_eq(chunk, 262144);
  /* A 16 KiB part: only from calls of 16..64 KiB, where NCCL decides (below
   * the measured sizes), and from the 64 KiB /2 decision: they disagree. */
  chunk = 4096;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 16 << 10, NCCL_ALGO_RING,
                                 NCCL_PROTO_SIMPLE, &chunk), ncclSuccess);
  ck_assert_uint_eq(chunk, 4096);
  close_comm(&pl, &c);
}
END_TEST

/* §3 reproducer: ring/LL/4 beats NCCL's default by 20 % at 64 KiB and
 * 128 KiB and loses at 256 KiB; NCCL's choice is not identified (no
 * candidate matches its default). Before, the segment 128..256 KiB needed
 * a win at both ends, so 131071 B was tuned and 131072 B left to NCCL. */
START_TEST(a_measured_win_covers_its_own_size) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = { eager = { sizes = [ 65536L, 131072L, 262144L ];\n"
              " nccl_default = ( 30.0, 40.0, 50.0 );\n"
              " candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 24.0, 32.0, 80.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  open_comm(&pl, &c, 8);
  ck_assert(call(&c, ncclFuncAllReduce, 131071, 1, 0, t, &nch));
  ck_assert_msg(call(&c, ncclFuncAllReduce, 131072, 1, 0, t, &nch),
                "131072 B, measured as a win, left to NCCL");
  ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_LL], 0.0f);
  ck_assert_int_eq(nch, 4);
  ck_assert(!call(&c, ncclFuncAllReduce, 131073, 1, 0, t, &nch));
  ck_assert(!call(&c, ncclFuncAllReduce, 262144, 1, 0, t, &nch));
  close_comm(&pl, &c);
}
END_TEST

/* §3, NCCL 2.31 (dev, src/tuning/tuning.cc ncclTuningCompute): the table
 * handed to the tuner starts as NCCL_TUNING_IGNORE (-1.0) and only the
 * tunings NCCL computed get a time; selection then takes the plain minimum,
 * so a negative written by a tuner would win. The plugin never writes a
 * negative, and never touches an IGNORE entry, whatever the table holds. */
START_TEST(ignore_entries_are_never_touched) {
  use_profile(HEAD("communicator = { channels = 4; };\n")
              "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"tree\"; proto = \"ll\"; channels = 4; latency = ( 1.0, 10.0 ); },\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 2.0, 20.0 ); },\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 3.0, 30.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  open_comm(&pl, &c, 8);
  const ncclTuner_v6_t *v6 = pl.sym;
  unsigned seed = 17;
  int acted = 0;
  for (int k = 0; k < 4000; k++) {
    float t[7][3], before[7][3];
    for (int i = 0; i < 21; i++) {
      int r = rand_r(&seed) % 4;
      ((float *)t)[i] = r == 0 ? -1.0f : r == 1 ? 0.0f : (float)(rand_r(&seed) % 1000) / 10.0f;
    }
    memcpy(before, t, sizeof t);
    int nch = 0;
    size_t n = 1024 + (size_t)rand_r(&seed) % (1u << 20);
    ck_assert_int_eq(v6->getCollInfo(c.ctx, ncclFuncAllReduce, n, 1, (float **)t, 7, 3, k & 1, &nch),
                     ncclSuccess);
    for (int i = 0; i < 21; i++) {
      float was = ((float *)before)[i], now = ((float *)t)[i];
      ck_assert_msg(now >= 0.0f || now == was, "entry %d: %g written over %g", i, now, was);
      ck_assert_msg(was != -1.0f || now == -1.0f, "IGNORE entry %d became %g", i, now);
    }
    acted += memcmp(before, t, sizeof t) != 0;
  }
  ck_assert_int_gt(acted, 1000);
  close_comm(&pl, &c);
}
END_TEST

/* §3, NCCL 2.31: the tuner's count is a cap under NCCL's size heuristic
 * (dev, src/tuning/tuning_general.cc ncclTuningGetChannels). For a profile
 * measured on 2.31, the trace and show print what runs: ring/simple asked
 * for 4 channels runs 2 at 64 KiB (4 only from 4 x 512 x 64 B = 128 KiB). */
static const char *v231 =
    "version = 1;\nname = \"v\";\n"
    "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"%s\"; date = "
    "\"2026-12-01\"; mode = \"both\"; };\ncommunicator = { channels = 4; };\n"
    "allreduce = { eager = { sizes = [ 16384L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 10.0, 100.0 ); } ); }; };\n";

START_TEST(nccl_2_31_runs_fewer_channels_at_small_sizes) {
  char text[1024];
  struct ph_plugin pl;
  struct ph_comm c;
  float t[7][3];
  int nch;
  snprintf(text, sizeof text, v231, "2.31.0");
  use_profile(text);
  setenv("PCIE_TUNER_TRACE", "1", 1);
  open_comm(&pl, &c, 8);
  ph_log_clear();
  ck_assert(call(&c, ncclFuncAllReduce, 65536, 1, 0, t, &nch));
  ck_assert_int_eq(nch, 4); /* the cap the plugin writes is the measured count */
  ck_assert(call(&c, ncclFuncAllReduce, 262144, 1, 0, t, &nch));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "allreduce 65536 B eager -> ring/simple 2 ch (NCCL 2.31+ "
                                               "lowers it at this size)"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "allreduce 262144 B eager -> ring/simple 4 ch (rank 1)"), 1);
  close_comm(&pl, &c);
  char *out, *err;
  char *p = pt_test_write(dir, "v.cfg", text);
  ck_assert_int_eq(pt_test_cli_run(dir, 60, &out, &err, "show %s --eager", p), 0);
  ck_assert_msg(strstr(out, "NCCL 2.31.0 takes a tuner's count as a cap"), "%s", out);
  ck_assert_msg(strstr(out, "ring/simple/4               1-4 "), "%s", out);
  free(out), free(err), free(p);
  /* Measured on 2.30.7: the count runs as written. */
  snprintf(text, sizeof text, v231, "2.30.7");
  use_profile(text);
  open_comm(&pl, &c, 8);
  ph_log_clear();
  ck_assert(call(&c, ncclFuncAllReduce, 65536, 1, 0, t, &nch));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "allreduce 65536 B eager -> ring/simple 4 ch (rank 1)"), 1);
  close_comm(&pl, &c);
  unsetenv("PCIE_TUNER_TRACE");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("uniform");
  TCase *tc = tcase_create("dlopen");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, ranks_with_different_reg_buff_decide_alike);
  tcase_add_test(tc, agreeing_modes_still_decide);
  tcase_add_test(tc, all_gather_never_gets_a_channel_count);
  tcase_add_test(tc, grouped_calls_are_left_to_nccl_unless_a_rule_says);
  tcase_add_test(tc, chunk_is_the_running_decisions);
  tcase_add_test(tc, a_measured_win_covers_its_own_size);
  tcase_add_test(tc, ignore_entries_are_never_touched);
  tcase_add_test(tc, nccl_2_31_runs_fewer_channels_at_small_sizes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
