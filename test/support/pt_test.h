/* Shared helpers for the Check suites: paths handed over by `make test`,
 * temporary files, and NCCL's cost table for a default PCIe node. */
#ifndef PCIE_PT_TEST_H
#define PCIE_PT_TEST_H

#include <stddef.h>
#include <sys/types.h>

/* $PCIE_TUNER_SO / $PCIE_TUNE / $PT_SRCDIR; abort the test when unset. */
const char *pt_test_so(void);
const char *pt_test_cli(void);
/* The device double (CUDA runtime + NCCL), built beside the plugin under test:
 * what --nccl-lib names in the suites that measure "on GPUs". */
const char *pt_test_double(void);
const char *pt_test_srcdir(void);
/* mk/exports.txt's symbols, sorted, one per line (malloc'ed): the plugin's
 * whole dynamic interface. */
char *pt_test_exports(void);
/* A fresh directory under $TMPDIR (malloc'ed path). */
char *pt_test_tmpdir(void);
/* Writes text to dir/name and returns the malloc'ed path. */
char *pt_test_write(const char *dir, const char *name, const char *text);
/* dir/name, malloc'ed. */
char *pt_test_path(const char *dir, const char *name);
/* CLOCK_MONOTONIC in seconds: for the guards that tell a refusal from a
 * hang, never for a performance assertion. */
double pt_test_now_s(void);
/* Removes dir and everything below it. */
void pt_test_rmtree(const char *dir);
/* Points PCIE_TUNER_PROFILE at the shipped example profile. */
void pt_test_use_example_profile(void);
/* Writes text to dir/name and points PCIE_TUNER_PROFILE at it. */
void pt_test_use_profile(const char *dir, const char *name, const char *text);
/* Unsets what would steer the plugin from the caller's environment
 * (PCIE_TUNER_PROFILE, PCIE_TUNER_TRACE, NCCL_PROTO, NCCL_ALGO,
 * NCCL_MAX_NCHANNELS) and clears the simulated host's NCCL log. */
void pt_test_reset_tuner(void);
/* Unsets every PTDOUBLE_* variable: the device double reads them, and a
 * stray one of the user's would fail checks for no reason of the code's
 * (each test sets its own on the command line). */
void pt_test_clear_double_env(void);
/* Loads dir/name as a profile (the test fails when it does not load);
 * pt_test_free_profile releases and frees it. */
struct pt_profile;
struct pt_profile *pt_test_load_profile(const char *dir, const char *name);
void pt_test_free_profile(struct pt_profile *p);
/* NCCL's cost table on an nranks-GPU PCIe node (sim/nccl_model.c). */
void pt_test_nccl_table(float t[7][3], int coll, size_t nbytes, int nranks, int ll128);
/* Runs a shell command, capturing stdout and stderr (malloc'ed, NUL-ended);
 * returns the exit status, or -1 when it did not exit normally. */
int pt_test_run(const char *cmd, char **out, char **err);
/* Runs the built pcie-tune as a user would, in dir (also its TMPDIR, so
 * workers' scratch stays there), with PCIE_TUNER_SO set and a guard of
 * guard_s seconds: "pcie-tune ARGS", ARGS printf-style (shell syntax, so
 * redirections work). Returns pt_test_run's status. */
int pt_test_cli_run(const char *dir, unsigned guard_s, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* pt_test_cli_run with stdin from /dev/null, for suites that keep one
 * out/err pair: frees what *out and *err held first. */
int pt_test_cli_rerun(const char *dir, unsigned guard_s, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Sends SIGINT to pid and requires it to exit with 130 (the CLI's Ctrl-C
 * status) within 5 s. */
void pt_test_interrupt(pid_t pid);

/* Runs one suite (CK_NORMAL) and returns the process exit status. It runs
 * with PCIE_TUNER_ACCEPT_FOREIGN unset (whatever the caller's shell set),
 * so every profile is checked against this host as in a job... */
struct Suite;
int pt_test_main(struct Suite *s);

/* ...unless the suite called this first: for suites whose hand-written or
 * random profiles record no box (or a simulated box's, loaded without its
 * sysfs): they test decisions, not where a profile may be used, and accept
 * foreign profiles on purpose, as a user does with this documented
 * variable. */
void pt_test_accept_foreign(void);

#endif
