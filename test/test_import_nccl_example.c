/* pcie-tune import --from-nccl-example as a user runs it: NCCL's example
 * tuner CSV (every construct of its documented format) becomes a profile of
 * rules that the built plugin, through dlopen, applies with the same meaning;
 * a line the profile cannot express is an error with its line number. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "pcie/nccl_model.h"
#include "support/pt_test.h"

static char *dir;

static void setup(void) {
  dir = pt_test_tmpdir();
  unsetenv("NCCL_PROTO");
  unsetenv("NCCL_ALGO");
  ph_log_clear();
}

static void teardown(void) {
  pt_test_rmtree(dir);
  free(dir);
}

/* Imports text as CONF into dir/p.cfg; returns the exit status. */
static int import_conf(const char *text, char **out, char **err) {
  char *conf = pt_test_write(dir, "tuner.conf", text), *cmd = NULL;
  ck_assert(asprintf(&cmd, "'%s' import --force --out '%s/p.cfg' --from-nccl-example '%s'",
                     pt_test_cli(), dir, conf) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  free(conf);
  return rc;
}

/* NCCL's own example configuration (plugins/tuner/example/README.md), with
 * CRLF, blanks around fields and a comment, plus an 8-field line with -1
 * channels and two overlapping lines where the first is disabled by NCCL. */
static const char *example =
    "# Single-node, small allreduce: use tree algorithm, registered buffers only\n"
    "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"
    "\n"
    "# 4-node, 32-rank setup: medium allreduce, single pipeline op, non-registered buffers\n"
    "allreduce,65537,1048576,ring,simple,4,4,32,1,0\r\n"
    "allreduce, 1048577 , 4294967295 ,ring,ll128,-1,-1,-1,4,-1\n"
    "broadcast,0,32768,tree,simple,-1,1,-1\n"
    "broadcast,32769,4294967295,ring,simple,2,-1,-1,1,0\n"
    "reduce,0,1048576,ring,ll128,3,-1,8\n"
    "reduce,0,1048576,ring,ll,5,-1,8\n";

struct call {
  int coll;
  size_t n;
  int pipe, reg;
  int ll128; /* NCCL has LL128 enabled */
};

/* One getCollInfo through the v6 struct; returns the selected algo*3+proto
 * (-1 untouched) and *nch. */
static int call(struct ph_comm *c, struct call k, int *nch) {
  float t[7][3], before[7][3];
  const ncclTuner_v6_t *v6 = c->pl->sym;
  pt_test_nccl_table(t, k.coll, k.n, (int)c->nranks, k.ll128);
  memcpy(before, t, sizeof t);
  *nch = 0;
  ck_assert_int_eq(v6->getCollInfo(c->ctx, (ncclFunc_t)k.coll, k.n, k.pipe, (float **)t, 7, 3,
                                   k.reg, nch),
                   ncclSuccess);
  if (!memcmp(before, t, sizeof t)) return -1;
  int a, p;
  ck_assert_int_eq(pt_nccl_select(t, &a, &p), 0);
  return a * 3 + p;
}

/* warns: the WARNs init logs (the unscreened LL128 lines' one, or none). */
static void comm(struct ph_plugin *pl, struct ph_comm *c, size_t nranks, size_t nnodes, size_t warns) {
  char err[256], *p = NULL;
  ck_assert(asprintf(&p, "%s/p.cfg", dir) > 0);
  setenv("PCIE_TUNER_PROFILE", p, 1);
  free(p);
  ck_assert_msg(ph_plugin_open(pl, pt_test_so(), 6, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(c, pl, nranks, nnodes, 1), ncclSuccess);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), warns);
}

/* Adds to dir/p.cfg the record a passing `pcie-tune screen` writes
 * (test_cli_screen runs it through the device double): the LL128 lines
 * then keep the example's meaning. */
static void record_passing_screen(void) {
  char *path = pt_test_path(dir, "p.cfg"), *text = NULL, line[4096];
  size_t len = 0;
  FILE *f = fopen(path, "r"), *m = open_memstream(&text, &len);
  ck_assert(f && m);
  while (fgets(line, sizeof line, f)) {
    fputs(line, m);
    if (!strncmp(line, "provenance = {", 14)) fputs("  extra = { ll128_screen = { result = \"pass\"; }; };\n", m);
  }
  fclose(f);
  fclose(m);
  free(pt_test_write(dir, "p.cfg", text));
  free(text);
  free(path);
}

#define TREE_SIMPLE (NCCL_ALGO_TREE * 3 + NCCL_PROTO_SIMPLE)
#define RING_SIMPLE (NCCL_ALGO_RING * 3 + NCCL_PROTO_SIMPLE)
#define RING_LL128 (NCCL_ALGO_RING * 3 + NCCL_PROTO_LL128)
#define RING_LL (NCCL_ALGO_RING * 3 + NCCL_PROTO_LL)

