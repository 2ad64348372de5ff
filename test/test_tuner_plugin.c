/* The plugin as NCCL sees it: dlopen of the built .so through the simulated
 * NCCL host, every ABI version, profile selection, failure handling and the
 * guarantees getCollInfo gives NCCL. */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/sim_box.h"
#include "pcie/ncclver.h"
#include "nccl/common.h"
#include "pcie/control.h"
#include "pcie/host.h"
#include "pcie/nccl_model.h"
#include "support/pt_test.h"

/* With a passing LL128 screen recorded: without one the plugin never
 * chooses LL128 (pt_profile_ll128_usable; test_cli_screen). */
#define HEAD(match)                                                                       \
  "version = 1;\nname = \"p\";\nmatch = { " match " };\n"                                \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = " \
  "\"2026-11-30\"; mode = \"both\"; extra = { ll128_screen = { result = \"pass\"; }; }; };\n"

/* graph: LL128/8ch first (often disabled), then ring/LL/4, then
 * tree/simple/3; eager: the same two first, then ring/simple/2. Both modes
 * decide from the common prefix (regBuff differs per rank). */
static const char *modes_profile =
    HEAD("nranks = 8;")
    "communicator = { channels = 8; };\n"
    "allreduce = {\n"
    " graph = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll128\"; channels = 8; latency = ( 5.0, 50.0 ); },\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); },\n"
    "  { algo = \"tree\"; proto = \"simple\"; channels = 3; latency = ( 30.0, 300.0 ); } ); };\n"
    " eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
    "  { algo = \"ring\"; proto = \"ll128\"; channels = 8; latency = ( 5.0, 50.0 ); },\n"
    "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); },\n"
    "  { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 20.0, 200.0 ); } ); };\n"
    "};\n";

static char *dir;

static void setup(void) {
  dir = pt_test_tmpdir();
  pt_test_reset_tuner();
}

static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static void use_profile(const char *name, const char *text) { pt_test_use_profile(dir, name, text); }

