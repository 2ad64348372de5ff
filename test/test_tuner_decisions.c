/* Decisions a user can trust (issue 9 §1-3, §5), through dlopen of the built
 * plugin and the simulated NCCL host: never slower than NCCL's measured
 * default, never beyond the communicator's channels, NCCL's steering in the
 * cost table respected, chunks only for the decision NCCL runs, the v2 shim
 * reading NCCL_ALGO/NCCL_PROTO as NCCL does, and tuner ABI v7. */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "nccl/tuner_v7.h"
#include "pcie/host.h"
#include "pcie/nccl_model.h"
#include "support/pt_test.h"

#define HEAD(extra)                                                                       \
  "version = 1;\nname = \"d\";\n"                                                        \
  "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; date = " \
  "\"2026-11-30\"; mode = \"both\"; " extra " };\n"

static char *dir;

static void setup(void) {
  dir = pt_test_tmpdir();
  pt_test_reset_tuner();
}

static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static void use_profile(const char *text) { pt_test_use_profile(dir, "p.cfg", text); }

static void open_comm(struct ph_plugin *pl, struct ph_comm *c, int version, int nranks) {
  char err[512];
  ck_assert_msg(ph_plugin_open(pl, pt_test_so(), version, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(c, pl, (size_t)nranks, 1, 77), ncclSuccess);
}

static void close_comm(struct ph_plugin *pl, struct ph_comm *c) {
  ck_assert_int_eq(ph_comm_finalize(c), ncclSuccess);
  ph_plugin_close(pl);
}

/* One decision on NCCL's table for an 8-rank PCIe node; *changed says
 * whether the plugin touched the table. */
static void decide(struct ph_comm *c, int coll, size_t n, int reg, struct ph_choice *ch,
                   int *changed) {
  float t[7][3], before[7][3];
  pt_test_nccl_table(t, coll, n, (int)c->nranks, 0);
  memcpy(before, t, sizeof t);
  ph_decide(c, coll, n, reg, t, ch);
  ck_assert_int_eq(ch->rc, ncclSuccess);
  if (changed) *changed = memcmp(before, t, sizeof t) != 0;
}

static char *fixture(const char *name) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/test/data/nccltests/synth/%s", pt_test_srcdir(), name) > 0);
  return p;
}

static int cli(const char *args, char **out, char **err) {
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "'%s' %s", pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  return rc;
}

/* §1 reproducer: a default log and a forced ring/LL/4 log imported as a user
 * does. The logs say ring/LL/4 is 2x slower than NCCL from 512 KiB up: the
 * plugin must leave those sizes to NCCL, and still use ring/LL/4 where it is
 * clearly faster. */
START_TEST(imported_profile_never_forces_the_slower_choice) {
  char *def = fixture("ar8-eager-default.txt"), *ll = fixture("ar8-eager-ring-ll-4.txt");
  char *args = NULL, *out, *err;
  ck_assert(asprintf(&args, "import --out %s/box.cfg %s %s", dir, def, ll) > 0);
  ck_assert_int_eq(cli(args, &out, &err), 0);
  free(out);
  free(err);
  char *prof = NULL;
  ck_assert(asprintf(&prof, "%s/box.cfg", dir) > 0);
  setenv("PCIE_TUNER_PROFILE", prof, 1);
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  int changed;
  open_comm(&pl, &c, 6, 8);
  /* The init line counts intervals as check does (and says so). */
  char *chk = NULL, *want = NULL;
  ck_assert(asprintf(&chk, "check %s", prof) > 0);
  ck_assert_int_eq(cli(chk, &out, &err), 0);
  char *at = strstr(out, "hash ");
  ck_assert_ptr_nonnull(at);
  size_t nint = 0, ntab = 0;
  ck_assert_int_eq(sscanf(at, "hash %*x, %zu decision intervals in %zu", &nint, &ntab), 2);
  ck_assert(asprintf(&want, "decision intervals %zu in %zu collective%s (channels "
                            "unknown: <= 4, all-gather keeps NCCL's)",
                     nint, ntab, ntab == 1 ? "" : "s") > 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, want), 1);
  free(out), free(err), free(chk), free(want);
  for (int reg = 0; reg < 2; reg++) {
    for (size_t n = 512 << 10; n <= (4u << 20); n += n / 3) {
      decide(&c, ncclFuncAllReduce, n, reg, &ch, &changed);
      ck_assert_msg(!changed && ch.nchannels == 0, "%zu B (regBuff %d): plugin acted", n, reg);
    }
    /* 262144 B: 43.13 us vs NCCL's 43.11 us, a tie: NCCL's. */
    decide(&c, ncclFuncAllReduce, 262144, reg, &ch, &changed);
    ck_assert(!changed);
    /* Outside the measured 1 KiB .. 4 MiB: NCCL's. */
    decide(&c, ncclFuncAllReduce, 512, reg, &ch, &changed);
    ck_assert(!changed);
    decide(&c, ncclFuncAllReduce, 64u << 20, reg, &ch, &changed);
    ck_assert(!changed);
    /* 4 KiB: 14.5 us vs 22.2 us: ring/LL/4. */
    decide(&c, ncclFuncAllReduce, 4096, reg, &ch, &changed);
    ck_assert_int_eq(ch.algo, NCCL_ALGO_RING);
    ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
    ck_assert_int_eq(ch.nchannels, 4);
  }
  close_comm(&pl, &c);
  free(prof);
  free(args);
  free(def);
  free(ll);
}
END_TEST

