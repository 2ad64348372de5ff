/* NCCL's view derived from hardware (sim/nccl_*.c) against NCCL's own code:
 * for every topology in test/data/nccl-real, the harness output of NCCL 2.30.7
 * (and 2.29.7, 2.28.9, and 2.31 from the dev branch, derived with
 * nccl_version 2.31) gives the ring and tree search results, comm->nChannels, the
 * thread counts and, at every all-reduce size from 8 B to 256 MB, NCCL's
 * algorithm, protocol, channels (nMaxChannels and the scheduler's cells),
 * warps and costs. All must match (see test/data/nccl-real/PROVENANCE.txt). */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/nccl_topo.h"
#include "pcie/profile.h"
#include "pcie/sim_box.h"
#include "pcie/table.h"
#include "sim/simeval.h"
#include "support/pt_test.h"

struct expect_graph {
  int nch, same, pattern;
  double bw;
  char type[8];
};

struct expect_row {
  unsigned long long bytes;
  char algo[8], proto[8];
  int nch, warps, sch;
  double cost, tree_ll, tree_simple, ring_ll, ring_simple;
};

/* A 2.31 output's "# run BYTES tree_ll=c1,c2,.. ..." line: the channels
 * ncclTuningGetChannels gives under a tuner cap of 1..comm->nChannels,
 * [tree, ring][ll, ll128, simple][cap - 1]. */
struct expect_run {
  unsigned long long bytes;
  int ch[2][3][64];
};

struct expect {
  char topo[128], p2p[32], level[16];
  struct expect_graph ring, tree;
  int comm, thr[2][3]; /* [ring, tree][ll, ll128, simple] */
  int nrows, nruns;
  struct expect_row row[32];
  struct expect_run run[32];
};

static void read_run(const char *path, const char *line, struct expect *e) {
  static const char *const keys[2][3] = {{"tree_ll=", "tree_ll128=", "tree_simple="},
                                         {"ring_ll=", "ring_ll128=", "ring_simple="}};
  struct expect_run *r = &e->run[e->nruns];
  ck_assert_msg(e->nruns < 32 && sscanf(line, "# run %llu", &r->bytes) == 1, "%s: bad line %s", path, line);
  for (int a = 0; a < 2; a++)
    for (int p = 0; p < 3; p++) {
      const char *at = strstr(line, keys[a][p]);
      ck_assert_msg(at != NULL, "%s: %llu: no %s", path, r->bytes, keys[a][p]);
      at += strlen(keys[a][p]);
      for (int c = 0; c < e->comm; c++) {
        char *end;
        r->ch[a][p][c] = (int)strtol(at, &end, 10);
        ck_assert_msg(end != at && (*end == ',' || c == e->comm - 1), "%s: %llu: %s has not %d entries", path,
                      r->bytes, keys[a][p], e->comm);
        at = end + 1;
      }
    }
  e->nruns++;
}

static void read_expect(const char *path, struct expect *e) {
  FILE *f = fopen(path, "r");
  char line[512];
  ck_assert_msg(f != NULL, "cannot open %s", path);
  memset(e, 0, sizeof *e);
  while (fgets(line, sizeof line, f)) {
    struct expect_row *r = &e->row[e->nrows];
    if (sscanf(line, "# topo %127s ngpus %*d sm %*s cpu arch %*d vendor %*d P2P %31s P2P_LEVEL=%15s", e->topo,
               e->p2p, e->level) == 3)
      continue;
    if (sscanf(line, "# ring graph: nChannels %d bwIntra %lf typeIntra %7s sameChannels %d", &e->ring.nch,
               &e->ring.bw, e->ring.type, &e->ring.same) == 4)
      continue;
    if (sscanf(line, "# tree graph: nChannels %d bwIntra %lf typeIntra %7s pattern %d", &e->tree.nch,
               &e->tree.bw, e->tree.type, &e->tree.pattern) == 4)
      continue;
    if (sscanf(line, "# comm->nChannels %d maxThreads ring ll/ll128/simple %d/%d/%d tree %d/%d/%d", &e->comm,
               &e->thr[0][0], &e->thr[0][1], &e->thr[0][2], &e->thr[1][0], &e->thr[1][1], &e->thr[1][2]) == 7)
      continue;
    if (!strncmp(line, "# run ", 6) && line[6] >= '0' && line[6] <= '9') {
      read_run(path, line, e);
      continue;
    }
    if (line[0] >= '0' && line[0] <= '9' && e->nrows < 32 &&
        sscanf(line, "%llu %7s %7s %d %d %d %lf %lf %lf %lf %lf", &r->bytes, r->algo, r->proto, &r->nch,
               &r->warps, &r->sch, &r->cost, &r->tree_ll, &r->tree_simple, &r->ring_ll, &r->ring_simple) == 11)
      e->nrows++;
  }
  fclose(f);
  ck_assert_msg(e->topo[0] && e->comm > 0 && e->nrows == 26, "%s: unexpected format (%d rows)", path, e->nrows);
}

