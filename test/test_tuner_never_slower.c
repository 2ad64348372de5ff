/* Property (issue 9, "Done when"; issue 17: >= 0.98x of NCCL, and grouped
 * calls): a swept or imported profile never makes the plugin slower than
 * NCCL's default beyond the measurement noise, on any built-in simulated
 * box, in graph and eager mode. Random profiles are
 * "measured" from each box's truth with noise, the way a sweep or an
 * nccl-tests import sees it; the built plugin is then judged through dlopen
 * and the simulated host with sim/simeval.h, as `pcie-tune simulate` judges
 * it. Boxes come from the box list API, so re-derived boxes are covered. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "nccl/tuner_v6.h"
#include "pcie/host.h"
#include "pcie/sim_box.h"
#include "pcie/sim_fp.h"
#include "sim/simeval.h"
#include "support/pt_test.h"

#define PROFILES_PER_BOX 6
/* The measured medians carry 1 % noise (sigma); the plugin must stay within
 * 0.98x of NCCL's speed (issue 17): tuned/NCCL <= 1/0.98. */
#define NOISE_SIGMA 0.01
#define TOLERANCE (1 / 0.98 - 1)

static double gauss(unsigned *seed) {
  double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
  double v = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
  return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void put_point(FILE *f, const struct pt_box *b, int mode, int algo, int proto, int ch,
                      uint64_t n, unsigned *seed, int may_skip) {
  float table[7][3];
  pt_box_nccl_table(b, PT_ALLREDUCE, n, table);
  double us = pt_box_true_us(b, PT_ALLREDUCE, mode, algo, proto, ch, n);
  int fault = pt_box_fault_state(b, PT_ALLREDUCE, algo, proto, n);
  if (table[algo][proto] < 0 || us < 0) fputs("\"unsupported\"", f);
  else if (fault != PT_PT_OK) fprintf(f, "\"%s\"", pt_point_state_name(fault));
  else if (may_skip && rand_r(seed) % 10 == 0) fputs("\"-\"", f); /* an adaptive sweep's gap */
  else fprintf(f, "%.6f", us * exp(NOISE_SIGMA * gauss(seed)));
}

/* What random_profile records: RP_SWEPT the communicator's channel count
 * and a passing LL128 screen as a sweep does (without it, the count
 * unknown and no screen, as an nccl-tests import without INFO lines: its
 * LL128 candidates are left to NCCL); RP_NO_DEFAULT no nccl_default at all (forced logs
 * imported without the default run, kept as data); RP_DEFAULT_GAPS NCCL's
 * default missing ("-") at about a third of the sizes. */
#define RP_SWEPT 1
#define RP_NO_DEFAULT 2
#define RP_DEFAULT_GAPS 4

static char *random_profile(const struct pt_box *b, int mode, int flags, unsigned *seed) {
  int swept = flags & RP_SWEPT;
  uint64_t sizes[32];
  size_t ns = 0;
  for (uint64_t s = (uint64_t)1 << (3 + rand_r(seed) % 10); s <= ((uint64_t)1 << 28) && ns < 24;
       s <<= 1 + rand_r(seed) % 2) /* factor 2 or 4, as sweeps and nccl-tests -f 2 */
    sizes[ns++] = s;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  fprintf(f,
          "version = 1;\nname = \"random\";\nmatch = { nranks = %d; };\n"
          "provenance = { tool = \"test\"; backend = \"sim\"; nccl_version = \"2.30\"; "
          "date = \"2026-12-01\"; mode = \"%s\";%s };\n",
          b->nranks, pt_mode_name(mode), swept ? " extra = { ll128_screen = { result = \"pass\"; }; };" : "");
  if (swept) fprintf(f, "communicator = { channels = %d; };\n", b->nccl.comm_channels);
  fprintf(f, "allreduce = { %s = {\n  sizes = [ ", pt_mode_name(mode));
  for (size_t i = 0; i < ns; i++) fprintf(f, "%s%lluL", i ? ", " : "", (unsigned long long)sizes[i]);
  fputs(" ];\n", f);
  if (!(flags & RP_NO_DEFAULT)) {
    fputs("  nccl_default = ( ", f);
    for (size_t i = 0; i < ns; i++) {
      double us = pt_box_default_us(b, PT_ALLREDUCE, mode, sizes[i]) * exp(NOISE_SIGMA * gauss(seed));
      if ((flags & RP_DEFAULT_GAPS) && rand_r(seed) % 3 == 0) fprintf(f, "%s\"-\"", i ? ", " : "");
      else fprintf(f, "%s%.6f", i ? ", " : "", us);
    }
    fputs(" );\n", f);
  }
  fputs("  candidates = (\n", f);
  int ncand = 0, maxch = b->nccl.comm_channels < 8 ? b->nccl.comm_channels : 8;
  while (!ncand) {
    for (int a = 0; a < 2; a++)
      for (int p = 0; p < 3; p++)
        for (int ch = 1; ch <= maxch; ch++) {
          if (rand_r(seed) % 10 >= 4) continue;
          fprintf(f, "%s    { algo = \"%s\"; proto = \"%s\"; channels = %d;\n      latency = ( ",
                  ncand++ ? ",\n" : "", a ? "ring" : "tree", p == 0 ? "ll" : p == 1 ? "ll128" : "simple",
                  ch);
          for (size_t i = 0; i < ns; i++) {
            if (i) fputs(", ", f);
            put_point(f, b, mode, a ? NCCL_ALGO_RING : NCCL_ALGO_TREE, p, ch, sizes[i], seed,
                      i > 0 && i + 1 < ns);
          }
          fprintf(f, " );\n      spread = ( ");
          for (size_t i = 0; i < ns; i++) fprintf(f, "%s%.3f", i ? ", " : "", 3 * NOISE_SIGMA);
          fputs(" ); }", f);
        }
  }
  fputs("\n  );\n}; };\n", f);
  fclose(f);
  return text;
}

START_TEST(never_slower_than_nccl_on_any_box) {
  char *dir = pt_test_tmpdir();
  /* PT_SEED=N explores other random profiles (seeds 1-6 were tried too). */
  unsigned seed = getenv("PT_SEED") ? (unsigned)atoi(getenv("PT_SEED")) : 2026;
  double worst = 0;
  size_t acted = 0, judged = 0, judged_grouped = 0;
  for (size_t bi = 0; bi < pt_box_builtin_count(); bi++) {
    const struct pt_box *b = pt_box_builtin_at(bi);
    for (int mode = 0; mode < PT_NMODES; mode++)
      for (int r = 0; r < PROFILES_PER_BOX; r++) {
        int swept = r % 2 == 0;
        char *text = random_profile(b, mode, swept ? RP_SWEPT : 0, &seed);
        char *path = pt_test_write(dir, "random.cfg", text);
        setenv("PCIE_TUNER_PROFILE", path, 1);
        struct ph_plugin pl;
        struct ph_comm comm;
        char err[512];
        ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(ph_comm_init(&comm, &pl, (size_t)b->nranks, 1, 1), ncclSuccess);
        /* Refused: a WARN other than the unscreened LL128 one (the
         * profile still decides). */
        ck_assert_msg(ph_log_find(NCCL_LOG_WARN, NULL) == ph_log_find(NCCL_LOG_WARN, "; the profile still decides"),
                      "%s: the profile was refused", b->name);
        for (int k = 8; k <= 4 * 30; k++) {
          uint64_t n = (uint64_t)llround(pow(2.0, k / 4.0));
          struct pt_sim_eval ev;
          pt_sim_eval(&comm, b, PT_ALLREDUCE, mode, n, &ev);
          ck_assert_int_eq(ev.plugin_rc, 0);
          if (ev.nccl.us < 0) continue;
          if (pt_box_fault_state(b, PT_ALLREDUCE, ev.nccl.algo, ev.nccl.proto, n) != PT_PT_OK)
            continue; /* NCCL's own choice fails here: not a question of speed */
          judged++;
          acted += ev.tuned.algo != ev.nccl.algo || ev.tuned.proto != ev.nccl.proto ||
                   ev.tuned.channels != ev.nccl.channels;
          ck_assert_msg(ev.tuned.state == PT_PT_OK, "%s %s: the plugin chose a failing %d/%d at %llu B",
                        b->name, pt_mode_name(mode), ev.tuned.algo, ev.tuned.proto,
                        (unsigned long long)n);
          double ratio = ev.tuned.us / ev.nccl.us;
          if (ratio > worst) worst = ratio;
          if (ratio > 1 + TOLERANCE) fprintf(stderr, "the profile:\n%s", text);
          ck_assert_msg(ratio <= 1 + TOLERANCE,
                        "%s %s (%s profile %d): %llu B tuned %d/%d/%d %.2f us vs NCCL %d/%d/%d "
                        "%.2f us (x%.3f)",
                        b->name, pt_mode_name(mode), swept ? "swept" : "imported", r,
                        (unsigned long long)n, ev.tuned.algo, ev.tuned.proto, ev.tuned.channels,
                        ev.tuned.us, ev.nccl.algo, ev.nccl.proto, ev.nccl.channels, ev.nccl.us,
                        ratio);
          /* Grouped calls (numPipeOps tasks summed into n bytes): the
           * profile measured single calls, so NCCL's choice stands exactly
           * (tuned/NCCL = 1). */
          for (int pipe = 2; pipe <= 16; pipe *= 2) {
            const ncclTuner_v6_t *v6 = pl.sym;
            float t[7][3], before[7][3];
            int nch = 0;
            pt_box_nccl_table(b, PT_ALLREDUCE, n, t);
            memcpy(before, t, sizeof t);
            ck_assert_int_eq(v6->getCollInfo(comm.ctx, ncclFuncAllReduce, n, pipe, (float **)t, 7, 3,
                                             mode == PT_MODE_GRAPH, &nch),
                             ncclSuccess);
            ck_assert_msg(!memcmp(before, t, sizeof t) && nch == 0,
                          "%s %s: %llu B in %d grouped calls: the plugin acted", b->name,
                          pt_mode_name(mode), (unsigned long long)n, pipe);
            judged_grouped++;
          }
        }
        ph_log_clear();
        ck_assert_int_eq(ph_comm_finalize(&comm), ncclSuccess);
        ph_plugin_close(&pl);
        free(path);
        free(text);
      }
  }
  printf("never-slower: %zu sizes judged, plugin acted on %zu, worst tuned/NCCL %.4f; %zu grouped "
         "calls left to NCCL\n",
         judged, acted, worst, judged_grouped);
  /* The property must not hold vacuously. */
  ck_assert_uint_gt(acted, judged / 100);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Issue 26 §1: the never-slower promise holds for every way into a profile,
 * also one whose NCCL default was never measured (forced nccl-tests logs
 * imported alone, kept with --without-default) or has gaps: a candidate is
 * chosen only at sizes where NCCL's default was measured too. Before, a
 * series without nccl_default ranked its candidates as if NCCL were slower
 * and forced them everywhere. */
START_TEST(never_slower_without_nccl_default) {
  char *dir = pt_test_tmpdir();
  unsigned seed = getenv("PT_SEED") ? (unsigned)atoi(getenv("PT_SEED")) : 2026;
  size_t judged = 0, acted = 0, acted_gaps = 0;
  double worst = 0;
  for (size_t bi = 0; bi < pt_box_builtin_count(); bi++) {
    const struct pt_box *b = pt_box_builtin_at(bi);
    for (int r = 0; r < 2 * PT_NMODES; r++) {
      int mode = r % PT_NMODES, flags = r / PT_NMODES ? RP_DEFAULT_GAPS : RP_NO_DEFAULT;
      char *text = random_profile(b, mode, flags | (r % 2 ? RP_SWEPT : 0), &seed);
      char *path = pt_test_write(dir, "nodefault.cfg", text);
      setenv("PCIE_TUNER_PROFILE", path, 1);
      struct ph_plugin pl;
      struct ph_comm comm;
      char err[512];
      ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
      ck_assert_int_eq(ph_comm_init(&comm, &pl, (size_t)b->nranks, 1, 1), ncclSuccess);
      for (int k = 8; k <= 4 * 30; k++) {
        uint64_t n = (uint64_t)llround(pow(2.0, k / 4.0));
        struct pt_sim_eval ev;
        pt_sim_eval(&comm, b, PT_ALLREDUCE, mode, n, &ev);
        ck_assert_int_eq(ev.plugin_rc, 0);
        if (ev.nccl.us < 0) continue;
        if (pt_box_fault_state(b, PT_ALLREDUCE, ev.nccl.algo, ev.nccl.proto, n) != PT_PT_OK) continue;
        int act = ev.tuned.algo != ev.nccl.algo || ev.tuned.proto != ev.nccl.proto ||
                  ev.tuned.channels != ev.nccl.channels;
        judged++;
        if (flags & RP_NO_DEFAULT) {
          acted += act;
          ck_assert_msg(!act, "%s %s: no nccl_default, yet the plugin forced %d/%d/%d at %llu B "
                        "(NCCL %d/%d/%d)\n%s",
                        b->name, pt_mode_name(mode), ev.tuned.algo, ev.tuned.proto,
                        ev.tuned.channels, (unsigned long long)n, ev.nccl.algo, ev.nccl.proto,
                        ev.nccl.channels, text);
        }
        acted_gaps += act && (flags & RP_DEFAULT_GAPS);
        double ratio = ev.tuned.us / ev.nccl.us;
        if (ratio > worst) worst = ratio;
        ck_assert_msg(ratio <= 1 + TOLERANCE, "%s %s: %llu B tuned %.2f us vs NCCL %.2f us (x%.3f)\n%s",
                      b->name, pt_mode_name(mode), (unsigned long long)n, ev.tuned.us, ev.nccl.us,
                      ratio, text);
      }
      ph_log_clear();
      ck_assert_int_eq(ph_comm_finalize(&comm), ncclSuccess);
      ph_plugin_close(&pl);
      free(path);
      free(text);
    }
  }
  printf("never-slower without a default: %zu sizes judged, worst tuned/NCCL %.4f; acted %zu "
         "times with gaps in the default\n", judged, worst, acted_gaps);
  ck_assert_uint_eq(acted, 0);
  ck_assert_uint_gt(acted_gaps, 0); /* the gappy profiles still decide where measured */
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* The profile text with provenance.box set to box b's fingerprint, through
 * the real writer, as `pcie-tune profile --backend sim` records it. */
static char *with_box(const char *text, const struct pt_box *b, const char *more) {
  struct pt_profile p;
  struct pt_error_rec e;
  char *out = NULL, *joined = NULL;
  ck_assert(asprintf(&joined, "%s%s", text, more) > 0);
  ck_assert_msg(pt_profile_load_string(&p, joined, "random.cfg", &e) == 0, "%s", e.msg);
  ck_assert_ptr_nonnull(p.prov.box = malloc(sizeof *p.prov.box));
  ck_assert_int_eq(pt_box_fingerprint(b, p.prov.box), 0);
  ck_assert_int_eq(pt_profile_render(&p, &out), 0);
  pt_profile_release(&p);
  free(joined);
  return out;
}

/* Issue 17 §1: a profile measured on one box, used on another (copied from a
 * colleague, kept after a hardware change). The simulated host presents the
 * box it runs on to the plugin's sysfs reader; the plugin must leave every
 * call to NCCL, so the job is never slower than NCCL there. */
#define OTHER_BOX_FLOOR 0.98
START_TEST(profiles_from_other_boxes_are_never_slower) {
  char *dir = pt_test_tmpdir(), sysroot[4096] = "", err[512];
  unsigned seed = getenv("PT_SEED") ? (unsigned)atoi(getenv("PT_SEED")) : 2017;
  size_t pairs = 0, refused = 0, same = 0;
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN"); /* main accepts them for the other cases */
  for (size_t ai = 0; ai < pt_box_builtin_count(); ai++)
    for (size_t bi = 0; bi < pt_box_builtin_count(); bi++) {
      const struct pt_box *a = pt_box_builtin_at(ai), *b = pt_box_builtin_at(bi);
      if (ai == bi || a->nranks != b->nranks) continue; /* another size never fits: nothing to judge */
      /* Two boxes with one hardware (gen5-8x-ll128 is gen5-8x-dual-misdetect
       * with NCCL_PROTO opting LL128 in) are the same box to the host check:
       * what differs there is the job's NCCL environment, which may differ
       * between ranks and so only warns. The profile then decides, and must
       * still never be slower: where NCCL's table runs a combination the
       * profile never saw it run, the call is NCCL's. */
      struct pt_box_fp fa, fb;
      char diff[256];
      ck_assert_int_eq(pt_box_fingerprint(a, &fa), 0);
      ck_assert_int_eq(pt_box_fingerprint(b, &fb), 0);
      int same_hw = !pt_fp_compare(&fa, &fb, diff, sizeof diff);
      int mode = (int)(pairs % PT_NMODES);
      char *raw = random_profile(a, mode, RP_SWEPT, &seed), *text = with_box(raw, a, "");
      char *path = pt_test_write(dir, "foreign.cfg", text);
      setenv("PCIE_TUNER_PROFILE", path, 1);
      ck_assert_msg(ph_box_present(b, sysroot, sizeof sysroot, err, sizeof err) == 0, "%s", err);
      struct ph_plugin pl;
      struct ph_comm comm;
      ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
      ck_assert_int_eq(ph_comm_init(&comm, &pl, (size_t)b->nranks, 1, 1), ncclSuccess);
      ph_box_withdraw(sysroot);
      ck_assert_msg(ph_log_find(NCCL_LOG_WARN, "measured on another box") == !same_hw,
                    "profile of %s used on %s", a->name, b->name);
      refused += !same_hw;
      same += same_hw;
      pairs++;
      for (int k = 8; k <= 4 * 30; k++) {
        uint64_t n = (uint64_t)llround(pow(2.0, k / 4.0));
        struct pt_sim_eval ev;
        pt_sim_eval(&comm, b, PT_ALLREDUCE, mode, n, &ev);
        if (ev.nccl.us < 0) continue;
        ck_assert_msg(ev.tuned.us > 0 && ev.nccl.us / ev.tuned.us >= OTHER_BOX_FLOOR,
                      "profile of %s on %s %s: %llu B tuned %d/%d/%d %.2f us vs NCCL %.2f us",
                      a->name, b->name, pt_mode_name(mode), (unsigned long long)n, ev.tuned.algo,
                      ev.tuned.proto, ev.tuned.channels, ev.tuned.us, ev.nccl.us);
      }
      ph_log_clear();
      ck_assert_int_eq(ph_comm_finalize(&comm), ncclSuccess);
      ph_plugin_close(&pl);
      free(path);
      free(text);
      free(raw);
    }
  printf("other boxes: %zu pairs, %zu refused as measured elsewhere, %zu on the same hardware\n",
         pairs, refused, same);
  ck_assert_uint_gt(pairs, 2);
  ck_assert_uint_gt(same, 1); /* both directions of gen5-8x-dual-misdetect / gen5-8x-ll128 */
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Issue 17 §2: ranks of one job whose NCCL_* environments differ (a
 * launcher that sets a variable on some ranks) get the same answer from the
 * same NCCL cost table, for every box and size; a difference only warns. */
START_TEST(ranks_with_different_environments_decide_alike) {
  static const char *const vars[][2] = {{"NCCL_P2P_LEVEL", "SYS"},  {"NCCL_MAX_NCHANNELS", "1"},
                                        {"NCCL_MIN_NCHANNELS", "16"}, {"NCCL_SHM_DISABLE", "1"},
                                        {"NCCL_PROTO", "^LL128"},     {"NCCL_GRAPH_REGISTER", "0"}};
  char *dir = pt_test_tmpdir(), sysroot[4096] = "", err[512];
  unsigned seed = getenv("PT_SEED") ? (unsigned)atoi(getenv("PT_SEED")) : 2018;
  size_t tuned = 0;
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  for (size_t bi = 0; bi < pt_box_builtin_count(); bi++) {
    const struct pt_box *b = pt_box_builtin_at(bi);
    int mode = (int)(bi % PT_NMODES);
    char *raw = random_profile(b, mode, RP_SWEPT, &seed), *text = with_box(raw, b, "nccl_env = { };\n");
    char *path = pt_test_write(dir, "env.cfg", text);
    setenv("PCIE_TUNER_PROFILE", path, 1);
    ck_assert_msg(ph_box_present(b, sysroot, sizeof sysroot, err, sizeof err) == 0, "%s", err);
    struct ph_plugin pl;
    struct ph_comm rank[1 + sizeof vars / sizeof vars[0]];
    const size_t nr = sizeof rank / sizeof rank[0];
    ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
    for (size_t r = 0; r < nr; r++) {
      if (r) setenv(vars[r - 1][0], vars[r - 1][1], 1);
      ck_assert_int_eq(ph_comm_init(&rank[r], &pl, (size_t)b->nranks, 1, 1), ncclSuccess);
      if (r) unsetenv(vars[r - 1][0]);
    }
    ph_box_withdraw(sysroot);
    /* Each differing rank said so; nobody refused. */
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "here but was unset when measured"), nr - 1);
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "leaving every decision"), 0);
    for (int k = 8; k <= 4 * 30; k++) {
      uint64_t n = (uint64_t)llround(pow(2.0, k / 4.0));
      float nccl[7][3];
      struct ph_choice c0;
      pt_box_nccl_table(b, PT_ALLREDUCE, n, nccl); /* NCCL's table, the same on every rank */
      for (size_t r = 0; r < nr; r++) {
        float t[7][3];
        struct ph_choice c;
        memcpy(t, nccl, sizeof t);
        ph_decide(&rank[r], PT_ALLREDUCE, n, mode == PT_MODE_GRAPH, t, &c);
        if (!r) {
          c0 = c;
          tuned += c.nchannels != 0 || c.algo != -1;
          continue;
        }
        ck_assert_msg(c.algo == c0.algo && c.proto == c0.proto && c.nchannels == c0.nchannels,
                      "%s %llu B: %s=%s gives %d/%d/%d, the plain rank %d/%d/%d", b->name,
                      (unsigned long long)n, vars[r - 1][0], vars[r - 1][1], c.algo, c.proto,
                      c.nchannels, c0.algo, c0.proto, c0.nchannels);
      }
    }
    ph_log_clear();
    for (size_t r = 0; r < nr; r++) ph_comm_finalize(&rank[r]);
    ph_plugin_close(&pl);
    free(path);
    free(text);
    free(raw);
  }
  ck_assert_uint_gt(tuned, 0);
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* The value after key in a JSON object's text ("ring" for "algo"). */
static void json_str(const char *obj, const char *key, char *out, size_t len) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *v = strstr(obj, pat);
  ck_assert_msg(v != NULL, "no %s in %.200s", key, obj);
  v += strlen(pat);
  snprintf(out, len, "%.*s", (int)strcspn(v, "\""), v);
}

