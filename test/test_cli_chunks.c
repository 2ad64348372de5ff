/* pcie-tune profile --chunks LIST as a user runs it (issue 28 §2): every
 * ring and tree candidate gets a variant per chunk below NCCL's ceiling for
 * its protocol, measured only at the sizes where a channel carries more
 * than the chunk's reach (nranks x chunk on a ring, one chunk on a tree:
 * tuner/chunk.c) and said so; the profile writes each variant's chunk, show
 * says where it is left alone, and the built plugin (through the simulated
 * NCCL host, dlopen) answers getChunkSize with the chunk of the variant its
 * table chose, and leaves NCCL its own where the device code recomputes
 * it. An NCCL that never asks (before 2.30) is refused. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static const struct pt_candidate *cand(const struct pt_series *s, int algo, int proto, size_t chunk) {
  for (size_t k = 0; k < s->ncand; k++)
    if (s->cand[k].algo == algo && s->cand[k].proto == proto && s->cand[k].channels == 2 && s->cand[k].chunk == chunk)
      return &s->cand[k];
  return NULL;
}

#define RING NCCL_ALGO_RING
#define TREE NCCL_ALGO_TREE

/* Sizes 64 KiB .. 2 MiB on 2 channels: parts of 32 KiB .. 1 MiB. Measured
 * (--full: one measurement a point): ring 8K above 64 KiB a channel (4
 * sizes, LL and Simple), ring/simple 64K above 512 KiB (1), tree 8K above
 * 8 KiB (6, LL and Simple), tree/simple 64K above 64 KiB (4); LL's ceiling
 * is 32 KiB: no ring/ll or tree/ll 64K. 4 candidates and NCCL's default at
 * 6 sizes: 30. */
static const char *const CMD =
    "profile --backend sim --box gen5-8x-dual-misdetect --algos ring,tree --protos ll,simple --channels 2 "
    "--chunks 8K,64K --sizes 65536,131072,262144,524288,1048576,2097152 --full --reps 3 --graph --out c.cfg";

/* Which sizes of a variant were measured, as a bit mask over the sizes. */
static unsigned measured(const struct pt_series *s, const struct pt_candidate *c) {
  unsigned m = 0;
  for (size_t i = 0; i < s->nsizes; i++) m |= (c->points[i].state == PT_PT_OK) << i;
  return m;
}

START_TEST(variants_are_measured_only_where_the_chunk_acts) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err, "%s", CMD);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "(165 repetitions in 55 measurements)"), "%s", err);
  ck_assert_msg(strstr(err, "chunk 8192 B on allreduce ring/ll: measured only where a channel carries more than "
                            "65536 B (all_reduce.h runRing recomputes the chunk in one loop): 2 channels from 262144 B;"),
                "%s", err);
  ck_assert_msg(strstr(err, "chunk 65536 B on allreduce tree/simple: measured only where a channel carries more than "
                            "65536 B (all_reduce.h runTreeSplit runs one piece): 2 channels from 262144 B;"),
                "%s", err);
  ck_assert_msg(!strstr(err, "chunk 65536 B on allreduce ring/ll") && !strstr(err, "chunk 65536 B on allreduce tree/ll"),
                "%s", err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "c.cfg");
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(s->nsizes, 6);
  ck_assert_uint_eq(measured(s, cand(s, RING, NCCL_PROTO_LL, 8192)), 0x3c);
  ck_assert_uint_eq(measured(s, cand(s, RING, NCCL_PROTO_SIMPLE, 8192)), 0x3c);
  ck_assert_uint_eq(measured(s, cand(s, RING, NCCL_PROTO_SIMPLE, 65536)), 0x20);
  ck_assert_uint_eq(measured(s, cand(s, TREE, NCCL_PROTO_LL, 8192)), 0x3f);
  ck_assert_uint_eq(measured(s, cand(s, TREE, NCCL_PROTO_SIMPLE, 65536)), 0x3c);
  ck_assert_ptr_null(cand(s, RING, NCCL_PROTO_LL, 65536));
  /* Where measured the truth moves: the variants run other pieces. */
  const struct pt_candidate *base = cand(s, TREE, NCCL_PROTO_SIMPLE, 0), *var = cand(s, TREE, NCCL_PROTO_SIMPLE, 65536);
  ck_assert(var->points[3].lat_us < base->points[3].lat_us);
  pt_test_free_profile(p);

  rc = pt_test_cli_run(dir, 60, &out, &err, "show c.cfg");
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_msg(strstr(out, "chunk 8192 B on ring/ll: runs as measured only where a channel carries more than 65536 B; "
                            "below, all_reduce.h runRing recomputes the chunk in one loop and the plugin leaves NCCL "
                            "its own chunk\n"),
                "%s", out);
  ck_assert_msg(strstr(out, "chunk 65536 B on tree/simple: runs as measured only where a channel carries more than "
                            "65536 B; below, all_reduce.h runTreeSplit runs the part in one piece"),
                "%s", out);
  ck_assert_msg(strstr(out, "chunk: NCCL asks the plugin from 2.30 on (getChunkSize"), "%s", out);
  free(out);
  free(err);
}
END_TEST

