/*
 * pcie-tune profile, split by role: profile_opts.c declares the options (one
 * table) and turns a command line, or a partial profile's record for
 * --resume, into struct profile_opts; profile.c runs the sweep and writes the
 * profile. Internal to cli/.
 */
#ifndef PCIE_CLI_PROFILE_H
#define PCIE_CLI_PROFILE_H

#include <stdint.h>

#include "measure/explore.h"
#include "measure/sweepfile.h"
#include "measure_opts.h"
#include "opt.h"
#include "pcie/sweep.h"

#define PROFILE_RECORD_LEN sizeof(((struct pt_sweepfile_state *)0)->args)

/* --chunks: at most this many chunk sizes. */
#define PROFILE_MAX_CHUNKS 4

struct profile_opts {
  struct cli_measure m; /* first: cli_measure_rows' offsets are into it */
  const char *backend, *out, *name, *workload;
  int isolate, full, force, resume, quiet;
  int engine; /* --engine: index into cli/engine.h's names (none, vllm, sglang) */
  int mode_mask; /* 1 << PT_MODE_GRAPH, 1 << PT_MODE_EAGER, or both */
  unsigned coll_mask, algo_mask, proto_mask;
  unsigned long long timeout_s, checkpoint_s, reps, screen_reps, budget;
  uint64_t min_bytes, max_bytes;      /* --sizes MIN:MAX */
  uint64_t sizes[PT_SWEEP_MAX_SIZES]; /* --sizes LIST and --workload, merged */
  size_t nsizes;
  int channels[PT_MAX_CHANNELS];
  size_t nch;
  uint32_t chunks[PROFILE_MAX_CHUNKS]; /* --chunks: ring/tree chunk variants, bytes, ascending */
  size_t nchunks;
  const struct pt_explore_var *explore_var; /* --explore VAR=LIST (--explore-channels LIST) */
  long long explore[PT_EXPLORE_MAX];        /* LIST, ascending */
  size_t nexplore;
  struct cli_state st;                 /* what was given (the resumed record's, with --resume) */
  char record[PROFILE_RECORD_LEN];     /* the sweep's options, stored in the profile */
  char stored[PROFILE_RECORD_LEN];     /* --resume: the record's words, which the options point into */
  char name_buf[128];
};

extern const struct cli_cmd profile_cli;

/* --chunks (cli/profile_chunks.c): appends to cands[0 .. n) a variant of
 * every ring or tree candidate per chunk below NCCL's ceiling for its
 * protocol, at most max in all, and says on stderr (unless quiet) from
 * which size each is measured. Returns the new count. */
size_t profile_chunk_variants(const struct profile_opts *o, const struct pt_backend_info *bi,
                              struct pt_cand_spec *cands, size_t n, size_t max);
/* The sweep's measures filter for them (arg: the backend's info): a chunk
 * variant only where every channel asked carries more than its reach. */
int profile_chunk_measured(void *arg, int coll, const struct pt_cand_spec *c, uint64_t nbytes);

/* Parses argv into o (--resume: the options the file's record holds, with
 * the few a resume may change) and checks them together; o->record is the
 * sweep's record. Returns 0, CLI_HELP after printing the help, or the exit
 * status after printing the error. */
int profile_options(int argc, char **argv, struct profile_opts *o);

/* The record of o, after a change (--resume --timeout). -1: too long. */
int profile_record(struct profile_opts *o);

#endif