static void open_plugin(struct ph_plugin *pl, int version) {
  char err[512];
  ck_assert_msg(ph_plugin_open(pl, pt_test_so(), version, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(pl->version, version ? version : 6);
}

static void decide(struct ph_comm *c, int coll, size_t n, int reg, int ll128, struct ph_choice *ch) {
  float t[7][3];
  pt_test_nccl_table(t, coll, n, (int)c->nranks, ll128);
  ph_decide(c, coll, n, reg, t, ch);
  ck_assert_int_eq(ch->rc, ncclSuccess);
}

START_TEST(newest_symbol_first) {
  struct ph_plugin pl;
  open_plugin(&pl, 0);
  ck_assert_int_eq(pl.version, 6);
  ck_assert_str_eq(((const ncclTuner_v6_t *)pl.sym)->name, "PcieTuner");
  ck_assert_ptr_nonnull(((const ncclTuner_v6_t *)pl.sym)->getChunkSize);
  ph_plugin_close(&pl);
}
END_TEST

/* The simulated host tries first what its release tries first (the one
 * release -> ABI table, tuner/ncclver.c: NCCL 2.30, v6) and, asked for v7
 * by name, runs NCCL 2.32's ABI with its larger constants. */
START_TEST(host_probes_as_the_release_it_models) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  int major, minor;
  ck_assert_int_eq(pt_nccl_version_parse(PT_SIM_NCCL, &major, &minor), 0);
  open_plugin(&pl, 0);
  ck_assert_int_eq(pl.version, pt_nccl_tuner_abi(minor));
  ph_plugin_close(&pl);
  open_plugin(&pl, 7);
  ck_assert_int_eq(pl.version, 7);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  decide(&c, PT_ALLREDUCE, 65536, 1, 0, &ch);
  ck_assert_int_ge(ch.algo, 0);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(same_decisions_through_every_version) {
  pt_test_use_example_profile();
  struct ph_plugin pl[5];
  struct ph_comm c[5];
  for (int v = 2; v <= 6; v++) {
    open_plugin(&pl[v - 2], v);
    ck_assert_int_eq(ph_comm_init(&c[v - 2], &pl[v - 2], 8, 1, 42), ncclSuccess);
  }
  unsigned seed = 1;
  int changed = 0;
  for (int k = 0; k < 3000; k++) {
    int coll = k % 5;
    size_t n = (size_t)1 << (rand_r(&seed) % 30);
    n += (size_t)rand_r(&seed) % n;
    struct ph_choice ref, got;
    /* v2 and v3 have no regBuff: they get eager decisions, as v4+ with 0. */
    decide(&c[4], coll, n, 0, 0, &ref);
    for (int v = 2; v <= 5; v++) {
      decide(&c[v - 2], coll, n, 0, 0, &got);
      ck_assert_msg(got.algo == ref.algo && got.proto == ref.proto && got.nchannels == ref.nchannels,
                    "v%d differs from v6 for coll %d at %zu B: %d/%d/%d vs %d/%d/%d", v, coll, n,
                    got.algo, got.proto, got.nchannels, ref.algo, ref.proto, ref.nchannels);
    }
    decide(&c[4], coll, n, 1, 0, &ref);
    for (int v = 4; v <= 5; v++) {
      decide(&c[v - 2], coll, n, 1, 0, &got);
      ck_assert(got.algo == ref.algo && got.proto == ref.proto && got.nchannels == ref.nchannels);
    }
    changed += ref.cost == 0.0f; /* the plugin's mark on the entry it chose */
  }
  /* The profile really decided (all-reduce; its all-gather candidates were
   * not measured with NCCL's own count, so all-gather stays NCCL's). */
  ck_assert_int_gt(changed, 500);
  for (int v = 2; v <= 6; v++) {
    ck_assert_int_eq(ph_comm_finalize(&c[v - 2]), ncclSuccess);
    ph_plugin_close(&pl[v - 2]);
  }
}
END_TEST

START_TEST(reg_buff_sees_only_what_both_modes_agree_on) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  use_profile("m.cfg", modes_profile);
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  decide(&c, ncclFuncAllReduce, 65536, 1, 0, &ch); /* graph, LL128 disabled: next ranked */
  ck_assert_int_eq(ch.algo, NCCL_ALGO_RING);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 4);
  ck_assert_float_eq(ch.cost, 0.0f);
  decide(&c, ncclFuncAllReduce, 65536, 1, 1, &ch); /* LL128 opted in: first choice */
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL128);
  ck_assert_int_eq(ch.nchannels, 8);
  /* Eager: the same; its third choice (ring/simple/2) differs from the
   * graph's (tree/simple/3), so neither is ever reached. */
  decide(&c, ncclFuncAllReduce, 65536, 0, 0, &ch);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 4);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(nothing_usable_leaves_the_table_alone) {
  struct ph_plugin pl;
  struct ph_comm c;
  use_profile("m.cfg", modes_profile);
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  const ncclTuner_v6_t *t = pl.sym;
  float table[7][3], before[7][3];
  pt_test_nccl_table(table, ncclFuncAllReduce, 4096, 8, 0);
  table[NCCL_ALGO_RING][NCCL_PROTO_LL] = -1.0f;
  table[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = -1024.0f;
  memcpy(before, table, sizeof table);
  int nch = 0;
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, 1, (float **)table, 7, 3, 1, &nch),
                   ncclSuccess);
  ck_assert_int_eq(memcmp(before, table, sizeof table), 0);
  ck_assert_int_eq(nch, 0);
  /* An entry of exactly 0 is usable (>= 0) and gets chosen. */
  table[NCCL_ALGO_RING][NCCL_PROTO_LL] = 0.0f;
  table[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 0.0f; /* lower index, would win a tie */
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, 1, (float **)table, 7, 3, 1, &nch),
                   ncclSuccess);
  int a, p;
  ck_assert_int_eq(pt_nccl_select(table, &a, &p), 0);
  ck_assert_int_eq(a, NCCL_ALGO_RING);
  ck_assert_int_eq(p, NCCL_PROTO_LL);
  ck_assert_int_eq(nch, 4);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(junk_arguments_never_error) {
  struct ph_plugin pl;
  struct ph_comm c;
  use_profile("m.cfg", modes_profile);
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  const ncclTuner_v6_t *t = pl.sym;
  float table[7][3];
  int nch = 0;
  size_t chunk = 12345;
  pt_test_nccl_table(table, ncclFuncAllReduce, 4096, 8, 0);
  ck_assert_int_eq(t->getCollInfo(NULL, ncclFuncAllReduce, 4096, 1, (float **)table, 7, 3, 1, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, (ncclFunc_t)-3, 4096, 1, (float **)table, 7, 3, 1, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, (ncclFunc_t)9, 4096, 1, (float **)table, 7, 3, 1, &nch), 0);
  ck_assert_int_eq(nch, 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 0, 1, (float **)table, 7, 3, 1, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, SIZE_MAX, 1, (float **)table, 7, 3, 0, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 64, 1, (float **)table, 2, 1, 0, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 64, 1, (float **)table, 0, 0, 0, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 64, 1, NULL, 7, 3, 0, &nch), 0);
  ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 64, 1, (float **)table, 7, 3, 0, NULL), 0);
  ck_assert_int_eq(t->getChunkSize(NULL, ncclFuncAllReduce, 64, 1, 2, 1, &chunk), 0);
  ck_assert_int_eq(t->getChunkSize(c.ctx, (ncclFunc_t)77, 64, -5, 9, 1, &chunk), 0);
  ck_assert_int_eq(t->getChunkSize(c.ctx, ncclFuncAllReduce, 64, 1, 2, 1, NULL), 0);
  ck_assert_uint_eq(chunk, 12345);
  ck_assert_int_eq(t->finalize(NULL), 0);
  /* v2's out-parameters */
  struct ph_plugin p2;
  struct ph_comm c2;
  open_plugin(&p2, 2);
  ck_assert_int_eq(ph_comm_init(&c2, &p2, 8, 1, 1), 0);
  const ncclTuner_v2_t *t2 = p2.sym;
  int algo = -1, proto = -1;
  ck_assert_int_eq(t2->getCollInfo(c2.ctx, (ncclFunc_t)42, 64, 0, 0, 1, &algo, &proto, &nch), 0);
  ck_assert_int_eq(algo, -1);
  ck_assert_int_eq(t2->getCollInfo(c2.ctx, ncclFuncAllReduce, 64, 0, 0, 1, NULL, NULL, NULL), 0);
  ck_assert_int_eq(t2->getCollInfo(NULL, ncclFuncAllReduce, 64, 0, 0, 1, &algo, &proto, &nch), 0);
  ck_assert_int_eq(t2->destroy(NULL), 0);
  ph_comm_finalize(&c2);
  ph_plugin_close(&p2);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

