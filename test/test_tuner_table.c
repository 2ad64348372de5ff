/* The compiled decision table: interpolation, crossovers, boundaries at and
 * between measured sizes, extension, poisoned candidates, rules, the
 * bucketed lookup and the apply step. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/table.h"
#include "support/pt_test.h"

#define HEAD                                                                              \
  "version = 1;\nname = \"t\";\n"                                                        \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = " \
  "\"2026-11-30\"; mode = \"graph\"; };\ncommunicator = { channels = 8; };\n"
/* The same with a passing LL128 screen, without which no LL128 candidate
 * is ever chosen (pt_profile_ll128_usable; test_cli_screen). */
#define HEAD_LL128                                                                        \
  "version = 1;\nname = \"t\";\n"                                                        \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = " \
  "\"2026-11-30\"; mode = \"graph\"; extra = { ll128_screen = { result = \"pass\"; }; }; };\n"  \
  "communicator = { channels = 8; };\n"

static struct pt_profile prof;
static struct pt_table tab;

static void load(const char *text) {
  struct pt_error_rec e;
  ck_assert_msg(pt_profile_load_string(&prof, text, "t.cfg", &e) == 0, "%s:%d: %s", e.file, e.line,
                e.msg);
  ck_assert_int_eq(pt_table_build(&tab, &prof), 0);
}

static void unload(void) {
  pt_table_release(&tab);
  pt_profile_release(&prof);
}

static const struct pt_choice *top(int coll, int mode, uint64_t n) {
  const struct pt_interval *iv = pt_table_lookup(&tab, coll, mode, n);
  ck_assert_ptr_nonnull(iv);
  ck_assert_msg(iv->lo <= n && n <= iv->hi, "interval [%llu,%llu] does not hold %llu",
                (unsigned long long)iv->lo, (unsigned long long)iv->hi, (unsigned long long)n);
  return iv->n ? &iv->c[0] : NULL;
}

/* A: 10us@1000 -> 100us@100000; B: 20us@1000 -> 50us@100000. In log-log the
 * lines cross halfway, at sqrt(1000*100000) = 10000 bytes. */
static const char *crossing =
    HEAD "allreduce = { graph = { sizes = [ 1000L, 100000L ]; nccl_default = ( 1000000.0, 1000000.0 );\n"
    "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); },\n"
    "                 { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 20.0, 50.0 ); } );\n"
    "}; };\n";

START_TEST(crossover_becomes_a_boundary) {
  load(crossing);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 9990)->proto, NCCL_PROTO_LL);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 10010)->proto, NCCL_PROTO_SIMPLE);
  const struct pt_interval *iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, 1000);
  ck_assert_uint_ge(iv->hi, 9998);
  ck_assert_uint_le(iv->hi, 10001);
  /* Both candidates stay ranked, the loser second. */
  ck_assert_int_eq(iv->n, 2);
  ck_assert_int_eq(iv->c[1].proto, NCCL_PROTO_SIMPLE);
  ck_assert_uint_eq(tab.set[PT_ALLREDUCE]->n, 4); /* with the two outside */
  unload();
}
END_TEST

/* A decision rests on data: below the smallest and above the largest
 * measured size, NCCL decides. */
START_TEST(outside_the_measured_range_nccl_decides) {
  load(crossing);
  ck_assert_ptr_null(top(PT_ALLREDUCE, PT_MODE_GRAPH, 0));
  ck_assert_ptr_null(top(PT_ALLREDUCE, PT_MODE_GRAPH, 999));
  ck_assert_int_eq(pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, 999)->kind, PT_IV_OUTSIDE);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 1000)->proto, NCCL_PROTO_LL);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 100000)->proto, NCCL_PROTO_SIMPLE);
  ck_assert_ptr_null(top(PT_ALLREDUCE, PT_MODE_GRAPH, 100001));
  ck_assert_ptr_null(top(PT_ALLREDUCE, PT_MODE_GRAPH, UINT64_MAX));
  /* Graph-only data serve eager calls too; other collectives have none. */
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 5000)->proto, NCCL_PROTO_LL);
  ck_assert_ptr_null(pt_table_lookup(&tab, PT_ALLGATHER, PT_MODE_GRAPH, 50));
  ck_assert_ptr_null(pt_table_lookup(&tab, -1, PT_MODE_GRAPH, 50));
  ck_assert_ptr_null(pt_table_lookup(&tab, 5, PT_MODE_GRAPH, 50));
  unload();
}
END_TEST