/* Candidate 5 % faster than NCCL's default at every size. */
static const char *five_percent(const char *margin, const char *spread) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           HEAD("") "%s\n"
           "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
           "  nccl_default = ( 100.0, 1000.0 );\n"
           "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2;\n"
           "    latency = ( 95.0, 950.0 ); %s } ); }; };\n",
           margin, spread);
  return buf;
}

static int acts_at(size_t n) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  int changed;
  open_comm(&pl, &c, 6, 8);
  decide(&c, ncclFuncAllReduce, n, 0, &ch, &changed);
  close_comm(&pl, &c);
  return changed;
}

START_TEST(a_gain_must_clear_the_margin_and_the_noise) {
  use_profile(five_percent("", ""));
  ck_assert(acts_at(32768)); /* 5 % > default 2 % */
  use_profile(five_percent("margin = 0.1;", ""));
  ck_assert(!acts_at(32768)); /* the profile's own margin */
  use_profile(five_percent("", "spread = ( 0.08, 0.08 );"));
  ck_assert(acts_at(32768)); /* 5 % clears the noise of an 8 % spread (4 %) */
  use_profile(five_percent("", "spread = ( 0.02, 0.12 );"));
  ck_assert(!acts_at(32768)); /* but not of a 12 % one: a gain inside the noise is none */
}
END_TEST

/* Issue 30 §5: a candidate that beats NCCL's identified choice (ring/simple,
 * measured on NCCL's default line) by exactly the margin leaves the size to
 * NCCL; a hair more and it decides. At a measured size the latencies are
 * compared as written: 80 x 1.25 = 100 exactly. */
static const char *exact_margin(const char *faster) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           HEAD("") "margin = 0.25;\n"
           "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
           "  nccl_default = ( 100.0, 1000.0 );\n"
           "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 2; "
           "latency = ( 100.0, 1000.0 ); },\n"
           "    { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = %s; } ); }; };\n",
           faster);
  return buf;
}

START_TEST(a_gain_of_exactly_the_margin_goes_to_nccl) {
  use_profile(exact_margin("( 80.0, 800.0 )"));
  ck_assert(!acts_at(1024));
  ck_assert(!acts_at(1048576));
  use_profile(exact_margin("( 79.9, 799.0 )"));
  ck_assert(acts_at(1024));
  ck_assert(acts_at(1048576));
}
END_TEST

/* Never slower than the fastest thing NCCL may run. NCCL ran ring/Simple
 * at 1 KiB and ring/LL at 1 MiB (each on its default line), so in between
 * it runs one of the two. tree/Simple is 1.5x ring/LL everywhere: far
 * faster than ring/Simple at 128 KiB but slower than ring/LL, so it is
 * never ranked. With ring/LL disabled in NCCL's table the plugin must then
 * leave the table alone, not fall back to tree/Simple. */