/* 10^5 random cost tables: no call errors; no negative entry is touched;
 * when the plugin acts, NCCL's selection lands on an entry that was usable,
 * now 0, and every other change is a lower-index 0 raised to keep the tie
 * from stealing it; when it does not act, nothing changes. */
START_TEST(random_tables_property) {
  pt_test_use_example_profile();
  struct ph_plugin pl;
  struct ph_comm c;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 7), ncclSuccess);
  const ncclTuner_v6_t *t = pl.sym;
  static const float negs[] = {-1.0f, -1024.0f, -0.5f, -1e30f};
  unsigned seed = 12345;
  int acted = 0;
  for (int k = 0; k < 100000; k++) {
    float table[7][3], before[7][3];
    for (int a = 0; a < 7; a++)
      for (int q = 0; q < 3; q++) {
        int r = rand_r(&seed) % 10;
        table[a][q] = r < 4 ? negs[r] : r == 4 ? 0.0f : (float)(rand_r(&seed) % 100000) / 7.0f;
      }
    memcpy(before, table, sizeof table);
    int nch = 0;
    size_t n = (size_t)rand_r(&seed) >> (rand_r(&seed) % 31);
    int rc = t->getCollInfo(c.ctx, (ncclFunc_t)(rand_r(&seed) % 7 - 1), n, 1, (float **)table, 7, 3,
                            rand_r(&seed) % 2, &nch);
    ck_assert_int_eq(rc, ncclSuccess);
    int changed = 0;
    for (int a = 0; a < 7; a++)
      for (int q = 0; q < 3; q++) {
        if (before[a][q] < 0) ck_assert_float_eq(table[a][q], before[a][q]);
        changed += table[a][q] != before[a][q];
      }
    /* Untouched (0 in, 0 out) or a count the example profile lists (2 or 4,
     * within its communicator's 4): never anything else. */
    ck_assert_msg(nch == 0 || nch == 2 || nch == 4, "nChannels %d", nch);
    /* The plugin may act without setting a channel count (all-gather with an
     * unknown communicator count, rules that keep NCCL's). */
    if (nch || changed) {
      acted++;
      int a, q;
      ck_assert_int_eq(pt_nccl_select(table, &a, &q), 0);
      ck_assert_float_eq(table[a][q], 0.0f);
      ck_assert(before[a][q] >= 0.0f);
      for (int i = 0; i < 7 * 3; i++) {
        float was = (&before[0][0])[i], now = (&table[0][0])[i];
        if (i == a * 3 + q || was == now) continue;
        ck_assert_msg(was == 0.0f && now > 0.0f && i < a * 3 + q,
                      "entry %d changed from %g to %g", i, was, now);
      }
    } else {
      ck_assert_int_eq(changed, 0);
    }
  }
  ck_assert_int_gt(acted, 10000);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