START_TEST(interpolation_is_log_log) {
  load(crossing);
  const struct pt_series *s = prof.series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_double_eq_tol(pt_interp_latency(s, s->cand[0].points, 1000), 10.0, 1e-9);
  ck_assert_double_eq_tol(pt_interp_latency(s, s->cand[0].points, 10000), sqrt(10.0 * 100.0), 1e-6);
  ck_assert_double_eq_tol(pt_interp_latency(s, s->cand[1].points, 10000), sqrt(20.0 * 50.0), 1e-6);
  ck_assert_double_eq_tol(pt_interp_latency(s, s->cand[0].points, 10), 10.0, 1e-9);
  ck_assert_double_eq_tol(pt_interp_latency(s, s->cand[0].points, 1u << 30), 100.0, 1e-9);
  ck_assert_double_eq(pt_interp_latency(s, NULL, 10), -1);
  unload();
}
END_TEST

/* C is best but only measured at the first two sizes: it wins between them
 * and is not considered where its next point is missing. */
START_TEST(missing_points_bound_a_candidate) {
  load(HEAD "allreduce = { eager = { sizes = [ 1000L, 10000L, 100000L ]; nccl_default = ( 1000000.0, 1000000.0, 1000000.0 );\n"
            "  candidates = (\n"
            "    { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 50.0, 60.0, 70.0 ); },\n"
            "    { algo = \"tree\"; proto = \"ll\"; channels = 4; latency = ( 5.0, 6.0, \"-\" ); } );\n"
            "}; };\n");
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 1000)->algo, NCCL_ALGO_TREE);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 9999)->algo, NCCL_ALGO_TREE);
  /* Measured at 10000 B, it covers 10000 B itself (issue 17 §3). */
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 10000)->algo, NCCL_ALGO_TREE);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 10001)->algo, NCCL_ALGO_RING);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 50000)->algo, NCCL_ALGO_RING);
  const struct pt_interval *iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_EAGER, 50000);
  ck_assert_int_eq(iv->n, 1);
  unload();
}
END_TEST

START_TEST(wrong_crash_hang_are_never_chosen) {
  static const char *states[] = {"wrong", "crash", "hang"};
  for (int i = 0; i < 3; i++) {
    char text[2048];
    snprintf(text, sizeof text,
             HEAD "allreduce = { graph = { sizes = [ 1000L, 10000L, 100000L ]; nccl_default = ( 1000000.0, 1000000.0, 1000000.0 );\n"
                  "  candidates = (\n"
                  "    { algo = \"ring\"; proto = \"ll128\"; channels = 4; latency = ( 1.0, 1.0, \"%s\" ); },\n"
                  "    { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 50.0, 60.0, 70.0 ); } );\n"
                  "}; };\n",
             states[i]);
    load(text);
    for (uint64_t n = 1000; n <= 100000; n = n * 3 / 2) {
      const struct pt_interval *iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, n);
      ck_assert_int_eq(iv->n, 1);
      ck_assert_int_eq(iv->c[0].proto, NCCL_PROTO_SIMPLE);
    }
    unload();
  }
}
END_TEST

START_TEST(rules_override_inside_their_range) {
  load(HEAD "allreduce = { graph = { sizes = [ 1000L, 100000L ]; nccl_default = ( 1000000.0, 1000000.0 );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); } );\n"
            "}; };\n"
            "rules = ( { collective = \"allreduce\"; min_bytes = 2000L; max_bytes = 3000L; algo = \"tree\";"
            " proto = \"simple\"; channels = 8; },\n"
            "          { collective = \"allreduce\"; min_bytes = 50000L; max_bytes = 60000L; algo = \"tree\";"
            " proto = \"ll\"; mode = \"graph\"; },\n"
            "          { collective = \"reduce\"; min_bytes = 0L; max_bytes = 64L; algo = \"ring\";"
            " proto = \"ll\"; channels = 1; } );\n");
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 1999)->algo, NCCL_ALGO_RING);
  const struct pt_interval *iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, 2000);
  ck_assert_uint_eq(iv->lo, 2000);
  ck_assert_uint_eq(iv->hi, 3000);
  ck_assert_int_eq(iv->c[0].algo, NCCL_ALGO_TREE);
  ck_assert_int_eq(iv->c[0].channels, 8);
  ck_assert_int_eq(iv->c[0].from_rule, 1);
  ck_assert_int_eq(iv->n, 2); /* the measured choice stays as the fallback */
  ck_assert_int_eq(iv->c[1].algo, NCCL_ALGO_RING);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 3001)->algo, NCCL_ALGO_RING);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_EAGER, 2500)->algo, NCCL_ALGO_TREE);
  /* A graph-only rule would make a rank that registered its buffers
   * (regBuff = 1 on an eager call) decide unlike one that did not: where the
   * modes differ, only their common prefix is kept, here nothing. */
  iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, 55000);
  ck_assert_int_eq(iv->n, 0);
  ck_assert_int_eq(iv->kind, PT_IV_MODES_DIFFER);
  ck_assert_ptr_eq(pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_EAGER, 55000), iv);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 60001)->algo, NCCL_ALGO_RING);
  /* A rule alone serves a collective without measurements; outside it, nothing. */
  ck_assert_int_eq(top(PT_REDUCE, PT_MODE_EAGER, 64)->channels, 1);
  ck_assert_ptr_null(top(PT_REDUCE, PT_MODE_EAGER, 65));
  unload();
}
END_TEST

