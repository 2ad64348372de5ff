/* Leave-one-out over the published tables (issue 20 §1, docs/sim.md "The
 * truth"). Every table in test/data/real with a box file (its hardware in
 * the documented keys, its NCCL version, its rows) is predicted by the
 * physical truth fitted on all the others: *.box.cfg are the P2P tables,
 * *.shm.cfg the host-staged ones, whose sources state neither the PCIe
 * generation, nor the CPU, nor the NCCL version (docs/sim.md says why they
 * are out of the target). Target per P2P table, at 8 KiB-2 MiB, for NCCL's
 * default curve and every forced curve: median |ln(sim/real)| <= 0.15 and
 * 90th percentile <= 0.35; the SHM tables must not get worse than the
 * figures docs/sim.md states for them. Prints those figures, and checks
 * that the parameters compiled into sim/phys.c are what the fit on every
 * table gives. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/sim_box.h"
#include "support/pt_test.h"

#define MAX_TABLES 16
#define LO (8u << 10)
#define HI (2u << 20)
#define TARGET_MEDIAN 0.15
#define TARGET_P90 0.35

/* The host-staged tables are out of the target: their source states neither
 * the PCIe generation, nor the CPU, nor the transport, nor the NCCL version
 * (the issue lets such a table be excluded; docs/sim.md gives the reason and
 * these figures). They still fit the two host-memory parameters, and their
 * cross-prediction is held to these figures: a regression guard, not a
 * target. Every .box.cfg table is held to the target. */
