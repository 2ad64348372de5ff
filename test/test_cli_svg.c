/* show --svg as a user runs it, on an adaptive sweep of a simulated box and
 * on a profile of rules only: the chart answers the project's question
 * (the 14 KiB-2 MiB band widened, choices labelled, speed-up panel), an
 * adaptive sweep draws whole lines, and the legend lists only what is drawn.
 * When rsvg-convert is installed, the chart must also render. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static char *dir;

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static int run(char **out, char **err, const char *args) {
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cd '%s' && '%s' %s", dir, pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  return rc;
}

static char *slurp(const char *name) {
  char *path = NULL, *text = NULL;
  size_t len = 0;
  ck_assert(asprintf(&path, "%s/%s", dir, name) > 0);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ne(getdelim(&text, &len, '\0', f), -1);
  fclose(f);
  free(path);
  return text;
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static void renders(const char *svg) {
  char *cmd = NULL, *out, *err;
  if (system("command -v rsvg-convert >/dev/null 2>&1") != 0) return; /* optional tool */
  ck_assert(asprintf(&cmd, "cd '%s' && rsvg-convert '%s' -o chart.png && test -s chart.png", dir, svg) > 0);
  ck_assert_msg(pt_test_run(cmd, &out, &err) == 0, "rsvg-convert failed: %s", err);
  free(out);
  free(err);
  free(cmd);
}

START_TEST(adaptive_sweep_chart) {
  char *out, *err;
  /* Ring only, LL and Simple: the legend must not offer LL128 or Tree. */
  ck_assert_int_eq(run(&out, &err,
                       "profile --backend sim --box gen5-8x-dual-misdetect --sizes 8:16M --algos ring "
                       "--protos ll,simple --channels 1,2,4 --out p.cfg --quiet"),
                   0);
  free(out);
  free(err);
  ck_assert_int_eq(run(&out, &err, "show p.cfg --svg p.svg"), 0);
  free(out);
  free(err);
  char *svg = slurp("p.svg"), *cfg = slurp("p.cfg");
  ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
  /* An adaptive sweep leaves sizes unmeasured; a candidate is still one
   * line (nothing failed on this box), never a trail of fragments. */
  int ncand = count(cfg, "algo = \""), lines = count(svg, "stroke-opacity=\"0.5\"");
  ck_assert_int_gt(lines, 0);
  ck_assert_int_le(lines, ncand);
  ck_assert_ptr_nonnull(strstr(cfg, "\"-\"")); /* it did skip sizes */
  /* Choices named on the chart; the speed-up has its own panel. */
  ck_assert_ptr_nonnull(strstr(svg, ">ring/ll/"));
  ck_assert_ptr_nonnull(strstr(svg, "speedup over NCCL's default"));
  /* The verify-step band takes most of the width (70 % of the plot). */
  const char *band = strstr(svg, "fill=\"#f1f5ff\"/>");
  ck_assert_ptr_nonnull(band);
  while (band > svg && strncmp(band, "<rect", 5)) band--;
  double x, width;
  ck_assert_int_eq(sscanf(band, "<rect x=\"%lf\" y=\"%*d\" width=\"%lf\"", &x, &width), 2);
  ck_assert_double_ge(width, 0.65 * (770 - 80));
  /* The legend lists what was drawn, and only that. */
  ck_assert_ptr_nonnull(strstr(svg, ">LL candidates<"));
  ck_assert_ptr_nonnull(strstr(svg, ">Simple candidates<"));
  ck_assert_ptr_null(strstr(svg, ">LL128 candidates<"));
  ck_assert_ptr_null(strstr(svg, "Tree (dashed)"));
  /* NCCL builds 2 channels on this box (its derived view), so the sweep
   * measures 1 and 2 only, and the legend says so. */
  ck_assert_ptr_nonnull(strstr(svg, ">2 channels<"));
  ck_assert_ptr_null(strstr(svg, ">4 channels<"));
  ck_assert_ptr_nonnull(strstr(svg, ">NCCL default<"));
  renders("p.svg");
  free(svg);
  free(cfg);
}
END_TEST

/* Issue 26 §7: an eager-only import drawn for graph calls (show's default
 * mode) says it draws the eager data; the speed-up figures at small sizes,
 * a few pixels apart outside the widened band, never overlap. */