/* All-gather's ring walks a channel's part in the same loops of nranks x
 * chunk (all_gather.h runRing): its variant, measured with NCCL's channel
 * count (2 on this box), starts where all-reduce's does. */
START_TEST(all_gather_variants_follow_its_ring) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err,
                           "profile --backend sim --box gen5-8x-dual-misdetect --collectives allgather --algos ring "
                           "--protos simple --channels 2 --chunks 8K --sizes 131072,262144,524288,1048576 --full "
                           "--reps 1 --graph --out g.cfg");
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  ck_assert_msg(strstr(err, "chunk 8192 B on allgather ring/simple: measured only where a channel carries more than "
                            "65536 B (all_gather.h runRing recomputes the chunk in one loop)"),
                "%s", err);
  free(out);
  free(err);
  struct pt_profile *p = pt_test_load_profile(dir, "g.cfg");
  const struct pt_series *s = p->series[PT_ALLGATHER][PT_MODE_GRAPH];
  ck_assert_ptr_nonnull(s);
  const struct pt_candidate *var = NULL;
  for (size_t k = 0; k < s->ncand; k++)
    if (s->cand[k].chunk == 8192) var = &s->cand[k];
  ck_assert_ptr_nonnull(var);
  ck_assert_uint_eq(measured(s, var), 0xe);
  pt_test_free_profile(p);
}
END_TEST

/* CMD's profile, c.cfg, without its report. */
static void profile_quietly(void) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err, "%s --quiet", CMD);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(out);
  free(err);
}

struct host {
  struct ph_plugin pl;
  struct ph_comm comm;
  char root[1024];
};

static void host_open(struct host *h, const char *profile) {
  char e[512], path[1200];
  const struct pt_box *box = pt_box_builtin("gen5-8x-dual-misdetect");
  snprintf(path, sizeof path, "%s/%s", dir, profile);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  ck_assert_msg(ph_box_present(box, h->root, sizeof h->root, e, sizeof e) == 0, "%s", e);
  ck_assert_msg(ph_plugin_open(&h->pl, pt_test_so(), 6, e, sizeof e) == 0, "%s", e);
  ck_assert_int_eq(ph_comm_init(&h->comm, &h->pl, 8, 1, 1), 0);
}

static void host_close(struct host *h) {
  ph_comm_finalize(&h->comm);
  ph_plugin_close(&h->pl);
  ph_box_withdraw(h->root);
  unsetenv("PCIE_TUNER_PROFILE");
}

/* getChunkSize for one channel's part, NCCL's own chunk offered. */
static size_t chunk_for(struct host *h, size_t part, int algo, int proto) {
  size_t chunk = 7777;
  ph_chunk_size(&h->comm, PT_ALLREDUCE, part, algo, proto, &chunk);
  return chunk;
}

/* Wherever the table puts a chunk variant first, NCCL's getChunkSize for
 * a channel's part gets that chunk. */
