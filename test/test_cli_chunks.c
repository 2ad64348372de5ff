/* pcie-tune profile --chunks LIST as a user runs it (issue 28 §2): every
 * ring/simple candidate gets a variant per chunk; where a channel carries
 * at most nranks x chunk the device code recomputes the chunk and the
 * variant measures as the candidate itself (the simulated box's truth,
 * sim/ring_chunks.c), above it differs; the profile writes each variant's
 * chunk, show says where it is recomputed, and the built plugin (through
 * the simulated NCCL host, dlopen) answers getChunkSize with the chunk of
 * the variant its table chose. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "pcie/sim_box.h"
#include "pcie/table.h"
#include "support/pt_test.h"

static char *dir;
static void setup(void) { dir = pt_test_tmpdir(); }
static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

static const struct pt_candidate *cand(const struct pt_series *s, int ch, size_t chunk) {
  for (size_t k = 0; k < s->ncand; k++)
    if (s->cand[k].algo == NCCL_ALGO_RING && s->cand[k].proto == NCCL_PROTO_SIMPLE && s->cand[k].channels == ch &&
        s->cand[k].chunk == chunk)
      return &s->cand[k];
  return NULL;
}

START_TEST(chunk_variants_are_measured_written_and_answered) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err,
                           "profile --backend sim --box gen5-8x-dual-misdetect --algos ring --protos ll,simple "
                           "--channels 2 --chunks 8K --sizes 131072,262144,393216,524288,786432,1048576 --full --reps 3 "
                           "--graph --out c.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "chunk 8192 B changes ring/simple only above 8 x 8192 B per channel: from 131072 B "
                            "on 2 channels to 131072 B on 2"),
                "%s", err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "c.cfg");
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(s);
  const struct pt_candidate *base = cand(s, 2, 0), *var = cand(s, 2, 8192);
  ck_assert_msg(base && var, "no ring/simple/2 with and without chunk 8192 in the profile");
  /* 128 KiB on two channels is one loop of 8 x 8 KiB per channel:
   * recomputed, the same measurement (the noise is keyed by what ran);
   * 256 KiB runs two loops. */
  ck_assert_uint_eq(s->sizes[0], 131072);
  ck_assert(base->points[0].state == PT_PT_OK && var->points[0].state == PT_PT_OK);
  ck_assert_double_eq(base->points[0].lat_us, var->points[0].lat_us);
  ck_assert(var->points[1].lat_us < base->points[1].lat_us);

  rc = pt_test_cli_run(dir, 60, &out, &err, "show c.cfg");
  ck_assert_msg(rc == 0 && strstr(out, "chunk 8192 B: runs as measured only where a channel carries more than 8 x "
                                       "8192 B (65536 B on one channel)"),
                "%s%s", out, err);
  free(out);
  free(err);

  /* The plugin: wherever its table puts a chunk variant first, NCCL's
   * getChunkSize for one channel's part gets that chunk (one channel: a
   * part is the whole call, so no other decision can disagree). */
  struct pt_table t;
  ck_assert_int_eq(pt_table_build(&t, p), 0);
  struct ph_plugin pl;
  struct ph_comm comm;
  char e[512], root[1024], path[1200];
  const struct pt_box *box = pt_box_builtin("gen5-8x-dual-misdetect");
  snprintf(path, sizeof path, "%s/c.cfg", dir);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  ck_assert_msg(ph_box_present(box, root, sizeof root, e, sizeof e) == 0, "%s", e);
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 6, e, sizeof e) == 0, "%s", e);
  ck_assert_int_eq(ph_comm_init(&comm, &pl, 8, 1, 1), 0);
  int answered = 0;
  for (size_t i = 0; i < s->nsizes; i++) {
    const struct pt_interval *iv = pt_table_lookup(&t, PT_ALLREDUCE, PT_MODE_GRAPH, s->sizes[i]);
    if (!iv || !iv->n || iv->c[0].chunk != 8192) continue;
    float table[7][3];
    struct ph_choice ch;
    pt_box_nccl_table(box, PT_ALLREDUCE, s->sizes[i], table);
    ph_decide(&comm, PT_ALLREDUCE, s->sizes[i], 1, table, &ch);
    ck_assert(ch.algo == NCCL_ALGO_RING && ch.proto == NCCL_PROTO_SIMPLE);
    size_t chunk = 2 << 20, part = s->sizes[i] / (size_t)(ch.nchannels > 0 ? ch.nchannels : 1);
    ph_chunk_size(&comm, PT_ALLREDUCE, part, ch.algo, ch.proto, &chunk);
    ck_assert_msg(chunk == 8192, "%llu B: getChunkSize answered %zu", (unsigned long long)s->sizes[i], chunk);
    answered++;
  }
  ck_assert_msg(answered > 0, "no measured size chose a chunk variant on this box's truth");
  ph_comm_finalize(&comm);
  ph_plugin_close(&pl);
  ph_box_withdraw(root);
  unsetenv("PCIE_TUNER_PROFILE");
  pt_table_release(&t);
  pt_test_free_profile(p);
}
END_TEST

START_TEST(bad_chunks_are_refused) {
  static const char *const bad[] = {"1K", "3000", "4M", "16K,32K,64K,128K,256K", "x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *out = NULL, *err = NULL;
    int rc = pt_test_cli_run(dir, 60, &out, &err, "profile --backend sim --box gen5-8x-p2p --out p.cfg --chunks %s",
                             bad[i]);
    ck_assert_msg(rc == 2 && strstr(err, "chunk sizes in bytes, 4K..2M"), "%s: %d %s", bad[i], rc, err);
    free(out);
    free(err);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_chunks");
  TCase *t = tcase_create("chunks");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_set_timeout(t, 120);
  tcase_add_test(t, chunk_variants_are_measured_written_and_answered);
  tcase_add_test(t, bad_chunks_are_refused);
  suite_add_tcase(s, t);
  return pt_test_main(s);
}