START_TEST(bucketed_lookup_matches_a_linear_scan) {
  /* Many sizes and candidates with jittered latencies: lots of intervals. */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  unsigned seed = 7;
  fputs(HEAD "allreduce = { graph = { sizes = [ ", f);
  for (int i = 0; i < 200; i++) fprintf(f, "%s%lluL", i ? ", " : "", 8ULL + (unsigned long long)i * i * i * 40);
  fputs(" ];\n nccl_default = ( ", f);
  for (int i = 0; i < 200; i++) fprintf(f, "%s1000000.0", i ? ", " : "");
  fputs(" );\n candidates = (\n", f);
  for (int c = 0; c < 6; c++) {
    fprintf(f, "%s{ algo = \"ring\"; proto = \"ll\"; channels = %d; latency = ( ", c ? "," : "", c + 1);
    for (int i = 0; i < 200; i++) fprintf(f, "%s%.3f", i ? ", " : "", 10.0 + i + (rand_r(&seed) % 1000) / 50.0);
    fputs(" ); }\n", f);
  }
  fputs("); }; };\n", f);
  fclose(f);
  load(text);
  const struct pt_ivset *set = tab.set[PT_ALLREDUCE];
  ck_assert_uint_gt(set->n, 50);
  ck_assert_uint_eq(set->iv[0].lo, 0);
  ck_assert_uint_eq(set->iv[set->n - 1].hi, UINT64_MAX);
  for (size_t i = 1; i < set->n; i++) ck_assert_uint_eq(set->iv[i].lo, set->iv[i - 1].hi + 1);
  for (int k = 0; k < 200000; k++) {
    uint64_t n = ((uint64_t)rand_r(&seed) << 31 | (uint64_t)rand_r(&seed)) >> (rand_r(&seed) % 62);
    size_t lin = 0;
    while (set->iv[lin].hi < n) lin++;
    ck_assert_ptr_eq(pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, n), &set->iv[lin]);
  }
  free(text);
  unload();
}
END_TEST

START_TEST(apply_respects_disabled_entries) {
  struct pt_interval iv = {
      .n = 3,
      .c = {{.algo = NCCL_ALGO_RING, .proto = NCCL_PROTO_LL128, .channels = 8, .set_channels = 8},
            {.algo = NCCL_ALGO_TREE, .proto = NCCL_PROTO_LL, .channels = 3, .set_channels = 3},
            {.algo = NCCL_ALGO_RING, .proto = NCCL_PROTO_SIMPLE, .channels = 2, .set_channels = 2}}};
  float t[7][3];
  int nch = 0;
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) t[a][p] = 5.0f;
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = -1.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = -1024.0f; /* fp8 quirk: also disabled */
  t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 0.0f; /* a zero elsewhere must not win the tie */
  ck_assert_int_eq(pt_table_apply(&iv, &t[0][0], 7, 3, 1, &nch), 2);
  ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], 0.0f);
  ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_LL128], -1.0f);
  ck_assert_float_eq(t[NCCL_ALGO_TREE][NCCL_PROTO_LL], -1024.0f);
  ck_assert(t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] > 0.0f);
  ck_assert_int_eq(nch, 2);
  /* NaN is not usable either; nothing usable leaves everything as it was. */
  float u[7][3], before[7][3];
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) u[a][p] = -1.0f;
  u[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = NAN;
  memcpy(before, u, sizeof u);
  nch = 0;
  ck_assert_int_eq(pt_table_apply(&iv, &u[0][0], 7, 3, 1, &nch), -1);
  ck_assert_int_eq(memcmp(before, u, sizeof u), 0);
  ck_assert_int_eq(nch, 0);
  /* A smaller table than NCCL's: out-of-range candidates are skipped. */
  float small[2][2] = {{1, 1}, {1, -1}}; /* ring/ll128 disabled */
  ck_assert_int_eq(pt_table_apply(&iv, &small[0][0], 2, 2, 1, &nch), 1);
  ck_assert_float_eq(small[NCCL_ALGO_TREE][NCCL_PROTO_LL], 0.0f);
  ck_assert_int_eq(pt_table_apply(NULL, &small[0][0], 2, 2, 1, &nch), -1);
  ck_assert_int_eq(pt_table_apply(&iv, NULL, 7, 3, 1, &nch), -1);
  ck_assert_int_eq(pt_table_apply(&iv, &small[0][0], 0, 3, 1, &nch), -1);
}
END_TEST

