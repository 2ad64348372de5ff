/*
 * Collective of an nccl-tests run (see import_coll.h). Old nccl-tests print
 * no program name, so the table itself has to tell; when it cannot (one
 * rank, an unknown data type) the run is refused rather than guessed.
 */
#include "import_coll.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *prefix;
  int coll;
} programs[] = {
    /* reduce_scatter before reduce: a prefix match. */
    {"all_reduce", PT_ALLREDUCE}, {"all_gather", PT_ALLGATHER}, {"reduce_scatter", PT_REDUCESCATTER},
    {"broadcast", PT_BROADCAST},  {"reduce_perf", PT_REDUCE},
};

/* nccl-tests' type names (test_typenames) and NCCL 1's. */
static const struct {
  const char *name;
  unsigned size;
} types[] = {
    {"int8", 1},   {"uint8", 1},  {"char", 1},     {"f8e4m3", 1}, {"f8e5m2", 1}, {"half", 2},
    {"bfloat16", 2}, {"int32", 4}, {"uint32", 4},  {"int", 4},    {"float", 4},  {"int64", 8},
    {"uint64", 8}, {"double", 8},
};

static int fail(struct pt_error_rec *e, const char *file, int line, const char *msg, const char *subj) {
  pt_error_set(e, 0, file, line, "%s ('%s')", msg, subj);
  return PT_EINVAL;
}

static int from_program(const struct nt_log *log, const struct nt_run *run, struct pt_error_rec *err) {
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++)
    if (!strncmp(run->program, programs[i].prefix, strlen(programs[i].prefix))) return programs[i].coll;
  return fail(err, log->name, run->program_line,
              "unsupported test program (import takes all_reduce, all_gather, reduce_scatter, "
              "broadcast and reduce)",
              run->program);
}

int imp_run_coll(const struct nt_log *log, const struct nt_run *run, struct pt_error_rec *err) {
  if (run->program[0]) return from_program(log, run, err);
  /* A 0-byte row has count 0 and tells nothing. */
  const struct nt_row *r = &run->rows[0];
  for (size_t i = 0; i < run->nrows && !r->size; i++) r = &run->rows[i];
  int rooted = r->root >= 0;
  if (!strcmp(r->redop, "none")) return rooted ? PT_BROADCAST : PT_ALLGATHER;
  if (rooted) return PT_REDUCE;
  unsigned es = 0;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(r->type, types[i].name)) es = types[i].size;
  if (!es) return fail(err, log->name, r->line, "cannot tell all_reduce from reduce_scatter: unknown data type", r->type);
  /* Both tests print the per-rank count; only reduce_scatter's is 1/nranks of the size. */
  if (run->nranks > 1 && r->count * es == r->size) return PT_ALLREDUCE;
  if (run->nranks > 1 && r->count * es * (uint64_t)run->nranks == r->size) return PT_REDUCESCATTER;
  return fail(err, log->name, r->line,
              "cannot tell all_reduce from reduce_scatter (no 'Collective test starting' line, and "
              "count x type size matches neither)",
              r->type);
}
