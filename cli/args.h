/*
 * The command-line convention every pcie-tune command follows (docs/cli.md,
 * "Conventions"), in one place:
 *  - cli_normalize (main.c, before dispatching) turns "--opt=value" into
 *    "--opt value" and "-q" into "--quiet", so each command's option loop
 *    sees one spelling;
 *  - cli_usage_error prints the one bad-usage message form and returns 2;
 *  - cli_parse_size reads a size with the binary K/M/G suffixes.
 */
#ifndef PCIE_CLI_ARGS_H
#define PCIE_CLI_ARGS_H

#include <stdint.h>

/* Rewrites *argv (from index 1, up to a "--") into a new vector that stays
 * valid until exit. Returns 0, or -1 when out of memory (argv untouched). */
int cli_normalize(int *argc, char ***argv);

/* "pcie-tune CMD: MESSAGE" and "(see 'pcie-tune CMD --help')" on stderr;
 * returns 2, the bad-usage status. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A decimal byte count with an optional binary suffix (K, M, G; KiB, MiB,
 * GiB; case-insensitive), lo <= value <= hi. Returns 0 or -1. */
int cli_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* "allreduce, allgather, reducescatter, broadcast, reduce": the names an
 * "unknown collective" error lists. */
const char *cli_coll_names(void);

#endif
