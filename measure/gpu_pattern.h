/*
 * The data the GPU backend reduces, and how its outputs are checked. Pure
 * host code, so the check is tested without a GPU.
 *
 * Rank r holds, at element i, the integer ((i*(2r+1) + 3r) mod 1021) + 1 as
 * an fp32. Every value is at most 1021 and there are at most 64 ranks, so
 * every partial sum stays below 2^24 and is exact in fp32 whatever order
 * NCCL reduces in: the expected sum is known exactly and any difference is
 * a wrong result, never rounding. The period (1021, prime) is not a power
 * of two, so data moved to the wrong offset by a chunk or a slice does not
 * line up with the right values by accident; the rank-dependent stride
 * means a rank's contribution counted twice or lost changes the sum.
 */
#ifndef PCIE_CLI_GPU_PATTERN_H
#define PCIE_CLI_GPU_PATTERN_H

#include <stddef.h>

/* Fills buf[0..count) with rank's input. */
void pt_pattern_fill(float *buf, size_t count, int rank);

/* The exact all-reduce sum at element i over nranks ranks. */
float pt_pattern_sum(size_t i, int nranks);

/* Checks an all-reduce output. Returns 0 when every element equals the
 * expected sum, else 1 with the first bad element in *bad, its value in
 * *got and the expected one in *want (a NaN got means never written). */
int pt_pattern_check(const float *buf, size_t count, int nranks, size_t *bad, float *got,
                     float *want);

/* The same for op `op` of a launch: rank r, element i holds
 * ((i*(2r+1) + 3r + 7*op) mod 1021) + 1. Op 0 is the pattern above. */
void pt_pattern_fill_op(float *buf, size_t count, int rank, unsigned op);
float pt_pattern_sum_op(size_t i, int nranks, unsigned op);
int pt_pattern_check_op(const float *buf, size_t count, int nranks, unsigned op, size_t *bad,
                        float *got, float *want);

#endif
