/* pcie-tune box, run as a user runs it: a box file from NCCL's topology dump
 * (written atomically, never over a file without --force), loaded back with
 * NCCL's view derived, and `box NAME|FILE` printing NCCL's own choices. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcie/sim_box.h"
#include "support/pt_test.h"

static int run(char **out, char **err, const char *fmt, const char *a, const char *b) {
  char *args = NULL, *cmd = NULL;
  ck_assert(asprintf(&args, fmt, a, b) > 0);
  ck_assert(asprintf(&cmd, "'%s' %s", pt_test_cli(), args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(args);
  free(cmd);
  return rc;
}

START_TEST(from_topo_writes_a_box_nccl_would_recognise) {
  char *dir = pt_test_tmpdir(), *out, *err, topo[1024], box[1100];
  snprintf(topo, sizeof topo, "%s/test/data/nccl-real/sm120-gen5-8x-direct-2socket.xml", pt_test_srcdir());
  snprintf(box, sizeof box, "%s/turin.cfg", dir);
  ck_assert_int_eq(run(&out, &err, "box --from-topo %s --out %s", topo, box), 0);
  ck_assert_msg(strstr(err, "8 GPUs; NCCL view derived from hardware: ring 1 x 0.1 GB/s SYS (search fallback), 2 channels"),
                "%s", err);
  free(out), free(err);
  struct pt_box b;
  struct pt_error_rec e;
  ck_assert_msg(pt_box_load(&b, box, &e) == 0, "%s:%d: %s", e.file, e.line, e.msg);
  ck_assert_int_eq(b.nranks, 8);
  ck_assert_int_eq(b.hw.ncpus, 2);
  ck_assert_int_eq(b.hw.cpu_vendor, PT_CPU_AMD);
  ck_assert_int_eq(b.nccl.comm_channels, 2);
  /* Not over an existing file without --force; with it, yes. */
  ck_assert_int_eq(run(&out, &err, "box --from-topo %s --out %s", topo, box), 1);
  ck_assert_ptr_nonnull(strstr(err, "already exists; pass --force to overwrite it"));
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box --from-topo %s --out %s --force --no-p2p", topo, box), 0);
  free(out), free(err);
  ck_assert_int_eq(pt_box_load(&b, box, &e), 0);
  ck_assert_int_eq(b.hw.p2p, 0);
  /* --no-p2p: the physical truth of the hardware, host-staged. */
  ck_assert_int_eq(b.truth.transport, PT_XPORT_SHM);
  ck_assert_int_eq(b.phys, 1);
  /* box FILE prints NCCL's choice: Simple from 4 KB on this box
   * (test/data/nccl-real/sm120-gen5-8x-direct-2socket.noP2P.txt). */
  ck_assert_int_eq(run(&out, &err, "box %s%s", box, ""), 0);
  ck_assert_msg(strstr(out, "        2048  ring   ll         1"), "%s", out);
  ck_assert_msg(strstr(out, "        4096  ring   simple     1"), "%s", out);
  ck_assert_msg(strstr(out, "       32768  ring   simple     2"), "%s", out);
  free(out), free(err);
  /* Nothing left behind but the box file. */
  char *ls = NULL;
  ck_assert(asprintf(&ls, "ls -A '%s'", dir) > 0);
  ck_assert_int_eq(pt_test_run(ls, &out, &err), 0);
  ck_assert_str_eq(out, "turin.cfg\n");
  free(out), free(err), free(ls);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(bad_input_is_reported) {
  char *dir = pt_test_tmpdir(), *out, *err;
  char *bad = pt_test_write(dir, "bad.xml", "<system version=\"1\">\n<cpu arch=\"x86_64\" vendor=\"AuthenticAMD\">\n<pci busid=\"0\" class=>\n");
  ck_assert_int_eq(run(&out, &err, "box --from-topo %s --out %s/x.cfg", bad, dir), 1);
  ck_assert_msg(strstr(err, "bad.xml:3: expected '\"' for attribute class"), "%s", err);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box --frob %s%s", "", ""), 2);
  ck_assert_ptr_nonnull(strstr(err, "unknown option '--frob'"));
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box no-such-box%s%s", "", ""), 1);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box gen5-8x-p2p%s%s", "", ""), 0);
  ck_assert_ptr_nonnull(strstr(out, "NCCL view: derived from hardware: ring 2 x 24.0 GB/s PHB, 4 channels"));
  free(out), free(err);
  free(bad);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A hand-typed NCCL view is an override and says so, in the profile's
 * provenance and in show. */