/* A grouped call (numPipeOps > 1: NCCL aggregated several operations into
 * one decision) is left to NCCL by a profile without pipe-op rules: it was
 * measured one operation at a time. The same call with one operation is
 * tuned. */
START_TEST(grouped_calls_are_left_to_nccl) {
  pt_test_use_example_profile();
  struct ph_plugin pl;
  struct ph_comm c;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  const ncclTuner_v6_t *t = pl.sym;
  for (int ops = 1; ops <= 3; ops++) {
    float table[7][3], before[7][3];
    int nch = 0;
    pt_test_nccl_table(table, ncclFuncAllReduce, 4096, 8, 0);
    memcpy(before, table, sizeof table);
    ck_assert_int_eq(t->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, ops, (float **)table, 7, 3, 1, &nch),
                     ncclSuccess);
    int changed = memcmp(before, table, sizeof table) != 0 || nch != 0;
    ck_assert_msg(changed == (ops == 1), "numPipeOps %d: %s", ops, changed ? "tuned" : "left to NCCL");
  }
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

/* Issue 30 §4: finalize called twice on one context (NCCL calls it once)
 * returns success and does nothing the second time; it was a double free
 * (glibc aborted the process). The plugin keeps working afterwards. */
START_TEST(finalize_twice_is_harmless) {
  pt_test_use_example_profile();
  struct ph_plugin pl;
  struct ph_comm c, d;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_int_eq(ph_comm_init(&d, &pl, 8, 1, 2), ncclSuccess);
  void *ctx = c.ctx;
  ck_assert_ptr_nonnull(ctx);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  c.ctx = ctx;
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  /* The other communicator still decides, and finalizes once. */
  struct ph_choice ch;
  decide(&d, ncclFuncAllReduce, 4096, 1, 0, &ch);
  ck_assert_int_gt(ch.nchannels, 0);
  ck_assert_int_eq(ph_comm_finalize(&d), ncclSuccess);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(chunk_size_from_profile) {
  use_profile("c.cfg",
              HEAD("") "allreduce = { graph = { sizes = [ 1024L, 67108864L ]; nccl_default = ( 1000000.0, 1000000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 2; chunk = 70000L; latency = ( 5.0, 500.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 4, 1, 1), 0);
  /* A part past one loop (4 ranks x 69632 B) runs the chunk as set. */
  size_t chunk = 131072;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 300000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, &chunk), 0);
  ck_assert_uint_eq(chunk, 70000 / 512 * 512);
  /* One loop: runRing recomputes the chunk, NCCL's own stays. */
  chunk = 131072;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 1024, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, &chunk), 0);
  ck_assert_uint_eq(chunk, 131072);
  chunk = 4096;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 1024, NCCL_ALGO_RING, NCCL_PROTO_LL, &chunk), 0);
  ck_assert_uint_eq(chunk, 4096);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(init_logs_profile_identity) {
  struct ph_plugin pl;
  struct ph_comm c;
  use_profile("m.cfg", modes_profile);
  open_plugin(&pl, 5);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 0xabc), 0);
  ck_assert_uint_eq(ph_log_count(), 1);
  struct ph_log_entry e;
  ck_assert_int_eq(ph_log_get(0, &e), 0);
  ck_assert_int_eq(e.level, NCCL_LOG_INFO);
  ck_assert_uint_eq(e.flags, NCCL_INIT | NCCL_TUNING);
  ck_assert_ptr_nonnull(strstr(e.msg, "m.cfg"));
  ck_assert_ptr_nonnull(strstr(e.msg, "name 'p'"));
  ck_assert_ptr_nonnull(strstr(e.msg, "hash "));
  ck_assert_ptr_nonnull(strstr(e.msg, "intervals "));
  /* Nothing is logged per decision by default... */
  struct ph_choice ch;
  decide(&c, ncclFuncAllReduce, 4096, 1, 0, &ch);
  ck_assert_uint_eq(ph_log_count(), 1);
  ph_comm_finalize(&c);
  /* ...and one line per decision with PCIE_TUNER_TRACE=1. */
  setenv("PCIE_TUNER_TRACE", "1", 1);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 0xabc), 0);
  ph_log_clear();
  decide(&c, ncclFuncAllReduce, 4096, 1, 0, &ch);
  decide(&c, ncclFuncBroadcast, 4096, 1, 0, &ch);
  ck_assert_uint_eq(ph_log_count(), 2);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "allreduce 4096 B graph -> ring/ll 4 ch"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "broadcast 4096 B graph -> NCCL's own choice"), 1);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