/* The merge gap's reproducer, as a user runs it: a sweep of
 * gen5-8x-dual-misdetect (NCCL had LL128 off, so the sweep has no LL128 row)
 * simulated on gen5-8x-ll128, the same hardware with NCCL_PROTO opting
 * LL128 in. The host check passes (same box); where NCCL runs LL128 the
 * profile knows nothing about what NCCL runs, so the call is NCCL's, and no
 * step is slower than NCCL (>= 0.98x). */
START_TEST(a_profile_without_ll128_on_the_ll128_box) {
  char *dir = pt_test_tmpdir(), *out = NULL, *err = NULL;
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  ck_assert_msg(pt_test_cli_run(dir, 120, &out, &err,
                                "profile --backend sim --box gen5-8x-dual-misdetect --out d.cfg") == 0,
                "%s", err);
  free(out);
  free(err);
  ck_assert_msg(pt_test_cli_run(dir, 120, &out, &err,
                                "simulate d.cfg --box gen5-8x-ll128 --bytes-per-token 1K --calls 1 "
                                "--tokens 1,2,4,8,16,32,64,256,1024,4096,16384,65536 --json") == 0,
                "%s", err);
  ck_assert_msg(strstr(out, "\"warning\": null") != NULL, "the profile was refused:\n%s", out);
  size_t ll128 = 0, steps = 0;
  for (const char *st = strstr(out, "{\"step\""); st; st = strstr(st + 1, "{\"step\"")) {
    const char *nccl = strstr(st, "\"nccl\": {"), *tuned = strstr(st, "\"tuned\": {"),
               *sp = strstr(st, "\"speedup\": ");
    char na[16], np[16], ta[16], tp[16], step[32];
    ck_assert(nccl && tuned && sp);
    json_str(st, "step", step, sizeof step);
    json_str(nccl, "algo", na, sizeof na);
    json_str(nccl, "proto", np, sizeof np);
    json_str(tuned, "algo", ta, sizeof ta);
    json_str(tuned, "proto", tp, sizeof tp);
    double speedup = atof(sp + strlen("\"speedup\": "));
    steps++;
    ck_assert_msg(speedup >= 0.98, "%s: %.3fx of NCCL\n%s", step, speedup, out);
    if (strcmp(np, "ll128")) continue;
    ll128++;
    ck_assert_msg(!strcmp(na, ta) && !strcmp(np, tp),
                  "%s: NCCL runs %s/%s, which the profile never saw it run; the plugin chose %s/%s",
                  step, na, np, ta, tp);
  }
  ck_assert_uint_eq(steps, 12);
  ck_assert_uint_gt(ll128, 0); /* NCCL's view of the box runs LL128 somewhere */
  free(out);
  free(err);
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("never-slower");
  TCase *tc = tcase_create("property");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, never_slower_than_nccl_on_any_box);
  tcase_add_test(tc, never_slower_without_nccl_default);
  tcase_add_test(tc, profiles_from_other_boxes_are_never_slower);
  tcase_add_test(tc, ranks_with_different_environments_decide_alike);
  tcase_add_test(tc, a_profile_without_ll128_on_the_ll128_box);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
