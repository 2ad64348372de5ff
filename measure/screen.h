/*
 * The LL128 correctness screen (issue 28 §3, docs/gpu.md "LL128 on PCIe").
 *
 * NCCL's LL128 protocol (src/device/prims_ll128.h) moves data in 128-byte
 * lines of 16 eight-byte words, 15 of data and one flag word that the
 * eighth thread of each group of eight stores with its data; the receiver
 * polls only the flag word and then reads the whole line. That is correct
 * only if the line's stores arrive as one: NCCL enables LL128 only where
 * it trusts that (graph/tuning.cc: intraType at most PATH_NVB), not on
 * PCIe. Where a line tears, the receiver reads the new flag with data words
 * the FIFO slot held before: what an earlier step or an earlier replay put
 * there. With the same inputs on every replay that stale data is often the
 * very data expected, and an ordinary check passes; so the screen changes
 * every input word between consecutive replays (two input sets
 * alternating, measure/gpu_pattern.h ops 0.. and ops+N..), checks every
 * output of every rank after every replay, at sizes that fill whole lines,
 * end in a partial line, and run past one channel's LL128 loop (so slots
 * are reused inside one collective).
 */
#ifndef PCIE_MEASURE_SCREEN_H
#define PCIE_MEASURE_SCREEN_H

#include <stddef.h>
#include <stdint.h>

#include "pcie/sweep.h"

#define PT_SCREEN_REPLAYS PT_SWEEP_MAX_REPS
#define PT_SCREEN_MAX_SIZES 4

enum pt_screen_state {
  PT_SCREEN_NONE = 0, /* no LL128 candidate: nothing screened */
  PT_SCREEN_PASS,     /* every replay of every screened size correct */
  PT_SCREEN_FAIL,     /* a wrong result, crash or hang: LL128 unusable here */
  PT_SCREEN_DISABLED, /* NCCL has LL128 disabled: nothing to screen */
};

struct pt_screen {
  int state; /* enum pt_screen_state */
  unsigned replays;
  size_t nsizes;
  uint64_t sizes[PT_SCREEN_MAX_SIZES];
  char cands[256]; /* "ring/ll128/4 tree/ll128/4" (pt_screen_profile: "allreduce: ...") */
  char reason[300];
};

/* Screens LL128 on backend b for collective coll in mode, before any LL128
 * candidate of cands[0..ncand) is measured: each algorithm's LL128
 * candidate with the most channels, at the screen sizes inside
 * [min_bytes, max_bytes]. Returns 0 with *out filled, or the backend's
 * negative code with *err. */
int pt_screen_ll128(const struct pt_backend *b, int coll, int mode, const struct pt_cand_spec *cands,
                    size_t ncand, uint64_t min_bytes, uint64_t max_bytes, struct pt_screen *out,
                    struct pt_error_rec *err);

/* The screen as libconfig settings for provenance.extra ("ll128_screen =
 * { ... };"), malloc'ed; NULL on allocation failure. */
char *pt_screen_render(const struct pt_screen *s);

/* What every sweep does before it runs (o: the sweep's options, its
 * candidates in cands[0..*ncand)): screens LL128 on the first collective
 * and mode it measures and, when the screen fails, drops every LL128
 * candidate (*ncand shrinks). Returns as pt_screen_ll128. */
int pt_screen_sweep(const struct pt_backend *b, const struct pt_sweep_opts *o, struct pt_cand_spec *cands,
                    size_t *ncand, struct pt_screen *out, struct pt_error_rec *err);

/* Screens the LL128 choices a profile made elsewhere holds (an import of
 * nccl-tests logs, hand rules: `pcie-tune screen`): per collective, its
 * LL128 candidates with a measured time and its LL128 rules, as
 * pt_screen_ll128 at the screen sizes inside the sizes where they can be
 * chosen (the series' measured range, the rules' ranges; the sizes of
 * different collectives may differ, *out keeps the last's); the first
 * failure ends it (its reason names the collective). PT_SCREEN_NONE when
 * p holds no LL128 choice. Returns 0 with *out filled, or the backend's
 * negative code. */
int pt_screen_profile(const struct pt_backend *b, const struct pt_profile *p, struct pt_screen *out,
                      struct pt_error_rec *err);

/* Records s in p: provenance.extra gets its settings (replacing a screen
 * recorded before), p->ll128_screen its result. Returns 0, PT_ENOMEM, or
 * PT_EINVAL when p's provenance.extra text does not parse. */
int pt_screen_record(const struct pt_screen *s, struct pt_profile *p);

#endif
