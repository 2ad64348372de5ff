/*
 * The setting (algorithm, protocol, channels) a log was measured with, from
 * `--setting algo=ring,proto=ll,channels=4` and from the NCCL_ALGO,
 * NCCL_PROTO, NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS values the parser
 * found in the log. No printing; errors name the log and the line.
 */
#ifndef PCIE_CLI_IMPORT_SETTING_H
#define PCIE_CLI_IMPORT_SETTING_H

#include <stddef.h>

#include "nccltests.h"
#include "pcie/profile.h"

/* Each field is -1 when not given. */
struct imp_setting {
  int algo, proto, channels;
};
#define IMP_SETTING_NONE ((struct imp_setting){-1, -1, -1})

/* Parses "algo=ring,proto=ll,channels=4" (any subset, each key once, names
 * in any case). Returns 0, or -1 with a reason in msg. */
int imp_setting_parse(const char *spec, struct imp_setting *out, char *msg, size_t len);

/* Combines what --setting said (cli) with the log's NCCL_* values into the
 * final setting for a log of collective coll:
 *  - nothing from either: NCCL's default, *is_default = 1;
 *  - otherwise algo, proto and channels must all be known; channels come
 *    from --setting, else NCCL_MAX_NCHANNELS (the ceiling NCCL ran under);
 *    NCCL_MIN_NCHANNELS alone does not fix a count and is refused;
 *  - except where NCCL does not clamp the tuner's count (all-gather,
 *    CollNet; pt_channels_unclamped): there channels is 0 (NCCL's own
 *    count), and a count the log forced anyway (--setting channels=,
 *    NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS) goes to *forced (else 0): the
 *    plugin never ranks such a candidate, so the caller leaves it out;
 *  - a --setting field that contradicts the log is refused.
 * Returns 0 or PT_EINVAL with *err naming the log and the line. */
int imp_setting_resolve(const struct nt_log *log, const struct imp_setting *cli, int coll,
                        struct imp_setting *out, int *is_default, int *forced,
                        struct pt_error_rec *err);

/* "ring/ll/4" into buf ("ring/ll/NCCL's channels" for channels 0). */
void imp_setting_format(const struct imp_setting *s, char *buf, size_t len);

#endif