/* Costs are printed with two decimals; NCCL's float arithmetic is matched,
 * so a hundredth (or 1e-5 relative for the large ones) is all it may differ. */
static void near(const char *file, unsigned long long n, const char *what, double got, double want) {
  double tol = fmax(0.0051, fabs(want) * 2e-6);
  ck_assert_msg(fabs(got - want) <= tol, "%s: %llu B: %s %.4f, NCCL %.2f", file, n, what, got, want);
}

static const char *algo_name(int a) { return a == NCCL_ALGO_TREE ? "tree" : a == NCCL_ALGO_RING ? "ring" : "?"; }
static const char *proto_name(int p) {
  return p == NCCL_PROTO_LL ? "ll" : p == NCCL_PROTO_LL128 ? "ll128" : p == NCCL_PROTO_SIMPLE ? "simple" : "?";
}

static void check_graph(const char *file, const char *which, const struct pt_nccl_graph *g,
                        const struct expect_graph *x, int is_tree) {
  ck_assert_msg(g->nchannels == x->nch, "%s: %s nChannels %d, NCCL %d", file, which, g->nchannels, x->nch);
  ck_assert_msg(fabs(g->bw_intra - x->bw) < 0.006, "%s: %s bwIntra %.2f, NCCL %.2f", file, which, g->bw_intra, x->bw);
  ck_assert_msg(!strcmp(pt_path_type_name(g->type_intra), x->type), "%s: %s typeIntra %s, NCCL %s", file, which,
                pt_path_type_name(g->type_intra), x->type);
  if (is_tree)
    ck_assert_msg(g->pattern == x->pattern, "%s: tree pattern %d, NCCL %d", file, g->pattern, x->pattern);
  else
    ck_assert_msg(g->same_channels == x->same, "%s: ring sameChannels %d, NCCL %d", file, g->same_channels, x->same);
}