/* Profiles box (under test/data/boxes) on the simulated backend into
 * dir/p.cfg with the extra flags; returns what `show` prints of it. */
static char *profiled_show(const char *dir, const char *box, const char *flags, char *prof, size_t len) {
  char *out, *err, *args = NULL;
  snprintf(prof, len, "%s/p.cfg", dir);
  ck_assert(asprintf(&args, "--box %s/test/data/boxes/%s %s --quiet --out", pt_test_srcdir(), box, flags) > 0);
  ck_assert_msg(run(&out, &err, "profile --backend sim %s %s", args, prof) == 0, "%s", err);
  free(out), free(err), free(args);
  ck_assert_int_eq(run(&out, &err, "show %s%s", prof, ""), 0);
  free(err);
  return out;
}

START_TEST(typed_view_is_labelled) {
  char *dir = pt_test_tmpdir(), *out, *err, box[1024], prof[1100];
  snprintf(box, sizeof box, "%s/test/data/boxes/faulty.cfg", pt_test_srcdir());
  ck_assert_int_eq(run(&out, &err, "box %s%s", box, ""), 0);
  ck_assert_msg(strstr(out, "NCCL view: typed by hand (override)"), "%s", out);
  free(out), free(err);
  out = profiled_show(dir, "faulty.cfg", "", prof, sizeof prof);
  ck_assert_msg(strstr(out, "measured with backend sim, NCCL 2.30 (sim, typed view)"), "%s", out);
  free(out);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A box file that states NCCL 2.31 gets 2.31's view (LL128 on over PCIe
 * unless NCCL_PROTO is set: the nccl-2.31.0-dev fixtures in test/data/nccl-real); one
 * that states none keeps 2.30's. */
START_TEST(box_file_nccl_version_picks_the_view) {
  char *dir = pt_test_tmpdir(), *out, *err, src[1024], *text = NULL;
  snprintf(src, sizeof src, "%s/test/data/boxes/hw.cfg", pt_test_srcdir());
  FILE *f = fopen(src, "r");
  ck_assert_ptr_nonnull(f);
  size_t cap = 0;
  ck_assert_int_gt(getdelim(&text, &cap, 0, f), 0);
  fclose(f);
  free(pt_test_write(dir, "b30.cfg", text));
  char *t31 = NULL;
  ck_assert(asprintf(&t31, "%snccl_version = \"2.31\";\n", text) > 0);
  free(pt_test_write(dir, "b31.cfg", t31));
  char p30[1100], p31[1100];
  snprintf(p30, sizeof p30, "%s/b30.cfg", dir);
  snprintf(p31, sizeof p31, "%s/b31.cfg", dir);
  ck_assert_int_eq(run(&out, &err, "box %s%s", p31, ""), 0);
  ck_assert_msg(strstr(out, "LL128 on, NCCL 2.31 view"), "%s", out);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box %s%s", p30, ""), 0);
  ck_assert_msg(strstr(out, "derived from hardware") && !strstr(out, "2.31 view"), "%s", out);
  free(out), free(err);
  free(t31);
  free(text);
  free(dir);
}
END_TEST

/* A box whose NCCL stages pairs through host memory says its truth there is
 * not checked out of sample (box and simulate); a P2P box says nothing. */
