/*
 * Injected faults for testing the isolated backend without a GPU: a backend
 * that wraps another one inside `pcie-tune worker` and, for the candidates
 * a fault names, misbehaves the way a broken NCCL candidate can: it crashes
 * (SIGSEGV), aborts (SIGABRT), hangs forever, reports a wrong result, exits
 * with a status, or writes bytes that are not the protocol and then hangs.
 * Real workers never get faults; `--inject` exists for the test suites.
 */
#ifndef PCIE_CLI_BACKEND_ISOLATED_FAULTS_H
#define PCIE_CLI_BACKEND_ISOLATED_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/sweep.h"

#define PT_MAX_FAULTS 16

enum pt_fault_kind {
  PT_FAULT_CRASH,   /* "crash": killed by SIGSEGV */
  PT_FAULT_ABORT,   /* "abort": killed by SIGABRT */
  PT_FAULT_HANG,    /* "hang": never answers */
  PT_FAULT_WRONG,   /* "wrong": answers PT_PT_WRONG */
  PT_FAULT_EXIT,    /* "exit": exits with status 3 */
  PT_FAULT_GARBAGE, /* "garbage": writes non-protocol bytes, then hangs */
};

struct pt_fault {
  int kind;
  int algo, proto, channels; /* -1 = any */
  uint64_t min_bytes;        /* applies at sizes >= this */
};

/* Parses "KIND:ALGO/PROTO/CHANNELS[@MINBYTES]", each of ALGO, PROTO and
 * CHANNELS a name/number or '*'. Returns 0, or -1 with why[] filled. */
int pt_fault_parse(const char *spec, struct pt_fault *out, char *why, size_t whylen);

/* Wraps inner (taking it over: closing b closes inner). Faults never apply
 * to NCCL-default requests. garbage_fd is where "garbage" writes (the
 * worker's protocol descriptor). Returns 0, PT_ENOMEM, or PT_EINVAL for
 * more than PT_MAX_FAULTS faults (inner is then closed). */
int pt_backend_faulty_open(struct pt_backend *b, const struct pt_backend *inner,
                           const struct pt_fault *faults, size_t nfaults, int garbage_fd);

#endif
