/* The progress line of `pcie-tune profile` on a terminal (through script(1),
 * which gives it a pseudo-terminal): it names the point being measured and
 * when that measurement's deadline falls, so a measurement that hangs until
 * its timeout does not look like a hung profiler. Without a terminal it
 * prints a line per phase, a line on a timer during a long point, and what
 * came of a point that hung, crashed or was retried. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pt_test.h"

static const char sweep[] =
    "profile --backend sim --box gen5-8x-p2p --isolate --timeout 2 --sizes 8:64K --algos ring "
    "--protos ll --channels 1,2 --inject hang:*/*/*@32768 --out %s/%s";

START_TEST(names_the_point_and_its_deadline) {
  char *dir = pt_test_tmpdir(), *args = NULL, *cmd = NULL, *out, *err;
  ck_assert(asprintf(&args, sweep, dir, "t.cfg") > 0);
  ck_assert_msg(system("command -v script >/dev/null 2>&1") == 0, "script(1) (util-linux) is needed");
  ck_assert(asprintf(&cmd, "script -qec \"'%s' %s\" /dev/null", pt_test_cli(), args) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  /* The hanging candidate, announced before it hung, with its deadline. */
  ck_assert_msg(strstr(out, "measuring ring/ll/1 at 32 KiB, deadline 2 s (") != NULL, "progress:\n%s", out);
  ck_assert_ptr_nonnull(strstr(out, "measuring NCCL default at "));
  ck_assert_ptr_nonnull(strstr(out, "ETA "));
  free(out);
  free(err);
  free(cmd);
  free(args);
  /* No terminal: a line per phase, no carriage returns, and (issue 18 §3)
   * a line on a timer while a point runs long, then what came of it,
   * naming the point that hung, not the next one. */
  ck_assert(asprintf(&args, sweep, dir, "n.cfg") > 0);
  ck_assert(asprintf(&cmd, "'%s' %s", pt_test_cli(), args) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(err, "profile:   0% allreduce/graph screen\n"));
  ck_assert_ptr_null(strchr(err, '\r'));
  const char *still = strstr(err, "still measuring ring/ll/1 at 32 KiB (");
  const char *hung = strstr(err, "profile: ring/ll/1 at 32 KiB: hang: no result or heartbeat within 2.0 s, twice");
  ck_assert_msg(still && hung && still < hung, "progress:\n%s", err);
  free(out);
  free(err);
  free(cmd);
  free(args);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_progress");
  TCase *tc = tcase_create("progress");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, names_the_point_and_its_deadline);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