START_TEST(shm_truth_carries_its_caveat) {
  char *out, *err;
  ck_assert_int_eq(run(&out, &err, "box %s%s", "gen4-4x-shm", ""), 0);
  ck_assert_msg(strstr(out, "truth: physical model; its SHM (host-staged) truth rests on two consumer tables"),
                "%s", out);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "box %s%s", "gen5-8x-p2p", ""), 0);
  ck_assert_msg(!strstr(out, "truth: physical model"), "%s", out);
  /* Every physical box says what its figures at 0.5-2 MiB rest on
   * (sim/oos.c): the out-of-sample error, or that it is unknown. */
  ck_assert_msg(strstr(out, "truth: at 0.5-2 MiB the model is off by") ||
                    strstr(out, "truth: no published row of this box's machine at 0.5-2 MiB"),
                "%s", out);
  free(out), free(err);
  char *dir = pt_test_tmpdir(), prof[1100];
  snprintf(prof, sizeof prof, "%s/p.cfg", dir);
  ck_assert_int_eq(run(&out, &err, "profile --backend sim --box gen4-4x-shm --out %s%s --quiet", prof, ""), 0);
  free(out), free(err);
  ck_assert_int_eq(run(&out, &err, "simulate %s%s --box gen4-4x-shm", prof, ""), 0);
  ck_assert_msg(strstr(err, "note: box 'gen4-4x-shm': its SHM (host-staged) truth"), "%s", err);
  /* The verify step's 1835008 B row lies at 0.5-2 MiB: marked, and the
   * footnote gives the out-of-sample error of the box's machine. */
  ck_assert_msg(strstr(out, "1835008x123") && strstr(out, " *\n") &&
                    strstr(out, "* 0.5-2 MiB: at 0.5-2 MiB the model is off by median |ln| 0.164"),
                "%s", out);
  free(out), free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* The "total" line of simulate's output, run with one variable set. */
static char *sim_total(const char *prof, const char *var) {
  char *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd, "%s '%s' simulate '%s' --box gen5-8x-p2p", var, pt_test_cli(), prof) > 0);
  ck_assert_msg(pt_test_run(cmd, &out, &err) == 0, "%s: %s", cmd, err);
  char *t = strstr(out, "\ntotal");
  ck_assert_msg(t != NULL, "%s", out);
  char *line = strndup(t + 1, strcspn(t + 1, "\n"));
  free(cmd), free(out), free(err);
  return line;
}

/* Issue 26 §7: NCCL_P2P_DISABLE=1 is NCCL_P2P_LEVEL=LOC (paths.cc
 * ncclGetLevel reads it first) in the job's environment too: simulate used
 * to ignore it and print the P2P box's total. */
START_TEST(simulate_applies_p2p_disable) {
  char prof[1024];
  snprintf(prof, sizeof prof, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir());
  char *plain = sim_total(prof, "env"), *loc = sim_total(prof, "NCCL_P2P_LEVEL=LOC"),
       *dis = sim_total(prof, "NCCL_P2P_DISABLE=1"), *zero = sim_total(prof, "NCCL_P2P_DISABLE=0");
  ck_assert_str_ne(plain, loc);
  ck_assert_str_eq(dis, loc);
  ck_assert_str_eq(zero, plain);
  free(plain), free(loc), free(dis), free(zero);
}
END_TEST

/* Issue 26 §7: based_on a built-in box, a hardware group holding only env
 * runs that box with those variables (it failed with "missing 'cpus'"); one
 * with any device key still replaces the hardware as a whole. */