START_TEST(eager_import_title_and_labels) {
  char *out, *err, *cmd = NULL;
  ck_assert(asprintf(&cmd, "import --out e.cfg '%s/test/data/nccltests/synth/ar8-eager-default.txt' "
                           "'%s/test/data/nccltests/synth/ar8-eager-ring-ll-4.txt'",
                     pt_test_srcdir(), pt_test_srcdir()) > 0);
  ck_assert_msg(run(&out, &err, cmd) == 0, "%s", err);
  free(out), free(err), free(cmd);
  ck_assert_int_eq(run(&out, &err, "show e.cfg --svg e.svg --quiet"), 0);
  free(out), free(err);
  char *svg = slurp("e.svg");
  ck_assert_msg(strstr(svg, "allreduce, eager mode (its data also serves graph calls)") &&
                    !strstr(svg, ", graph mode<"),
                "%.400s", svg);
  free(svg);
  /* Every size from 8 B: dozens of measured sizes below the band. */
  ck_assert_int_eq(run(&out, &err,
                       "profile --backend sim --box gen4-4x-shm --sizes 8:64M --out s.cfg --quiet"),
                   0);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "show s.cfg --svg s.svg --quiet"), 0);
  free(out), free(err);
  svg = slurp("s.svg");
  double lx[256], ly[256];
  int n = 0;
  static const char tag[] = "<text x=\"";
  for (const char *t = strstr(svg, tag); t && n < 256; t = strstr(t + 1, tag)) {
    double x, y;
    char tail[64];
    if (sscanf(t, "<text x=\"%lf\" y=\"%lf\" font-size=\"9\" text-anchor=\"middle\">%63[^<]", &x, &y, tail) == 3 &&
        strstr(tail, "\u00d7")) {
      lx[n] = x;
      ly[n++] = y;
    }
  }
  ck_assert_int_gt(n, 1);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      ck_assert_msg(fabs(lx[i] - lx[j]) >= 28 || fabs(ly[i] - ly[j]) >= 10,
                    "speed-up labels %d (%.1f, %.1f) and %d (%.1f, %.1f) overlap", i, lx[i], ly[i], j, lx[j],
                    ly[j]);
  free(svg);
}
END_TEST

/* Issue 26 §7: a row wider than its one measured size shows the speed-up's
 * range over the row (its measured size and its two ends), not that size's
 * figure alone: ring/ll/4 wins 27555 B..232260 B, measured at 64 KiB only
 * (1.43x there), its gain falling towards the crossovers. */
START_TEST(a_wide_row_shows_its_range) {
  char *out, *err;
  free(pt_test_write(dir, "w.cfg",
                     "version = 1;\nname = \"wide\";\nprovenance = { tool = \"t\"; backend = \"b\"; nccl_version = "
                     "\"2.28.9\"; date = \"d\"; mode = \"eager\"; };\n"
                     "allreduce = { eager = { sizes = [ 16384L, 65536L, 262144L ];\n"
                     "  nccl_default = ( 10.0, 20.0, 40.0 );\n"
                     "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 12.0, 14.0, 40.5 ); },\n"
                     "    { algo = \"ring\"; proto = \"simple\"; channels = 4; latency = ( 10.0, 20.0, 40.0 ); } ); }; };\n"));
  ck_assert_int_eq(run(&out, &err, "show w.cfg"), 0);
  const char *row = strstr(out, "ring/ll/4");
  ck_assert_msg(row != NULL, "%s", out);
  double lo = 0, hi = 0;
  const char *x = strstr(row, "-1.43x");
  ck_assert_msg(x != NULL, "no range ending at the measured 1.43x:\n%s", out);
  while (x > row && x[-1] != ' ') x--;
  ck_assert_int_eq(sscanf(x, "%lf-%lfx", &lo, &hi), 2);
  ck_assert_msg(lo >= 1.0 && lo < 1.2, "the row's low end %.2f:\n%s", lo, out);
  free(out);
  free(err);
}
END_TEST

/* check accepts a profile of rules only and the plugin uses it, so show
 * --svg must draw it too (it used to dereference the missing series). */
START_TEST(rules_only_profile) {
  char *out, *err;
  free(pt_test_write(dir, "r.cfg",
                     "version = 1;\nname = \"rules-only\";\n"
                     "provenance = { tool = \"t\"; backend = \"b\"; nccl_version = \"v\"; date = \"d\"; mode = \"graph\"; };\n"
                     "rules = ( { collective = \"allreduce\"; min_bytes = 32768L; max_bytes = 262144L;\n"
                     "  algo = \"ring\"; proto = \"ll\"; channels = 4; } );\n"));
  ck_assert_int_eq(run(&out, &err, "show r.cfg --svg r.svg"), 0);
  free(out);
  free(err);
  char *svg = slurp("r.svg");
  ck_assert_ptr_nonnull(strstr(svg, ">R ring/ll/4<"));
  ck_assert_ptr_nonnull(strstr(svg, ">NCCL<"));
  ck_assert_ptr_nonnull(strstr(svg, "no measurements in this series"));
  ck_assert_ptr_null(strstr(svg, "candidates<"));
  ck_assert_ptr_null(strstr(svg, "chosen (plugin)"));
  renders("r.svg");
  free(svg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_svg");
  TCase *tc = tcase_create("svg");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, adaptive_sweep_chart);
  tcase_add_test(tc, rules_only_profile);
  tcase_add_test(tc, eager_import_title_and_labels);
  tcase_add_test(tc, a_wide_row_shows_its_range);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
