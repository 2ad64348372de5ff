/* The sweep gives what the user asked for (issue 18 §5), through
 * `pcie-tune profile --backend sim` as a user runs it: every size listed
 * by --sizes or --workload is measured (NCCL's default and every
 * candidate have a value there), and a workload profile is never worse on
 * its workload than the default grid's. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/profile.h"
#include "support/pt_test.h"

static char *dir;

static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static const char verify[] = "t1 allreduce 14336 123\nt4 allreduce 57344 123\nt8 allreduce 114688 123\n"
                             "t16 allreduce 229376 123\nt32 allreduce 458752 123\nt64 allreduce 917504 123\n"
                             "t128 allreduce 1835008 123\n";

static void cli(const char *args) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err, "%s", args);
  ck_assert_msg(rc == 0, "'%s': exit %d: %s", args, rc, err);
  free(out);
  free(err);
}

static struct pt_profile *load(const char *name) {
  char path[1200];
  struct pt_error_rec e;
  struct pt_profile *p = calloc(1, sizeof *p);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ck_assert_msg(pt_profile_load(p, path, &e) == 0, "%s: %s", path, e.msg);
  return p;
}

static void unload(struct pt_profile *p) {
  pt_profile_release(p);
  free(p);
}

/* Every listed size is a column, with NCCL's default measured and no
 * candidate left "-" there. */
static void all_measured(const char *name, const uint64_t *want, size_t nwant) {
  struct pt_profile *p = load(name);
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(s);
  for (size_t w = 0; w < nwant; w++) {
    size_t k = 0;
    while (k < s->nsizes && s->sizes[k] != want[w]) k++;
    ck_assert_msg(k < s->nsizes, "%s: %llu B not measured", name, (unsigned long long)want[w]);
    ck_assert_msg(s->nccl_default[k].state == PT_PT_OK, "%s: NCCL's default missing at %llu B", name,
                  (unsigned long long)want[w]);
    for (size_t c = 0; c < s->ncand; c++)
      ck_assert_msg(s->cand[c].points[k].state != PT_PT_MISSING, "%s: %s/%s/%d unmeasured at %llu B", name,
                    pt_algo_name(s->cand[c].algo), pt_proto_name(s->cand[c].proto), s->cand[c].channels,
                    (unsigned long long)want[w]);
  }
  unload(p);
}

START_TEST(every_listed_size_is_measured) {
  static const uint64_t list[] = {8, 16, 32, 2097152};
  cli("profile --backend sim --box gen5-8x-p2p --quiet --sizes 8,16,32,2M --out l.cfg");
  all_measured("l.cfg", list, 4);
  free(pt_test_write(dir, "verify.txt", verify));
  static const uint64_t wl[] = {8, 14336, 16384, 57344, 114688, 229376, 458752, 917504, 1835008, 2097152};
  cli("profile --backend sim --box gen5-8x-p2p --quiet --sizes 8,16K,2M --workload verify.txt --out w.cfg");
  all_measured("w.cfg", wl, 10);
}
END_TEST

/* tuned_us of step `step` in simulate's JSON. */
static double tuned_us(const char *json, const char *step) {
  char key[64];
  snprintf(key, sizeof key, "{\"step\": \"%s\",", step);
  const char *at = strstr(json, key);
  ck_assert_msg(at != NULL, "no step %s in %s", step, json);
  at = strstr(at, "\"tuned_us\": ");
  ck_assert_ptr_nonnull(at);
  return atof(at + strlen("\"tuned_us\": "));
}

static char *simulate(const char *profile) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err, "simulate %s --box gen5-8x-p2p --workload verify.txt --json", profile);
  ck_assert_msg(rc == 0, "simulate %s: exit %d: %s", profile, rc, err);
  free(err);
  return out;
}

/* Measuring the workload's own sizes must not cost what interpolating
 * between powers of two gave: at tokens=4 (57344 B) the compiler needs
 * NCCL's default at both ends of the segment, and at tokens=128 it must
 * recognise what NCCL ran at 1835008 B. Within the profile's 2 % margin:
 * a gain below it is left to NCCL by design, wherever it was measured. */
START_TEST(a_workload_profile_is_never_worse_than_the_default_grid) {
  static const char *steps[] = {"t1", "t4", "t8", "t16", "t32", "t64", "t128"};
  free(pt_test_write(dir, "verify.txt", verify));
  cli("profile --backend sim --box gen5-8x-p2p --quiet --out grid.cfg");
  cli("profile --backend sim --box gen5-8x-p2p --quiet --sizes 8,16K,2M --workload verify.txt --out wl.cfg");
  char *g = simulate("grid.cfg"), *w = simulate("wl.cfg");
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
    ck_assert_msg(tuned_us(w, steps[i]) <= 1.02 * tuned_us(g, steps[i]), "%s: workload profile %.1f us, grid %.1f us",
                  steps[i], tuned_us(w, steps[i]), tuned_us(g, steps[i]));
  free(g);
  free(w);
}
END_TEST

int main(void) {
  Suite *s = suite_create("measure_sizes");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_listed_size_is_measured);
  tcase_add_test(tc, a_workload_profile_is_never_worse_than_the_default_grid);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