START_TEST(never_slower_than_what_nccl_may_run) {
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
              "  nccl_default = ( 100.0, 1000.0 );\n"
              "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 100.0, 8000.0 ); },\n"
              "    { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 200.0, 1000.0 ); },\n"
              "    { algo = \"tree\"; proto = \"simple\"; channels = 2; latency = ( 300.0, 1500.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  float t[7][3], before[7][3];
  for (int a = 0; a < 7; a++)
    for (int q = 0; q < 3; q++) t[a][q] = -1.0f;
  t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 10.0f;
  t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 20.0f;
  memcpy(before, t, sizeof t);
  open_comm(&pl, &c, 6, 8);
  ph_decide(&c, ncclFuncAllReduce, 131072, 0, t, &ch);
  ck_assert_int_eq(ch.rc, ncclSuccess);
  ck_assert_msg(!memcmp(before, t, sizeof t), "the plugin chose %d/%d", ch.algo, ch.proto);
  /* With ring/LL enabled it is the choice. */
  t[NCCL_ALGO_RING][NCCL_PROTO_LL] = 30.0f;
  ph_decide(&c, ncclFuncAllReduce, 131072, 0, t, &ch);
  ck_assert_float_eq(t[NCCL_ALGO_RING][NCCL_PROTO_LL], 0.0f);
  close_comm(&pl, &c);
}
END_TEST

START_TEST(ties_and_small_gains_go_to_nccl) {
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
              "  nccl_default = ( 100.0, 1000.0 );\n"
              "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 100.0, 1000.0 ); },\n"
              "                 { algo = \"tree\"; proto = \"ll\"; channels = 2; latency = ( 99.0, 990.0 ); } ); }; };\n");
  ck_assert(!acts_at(1024));
  ck_assert(!acts_at(32768));
  ck_assert(!acts_at(1048576));
}
END_TEST

START_TEST(partial_sweep_is_refused_with_one_warn) {
  static const char *const bodies[] = {
      /* the sweep did not finish */
      HEAD("extra = { sweep = { state = \"running\"; }; };")
      "allreduce = { eager = { sizes = [ 1024L, 2048L ]; nccl_default = ( 10.0, 20.0 );\n"
      "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n",
      /* complete, but NCCL's default missing at a size a complete sweep measures */
      HEAD("extra = { sweep = { state = \"complete\"; }; };")
      "allreduce = { eager = { sizes = [ 1024L, 2048L ]; nccl_default = ( 10.0, \"-\" );\n"
      "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n",
  };
  for (int i = 0; i < 2; i++) {
    use_profile(bodies[i]);
    ph_log_clear();
    struct ph_plugin pl;
    struct ph_comm c;
    struct ph_choice ch;
    int changed;
    open_comm(&pl, &c, 6, 8);
    ck_assert_uint_eq(ph_log_count(), 1);
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "partial sweep"), 1);
    struct ph_log_entry e;
    ck_assert_int_eq(ph_log_get(0, &e), 0);
    ck_assert_uint_eq(e.flags, NCCL_ALL);
    decide(&c, ncclFuncAllReduce, 1024, 0, &ch, &changed);
    ck_assert(!changed);
    close_comm(&pl, &c);
  }
}
END_TEST

/* Issue 19: every line the plugin logs at init to say it stepped aside (or
 * warns) ends with the communicator's commId, as the init INFO line's
 * "commId %016llx", so that doctor ties it to its communicator. */