static int check_one(const char *dir, const char *file) {
  char path[2048], err[512];
  struct expect e;
  struct pt_hw hw;
  struct pt_nccl_view v;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  read_expect(path, &e);
  snprintf(path, sizeof path, "%s/%s", dir, e.topo);
  ck_assert_msg(pt_hw_from_topo_xml(path, &hw, err, sizeof err) == 0, "%s", err);
  hw.p2p = strcmp(e.p2p, "not-supported") != 0;
  if (strcmp(e.level, "(default)")) snprintf(hw.p2p_level, sizeof hw.p2p_level, "%s", e.level);
  if (strstr(file, ".PROTO_LL_LL128_Simple.")) snprintf(hw.proto, sizeof hw.proto, "LL,LL128,Simple");
  int v231 = strstr(file, ".nccl-2.31") != NULL;
  if (v231) hw.nccl_version = PT_NCCL_V2_31;
  ck_assert_msg(v231 == (e.nruns == e.nrows), "%s: %d run lines for %d sizes", file, e.nruns, e.nrows);
  ck_assert_msg(pt_nccl_derive(&hw, &v, err, sizeof err) == 0, "%s: %s", file, err);
  check_graph(file, "ring", &v.ring, &e.ring, 0);
  check_graph(file, "tree", &v.tree, &e.tree, 1);
  ck_assert_msg(v.comm_channels == e.comm, "%s: comm->nChannels %d, NCCL %d", file, v.comm_channels, e.comm);
  for (int a = 0; a < 2; a++)
    for (int p = 0; p < 3; p++) {
      int algo = a == 0 ? NCCL_ALGO_RING : NCCL_ALGO_TREE;
      ck_assert_msg(pt_nccl_max_threads(&v.params, algo, p) == e.thr[a][p], "%s: maxThreads %s/%s %d, NCCL %d",
                    file, algo_name(algo), proto_name(p), pt_nccl_max_threads(&v.params, algo, p), e.thr[a][p]);
    }
  for (int i = 0; i < e.nrows; i++) {
    const struct expect_row *r = &e.row[i];
    float t[7][3];
    int algo, proto;
    pt_nccl_cost_table(&v.params, PT_ALLREDUCE, (size_t)r->bytes, 1, t);
    ck_assert_int_eq(pt_nccl_select(t, &algo, &proto), 0);
    ck_assert_msg(!strcmp(algo_name(algo), r->algo) && !strcmp(proto_name(proto), r->proto),
                  "%s: %llu B: %s/%s, NCCL %s/%s", file, r->bytes, algo_name(algo), proto_name(proto), r->algo,
                  r->proto);
    int nch = pt_nccl_channels(&v.params, algo, proto, (size_t)r->bytes);
    ck_assert_msg(nch == r->nch, "%s: %llu B: nMaxChannels %d, NCCL %d", file, r->bytes, nch, r->nch);
    int sch = pt_nccl_sched_channels(&v.params, PT_ALLREDUCE, proto, (size_t)r->bytes, nch);
    ck_assert_msg(sch == r->sch, "%s: %llu B: scheduled channels %d, NCCL %d", file, r->bytes, sch, r->sch);
    int warps = pt_nccl_warps(&v.params, algo, proto, (size_t)r->bytes);
    ck_assert_msg(warps == r->warps, "%s: %llu B: warps %d, NCCL %d", file, r->bytes, warps, r->warps);
    near(file, r->bytes, "cost", t[algo][proto], r->cost);
    near(file, r->bytes, "tree/LL", t[NCCL_ALGO_TREE][NCCL_PROTO_LL], r->tree_ll);
    near(file, r->bytes, "tree/Simple", t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE], r->tree_simple);
    near(file, r->bytes, "ring/LL", t[NCCL_ALGO_RING][NCCL_PROTO_LL], r->ring_ll);
    near(file, r->bytes, "ring/Simple", t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], r->ring_simple);
  }
  /* 2.31: what a tuner's channel count becomes (tuner/table.c pt_nccl_channels_run). */
  for (int i = 0; i < e.nruns; i++)
    for (int a = 0; a < 2; a++)
      for (int p = 0; p < 3; p++)
        for (int c = 1; c <= e.comm; c++) {
          int algo = a == 0 ? NCCL_ALGO_TREE : NCCL_ALGO_RING;
          int got = pt_nccl_channels_run(c, hw.ngpus, algo, p, e.run[i].bytes);
          ck_assert_msg(got == e.run[i].ch[a][p][c - 1], "%s: %llu B: %s/%s capped at %d runs %d, NCCL %d", file,
                        e.run[i].bytes, algo_name(algo), proto_name(p), c, got, e.run[i].ch[a][p][c - 1]);
        }
  return 1;
}

START_TEST(derived_view_matches_nccl_on_every_shared_topology) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/test/data/nccl-real", pt_test_srcdir());
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  int n = 0;
  for (struct dirent *de; (de = readdir(d));) {
    size_t len = strlen(de->d_name);
    if (len > 4 && !strcmp(de->d_name + len - 4, ".txt") && strcmp(de->d_name, "PROVENANCE.txt"))
      n += check_one(dir, de->d_name);
  }
  closedir(d);
  /* 47 harness outputs over 26 topologies, and 48 of 2.31, are in the collection. */
  ck_assert_int_ge(n, 47 + 48);
}
END_TEST