static const struct {
  const char *table, *curve;
  double median, p90;
} out_of_target[] = {
    {"rtx4090-2x-default-kalavai-docker.shm.cfg", "", 0.242, 0.370},
    {"rtx4090-4x-default-kalavai-docker.shm.cfg", "", 0.241, 0.389},
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

struct tables {
  struct pt_box box[MAX_TABLES];
  char *name[MAX_TABLES];
  size_t n;
};

/* Every test/data/real file ending in suffix, sorted by name. */
static void load(struct tables *t, const char *suffix) {
  char dir[1024];
  size_t sl = strlen(suffix);
  snprintf(dir, sizeof dir, "%s/test/data/real", pt_test_srcdir());
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  t->n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l > sl && !strcmp(e->d_name + l - sl, suffix) && t->n < MAX_TABLES) t->name[t->n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(t->name, t->n, sizeof *t->name, cmp_str);
  for (size_t i = 0; i < t->n; i++) {
    char path[1400];
    struct pt_error_rec err;
    snprintf(path, sizeof path, "%s/%s", dir, t->name[i]);
    ck_assert_msg(pt_box_load(&t->box[i], path, &err) == 0, "%s:%d: %s", err.file, err.line, err.msg);
    ck_assert_msg(t->box[i].phys, "%s: a table's box takes the physical truth (no truth group)", t->name[i]);
    ck_assert_msg(t->box[i].nanchors >= 4, "%s: %zu rows", t->name[i], t->box[i].nanchors);
  }
}

static void release(struct tables *t) {
  for (size_t i = 0; i < t->n; i++) free(t->name[i]);
}

static void print_params(const char *what, const struct pt_phys *p) {
  double v[PT_PHYS_NPARAM];
  pt_phys_to_vec(p, v);
  printf("%s:", what);
  for (int i = 0; i < PT_PHYS_NPARAM; i++) printf(" %s=%.6g", pt_phys_param_name(i), v[i]);
  printf("\n");
  fflush(stdout);
}

/* Prints one table's curves; returns the number that regress (miss the
 * target beyond their recorded figure, or miss it without one). */
static int report(const char *tag, const char *name, const struct pt_box *b, int judge) {
  struct pt_curve_err ce[8];
  size_t nc = pt_box_curve_errors(b, LO, HI, ce, 8);
  int bad = nc == 0;
  if (getenv("PT_LOO_ROWS"))
    for (size_t i = 0; i < b->nanchors; i++) {
      const struct pt_box_anchor *a = &b->anchors[i];
      double us = pt_box_anchor_us(b, a);
      printf("  %s %-10s %9llu B  published %8.2f us  model %8.2f us  ln %+.3f\n", tag,
             a->curve[0] ? a->curve : "default", (unsigned long long)a->nbytes, a->lat_us, us,
             log(us / a->lat_us));
    }
  for (size_t k = 0; k < nc; k++) {
    int good = ce[k].median <= TARGET_MEDIAN && ce[k].p90 <= TARGET_P90, recorded = 0;
    for (size_t m = 0; m < sizeof out_of_target / sizeof *out_of_target && !good; m++)
      if (!strcmp(out_of_target[m].table, name) && !strcmp(out_of_target[m].curve, ce[k].curve)) {
        recorded = 1;
        if (judge && (ce[k].median > out_of_target[m].median || ce[k].p90 > out_of_target[m].p90)) bad++;
      }
    if (judge && !good && !recorded) bad++;
    printf("%-9s %-66s %-12s rows %2d median %.3f p90 %.3f%s\n", tag, name,
           ce[k].curve[0] ? ce[k].curve : "NCCL default", ce[k].n, ce[k].median, ce[k].p90,
           good                          ? ""
           : !strcmp(tag, "held-out")    ? "  (no target: the source states no NCCL version)"
           : recorded                    ? "  misses the target (out of it: source states no hardware or NCCL)"
                                         : "  misses the target");
  }
  fflush(stdout);
  return bad;
}

/* Held-out tables (*.heldout.cfg), predicted by the fit on every table:
 * their figures as measured when each was added, a regression guard (a
 * curve may not get worse by more than 0.005), not a target. "staged" is
 * the box with its own hardware.host_staging_gbs, 0 without it (the
 * fitted shm_bw). Regenerate with PT_LOO_GUARD=1 ... | sed -n 's/^heldout //p'
 * only when a change improves them, and say so in docs/sim.md. */
static const struct {
  const char *table;
  int staged;
  double median, p90;
} heldout_guard[] = {
    {"rtx4090-2x-default-kalavai-k8s.heldout.cfg", 1, 0.036, 0.249},
    {"rtx4090-2x-default-kalavai-k8s.heldout.cfg", 0, 0.307, 0.469},
    {"rtxpro6000-4x8x-nccl-vs-pcieoneshot-voipmonitor-asus-broadcom.4x.heldout.cfg", 0, 2.101, 2.250},
    {"rtxpro6000-4x8x-nccl-vs-pcieoneshot-voipmonitor-asus-broadcom.8x.heldout.cfg", 0, 0.458, 0.598},
};

/* One held-out box predicted with parameters all: with its measured host
 * staging (when it states one) and without. Returns how many of its curves
 * got worse than heldout_guard records (or have no figure there). */
static int report_unseen(const char *name, const struct pt_box *b, const struct pt_phys *all) {
  static struct pt_box v;
  int bad = 0;
  for (int staged = b->hw.host_staging_gbs > 0; staged >= 0; staged--) {
    v = *b;
    if (!staged) v.hw.host_staging_gbs = 0;
    pt_box_truth_from_hw(&v, all);
    printf("held-out  %s, host staging: %s\n", name,
           staged ? "the box's measured host_staging_gbs" : "the fitted shm_bw");
    report("held-out", name, &v, 0);
    struct pt_curve_err ce[8];
    size_t nc = pt_box_curve_errors(&v, LO, HI, ce, 8);
    for (size_t k = 0; k < nc; k++) {
      int known = 0;
      for (size_t m = 0; m < sizeof heldout_guard / sizeof *heldout_guard; m++)
        if (!strcmp(heldout_guard[m].table, name) && heldout_guard[m].staged == staged) {
          known = 1;
          if (ce[k].median > heldout_guard[m].median + 0.005 || ce[k].p90 > heldout_guard[m].p90 + 0.005)
            bad++, printf("held-out %s (staged %d) got worse than its guard figure\n", name, staged);
        }
      if (!known) bad++, printf("no held-out guard figure for %s (staged %d)\n", name, staged);
      if (getenv("PT_LOO_GUARD"))
        printf("heldout {\"%s\", %d, %.3f, %.3f},\n", name, staged, ce[k].median, ce[k].p90);
    }
  }
  return bad;
}

/* The compiled parameters' recipe: P2P parameters on the P2P tables, then
 * the host-memory ones on the SHM tables. */
static void fit_all(struct tables *p2p, struct tables *shm, struct pt_phys *out) {
  struct pt_phys stage1;
  pt_phys_fit(p2p->box, p2p->n, -1, PT_PHYS_FIT_P2P, pt_phys_prior(), &stage1);
  pt_phys_fit(shm->box, shm->n, -1, PT_PHYS_FIT_SHM, &stage1, out);
  for (size_t i = 0; i < p2p->n; i++) pt_box_truth_from_hw(&p2p->box[i], out);
}

START_TEST(leave_one_out_meets_the_target) {
  static struct tables p2p, shm;
  load(&p2p, ".box.cfg");
  load(&shm, ".shm.cfg");
  ck_assert_uint_ge(p2p.n, 4);
  int bad = 0;
  for (size_t i = 0; i < p2p.n; i++) {
    struct pt_phys fit;
    pt_phys_fit(p2p.box, p2p.n, (long)i, PT_PHYS_FIT_P2P, pt_phys_prior(), &fit);
    if (getenv("PT_LOO_ROWS")) print_params("  fit", &fit);
    bad += report("loo", p2p.name[i], &p2p.box[i], 1);
  }
  /* The SHM tables: their own parameters fitted on the other SHM table,
   * the rest from every P2P table. */
  struct pt_phys stage1;
  pt_phys_fit(p2p.box, p2p.n, -1, PT_PHYS_FIT_P2P, pt_phys_prior(), &stage1);
  for (size_t i = 0; i < shm.n; i++) {
    struct pt_phys fit;
    pt_phys_fit(shm.box, shm.n, (long)i, PT_PHYS_FIT_SHM, &stage1, &fit);
    bad += report("loo", shm.name[i], &shm.box[i], 1);
  }
  struct pt_phys all;
  fit_all(&p2p, &shm, &all);
  for (size_t i = 0; i < p2p.n; i++) report("in-sample", p2p.name[i], &p2p.box[i], 0);
  for (size_t i = 0; i < shm.n; i++) report("in-sample", shm.name[i], &shm.box[i], 0);
  /* Unseen machines whose source states no NCCL version or environment
   * (*.heldout.cfg): predicted by the fit on every table, printed only. */
  static struct tables unseen;
  load(&unseen, ".heldout.cfg");
  for (size_t i = 0; i < unseen.n; i++) bad += report_unseen(unseen.name[i], &unseen.box[i], &all);
  release(&unseen);
  ck_assert_msg(!bad, "%d curve(s) regress against the leave-one-out target or their recorded figure", bad);
  release(&p2p);
  release(&shm);
}
END_TEST

/* The machine a table was measured on: the last two words of its name,
 * source and host ("voipmonitor-turin", "kalavai-docker";
 * pt_table_machine). Tables of one machine leave together: leaving out one
 * table while its sibling (the same box at another GPU count or setting)
 * stays in the fit is what let leave-one-out meet its target (issue 28
 * §5). */
static void machine_of(const char *name, char *out, size_t len) { pt_table_machine(name, out, len); }

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Every row at 0.5-2 MiB of the held-out machine, all curves pooled. */
static double oos_e[64];
static int oos_n;
static void oos_collect(const struct pt_box *b) {
  for (size_t i = 0; i < b->nanchors && oos_n < 64; i++) {
    const struct pt_box_anchor *a = &b->anchors[i];
    if (a->held_out || a->nbytes < (512u << 10) || a->nbytes > (2u << 20)) continue;
    double us = pt_box_anchor_us(b, a);
    oos_e[oos_n++] = us > 0 ? fabs(log(us / a->lat_us)) : INFINITY;
  }
}

/* Leave-one-machine-out figures as measured when this test was written:
 * a regression guard (a curve may not get worse by more than 0.005), not
 * a target; docs/sim.md, "Leave one machine out", says what they mean. */
static const struct {
  const char *table, *curve;
  double median, p90;
} lomo_guard[] = {
#include "test_sim_loo_machines.h"
};

/* Prints a held-out machine's curves; returns how many regress against
 * lomo_guard (or have no figure there). */
static int report_lomo(const char *name, const struct pt_box *b) {
  struct pt_curve_err ce[8];
  size_t nc = pt_box_curve_errors(b, LO, HI, ce, 8);
  int bad = 0;
  for (size_t k = 0; k < nc; k++) {
    int known = 0;
    for (size_t m = 0; m < sizeof lomo_guard / sizeof *lomo_guard; m++)
      if (!strcmp(lomo_guard[m].table, name) && !strcmp(lomo_guard[m].curve, ce[k].curve)) {
        known = 1;
        if (ce[k].median > lomo_guard[m].median + 0.005 || ce[k].p90 > lomo_guard[m].p90 + 0.005)
          bad++, printf("worse than its guard figure: %s %s\n", name, ce[k].curve);
      }
    if (!known) bad++, printf("no guard figure for %s %s\n", name, ce[k].curve);
    printf("lomo      %-66s %-12s rows %2d median %.3f p90 %.3f%s\n", name,
           ce[k].curve[0] ? ce[k].curve : "NCCL default", ce[k].n, ce[k].median, ce[k].p90,
           ce[k].median <= TARGET_MEDIAN && ce[k].p90 <= TARGET_P90 ? "" : "  misses the leave-one-out target");
    if (getenv("PT_LOO_GUARD"))
      printf("guard {\"%s\", \"%s\", %.3f, %.3f},\n", name, ce[k].curve, ce[k].median, ce[k].p90);
  }
  fflush(stdout);
  return bad;
}

/* Fits on every table of set t not of machine m (the P2P stage, or the
 * host-memory stage from start) and predicts m's tables with it. */
static int leave_machine(struct tables *t, const char *m, unsigned long mask, const struct pt_phys *start) {
  static struct pt_box sub[MAX_TABLES];
  char mi[64];
  size_t n = 0;
  int bad = 0;
  for (size_t i = 0; i < t->n; i++) {
    machine_of(t->name[i], mi, sizeof mi);
    if (strcmp(mi, m)) sub[n++] = t->box[i];
  }
  struct pt_phys fit = *start;
  /* No table of another machine in this set: the stage keeps its start
   * (for the host-memory stage, the prior's values). */
  if (n) pt_phys_fit(sub, n, -1, mask, start, &fit);
  for (size_t i = 0; i < t->n; i++) {
    machine_of(t->name[i], mi, sizeof mi);
    if (strcmp(mi, m)) continue;
    pt_box_truth_from_hw(&t->box[i], &fit);
    bad += report_lomo(t->name[i], &t->box[i]);
    oos_collect(&t->box[i]);
  }
  return bad;
}

START_TEST(leave_one_machine_out_is_reported_and_guarded) {
  static struct tables p2p, shm;
  char seen[MAX_TABLES * 2][64], m[64];
  size_t nseen = 0;
  int bad = 0;
  load(&p2p, ".box.cfg");
  load(&shm, ".shm.cfg");
  machine_of("a-b-voipmonitor-turin.4x.box.cfg", m, sizeof m);
  ck_assert_str_eq(m, "voipmonitor-turin");
  for (int stage = 0; stage < 2; stage++) {
    struct tables *t = stage ? &shm : &p2p;
    struct pt_phys stage1;
    pt_phys_fit(p2p.box, p2p.n, -1, PT_PHYS_FIT_P2P, pt_phys_prior(), &stage1);
    for (size_t i = 0; i < t->n; i++) {
      machine_of(t->name[i], m, sizeof m);
      size_t j = 0;
      while (j < nseen && strcmp(seen[j], m)) j++;
      if (j < nseen) continue;
      snprintf(seen[nseen++], sizeof seen[0], "%s", m);
      printf("machine %s left out\n", m);
      oos_n = 0;
      bad += stage ? leave_machine(t, m, PT_PHYS_FIT_SHM, &stage1)
                   : leave_machine(t, m, PT_PHYS_FIT_P2P, pt_phys_prior());
      /* What box and simulate print at 0.5-2 MiB (sim/oos.c). */
      const struct pt_oos_err *known = pt_oos_find(m);
      if (oos_n) {
        qsort(oos_e, (size_t)oos_n, sizeof *oos_e, cmp_dbl);
        double med = oos_n % 2 ? oos_e[oos_n / 2] : 0.5 * (oos_e[oos_n / 2 - 1] + oos_e[oos_n / 2]);
        double p90 = oos_e[(int)ceil(0.9 * oos_n) - 1];
        printf("oos       %-20s rows %2d at 0.5-2 MiB median %.4f p90 %.4f\n", m, oos_n, med, p90);
        if (getenv("PT_LOO_GUARD")) printf("oosfig {\"%s\", %d, %.3f, %.3f},\n", m, oos_n, med, p90);
        if (!known || known->rows != oos_n || fabs(known->median - med) >= 0.0015 || fabs(known->p90 - p90) >= 0.0015) {
          printf("%s: sim/oos_figures.h does not hold %d rows, %.3f / %.3f\n", m, oos_n, med, p90);
          bad++;
        }
      } else if (known) {
        printf("%s: sim/oos_figures.h names a machine with no row at 0.5-2 MiB\n", m);
        bad++;
      }
      fflush(stdout);
    }
  }
  ck_assert_uint_ge(nseen, 3);
  ck_assert_msg(!bad, "%d curve(s) got worse than test_sim_loo_machines.h records (or are new), or sim/oos_figures.h differs", bad);
  release(&p2p);
  release(&shm);
}
END_TEST

START_TEST(compiled_parameters_are_the_fit_on_every_table) {
  static struct tables p2p, shm;
  load(&p2p, ".box.cfg");
  load(&shm, ".shm.cfg");
  struct pt_phys fit;
  fit_all(&p2p, &shm, &fit);
  print_params("prior", pt_phys_prior());
  print_params("fit", &fit);
  double v[PT_PHYS_NPARAM], w[PT_PHYS_NPARAM];
  pt_phys_to_vec(&fit, v);
  pt_phys_to_vec(pt_phys_fitted(), w);
  for (int i = 0; i < PT_PHYS_NPARAM; i++)
    ck_assert_msg(fabs(log(v[i] / w[i])) < 0.01, "%s: fit %.4g, compiled %.4g (update sim/phys.c)",
                  pt_phys_param_name(i), v[i], w[i]);
  release(&p2p);
  release(&shm);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim_loo");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, leave_one_out_meets_the_target);
  tcase_add_test(tc, compiled_parameters_are_the_fit_on_every_table);
  tcase_add_test(tc, leave_one_machine_out_is_reported_and_guarded);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