START_TEST(every_init_warn_carries_the_commid) {
  static const char *const body =
      "allreduce = { eager = { sizes = [ 1024L, 2048L ]; nccl_default = ( 10.0, 20.0 );\n"
      "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n";
  char text[4][1024];
  snprintf(text[0], sizeof text[0], "%s%s", HEAD("extra = { sweep = { state = \"running\"; }; };"), body);
  snprintf(text[1], sizeof text[1], "%smatch = { nranks = 4; };\n%s", HEAD(""), body);
  snprintf(text[2], sizeof text[2], "%snccl_env = { NCCL_PROTO = \"^LL128\"; };\n%s", HEAD(""), body);
  snprintf(text[3], sizeof text[3], "%sallreduce = 3;\n", HEAD(""));
  for (int i = 0; i < 4; i++) {
    use_profile(text[i]);
    ph_log_clear();
    struct ph_plugin pl;
    struct ph_comm c;
    open_comm(&pl, &c, 6, 8); /* commId 77 */
    ck_assert_msg(ph_log_find(NCCL_LOG_WARN, NULL) == 1, "case %d: %zu WARNs", i,
                  ph_log_find(NCCL_LOG_WARN, NULL));
    ck_assert_msg(ph_log_find(NCCL_LOG_WARN, " (commId 000000000000004d)") == 1,
                  "case %d: the WARN names no commId", i);
    close_comm(&pl, &c);
  }
  /* Nothing installed fits: the INFO line says so, with the commId too. */
  unsetenv("PCIE_TUNER_PROFILE");
  ph_log_clear();
  struct ph_plugin pl;
  struct ph_comm c;
  open_comm(&pl, &c, 6, 8);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "leaving decisions to NCCL (commId 000000000000004d)"), 1);
  close_comm(&pl, &c);
}
END_TEST

/* Issue 26 §1: without NCCL's default nothing shows a candidate is faster
 * than what NCCL runs, so the plugin leaves the sizes to NCCL (it used to
 * rank the candidates as if NCCL were slower); with the default, it acts. */
START_TEST(no_default_leaves_it_to_nccl) {
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 2048L ];\n"
              "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n");
  ck_assert(!acts_at(1500));
  /* A rule a user wrote stays a rule: it needs no measurement. */
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 2048L ];\n"
              "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n"
              "rules = ( { collective = \"allreduce\"; min_bytes = 1L; max_bytes = 4096L; algo = \"ring\"; "
              "proto = \"simple\"; } );\n");
  ck_assert(acts_at(1500));
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 2048L ]; nccl_default = ( 3.0, 6.0 );\n"
              "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 2.0 ); } ); }; };\n");
  ck_assert(acts_at(1500));
}
END_TEST

/* §2: the plugin never returns more channels than the communicator has. */
static const char *eight_channels(const char *comm) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           HEAD("") "%s\n"
           "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 );\n"
           "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 8; latency = ( 1.0, 10.0 ); },\n"
           "                 { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 2.0, 20.0 ); } ); }; };\n"
           "allgather = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 );\n"
           "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 8; latency = ( 1.0, 10.0 ); },\n"
           "                 { algo = \"ring\"; proto = \"ll\"; channels = 0; latency = ( 1.5, 15.0 ); } ); }; };\n"
           "rules = ( { collective = \"broadcast\"; min_bytes = 0L; max_bytes = 1048576L; algo = \"ring\";"
           " proto = \"ll\"; } );\n",
           comm);
  return buf;
}

START_TEST(channels_never_exceed_the_communicator) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  int changed;
  /* Recorded: 2 channels, never more. All-gather never gets a count (NCCL's
   * AllGatherV path uses it unclamped): only its candidate measured with
   * NCCL's own count (channels = 0) is used, ring/simple/8 never. */
  use_profile(eight_channels("communicator = { channels = 2; };"));
  open_comm(&pl, &c, 6, 8);
  decide(&c, ncclFuncAllReduce, 4096, 0, &ch, NULL);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_SIMPLE);
  ck_assert_int_eq(ch.nchannels, 2);
  decide(&c, ncclFuncAllGather, 4096, 0, &ch, NULL);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 0);
  /* A rule without channels keeps NCCL's count. */
  decide(&c, ncclFuncBroadcast, 4096, 0, &ch, &changed);
  ck_assert(changed);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 0);
  close_comm(&pl, &c);
  /* Unknown: all-gather as above; the rest never gets more than
   * the smallest count the profile measured (4): ring/simple/8 would run
   * with fewer channels than measured, so ring/LL/4 is chosen. */
  use_profile(eight_channels(""));
  open_comm(&pl, &c, 6, 8);
  decide(&c, ncclFuncAllReduce, 4096, 0, &ch, NULL);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 4);
  decide(&c, ncclFuncAllGather, 4096, 0, &ch, &changed);
  ck_assert(changed);
  ck_assert_int_eq(ch.proto, NCCL_PROTO_LL);
  ck_assert_int_eq(ch.nchannels, 0);
  close_comm(&pl, &c);
}
END_TEST