static void expect_passive(const char *needle, int level) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_msg(ph_log_find(level, needle) == 1, "expected one level-%d message with '%s'", level,
                needle);
  ck_assert_uint_eq(ph_log_count(), 1);
  float t[7][3], before[7][3];
  for (size_t n = 1; n < ((size_t)1 << 32); n *= 7) {
    pt_test_nccl_table(t, ncclFuncAllReduce, n, 8, 0);
    memcpy(before, t, sizeof t);
    ph_decide(&c, ncclFuncAllReduce, n, (int)(n & 1), t, &ch);
    ck_assert_int_eq(ch.rc, 0);
    ck_assert_int_eq(ch.nchannels, 0);
    ck_assert_int_eq(memcmp(before, t, sizeof t), 0);
  }
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
}

START_TEST(invalid_profile_warns_once_and_stays_passive) {
  use_profile("bad.cfg", HEAD("") "allreduce = { graph = { sizes = [ 1024L ]; nccl_default = ( 1000000.0 ); candidates = (\n"
                                  "  { algo = \"ring\"; proto = \"ll\"; channels = 99; latency = ( 5.0 ); } ); }; };\n");
  expect_passive("bad.cfg:6: channels must be in 0..64, not 99", NCCL_LOG_WARN);
  struct ph_log_entry e;
  ph_log_get(0, &e);
  ck_assert_uint_eq(e.flags, (unsigned long)NCCL_ALL); /* visible whatever NCCL_DEBUG_SUBSYS says */
}
END_TEST

START_TEST(missing_profile_leaves_nccl_alone) {
  setenv("PCIE_TUNER_PROFILE", "/nonexistent/profile.cfg", 1);
  expect_passive("PCIE_TUNER_PROFILE names /nonexistent/profile.cfg", NCCL_LOG_WARN);
}
END_TEST