START_TEST(example_rules_keep_their_meaning) {
  char *out, *err;
  ck_assert_int_eq(import_conf(example, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "7 rules from NCCL's example tuner configuration"));
  free(out), free(err);
  struct ph_plugin pl;
  struct ph_comm c;
  int nch;
  /* As imported, no LL128 screen is recorded: the LL128 lines decide
   * nothing (NCCL's own choice), and init says why and what to run. */
  comm(&pl, &c, 8, 1, 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "2 LL128 choices without a passing LL128 correctness screen"), 1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 2 << 20, 4, 0, 1}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncReduce, 4096, 1, 0, 1}, &nch), RING_LL);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
  ph_log_clear();
  record_passing_screen();
  comm(&pl, &c, 8, 1, 0);
  /* regBuff 1 only, one node, channels 2: regBuff differs between ranks
   * (registered buffers), so a line for one regBuff only decides nothing
   * (docs/decisions.md, "Every rank decides alike"). */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 4096, 1, 1, 0}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 4096, 1, 0, 0}, &nch), -1);
  /* Only for 4 nodes x 32 ranks. */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 100000, 1, 0, 0}, &nch), -1);
  /* numPipeOps 4 only; channels -1 keeps NCCL's count; LL128 only where
   * NCCL has it enabled. */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 2 << 20, 4, 0, 1}, &nch), RING_LL128);
  ck_assert_int_eq(nch, 0);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 2 << 20, 3, 0, 1}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 2 << 20, 4, 0, 0}, &nch), -1);
  /* An 8-field line matches any regBuff, and single calls: a grouped call
   * (numPipeOps > 1) is decided only by a line that names its numPipeOps
   * (docs/decisions.md, "Grouped calls are NCCL's"). */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncReduce, 4096, 1, 1, 0}, &nch), RING_LL);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncReduce, 4096, 7, 1, 0}, &nch), -1);
  /* Broadcast has no Tree in NCCL's table: the line is skipped, as the
   * example skips a disabled combination. */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncBroadcast, 1024, 1, 0, 0}, &nch), -1);
  /* A regBuff 0 line: the same. */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncBroadcast, 65536, 1, 0, 0}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncBroadcast, 65536, 1, 1, 0}, &nch), -1);
  /* Overlapping lines: the first (LL128, disabled here) falls through to the
   * second, file order as in the example. */
  ck_assert_int_eq(call(&c, (struct call){ncclFuncReduce, 4096, 1, 0, 0}, &nch), RING_LL);
  ck_assert_int_eq(nch, 5);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncReduce, 4096, 1, 0, 1}, &nch), RING_LL128);
  ck_assert_int_eq(nch, 3);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  /* The 32-rank, 4-node communicator gets its own lines: the broadcast
   * line for any regBuff applies, the all-reduce one (regBuff 0 only) not. */
  ck_assert_int_eq(ph_comm_init(&c, &pl, 32, 4, 2), ncclSuccess);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncBroadcast, 1024, 1, 0, 0}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 100000, 1, 0, 0}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 100000, 2, 0, 0}, &nch), -1);
  ck_assert_int_eq(call(&c, (struct call){ncclFuncAllReduce, 4096, 1, 1, 0}, &nch), -1);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
}
END_TEST

START_TEST(lines_the_profile_cannot_express_are_errors) {
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"# ok\nallreduce,0,10,ring\n", "tuner.conf:2: 4 fields; NCCL's example tuner needs 8 to 10"},
      {"allreduce,0,10,ring,ll,1,1,1,1,1,1\n", "tuner.conf:1: more than 10 fields"},
      {"allreduce,0,10,ring,,1,1,1\n", "tuner.conf:1: field 5 is empty"},
      {"\n\nalltoall,0,10,ring,ll,1,1,1\n", "tuner.conf:3: unknown collective 'alltoall'"},
      {"allreduce,0,10,star,ll,1,1,1\n", "tuner.conf:1: unknown algorithm 'star'"},
      {"allreduce,0,10,ring,ll256,1,1,1\n", "tuner.conf:1: unknown protocol 'll256'"},
      {"allreduce,20,10,ring,ll,1,1,1\n", "tuner.conf:1: minBytes 20 is above maxBytes 10"},
      {"allreduce,x,10,ring,ll,1,1,1\n", "tuner.conf:1: minBytes 'x' is not a byte count"},
      {"allreduce,0,10,ring,ll,65,1,1\n", "tuner.conf:1: channels '65'"},
      {"allreduce,0,10,ring,ll,1,0,1\n", "tuner.conf:1: nNodes '0'"},
      {"allreduce,0,10,ring,ll,1,1,-2\n", "tuner.conf:1: nRanks '-2'"},
      {"allreduce,0,10,ring,ll,1,1,1,0\n", "tuner.conf:1: numPipeOps '0'"},
      {"allreduce,0,10,ring,ll,1,1,1,1,2\n", "tuner.conf:1: regBuff '2'"},
      {"# nothing\n\n", "no configuration lines"},
      {"allreduce,0,10,ring,ll,1,-1,-1\nallreduce,0,10,ring,ll128,1,-1,-1\n"
       "allreduce,0,10,tree,ll,1,-1,-1\nallreduce,0,10,tree,simple,1,-1,-1\n"
       "allreduce,0,10,ring,simple,1,-1,-1\n",
       "tuner.conf:5: more than 4 allreduce rules can apply to the same size"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *out, *err;
    ck_assert_int_eq(import_conf(bad[i].text, &out, &err), 1);
    ck_assert_msg(strstr(err, bad[i].want), "case %zu: stderr '%s' lacks '%s'", i, err, bad[i].want);
    free(out), free(err);
  }
  /* Nothing was written by a refused import. */
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/p.cfg", dir) > 0);
  ck_assert_int_ne(access(p, F_OK), 0);
  free(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("import-nccl-example");
  TCase *tc = tcase_create("cli");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, example_rules_keep_their_meaning);
  tcase_add_test(tc, lines_the_profile_cannot_express_are_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