START_TEST(environment_differences_only_warn) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  int changed;
  use_profile(eight_channels("communicator = { channels = 2; };\n"
                             "nccl_env = { NCCL_MAX_NCHANNELS = \"2\"; NCCL_PROTO = \"^LL128\"; };"));
  /* Same environment: silent and active. */
  setenv("NCCL_MAX_NCHANNELS", "2", 1);
  setenv("NCCL_PROTO", "^LL128", 1);
  open_comm(&pl, &c, 6, 8);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  decide(&c, ncclFuncAllReduce, 4096, 0, &ch, &changed);
  ck_assert(changed);
  close_comm(&pl, &c);
  /* A protocol variable differs: WARN naming it, still active. */
  ph_log_clear();
  setenv("NCCL_PROTO", "Simple", 1);
  open_comm(&pl, &c, 6, 8);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "NCCL_PROTO is 'Simple' here but was '^LL128'"), 1);
  decide(&c, ncclFuncAllReduce, 4096, 0, &ch, &changed);
  ck_assert(changed);
  close_comm(&pl, &c);
  /* A channel variable differs: one WARN naming it, and the profile still
   * decides. A launcher may set it on some ranks only, and a rank that went
   * passive while another tunes would hang the job (issue 17 §2); NCCL
   * reconciles comm->nChannels across ranks (init.cc initTransportsRank)
   * and clamps the answer to it. */
  ph_log_clear();
  setenv("NCCL_PROTO", "^LL128", 1);
  unsetenv("NCCL_MAX_NCHANNELS");
  open_comm(&pl, &c, 6, 8);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "NCCL_MAX_NCHANNELS is unset here but was '2'"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 1);
  decide(&c, ncclFuncAllReduce, 4096, 0, &ch, &changed);
  ck_assert(changed);
  close_comm(&pl, &c);
}
END_TEST

/* §3: NCCL 2.30 multiplies every Ring entry by 1024 for fp8 reductions
 * beyond 8 ranks (enqueue.cc updateCollCostTable) so that it picks Tree. */
START_TEST(fp8_ring_steering_is_respected) {
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 );\n"
              "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 10.0 ); },\n"
              "                 { algo = \"tree\"; proto = \"simple\"; channels = 2; latency = ( 3.0, 30.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  open_comm(&pl, &c, 6, 16);
  for (size_t n = 1024; n <= 1048576; n *= 4) {
    float t[7][3];
    pt_test_nccl_table(t, ncclFuncAllReduce, n, 16, 0);
    for (int p = 0; p < 3; p++)
      if (t[NCCL_ALGO_RING][p] >= 0) t[NCCL_ALGO_RING][p] *= 1024.0f;
    ph_decide(&c, ncclFuncAllReduce, n, 0, t, &ch);
    ck_assert_msg(ch.algo == NCCL_ALGO_TREE, "%zu B: plugin revived Ring", n);
    ck_assert_int_eq(ch.proto, NCCL_PROTO_SIMPLE);
    /* The same table without the fp8 factor: Ring, as measured. */
    pt_test_nccl_table(t, ncclFuncAllReduce, n, 16, 0);
    ph_decide(&c, ncclFuncAllReduce, n, 0, t, &ch);
    ck_assert_int_eq(ch.algo, NCCL_ALGO_RING);
  }
  close_comm(&pl, &c);
}
END_TEST

/* Issue 17 (merge gap): a profile measured while NCCL had LL128 off (a
 * PCIe box's default), used where NCCL_PROTO opts it in. NCCL's cost table,
 * the same on every rank, enables a combination the profile never saw NCCL
 * run; where it is NCCL's best entry, the measured default is not what NCCL
 * runs, and the call is NCCL's. Elsewhere the profile still decides. */
static const char *ll128_gap(const char *env, const char *ll128_row) {
  static char text[2048];
  snprintf(text, sizeof text,
           HEAD("") "%s\nallreduce = { eager = { sizes = [ 1024L, 4194304L ];\n"
           "  nccl_default = ( 20.0, 2000.0 );\n"
           "  candidates = ( { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 10.0, 1000.0 ); }%s ); }; };\n",
           env, ll128_row);
  return text;
}