START_TEST(unset_env_and_nothing_installed_is_passive) {
  /* Run from the empty temp dir so ./profiles does not exist; the build
   * tree has no share/nccl-pcie-tuner beside its lib. */
  ck_assert_int_eq(chdir(dir), 0);
  expect_passive("no profile matches nRanks=8 nNodes=1", NCCL_LOG_INFO);
}
END_TEST

/* ./profiles is not searched: it depends on each rank's working directory,
 * and a checkout's holds the synthetic example. */
START_TEST(unset_env_ignores_dot_profiles) {
  char *sub = NULL;
  ck_assert(asprintf(&sub, "%s/profiles", dir) > 0);
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  free(pt_test_write(sub, "box.cfg", modes_profile));
  ck_assert_int_eq(chdir(dir), 0);
  expect_passive("no profile matches nRanks=8 nNodes=1", NCCL_LOG_INFO);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "./profiles"), 0);
  free(sub);
}
END_TEST

static const char *named(const char *name, const char *match);

/* An installed copy finds PREFIX/share/nccl-pcie-tuner/profiles beside its
 * own PREFIX/lib, and nothing else (not ./profiles). */
START_TEST(installed_profiles_beside_the_library) {
  char *cmd = NULL, *so = NULL, *share = NULL, *cwd_profiles = NULL;
  ck_assert(asprintf(&cmd, "mkdir -p '%s/lib' '%s/share/nccl-pcie-tuner/profiles' '%s/run/profiles' && cp '%s' '%s/lib/'",
                     dir, dir, dir, pt_test_so(), dir) > 0);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert(asprintf(&so, "%s/lib/libnccl-tuner-pcie.so", dir) > 0);
  ck_assert(asprintf(&share, "%s/share/nccl-pcie-tuner/profiles", dir) > 0);
  ck_assert(asprintf(&cwd_profiles, "%s/run/profiles", dir) > 0);
  free(pt_test_write(share, "installed.cfg", named("installed", "nranks = 8;")));
  free(pt_test_write(cwd_profiles, "local.cfg", named("local", "nranks = 8; nnodes = 1;")));
  ck_assert_int_eq(chdir(cwd_profiles), 0);
  ck_assert_int_eq(chdir(".."), 0);
  struct ph_plugin pl;
  struct ph_comm c;
  char err[512];
  ck_assert_msg(ph_plugin_open(&pl, so, 0, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'installed'"), 1);
  ph_comm_finalize(&c);
  /* Nothing installed fits 2 nodes; ./profiles/local.cfg would not either,
   * and for 4 ranks nothing is looked at beyond the installed directory. */
  ck_assert_int_eq(ph_comm_init(&c, &pl, 4, 1, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "no profile matches nRanks=4 nNodes=1"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "share/nccl-pcie-tuner/profiles; set PCIE_TUNER_PROFILE"), 1);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
  free(cmd);
  free(so);
  free(share);
  free(cwd_profiles);
}
END_TEST

static const char *named(const char *name, const char *match) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "version = 1;\nname = \"%s\";\nmatch = { %s };\n"
           "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"x\"; date = \"d\"; mode = \"graph\"; };\n"
           "allreduce = { graph = { sizes = [ 1024L ]; nccl_default = ( 1000000.0 ); candidates = ( { algo = \"ring\"; proto = \"ll\";"
           " channels = 1; latency = ( 5.0 ); } ); }; };\n",
           name, match);
  return buf;
}