START_TEST(based_on_with_hardware_env) {
  char *dir = pt_test_tmpdir(), *out, *err, p[1100], q[1100];
  free(pt_test_write(dir, "env.cfg",
                     "based_on = \"gen5-8x-p2p\";\nname = \"p2p-off\";\n"
                     "hardware = { env = { NCCL_P2P_DISABLE = 1; }; };\n"));
  free(pt_test_write(dir, "half.cfg",
                     "based_on = \"gen5-8x-p2p\";\nname = \"half\";\n"
                     "hardware = { cpu_vendor = \"amd\"; env = { NCCL_P2P_DISABLE = 1; }; };\n"));
  snprintf(p, sizeof p, "%s/env.cfg", dir);
  snprintf(q, sizeof q, "%s/half.cfg", dir);
  ck_assert_int_eq(run(&out, &err, "box %s%s", "gen5-8x-p2p", ""), 0);
  char *base = out;
  free(err);
  ck_assert_msg(run(&out, &err, "box %s%s", p, "") == 0, "%s", err);
  ck_assert_msg(strstr(out, "p2p-off") && strcmp(out, base), "%s", out);
  free(out), free(err), free(base);
  ck_assert_int_ne(run(&out, &err, "box %s%s", q, ""), 0);
  ck_assert_msg(strstr(err, "half.cfg:") && strstr(err, "missing 'cpus'"), "%s", err);
  free(out), free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* A based_on box runs on its base's machine, so it carries the base's
 * published rows: box and simulate give that machine's out-of-sample error
 * for test/data/boxes/misdetect-2.31.cfg (they said "no published row" for
 * the Turin machine's hardware); a file that replaces the hardware does not. */
START_TEST(based_on_box_carries_its_base_rows) {
  char *dir = pt_test_tmpdir(), *out, *err, f31[1024];
  snprintf(f31, sizeof f31, "%s/test/data/boxes/misdetect-2.31.cfg", pt_test_srcdir());
  char *fhw = pt_test_write(dir, "other.cfg",
                            "based_on = \"gen5-8x-dual-misdetect\";\nname = \"other\";\n"
                            "hardware = { cpus = 1; cpu_vendor = \"amd\"; p2p = true;\n"
                            "  gpus = ( { parent = \"cpu0\"; gen = 5; lanes = 16; sm = 120; count = 8; } ); };\n");
  ck_assert_int_eq(run(&out, &err, "box %s%s", "gen5-8x-dual-misdetect", ""), 0);
  char *line = strstr(out, "truth: at 0.5-2 MiB the model is off by");
  ck_assert_msg(line && strstr(line, "voipmonitor-turin"), "%s", out);
  char *base = strndup(line, strcspn(line, "\n"));
  free(out), free(err);
  ck_assert_msg(run(&out, &err, "box %s%s", f31, "") == 0, "%s", err);
  ck_assert_msg(strstr(out, base) && !strstr(out, "no published row"), "%s\nwanted: %s", out, base);
  free(out), free(err), free(base);
  ck_assert_msg(run(&out, &err, "box %s%s", fhw, "") == 0, "%s", err);
  ck_assert_msg(strstr(out, "truth: no published row of this box's machine at 0.5-2 MiB"), "%s", out);
  free(out), free(err);
  /* simulate: the verify step's 1835008 B rows are marked and footnoted
   * with the Turin machine's error. */
  char prof[1024];
  snprintf(prof, sizeof prof, "%s/profiles/example-8x-pcie.cfg", pt_test_srcdir());
  ck_assert_msg(run(&out, &err, "simulate %s --box %s", prof, f31) == 0, "%s", err);
  ck_assert_msg(strstr(out, "* 0.5-2 MiB: at 0.5-2 MiB the model is off by") && strstr(out, "voipmonitor-turin"),
                "%s", out);
  free(out), free(err);
  free(fhw);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* On a 2.31 box the simulated backend measures a candidate on the channel
 * count NCCL 2.31 runs (its size heuristic under the tuner's cap) and its
 * profile says NCCL 2.31: the plugin's profile for test/data/boxes/p2p-2.31.cfg
 * used to hold ring/LL/4 at 32 KiB, measured on 4 channels, which 2.31 runs on
 * 1 (no faster than NCCL's own ring/LL/1), and said NCCL 2.30. */
START_TEST(sim_backend_measures_what_2_31_runs) {
  char *dir = pt_test_tmpdir(), *out, *err, box[1024], prof[1100];
  snprintf(box, sizeof box, "%s/test/data/boxes/p2p-2.31.cfg", pt_test_srcdir());
  out = profiled_show(dir, "p2p-2.31.cfg", "--graph", prof, sizeof prof);
  ck_assert_msg(strstr(out, "measured with backend sim, NCCL 2.31 (sim, derived view)") &&
                    strstr(out, "takes a tuner's count as a cap under its size heuristic"),
                "%s", out);
  free(out);
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "simulate %s --box %s --graph --bytes-per-token 32K --tokens 1 --calls 1", prof, box) > 0);
  ck_assert_msg(run(&out, &err, "%s%s", cmd, "") == 0, "%s", err);
  /* The plugin's choice runs as fast as the best a tuner can reach. */
  char *row = strstr(out, "tokens=1 ");
  ck_assert_msg(row && strstr(row, "1.000\n"), "%s", out);
  free(out), free(err), free(cmd);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* NCCL_MIN_CTAS, explored as a user runs it: on a box whose NCCL is 2.31.2
 * it is each collective's minimum after the tuner's cap (src/enqueue/
 * enqueue.cc scheduleCollTasksToPlan), so NCCL's default at 4 differs from
 * the same communicator built by NCCL_MIN_NCHANNELS=4; on 2.31 it is only
 * the communicator floor, and the exploration says so and skips it. */
static char *explore_row(const char *dir, const char *box, const char *var) {
  char *out, *err, *cfg = pt_test_path(dir, box), *prof = pt_test_path(dir, "e.cfg"), *cmd = NULL;
  ck_assert(asprintf(&cmd, "'%s' profile --backend sim --box '%s' --graph --force --out '%s' --explore %s=4",
                     pt_test_cli(), cfg, prof, var) > 0);
  ck_assert_msg(pt_test_run(cmd, &out, &err) == 0, "%s: %s", cmd, err);
  char *row = strstr(out, "\n  4 ");
  ck_assert_msg(row != NULL, "%s\n%s", out, err);
  char *line = strndup(row + 1, strcspn(row + 1, "\n"));
  free(out), free(err), free(cmd), free(cfg), free(prof);
  return line;
}

START_TEST(min_ctas_is_explored_from_2_31_2) {
  char *dir = pt_test_tmpdir(), *out, *err;
  free(pt_test_write(dir, "b312.cfg", "based_on = \"gen5-8x-dual-misdetect\";\nname = \"m312\";\nnccl_version = \"2.31.2\";\n"));
  free(pt_test_write(dir, "b31.cfg", "based_on = \"gen5-8x-dual-misdetect\";\nname = \"m31\";\nnccl_version = \"2.31\";\n"));
  char *ctas = explore_row(dir, "b312.cfg", "NCCL_MIN_CTAS"), *nch = explore_row(dir, "b312.cfg", "NCCL_MIN_NCHANNELS");
  ck_assert_msg(strstr(ctas, "NCCL's default at 4 channels") && strstr(nch, "NCCL's default at 4 channels"), "%s", ctas);
  ck_assert_msg(strcmp(ctas, nch), "NCCL_MIN_CTAS=4 ran as NCCL_MIN_NCHANNELS=4: %s", ctas);
  free(ctas), free(nch);
  char *b31 = pt_test_path(dir, "b31.cfg"), *p31 = pt_test_path(dir, "p31.cfg");
  ck_assert_int_eq(run(&out, &err, "profile --backend sim --box %s --graph --out %s --explore NCCL_MIN_CTAS=4", b31, p31), 0);
  ck_assert_msg(strstr(err, "NCCL_MIN_CTAS=4 skipped: NCCL 2.31.0 reads it only where it builds the communicator"),
                "%s", err);
  ck_assert_msg(!strstr(out, "\n  4 "), "%s", out);
  free(out), free(err), free(b31), free(p31);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim_cli_box");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, from_topo_writes_a_box_nccl_would_recognise);
  tcase_add_test(tc, bad_input_is_reported);
  tcase_add_test(tc, typed_view_is_labelled);
  tcase_add_test(tc, box_file_nccl_version_picks_the_view);
  tcase_add_test(tc, shm_truth_carries_its_caveat);
  tcase_add_test(tc, simulate_applies_p2p_disable);
  tcase_add_test(tc, based_on_with_hardware_env);
  tcase_add_test(tc, based_on_box_carries_its_base_rows);
  tcase_add_test(tc, sim_backend_measures_what_2_31_runs);
  tcase_add_test(tc, min_ctas_is_explored_from_2_31_2);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