/* A table with Ring's three protocols only (the rest disabled): best is
 * the lowest cost, LL128 at ll128 (-1 = disabled). */
static void ring_table(float t[7][3], float ll, float ll128, float simple) {
  for (int a = 0; a < 7; a++)
    for (int p = 0; p < 3; p++) t[a][p] = -1.0f;
  t[NCCL_ALGO_RING][NCCL_PROTO_LL] = ll;
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = ll128;
  t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = simple;
}

START_TEST(a_combination_nccl_did_not_run_when_measured_is_left_to_nccl) {
  static const char *const unsup =
      ",\n { algo = \"ring\"; proto = \"ll128\"; channels = 2; latency = ( \"unsupported\", \"unsupported\" ); }";
  static const char *const measured =
      ",\n { algo = \"ring\"; proto = \"ll128\"; channels = 2; latency = ( 30.0, 3000.0 ); }";
  struct {
    const char *env, *row;
    int yields; /* 1: NCCL's best LL128 is left to NCCL */
  } cases[] = {
      {"", unsup, 1},                                               /* recorded unsupported */
      {"", "", 1},                                                  /* never measured, env unknown */
      {"nccl_env = { };", "", 1},                                   /* NCCL's default: LL128 off on PCIe */
      {"nccl_env = { NCCL_PROTO = \"^LL128\"; };", "", 1},         /* disabled by name */
      {"nccl_env = { NCCL_PROTO = \"LL,LL128,Simple\"; };", "", 0}, /* on, not swept: default saw it */
      {"", measured, 0},                                            /* measured: the profile knows it */
  };
  setenv("PCIE_TUNER_TRACE", "1", 1); /* the trace says why */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    use_profile(ll128_gap(cases[i].env, cases[i].row));
    ph_log_clear();
    struct ph_plugin pl;
    struct ph_comm c;
    struct ph_choice ch;
    open_comm(&pl, &c, 6, 8);
    for (size_t n = 1024; n <= 4194304; n *= 64) {
      float t[7][3], before[7][3];
      /* NCCL now runs LL128 (its best entry). */
      ring_table(t, 5.0f, 1.0f, 2.0f);
      memcpy(before, t, sizeof t);
      ph_decide(&c, ncclFuncAllReduce, n, 0, t, &ch);
      ck_assert_int_eq(ch.rc, ncclSuccess);
      if (cases[i].yields)
        ck_assert_msg(!memcmp(before, t, sizeof t) && ch.nchannels == 0 &&
                          ph_log_find(NCCL_LOG_INFO, "did not run when the profile was measured") > 0,
                      "case %zu, %zu B: the plugin overrode NCCL's LL128 with %d/%d", i, n, ch.algo,
                      ch.proto);
      else
        ck_assert_msg(ch.algo == NCCL_ALGO_RING && ch.proto == NCCL_PROTO_SIMPLE,
                      "case %zu, %zu B: measured ranking not applied (%d/%d)", i, n, ch.algo, ch.proto);
      /* LL128 enabled but not NCCL's best (NCCL runs LL, as when measured):
       * the measured ranking applies. */
      ring_table(t, 1.0f, 3.0f, 2.0f);
      ph_decide(&c, ncclFuncAllReduce, n, 0, t, &ch);
      ck_assert_msg(ch.algo == NCCL_ALGO_RING && ch.proto == NCCL_PROTO_SIMPLE,
                    "case %zu, %zu B: LL128 not NCCL's best, yet nothing decided", i, n);
      /* LL128 off, as when measured. */
      ring_table(t, 1.0f, -1.0f, 2.0f);
      ph_decide(&c, ncclFuncAllReduce, n, 0, t, &ch);
      ck_assert_int_eq(ch.proto, NCCL_PROTO_SIMPLE);
    }
    close_comm(&pl, &c);
  }
  unsetenv("PCIE_TUNER_TRACE");
}
END_TEST