START_TEST(directory_most_specific_wins) {
  free(pt_test_write(dir, "a-any.cfg", named("any", "")));
  free(pt_test_write(dir, "b-ranks.cfg", named("ranks8", "nranks = 8;")));
  free(pt_test_write(dir, "c-both.cfg", named("both8x1", "nranks = 8; nnodes = 1;")));
  free(pt_test_write(dir, "d-other.cfg", named("ranks4", "nranks = 4; nnodes = 1;")));
  free(pt_test_write(dir, "notes.txt", "not a profile"));
  setenv("PCIE_TUNER_PROFILE", dir, 1);
  struct ph_plugin pl;
  struct ph_comm c;
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'both8x1'"), 1);
  ph_comm_finalize(&c);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 2, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'ranks8'"), 1);
  ph_comm_finalize(&c);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 2, 1, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'any'"), 1);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(equally_specific_profiles_tie) {
  free(pt_test_write(dir, "x.cfg", named("x", "nranks = 8;")));
  free(pt_test_write(dir, "y.cfg", named("y", "nranks = 8;")));
  free(pt_test_write(dir, "z.cfg", named("z", "nnodes = 2;")));
  setenv("PCIE_TUNER_PROFILE", dir, 1);
  expect_passive("x.cfg and ", NCCL_LOG_WARN);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "y.cfg both match nRanks=8 nNodes=1 equally"), 1);
}
END_TEST

START_TEST(invalid_file_in_directory_is_loud) {
  free(pt_test_write(dir, "good.cfg", named("good", "nranks = 8;")));
  free(pt_test_write(dir, "broken.cfg", "version = 1;\nname = \"x\"\n"));
  setenv("PCIE_TUNER_PROFILE", dir, 1);
  expect_passive("broken.cfg:", NCCL_LOG_WARN);
}
END_TEST

START_TEST(file_not_matching_is_passive) {
  use_profile("four.cfg", named("four", "nranks = 4;"));
  /* Named explicitly and not fitting: a mistake, so a WARN. */
  expect_passive("four.cfg does not match nRanks=8 nNodes=1 (its match: nranks = 4)", NCCL_LOG_WARN);
}
END_TEST

START_TEST(many_communicators_share_one_table) {
  use_profile("m.cfg", modes_profile);
  struct ph_plugin pl;
  static struct ph_comm c[200];
  open_plugin(&pl, 6);
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 200; i++) ck_assert_int_eq(ph_comm_init(&c[i], &pl, 8, 1, (uint64_t)i), 0);
    struct ph_choice ch;
    decide(&c[199], ncclFuncAllReduce, 4096, 0, 0, &ch);
    ck_assert_int_eq(ch.nchannels, 4);
    for (int i = 0; i < 200; i++) ck_assert_int_eq(ph_comm_finalize(&c[i]), 0);
  }
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "hash "), 600);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(exports_only_the_plugin_structs) {
  char *cmd = NULL, *out = NULL, *want = pt_test_exports();
  ck_assert(asprintf(&cmd, "nm -D --defined-only '%s' | awk '{print $3}' | LC_ALL=C sort", pt_test_so()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, NULL), 0);
  /* Exactly mk/exports.txt, the list the version script is made from. */
  ck_assert_str_eq(out, want);
  int tuners = 0;
  for (char *p = strstr(out, "ncclTunerPlugin_v"); p; p = strstr(p + 1, "ncclTunerPlugin_v")) tuners++;
  ck_assert_int_eq(tuners, 6);
  free(cmd);
  free(out);
  free(want);
}
END_TEST

/* The profiler's control interface: found with dlsym on the loaded library,
 * it forces decisions (with or without a profile), reports NCCL-disabled
 * combinations instead of reviving them, and sets the v6 chunk size. */