/* The unseen-combination check (table_hot.h) on every table shape: a
 * profile with ring/ll128 recorded unsupported yields where that entry is
 * NCCL's best, in a 7x3 table (SSE2 path) and in smaller ones (scalar
 * path), and never reads beyond a table of one algorithm (ASan). */
START_TEST(unseen_best_on_every_table_shape) {
  load(HEAD "allreduce = { graph = { sizes = [ 1000L, 100000L ]; nccl_default = ( 40.0, 400.0 );\n"
            "  candidates = ( { algo = \"tree\"; proto = \"ll\"; channels = 2; latency = ( 10.0, 100.0 ); },\n"
            "                 { algo = \"ring\"; proto = \"ll128\"; channels = 2; latency = ( \"unsupported\", \"unsupported\" ); } );\n"
            "}; };\n");
  const struct pt_interval *iv;
  int nch = 0;
  float t[7][3];
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) t[a][p] = -1.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 3.0f;
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 1.0f; /* NCCL's best: never measured running */
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &t[0][0], 7, 3, 1, &nch, &iv), -1);
  ck_assert_float_eq(t[NCCL_ALGO_TREE][NCCL_PROTO_LL], 3.0f);
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 3.0f; /* a tie counts as NCCL's too */
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &t[0][0], 7, 3, 1, &nch, &iv), -1);
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 5.0f; /* enabled, not NCCL's best: the profile decides */
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &t[0][0], 7, 3, 1, &nch, &iv), 0);
  ck_assert_float_eq(t[NCCL_ALGO_TREE][NCCL_PROTO_LL], 0.0f);
  float two[2][3] = {{3.0f, -1.0f, -1.0f}, {-1.0f, 1.0f, -1.0f}};
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &two[0][0], 2, 3, 1, &nch, &iv), -1);
  two[1][1] = -1.0f;
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &two[0][0], 2, 3, 1, &nch, &iv), 0);
  /* Tree only, LL and LL128: Ring is out of range. Tree/LL128 was never
   * measured and LL128 is off by NCCL's default on PCIe: unseen too. */
  float one[1][2] = {{3.0f, 1.0f}};
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &one[0][0], 1, 2, 1, &nch, &iv), -1);
  one[0][1] = 5.0f;
  ck_assert_int_eq(pt_table_decide(&tab, PT_ALLREDUCE, 10000, &one[0][0], 1, 2, 1, &nch, &iv), 0);
  unload();
}
END_TEST

START_TEST(chunk_rounds_to_the_grain) {
  load(HEAD_LL128 "allreduce = { graph = { sizes = [ 1000L, 1000000L ]; nccl_default = ( 1000000.0, 1000000.0 );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 4; chunk = 65000L; latency = ( 10.0, 100.0 ); },\n"
            "                 { algo = \"ring\"; proto = \"ll128\"; channels = 4; chunk = 100L; latency = ( 11.0, 110.0 ); },\n"
            "                 { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 12.0, 120.0 ); } );\n"
            "}; };\n");
  /* A part of 100 kB comes from calls of 100..800 kB (8 channels), all
   * measured, and holds more than one chunk (the communicator's ranks are
   * unknown: a ring of at least one). */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 100000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE),
                   65000 / 512 * 512);
  /* Below the grain it would round to 0, which NCCL divides by. */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 100000, NCCL_ALGO_RING, NCCL_PROTO_LL128), 1920);
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 100000, NCCL_ALGO_RING, NCCL_PROTO_LL), 0);
  /* A part of at most one chunk is one loop: runRing recomputes the chunk,
   * NCCL keeps its own (tuner/chunk.c). */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 1000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), 0);
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 64512, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), 0);
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 64513, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), 64512);
  /* Tree/Simple runs only as NCCL's own choice: NCCL's chunk. */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 1000, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE), 0);
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 1000, NCCL_ALGO_RING, 7), -1);
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLGATHER, 1000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), -1);
  /* A part of 5 B comes from calls of 5..20 B, left to NCCL. */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 5, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), 0);
  /* A part of 500 kB can come from a 2 MB call, which NCCL decides itself. */
  ck_assert_int_eq(pt_table_chunk(&tab, PT_ALLREDUCE, 500000, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE), -1);
  unload();
}
END_TEST