/* getChunkSize returns a chunk only for the decision NCCL runs. */
START_TEST(chunk_only_for_the_decided_candidate) {
  use_profile(HEAD("") "communicator = { channels = 8; };\nallreduce = {\n"
              " graph = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 1.0, 10.0 ); },\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 2; chunk = 65536L; latency = ( 2.0, 20.0 ); } ); };\n"
              " eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 4; chunk = 262144L; latency = ( 1.0, 10.0 ); } ); };\n"
              "};\n"
              "reduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 4; chunk = 262144L; latency = ( 1.0, 10.0 ); },\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 2; chunk = 4096L; latency = ( 2.0, 20.0 ); } ); }; };\n");
  struct ph_plugin pl;
  struct ph_comm c;
  open_comm(&pl, &c, 6, 8);
  /* All-reduce: graph decided ring/simple/4 without a chunk, eager ring/
   * simple/4 with 262144. Told neither regBuff nor which, the plugin must
   * not hand out ring/simple/2's 65536. */
  size_t chunk = 131072;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncAllReduce, 65536, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, &chunk), 0);
  ck_assert_uint_ne(chunk, 65536);
  /* Reduce: one mode, the decided ring/simple/4 names 262144. */
  chunk = 131072;
  ck_assert_int_eq(ph_chunk_size(&c, ncclFuncReduce, 65536, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, &chunk), 0);
  ck_assert_uint_eq(chunk, 262144);
  close_comm(&pl, &c);
}
END_TEST

/* The v2 shim answers only pairs NCCL has enabled. */
static void v2_answer(const char *algo_env, const char *proto_env, int coll, int *algo, int *proto) {
  struct ph_plugin pl;
  struct ph_comm c;
  if (algo_env) setenv("NCCL_ALGO", algo_env, 1);
  else unsetenv("NCCL_ALGO");
  if (proto_env) setenv("NCCL_PROTO", proto_env, 1);
  else unsetenv("NCCL_PROTO");
  open_comm(&pl, &c, 2, 8);
  const ncclTuner_v2_t *t = pl.sym;
  int nch = 0;
  *algo = *proto = -1;
  ck_assert_int_eq(t->getCollInfo(c.ctx, (ncclFunc_t)coll, 4096, 0, 0, 1, algo, proto, &nch), 0);
  close_comm(&pl, &c);
}

START_TEST(v2_reads_nccl_algo_and_proto_like_nccl) {
  use_profile(HEAD("") "allreduce = { eager = { sizes = [ 1024L, 1048576L ]; nccl_default = ( 100.0, 1000.0 ); candidates = (\n"
              "  { algo = \"ring\"; proto = \"ll\"; channels = 2; latency = ( 1.0, 10.0 ); },\n"
              "  { algo = \"tree\"; proto = \"simple\"; channels = 2; latency = ( 2.0, 20.0 ); },\n"
              "  { algo = \"ring\"; proto = \"simple\"; channels = 2; latency = ( 3.0, 30.0 ); },\n"
              /* LL128 measured, so a forced LL128 ("^LL") is no unseen
               * combination (a_combination_nccl_did_not_run_...). */
              "  { algo = \"tree\"; proto = \"ll128\"; channels = 2; latency = ( 9.0, 90.0 ); },\n"
              "  { algo = \"ring\"; proto = \"ll128\"; channels = 2; latency = ( 9.5, 95.0 ); } ); }; };\n");
  int a, p;
  v2_answer(NULL, NULL, ncclFuncAllReduce, &a, &p);
  ck_assert(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL);
  v2_answer(NULL, "^LL", ncclFuncAllReduce, &a, &p);
  ck_assert(a == NCCL_ALGO_TREE && p == NCCL_PROTO_SIMPLE);
  v2_answer(NULL, "broadcast:LL;allreduce:^LL", ncclFuncAllReduce, &a, &p);
  ck_assert(a == NCCL_ALGO_TREE && p == NCCL_PROTO_SIMPLE);
  v2_answer("allreduce:ring", NULL, ncclFuncAllReduce, &a, &p);
  ck_assert(a == NCCL_ALGO_RING && p == NCCL_PROTO_LL);
  v2_answer("ring;allreduce:^ring", "allreduce:simple", ncclFuncAllReduce, &a, &p);
  ck_assert(a == NCCL_ALGO_TREE && p == NCCL_PROTO_SIMPLE);
  /* What NCCL would refuse: no answer at all. */
  v2_answer(NULL, "LL, Simple", ncclFuncAllReduce, &a, &p);
  ck_assert(a == -1 && p == -1);
  v2_answer("ring,banana", NULL, ncclFuncAllReduce, &a, &p);
  ck_assert(a == -1 && p == -1);
}
END_TEST

