/* Issue 26 §6, through the device double: two ranks on one GPU. NCCL
 * refuses two ranks of one host on one GPU ("Duplicate GPU detected",
 * src/init.cc), and on one GPU it never asks the tuner; `pcie-tune profile
 * --gpus 0,0 --same-gpu-ranks` gives each rank process its own NCCL_HOSTID
 * (two nodes to NCCL, over sockets on lo), so a one-GPU machine runs the
 * forcing path. The double imitates NCCL's host hash and duplicate check,
 * so the switch is what makes the sweep run. */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/gpu_abi.h"
#include "pcie/profile.h"
#include "support/pt_test.h"

static char *dir, *out, *err, dbl[1200];

static void setup(void) {
  dir = pt_test_tmpdir();
  out = err = NULL;
  snprintf(dbl, sizeof dbl, "%s", pt_test_double());
}

static void teardown(void) {
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

static int profile(const char *args) {
  char *cmd = NULL;
  free(out);
  free(err);
  ck_assert(asprintf(&cmd,
                     "cd '%s' && TMPDIR='%s' PTDOUBLE_BOX=consumer-2x timeout 120 '%s' profile --backend nccl "
                     "--nccl-lib '%s' --quiet --warmup-ms 0 --ops 2 --reps 2 --full %s",
                     dir, dir, pt_test_cli(), dbl, args) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  free(cmd);
  return rc;
}

/* The smoke sweep of bench/gpu_smoke.sh: ring/ll/1, ring/simple/1 and
 * tree/ll/1 at 14 KiB and 1 MiB, graph and eager. */
START_TEST(two_ranks_on_one_gpu_run_the_forcing_path) {
  ck_assert_int_ne(profile("--gpus 0,0 --sizes 14336,1048576 --algos ring,tree --protos ll,simple "
                           "--channels 1 --both --out a.cfg"),
                   0);
  ck_assert_msg(strstr(err, "lists a GPU twice") && strstr(err, "add --same-gpu-ranks"), "%s", err);
  ck_assert_msg(profile("--gpus 0,0 --same-gpu-ranks --sizes 14336,1048576 --algos ring,tree --protos ll,simple "
                        "--channels 1 --both --out s.cfg") == 0,
                "%s", err);
  struct pt_profile *p = pt_test_load_profile(dir, "s.cfg");
  ck_assert_int_eq(p->match_nranks, 2);
  size_t ok = 0;
  for (int m = 0; m < PT_NMODES; m++) {
    const struct pt_series *s = p->series[PT_ALLREDUCE][m];
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < s->nsizes; i++) {
      ck_assert_int_eq(s->nccl_default[i].state, PT_PT_OK);
      for (size_t k = 0; k < s->ncand; k++) ok += s->cand[k].points[i].state == PT_PT_OK;
    }
  }
  ck_assert_uint_ge(ok, 8); /* forced candidates ran, in both modes, at both sizes */
  pt_test_free_profile(p);
  /* A thread per rank shares one environment: refused. */
  ck_assert_int_ne(profile("--gpus 0,0 --same-gpu-ranks --process-model single --sizes 14336 --out t.cfg"), 0);
  ck_assert_msg(strstr(err, "--same-gpu-ranks needs a process per rank"), "%s", err);
}
END_TEST

/* The double as NCCL: two ranks of one host on one device are refused. */
typedef int (*set_dev_fn)(int);
typedef int (*uid_fn)(pt_nccl_uid *);
typedef int (*init_fn)(pt_nccl_comm *, int, pt_nccl_uid, int);
static set_dev_fn set_dev;
static init_fn init_rank;
static pt_nccl_uid uid;
static int rc_of[2];
static char why_of[2][256];
static const char *(*last_error)(pt_nccl_comm);

static void *rank_main(void *arg) {
  int r = (int)(intptr_t)arg;
  pt_nccl_comm comm = NULL;
  set_dev(0);
  rc_of[r] = init_rank(&comm, 2, uid, r);
  snprintf(why_of[r], sizeof why_of[r], "%s", last_error(NULL)); /* the double keeps it per thread */
  return NULL;
}

START_TEST(the_double_refuses_two_ranks_of_one_host_on_one_gpu) {
  setenv("PTDOUBLE_BOX", "consumer-2x", 1);
  unsetenv("NCCL_HOSTID");
  void *h = dlopen(dbl, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "%s", dlerror());
  set_dev = (set_dev_fn)(uintptr_t)dlsym(h, "cudaSetDevice");
  uid_fn get_uid = (uid_fn)(uintptr_t)dlsym(h, "ncclGetUniqueId");
  init_rank = (init_fn)(uintptr_t)dlsym(h, "ncclCommInitRank");
  last_error = (const char *(*)(pt_nccl_comm))(uintptr_t)dlsym(h, "ncclGetLastError");
  ck_assert(set_dev && get_uid && init_rank && last_error);
  ck_assert_int_eq(get_uid(&uid), 0);
  pthread_t t[2];
  for (int r = 0; r < 2; r++) ck_assert_int_eq(pthread_create(&t[r], NULL, rank_main, (void *)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  ck_assert_int_ne(rc_of[0], 0);
  ck_assert_int_ne(rc_of[1], 0);
  for (int r = 0; r < 2; r++)
    ck_assert_msg(strstr(why_of[r], "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device"), "%s",
                  why_of[r]);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("measure-same-gpu");
  TCase *tc = tcase_create("double");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, two_ranks_on_one_gpu_run_the_forcing_path);
  tcase_add_test(tc, the_double_refuses_two_ranks_of_one_host_on_one_gpu);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
