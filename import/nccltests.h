/*
 * nccl-tests output parser: turns the text that all_reduce_perf,
 * all_gather_perf, reduce_scatter_perf, broadcast_perf or reduce_perf (2.x)
 * printed into runs of rows, plus the NCCL settings and version found in the
 * log. It reads a memory buffer only: no files, no printing, no exit, and it
 * knows nothing of profiles (import/import_build.c turns a log into one).
 *
 * What it accepts (docs/cli-import.md has the user's view):
 *  - any number of runs; a run starts at "# nThread N nGpus N ... graph: N",
 *    optionally preceded by "# nccl-tests version ..." and "# Collective test
 *    starting: PROG", has "#  Rank ..." device lines, one table (size count
 *    type redop root, then time algbw busbw #wrong out-of-place and in-place,
 *    optionally a timestamp) and ends with "# Out of bounds values" and
 *    "# Avg bus bandwidth";
 *  - "N/A" in any time/algbw/busbw/#wrong cell;
 *  - NCCL_DEBUG lines ("host:pid:tid [d] NCCL INFO ...", "NCCL version ...")
 *    and NCCL_X=value lines on lines of their own, anywhere; of the INFO
 *    lines, the channel count and the "set by environment" settings are
 *    kept (read with import/ncclog.h);
 *  - LF or CRLF line endings; free text outside runs; unknown '#' lines.
 * Everything else inside a table, a truncated table, a run without a table,
 * NUL bytes, or a buffer without any run is an error with file and line.
 *
 * Thread-safety: none needed; a struct nt_log is owned by one caller.
 */
#ifndef PCIE_CLI_NCCLTESTS_H
#define PCIE_CLI_NCCLTESTS_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/hostinfo.h" /* bus id sizes */
#include "pcie/profile.h" /* struct pt_error_rec only */

/* One half of a row: out-of-place or in-place. */
enum nt_cell_flags {
  NT_TIME_NA = 1 << 0,  /* time printed as N/A */
  NT_BW_NA = 1 << 1,    /* algbw or busbw printed as N/A */
  NT_WRONG_NA = 1 << 2, /* #wrong printed as N/A: not validated (-c 0) */
};
struct nt_cell {
  double time_us; /* >= 0, finite; 0 when NT_TIME_NA */
  double algbw, busbw;
  double wrong;   /* wrong elements, >= 0 (nccl-tests prints it with %g) */
  unsigned flags; /* enum nt_cell_flags */
};

struct nt_row {
  uint64_t size, count;
  char type[16], redop[16];
  int root;
  struct nt_cell oop, ip;
  int line;
};

struct nt_device {
  int rank;
  char host[64];
  char gpu[96];
  /* The bus id between the brackets, lower case, when it has a form
   * pt_fp_bus_id_given_ok accepts ("0000:01:00", older "0x1a"); else "". */
  char bus[PT_FP_ID_LEN];
  int line;
};

struct nt_run {
  int line;              /* the "# nThread" line */
  char tests_version[32]; /* "" when no "# nccl-tests version" line */
  long nccl_library;     /* nccl-library=N code, 0 when absent */
  char program[64];      /* "Collective test starting: PROG" basename, or "" */
  int program_line;
  int nthread, ngpus;
  uint64_t min_bytes, max_bytes, step;
  int step_factor;       /* step is a factor (1) or bytes (0) */
  int warmup, iters, agg_iters, validation, graph;
  size_t ndev;
  struct nt_device *dev; /* in file order; one per rank */
  int nranks;            /* = ndev: ranks 0..nranks-1 each listed once */
  int nprocs;            /* nranks / (nthread * ngpus), exact */
  int timestamps;        /* the table has a timestamp column */
  size_t nrows;
  struct nt_row *rows;   /* in file order */
  double oob;            /* "Out of bounds values" count */
  int oob_failed;        /* it said FAILED */
  double avg_busbw;
  /* The table has a row for every size from minBytes to maxBytes but ended
   * without its summary lines (copied without them): the line of its last
   * row, for the caller's warning; 0 when the summary was there. */
  int no_summary_line;
};

/* NCCL settings that name a candidate, as found in the log. */
enum nt_env_var { NT_ENV_ALGO, NT_ENV_PROTO, NT_ENV_MIN_NCHANNELS, NT_ENV_MAX_NCHANNELS, NT_NENV };
struct nt_env {
  char value[64]; /* "" when not found */
  int line;       /* first line that set it */
};

/* Any NCCL_* variable NCCL said it read ("NCCL INFO NCCL_X set by
 * environment to Y"), in order of first appearance. */
struct nt_nccl_var {
  char name[64], value[256];
  int line;
};

struct nt_log {
  char *name;             /* the name errors use (owned) */
  char nccl_version[64];  /* from "NCCL version X", or "" */
  int nccl_version_line;
  struct nt_env env[NT_NENV];
  /* comm->nChannels from "NCCL INFO N coll channels, ..." (the smallest
   * when several communicators printed one); 0 when the log has none. */
  int comm_channels;
  int comm_channels_line;
  /* The GPUs of the ranks, from NCCL's "busId %lx" in its Init lines, in
   * sysfs form; nbus 0 when the log has none. */
  int nbus;
  char bus[PT_FP_MAX_GPUS][PT_FP_ID_LEN];
  size_t nvars;
  struct nt_nccl_var *vars;
  size_t nruns;
  struct nt_run *runs;    /* at least one after a successful parse */
};

/* The environment variable name of v ("NCCL_ALGO", ...). */
const char *nt_env_name(int v);

/* Parses len bytes of buf (need not be NUL-terminated) into *log, which the
 * call initialises; name is copied and used in error records. Returns 0, or
 * PT_EINVAL with *err filled (file, line, reason) and *log released, or
 * PT_ENOMEM. */
int nt_parse(struct nt_log *log, const char *buf, size_t len, const char *name,
             struct pt_error_rec *err);
/* Frees what *log owns and zeroes it; safe on a zeroed or released log. */
void nt_log_release(struct nt_log *log);

#endif
