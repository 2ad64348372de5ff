/*
 * The command-line convention every pcie-tune command follows (docs/cli.md,
 * "Conventions"), in one place:
 *  - cli_normalize (main.c, before dispatching) turns "--opt=value" into
 *    "--opt value" and "-q" into "--quiet", so each command's option loop
 *    sees one spelling;
 *  - cli_usage_error prints the one bad-usage message form and returns 2;
 *  - sizes with the binary K/M/G suffixes are read by pt_size_parse
 *    (measure/workload.h), the one parser workload files use too.
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

#endif