/* NCCL ran ring/LL at 1 MiB and ring/Simple at 2 MiB (the default matches
 * them there). In between it runs one of the two, not the straight line
 * between its two values: ring/Simple, never slower than either and far
 * faster than ring/LL there, is chosen; at 2 MiB itself it ties NCCL. */
START_TEST(nccl_choice_between_sizes_is_identified) {
  load(HEAD "allreduce = { graph = { sizes = [ 1048576L, 2097152L ];\n"
            "  nccl_default = ( 75.0, 103.0 );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 75.0, 144.0 ); },\n"
            "                 { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 69.0, 103.0 ); } );\n"
            "}; };\n");
  const struct pt_choice *c = top(PT_ALLREDUCE, PT_MODE_GRAPH, 1800000);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(c->proto, NCCL_PROTO_SIMPLE);
  unload();
  /* The same numbers without the identification (the default matches no
   * candidate): the straight line 75 -> 103 says ring/Simple gains < 2 %
   * near 2 MiB, where it does not beat NCCL's measurement: NCCL decides. */
  load(HEAD "allreduce = { graph = { sizes = [ 1048576L, 2097152L ];\n"
            "  nccl_default = ( 76.5, 104.5 );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 69.0, 103.0 ); } );\n"
            "}; };\n");
  ck_assert_ptr_null(top(PT_ALLREDUCE, PT_MODE_GRAPH, 1800000));
  unload();
}
END_TEST

/* Where NCCL's own default fails, nothing is left to it. */
START_TEST(a_failing_default_is_never_deferred_to) {
  load(HEAD "allreduce = { graph = { sizes = [ 1024L, 4096L ];\n"
            "  nccl_default = ( \"wrong\", \"wrong\" );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 60.0, 80.0 ); } );\n"
            "}; };\n");
  const struct pt_interval *iv = pt_table_lookup(&tab, PT_ALLREDUCE, PT_MODE_GRAPH, 2048);
  ck_assert_int_eq(iv->n, 1);
  ck_assert_int_eq(iv->kind, PT_IV_NCCL_FAILS);
  unload();
  /* NCCL's default matches ring/LL128, which is wrong at 4 KiB: at 1 KiB
   * NCCL runs a failing combination, so ring/Simple is ranked there too. */
  load(HEAD "allreduce = { graph = { sizes = [ 1024L, 4096L, 8192L ];\n"
            "  nccl_default = ( 10.0, 12.0, 14.0 );\n"
            "  candidates = ( { algo = \"ring\"; proto = \"ll128\"; channels = 4; latency = ( 10.0, \"wrong\", \"wrong\" ); },\n"
            "                 { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 30.0, 31.0, 32.0 ); } );\n"
            "}; };\n");
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 2048)->proto, NCCL_PROTO_SIMPLE);
  ck_assert_int_eq(top(PT_ALLREDUCE, PT_MODE_GRAPH, 6000)->proto, NCCL_PROTO_SIMPLE);
  unload();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("table");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, crossover_becomes_a_boundary);
  tcase_add_test(tc, outside_the_measured_range_nccl_decides);
  tcase_add_test(tc, interpolation_is_log_log);
  tcase_add_test(tc, missing_points_bound_a_candidate);
  tcase_add_test(tc, wrong_crash_hang_are_never_chosen);
  tcase_add_test(tc, rules_override_inside_their_range);
  tcase_add_test(tc, bucketed_lookup_matches_a_linear_scan);
  tcase_add_test(tc, apply_respects_disabled_entries);
  tcase_add_test(tc, unseen_best_on_every_table_shape);
  tcase_add_test(tc, chunk_rounds_to_the_grain);
  tcase_add_test(tc, nccl_choice_between_sizes_is_identified);
  tcase_add_test(tc, a_failing_default_is_never_deferred_to);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