START_TEST(the_plugin_answers_the_chosen_variant) {
  profile_quietly();
  struct pt_profile *p = pt_test_load_profile(dir, "c.cfg");
  const struct pt_series *s = p->series[PT_ALLREDUCE][PT_MODE_GRAPH];
  struct pt_table t;
  ck_assert_int_eq(pt_table_build(&t, p), 0);
  const struct pt_box *box = pt_box_builtin("gen5-8x-dual-misdetect");
  struct host h;
  host_open(&h, "c.cfg");
  int answered = 0;
  for (size_t i = 0; i < s->nsizes; i++) {
    const struct pt_interval *iv = pt_table_lookup(&t, PT_ALLREDUCE, PT_MODE_GRAPH, s->sizes[i]);
    if (!iv || !iv->n || !iv->c[0].chunk) continue;
    float table[7][3];
    struct ph_choice ch;
    pt_box_nccl_table(box, PT_ALLREDUCE, s->sizes[i], table);
    ph_decide(&h.comm, PT_ALLREDUCE, s->sizes[i], 1, table, &ch);
    ck_assert(ch.algo == iv->c[0].algo && ch.proto == iv->c[0].proto);
    size_t part = s->sizes[i] / (size_t)(ch.nchannels > 0 ? ch.nchannels : 1);
    /* A part comes from calls of part .. size bytes: every decision there
     * must agree (tuner/table.c pt_table_chunk), so only where the
     * smallest such call chose the same. */
    const struct pt_interval *low = pt_table_lookup(&t, PT_ALLREDUCE, PT_MODE_GRAPH, part);
    if (!low || !low->n || low->c[0].chunk != iv->c[0].chunk || low->c[0].algo != ch.algo ||
        low->c[0].proto != ch.proto)
      continue;
    ck_assert_msg(chunk_for(&h, part, ch.algo, ch.proto) == iv->c[0].chunk, "%llu B",
                  (unsigned long long)s->sizes[i]);
    answered++;
  }
  ck_assert_msg(answered > 0, "no measured size chose a chunk variant on this box's truth");
  host_close(&h);
  pt_table_release(&t);
  pt_test_free_profile(p);
}
END_TEST

/* A hand rule puts ring/ll with chunk 8192 first up to 1 MiB: a part of
 * 64 KiB is one loop of 8 x 8192 B, where runRing recomputes the chunk:
 * the plugin leaves NCCL's own; above, it answers 8192. Tree: at most one
 * chunk a part is one piece. */
START_TEST(the_plugin_leaves_the_chunk_where_the_device_code_recomputes_it) {
  profile_quietly();
  char path[1200];
  snprintf(path, sizeof path, "%s/c.cfg", dir);
  FILE *f = fopen(path, "a");
  ck_assert_ptr_nonnull(f);
  fputs("rules = ( { collective = \"allreduce\"; min_bytes = 0L; max_bytes = 1048576L; algo = \"ring\"; "
        "proto = \"ll\"; channels = 2; chunk = 8192L; },\n"
        "          { collective = \"allreduce\"; min_bytes = 1048577L; max_bytes = 4194304L; algo = \"tree\"; "
        "proto = \"simple\"; channels = 2; chunk = 65536L; } );\n", f);
  fclose(f);
  struct host h;
  host_open(&h, "c.cfg");
  ck_assert_uint_eq(chunk_for(&h, 65536, RING, NCCL_PROTO_LL), 7777);
  ck_assert_uint_eq(chunk_for(&h, 65536 + 16, RING, NCCL_PROTO_LL), 8192);
  ck_assert_uint_eq(chunk_for(&h, 262144, RING, NCCL_PROTO_LL), 8192);
  ck_assert_uint_eq(chunk_for(&h, 1048577, TREE, NCCL_PROTO_SIMPLE), 65536);
  host_close(&h);
}
END_TEST

/* NCCL before 2.30 has no getChunkSize (tuner ABI v5): the device double
 * imitates 2.28.9, so --chunks is refused before anything is measured. */
START_TEST(an_nccl_that_never_asks_is_refused) {
  char *out = NULL, *err = NULL;
  int rc = pt_test_cli_run(dir, 120, &out, &err,
                           "profile --backend nccl --nccl-lib %s --quiet --warmup-ms 0 --gpus 0-7 --ops 2 --reps 1 "
                           "--screen-reps 1 --algos ring --protos simple --channels 2 --chunks 8K --out n.cfg "
                           "--sizes 1048576",
                           pt_test_double());
  ck_assert_msg(rc == 2 && strstr(err, "--chunks: NCCL 2.28.9") &&
                    strstr(err, "never asks a tuner for its chunk (getChunkSize came with tuner ABI v6 in NCCL 2.30)"),
                "%d: %s", rc, err);
  char path[1200];
  snprintf(path, sizeof path, "%s/n.cfg", dir);
  ck_assert_msg(access(path, F_OK) != 0, "a profile was written");
  free(out);
  free(err);
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
  tcase_add_test(t, variants_are_measured_only_where_the_chunk_acts);
  tcase_add_test(t, all_gather_variants_follow_its_ring);
  tcase_add_test(t, the_plugin_answers_the_chosen_variant);
  tcase_add_test(t, the_plugin_leaves_the_chunk_where_the_device_code_recomputes_it);
  tcase_add_test(t, an_nccl_that_never_asks_is_refused);
  tcase_add_test(t, bad_chunks_are_refused);
  suite_add_tcase(s, t);
  return pt_test_main(s);
}