/* Versions as the view records them: NCCL_VERSION_CODE, 0 for anything else. */
START_TEST(nccl_version_codes) {
  ck_assert_int_eq(pt_nccl_version_code("2.31"), PT_NCCL_V2_31);
  ck_assert_int_eq(pt_nccl_version_code("2.31.0"), PT_NCCL_V2_31);
  ck_assert_int_eq(pt_nccl_version_code("2.30.7"), 23007);
  ck_assert_int_eq(pt_nccl_version_code("3.0"), 30000);
  ck_assert_int_eq(pt_nccl_version_code(NULL), 0);
  ck_assert_int_eq(pt_nccl_version_code("2"), 0);
  ck_assert_int_eq(pt_nccl_version_code("2.31a7"), 0);
  ck_assert_int_eq(pt_nccl_version_code("2.31 (sim, derived view)"), 0);
  ck_assert_int_eq(pt_nccl_version_code("2.131"), 0);
}
END_TEST

/* What NCCL runs after the tuner rewrote its table: up to 2.30 the smallest
 * entry >= 0 (enqueue.cc topoGetAlgoInfo); from 2.31 the plain minimum over
 * the entries NCCL had given a time (dev tuning.cc ncclTuningCompute), so a
 * negative entry wins and an IGNORE one stays out, ties to the higher index. */