START_TEST(control_interface_forces_and_reports) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  struct pt_control_stats st;
  ck_assert_int_eq(chdir(dir), 0); /* no profile anywhere: a passive context */
  open_plugin(&pl, 6);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), 0);
  const pcieTunerControl_v1_t *ctl = dlsym(pl.dl, PCIE_CONTROL_SYMBOL);
  ck_assert_ptr_nonnull(ctl);
  ck_assert_int_eq(ctl->version, 1);
  decide(&c, ncclFuncAllReduce, 65536, 1, 0, &ch);
  ck_assert_int_eq(ch.nchannels, 0);
  ck_assert_int_eq(ctl->force(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 5, 40000), 0);
  decide(&c, ncclFuncAllReduce, 65536, 1, 0, &ch);
  decide(&c, ncclFuncAllReduce, 1 << 20, 0, 0, &ch);
  ck_assert_int_eq(ch.algo, NCCL_ALGO_TREE);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_SIMPLE);
  ck_assert_int_eq(ch.nchannels, 5);
  size_t chunk = 131072;
  ph_chunk_size(&c, ncclFuncAllReduce, 1 << 20, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, &chunk);
  ck_assert_uint_eq(chunk, 40000 / 512 * 512);
  ctl->stats(&st);
  ck_assert_uint_eq(st.applied, 2);
  ck_assert_uint_eq(st.disabled, 0);
  /* LL128 is disabled on PCIe: reported, table untouched, counters reset. */
  ck_assert_int_eq(ctl->force(NCCL_ALGO_RING, NCCL_PROTO_LL128, 4, 0), 0);
  float t[7][3], before[7][3];
  pt_test_nccl_table(t, ncclFuncAllReduce, 65536, 8, 0);
  memcpy(before, t, sizeof t);
  ph_decide(&c, ncclFuncAllReduce, 65536, 1, t, &ch);
  ck_assert_int_eq(memcmp(before, t, sizeof t), 0);
  ck_assert_int_eq(ch.nchannels, 0);
  ctl->stats(&st);
  ck_assert_uint_eq(st.applied, 0);
  ck_assert_uint_eq(st.disabled, 1);
  /* Out-of-range requests are refused; algo < 0 hands decisions back. */
  ck_assert_int_eq(ctl->force(7, 0, 1, 0), -1);
  ck_assert_int_eq(ctl->force(1, 3, 1, 0), -1);
  ck_assert_int_eq(ctl->force(1, 0, -1, 0), -1);
  ck_assert_int_eq(ctl->force(1, 0, 65, 0), -1);
  /* Channels 0 forces algo/proto and leaves NCCL's own count (how the
   * sweep measures all-gather and CollNet candidates). */
  ck_assert_int_eq(ctl->force(NCCL_ALGO_RING, NCCL_PROTO_LL, 0, 0), 0);
  decide(&c, ncclFuncAllGather, 1 << 20, 1, 0, &ch);
  ck_assert_int_eq(ch.algo, NCCL_ALGO_RING);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 0);
  ck_assert_int_eq(ctl->force(-1, 0, 0, 0), 0);
  decide(&c, ncclFuncAllReduce, 65536, 1, 0, &ch);
  ck_assert_int_eq(ch.nchannels, 0);
  ph_comm_finalize(&c);
  ph_plugin_close(&pl);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("plugin");
  TCase *tc = tcase_create("dlopen");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, newest_symbol_first);
  tcase_add_test(tc, same_decisions_through_every_version);
  tcase_add_test(tc, reg_buff_sees_only_what_both_modes_agree_on);
  tcase_add_test(tc, nothing_usable_leaves_the_table_alone);
  tcase_add_test(tc, junk_arguments_never_error);
  tcase_add_test(tc, random_tables_property);
  tcase_add_test(tc, finalize_twice_is_harmless);
  tcase_add_test(tc, grouped_calls_are_left_to_nccl);
  tcase_add_test(tc, chunk_size_from_profile);
  tcase_add_test(tc, init_logs_profile_identity);
  tcase_add_test(tc, invalid_profile_warns_once_and_stays_passive);
  tcase_add_test(tc, missing_profile_leaves_nccl_alone);
  tcase_add_test(tc, unset_env_and_nothing_installed_is_passive);
  tcase_add_test(tc, unset_env_ignores_dot_profiles);
  tcase_add_test(tc, directory_most_specific_wins);
  tcase_add_test(tc, equally_specific_profiles_tie);
  tcase_add_test(tc, invalid_file_in_directory_is_loud);
  tcase_add_test(tc, file_not_matching_is_passive);
  tcase_add_test(tc, many_communicators_share_one_table);
  tcase_add_test(tc, exports_only_the_plugin_structs);
  tcase_add_test(tc, host_probes_as_the_release_it_models);
  tcase_add_test(tc, control_interface_forces_and_reports);
  tcase_add_test(tc, installed_profiles_beside_the_library);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