/* §5: NCCL 2.32 loads ncclTunerPlugin_v7 and hands it v7 constants. */
START_TEST(abi_v7_is_exported_and_decides_like_v6) {
  use_profile(five_percent("", ""));
  void *dl = dlopen(pt_test_so(), RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(dl);
  const ncclTuner_v7_t *t7 = dlsym(dl, "ncclTunerPlugin_v7");
  const ncclTuner_v6_t *t6 = dlsym(dl, "ncclTunerPlugin_v6");
  ck_assert_ptr_nonnull(t7);
  ck_assert_ptr_nonnull(t6);
  ck_assert_str_eq(t7->name, "PcieTuner");
  ck_assert_ptr_nonnull(t7->getChunkSize);
  ncclTunerConstants_v7_t k, before;
  unsigned char *b = (unsigned char *)&k;
  for (size_t i = 0; i < sizeof k; i++) b[i] = (unsigned char)(i * 7 + 3);
  memcpy(&before, &k, sizeof k);
  ncclNvlDomainInfo_v7_t nvl = {1, 8, 8};
  void *c7 = NULL, *c6 = NULL;
  ck_assert_int_eq(t7->init(&c7, 5, 8, 1, ph_logger, &nvl, &k), ncclSuccess);
  ck_assert_int_eq(memcmp(&k, &before, sizeof k), 0); /* all 1272 bytes left as NCCL made them */
  ncclTunerConstants_v6_t k6;
  memset(&k6, 0, sizeof k6);
  ck_assert_int_eq(t6->init(&c6, 5, 8, 1, ph_logger, &nvl, &k6), ncclSuccess);
  for (size_t n = 512; n < (4u << 20); n = n * 3 / 2) {
    float a[7][3], b6[7][3];
    int na = 0, nb = 0;
    pt_test_nccl_table(a, ncclFuncAllReduce, n, 8, 0);
    memcpy(b6, a, sizeof a);
    ck_assert_int_eq(t7->getCollInfo(c7, ncclFuncAllReduce, n, 1, (float **)a, 7, 3, 0, &na), 0);
    ck_assert_int_eq(t6->getCollInfo(c6, ncclFuncAllReduce, n, 1, (float **)b6, 7, 3, 0, &nb), 0);
    ck_assert_int_eq(memcmp(a, b6, sizeof a), 0);
    ck_assert_int_eq(na, nb);
  }
  ck_assert_int_eq(t7->finalize(c7), ncclSuccess);
  ck_assert_int_eq(t6->finalize(c6), ncclSuccess);
  ck_assert_int_eq(t7->finalize(NULL), ncclSuccess);
  dlclose(dl);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("decisions");
  TCase *tc = tcase_create("dlopen");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, imported_profile_never_forces_the_slower_choice);
  tcase_add_test(tc, a_gain_must_clear_the_margin_and_the_noise);
  tcase_add_test(tc, ties_and_small_gains_go_to_nccl);
  tcase_add_test(tc, a_gain_of_exactly_the_margin_goes_to_nccl);
  tcase_add_test(tc, never_slower_than_what_nccl_may_run);
  tcase_add_test(tc, partial_sweep_is_refused_with_one_warn);
  tcase_add_test(tc, no_default_leaves_it_to_nccl);
  tcase_add_test(tc, channels_never_exceed_the_communicator);
  tcase_add_test(tc, environment_differences_only_warn);
  tcase_add_test(tc, fp8_ring_steering_is_respected);
  tcase_add_test(tc, chunk_only_for_the_decided_candidate);
  tcase_add_test(tc, every_init_warn_carries_the_commid);
  tcase_add_test(tc, a_combination_nccl_did_not_run_when_measured_is_left_to_nccl);
  tcase_add_test(tc, v2_reads_nccl_algo_and_proto_like_nccl);
  tcase_add_test(tc, abi_v7_is_exported_and_decides_like_v6);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