START_TEST(selection_after_the_tuner_by_version) {
  struct pt_nccl_params p30, p31;
  float before[7][3], after[7][3];
  int a, pr;
  pt_nccl_params_default(&p30, 8);
  p31 = p30;
  p31.nccl_version = PT_NCCL_V2_31;
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 3; j++) before[i][j] = -1.0f;
  before[NCCL_ALGO_RING][NCCL_PROTO_LL] = 50.0f;
  before[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 100.0f;
  before[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 120.0f;
  memcpy(after, before, sizeof after);
  after[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = -5.0f; /* a negative write */
  after[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 1.0f;      /* an IGNORE entry revived */
  ck_assert_int_eq(pt_nccl_select_tuned(&p30, before, after, &a, &pr), 0);
  ck_assert(a == NCCL_ALGO_TREE && pr == NCCL_PROTO_LL);
  ck_assert_int_eq(pt_nccl_select_tuned(&p31, before, after, &a, &pr), 0);
  ck_assert(a == NCCL_ALGO_RING && pr == NCCL_PROTO_SIMPLE);
  /* A tie: 2.30 keeps the lower index (tree), 2.31 the higher (ring). */
  memcpy(after, before, sizeof after);
  after[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = after[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 10.0f;
  ck_assert_int_eq(pt_nccl_select_tuned(&p30, before, after, &a, &pr), 0);
  ck_assert(a == NCCL_ALGO_TREE && pr == NCCL_PROTO_SIMPLE);
  ck_assert_int_eq(pt_nccl_select_tuned(&p31, before, after, &a, &pr), 0);
  ck_assert(a == NCCL_ALGO_RING && pr == NCCL_PROTO_SIMPLE);
  /* Nothing NCCL had given a time: no choice on 2.31. */
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 3; j++) before[i][j] = -1.0f, after[i][j] = 3.0f;
  ck_assert_int_eq(pt_nccl_select_tuned(&p31, before, after, &a, &pr), -1);
  ck_assert_int_eq(pt_nccl_select_tuned(&p30, before, after, &a, &pr), 0);
}
END_TEST

/* The simulated NCCL host on a 2.31 view runs what dev's ncclTuningGetChannels
 * makes of the plugin's count: ring/simple asked for 4 channels on 8 GPUs
 * runs 2 at 64 KiB (4 x 512 threads x 64 B = 128 KiB for 4), 4 from 128 KiB;
 * on a 2.30 view the count runs as written. Through the plugin (dlopen). */
START_TEST(nccl_2_31_view_runs_the_tuners_count_as_a_cap) {
  static const char *text =
      "version = 1;\nname = \"v\";\n"
      "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.31.0\"; date = "
      "\"2026-12-01\"; mode = \"both\"; };\ncommunicator = { channels = 4; };\n"
      "allreduce = { eager = { sizes = [ 16384L, 1048576L ]; nccl_default = ( 1e6, 1e6 ); candidates = (\n"
      "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 10.0, 100.0 ); } ); }; };\n";
  char *dir = pt_test_tmpdir();
  char *path = pt_test_write(dir, "v.cfg", text);
  struct pt_box b = *pt_box_builtin_at(0);
  ck_assert_int_eq(b.nranks, 8);
  ck_assert_int_ge(b.nccl.comm_channels, 4);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  struct ph_plugin pl;
  struct ph_comm comm;
  char err[512];
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&comm, &pl, 8, 1, 1), ncclSuccess);
  static const struct { int version; uint64_t n; int ch; } cases[] = {
      {0, 65536, 4}, {0, 131072, 4}, {PT_NCCL_V2_31, 32768, 1}, {PT_NCCL_V2_31, 65536, 2},
      {PT_NCCL_V2_31, 98304, 3}, {PT_NCCL_V2_31, 131072, 4}, {PT_NCCL_V2_31, 1048576, 4}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct pt_sim_eval ev;
    b.nccl.nccl_version = cases[i].version;
    pt_sim_eval(&comm, &b, PT_ALLREDUCE, PT_MODE_EAGER, cases[i].n, &ev);
    ck_assert_int_eq(ev.plugin_rc, 0);
    ck_assert_msg(ev.tuned.algo == NCCL_ALGO_RING && ev.tuned.proto == NCCL_PROTO_SIMPLE &&
                      ev.tuned.channels == cases[i].ch,
                  "view %d, %llu B: tuned %d/%d/%d, expected ring/simple/%d", cases[i].version,
                  (unsigned long long)cases[i].n, ev.tuned.algo, ev.tuned.proto, ev.tuned.channels, cases[i].ch);
  }
  ph_comm_finalize(&comm);
  ph_plugin_close(&pl);
  unsetenv("PCIE_TUNER_PROFILE");
  free(path);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A box derived for NCCL 2.31 says so in its view label, and its view is
 * 2.31's: LL128 on over PCIe (dev cost_model.cc ncclTuningCostModelInit). */
START_TEST(box_view_states_its_nccl_version) {
  struct pt_box b = *pt_box_builtin_at(0);
  struct pt_error_rec err;
  char label[256];
  ck_assert(b.has_hw);
  ck_assert_int_eq(pt_box_derive(&b, &err), 0);
  pt_box_view_label(&b, label, sizeof label);
  ck_assert_msg(!strstr(label, "NCCL 2.") && !strstr(label, "LL128 on"), "%s", label);
  b.hw.nccl_version = PT_NCCL_V2_31;
  ck_assert_int_eq(pt_box_derive(&b, &err), 0);
  ck_assert_int_eq(b.nccl.nccl_version, PT_NCCL_V2_31);
  pt_box_view_label(&b, label, sizeof label);
  ck_assert_msg(strstr(label, ", LL128 on, NCCL 2.31 view"), "%s", label);
}
END_TEST

/* Every built-in box's hardware is a topology of the collection: its NCCL
 * default is NCCL's own at every size. */
START_TEST(builtin_boxes_default_is_nccls) {
  static const struct {
    const char *box, *file;
  } map[] = {
      {"gen5-8x-p2p", "sm120-gen5-8x-2switch-1socket.P2P_LEVEL_SYS.txt"},
      {"gen5-8x-dual-misdetect", "sm120-gen5-8x-direct-2socket.P2P_LEVEL_SYS.txt"},
      {"gen4-4x-shm", "sm89-gen4-4x-direct-1socket-intel.noP2P.txt"},
      {"consumer-2x", "sm89-gen4-2x-direct-1socket-intel.noP2P.txt"},
      {"gen5-8x-ll128", "sm120-gen5-8x-direct-2socket.P2P_LEVEL_SYS.PROTO_LL_LL128_Simple.txt"},
      {"v100-4x-plx", "sm70-gen3-4x-plx.txt"},
  };
  ck_assert_uint_eq(sizeof map / sizeof map[0], pt_box_builtin_count());
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    char path[1024];
    struct expect e;
    const struct pt_box *b = pt_box_builtin(map[i].box);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->view_source, PT_VIEW_DERIVED);
    snprintf(path, sizeof path, "%s/test/data/nccl-real/%s", pt_test_srcdir(), map[i].file);
    read_expect(path, &e);
    ck_assert_msg(b->nccl.comm_channels == e.comm, "%s: comm %d, NCCL %d", b->name, b->nccl.comm_channels, e.comm);
    for (int r = 0; r < e.nrows; r++) {
      int algo, proto, ch;
      ck_assert_int_eq(pt_box_nccl_default(b, PT_ALLREDUCE, e.row[r].bytes, &algo, &proto, &ch), 0);
      ck_assert_msg(!strcmp(algo_name(algo), e.row[r].algo) && !strcmp(proto_name(proto), e.row[r].proto) &&
                        ch == e.row[r].nch,
                    "%s: %llu B: %s/%s/%d, NCCL %s/%s/%d", b->name, e.row[r].bytes, algo_name(algo),
                    proto_name(proto), ch, e.row[r].algo, e.row[r].proto, e.row[r].nch);
    }
  }
}
END_TEST

/* The fallback behind the mis-detected dual-socket box: no ring fits through
 * AMD's 16 GB/s inter-socket link at Blackwell's slowest search speed (18),
 * while Ada's speed array reaches 15. */
START_TEST(dual_socket_amd_falls_back_only_on_blackwell) {
  char path[1024], err[512];
  struct pt_hw hw;
  struct pt_nccl_view v;
  snprintf(path, sizeof path, "%s/test/data/nccl-real/sm120-gen5-8x-direct-2socket.xml", pt_test_srcdir());
  ck_assert_msg(pt_hw_from_topo_xml(path, &hw, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(hw.ngpus, 8);
  ck_assert_int_eq(hw.ncpus, 2);
  ck_assert_int_eq(hw.cpu_vendor, PT_CPU_AMD);
  snprintf(hw.p2p_level, sizeof hw.p2p_level, "SYS");
  ck_assert_int_eq(pt_nccl_derive(&hw, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.ring.fallback, 1);
  ck_assert_int_eq(v.comm_channels, 2);
  for (int g = 0; g < hw.ngpus; g++) hw.gpu[g].sm = 89;
  ck_assert_int_eq(pt_nccl_derive(&hw, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.ring.fallback, 0);
  ck_assert_double_eq_tol(v.ring.bw_intra, 15.0, 1e-6);
}
END_TEST

START_TEST(bad_hardware_and_environment_are_errors) {
  struct pt_hw hw = {.ncpus = 1, .cpu_vendor = PT_CPU_AMD, .ngpus = 2, .p2p = 1};
  struct pt_nccl_view v;
  char err[512];
  for (int g = 0; g < 2; g++) hw.gpu[g] = (struct pt_hw_dev){-1, 4, 16, 89};
  ck_assert_int_eq(pt_nccl_derive(&hw, &v, err, sizeof err), 0);
  struct pt_hw bad = hw;
  bad.gpu[1].parent = 3; /* no such switch */
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "GPU 1 hangs off switch 3"), "%s", err);
  bad = hw;
  snprintf(bad.proto, sizeof bad.proto, "LL,LL129");
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "unrecognized element 'LL129'"), "%s", err);
  bad = hw;
  snprintf(bad.p2p_level, sizeof bad.p2p_level, "NEAR");
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), -1);
  /* NCCL_MAX_NCHANNELS caps the communicator below the search's channels;
   * NCCL_MIN_NCHANNELS raises it; the cost table keeps the search's. */
  bad = hw;
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.ring.nchannels, 2);
  bad.max_nchannels = 1;
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.comm_channels, 1);
  ck_assert_int_eq(v.params.search_channels, 2);
  bad.max_nchannels = 0;
  bad.min_nchannels = 8;
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.comm_channels, 8);
  /* NCCL's quirk: "^LL" turns LL128 on, even on PCIe. */
  bad = hw;
  snprintf(bad.proto, sizeof bad.proto, "^LL");
  ck_assert_int_eq(pt_nccl_derive(&bad, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.params.ll128_enabled, 1);
  ck_assert_int_eq(v.params.ll_enabled, 0);
  char *dir = pt_test_tmpdir();
  char *xml = pt_test_write(dir, "empty.xml", "<system version=\"1\">\n  <cpu numaid=\"0\" arch=\"x86_64\"/>\n</system>\n");
  ck_assert_int_eq(pt_hw_from_topo_xml(xml, &hw, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "no <gpu>"), "%s", err);
  free(xml);
  xml = pt_test_write(dir, "bad.xml", "<system>\n  <cpu numaid=\"0\" arch=\"x86_64\">\n  <pci busid=>\n");
  ck_assert_int_eq(pt_hw_from_topo_xml(xml, &hw, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "bad.xml:3: expected '\"'"), "%s", err);
  free(xml);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Every prefix of a real topology, and the file with one byte changed
 * anywhere, is read without a crash: either a box or a file:line error. */
START_TEST(truncated_or_corrupt_topology_never_crashes) {
  char path[1024], err[600];
  snprintf(path, sizeof path, "%s/test/data/nccl-real/rand13-sm86-8x-2cpu-intel.xml", pt_test_srcdir());
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  static char text[16384];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  ck_assert_uint_gt(len, 1000);
  char *dir = pt_test_tmpdir(), *tmp = NULL;
  ck_assert(asprintf(&tmp, "%s/t.xml", dir) > 0);
  int ok = 0, bad = 0;
  for (size_t cut = 0; cut < len; cut += 13) {
    for (int mode = 0; mode < 2; mode++) {
      FILE *o = fopen(tmp, "w");
      ck_assert_ptr_nonnull(o);
      if (mode == 0) {
        fwrite(text, 1, cut, o);
      } else {
        char save = text[cut];
        text[cut] = "<>\"=/ x"[cut % 7];
        fwrite(text, 1, len, o);
        text[cut] = save;
      }
      fclose(o);
      struct pt_hw hw;
      struct pt_nccl_view v;
      if (pt_hw_from_topo_xml(tmp, &hw, err, sizeof err) == 0) {
        ok++;
        ck_assert_int_eq(pt_nccl_derive(&hw, &v, err, sizeof err) == 0 || strlen(err) > 0, 1);
      } else {
        bad++;
        ck_assert_msg(strncmp(err, tmp, strlen(tmp)) == 0, "error does not name the file: %s", err);
      }
    }
  }
  ck_assert_int_gt(ok, 0);
  ck_assert_int_gt(bad, 0);
  pt_test_rmtree(dir);
  free(dir);
  free(tmp);
}
END_TEST

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  Suite *s = suite_create("sim_derive");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, derived_view_matches_nccl_on_every_shared_topology);
  tcase_add_test(tc, builtin_boxes_default_is_nccls);
  tcase_add_test(tc, dual_socket_amd_falls_back_only_on_blackwell);
  tcase_add_test(tc, bad_hardware_and_environment_are_errors);
  tcase_add_test(tc, truncated_or_corrupt_topology_never_crashes);
  tcase_add_test(tc, nccl_version_codes);
  tcase_add_test(tc, selection_after_the_tuner_by_version);
  tcase_add_test(tc, nccl_2_31_view_runs_the_tuners_count_as_a_cap);
  tcase_add_test(tc, box_view_states_its_nccl_version);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
