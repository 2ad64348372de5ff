/*
 * Lexing helpers for the nccl-tests parser and the import command: tokens of
 * a line that is not NUL-terminated, strict number conversion (strto* with
 * end pointer, errno and range checks) and quoting of a subject for error
 * messages. Pure functions on caller memory; no allocation, no printing.
 */
#ifndef PCIE_CLI_IMPORT_LEX_H
#define PCIE_CLI_IMPORT_LEX_H

#include <stddef.h>
#include <stdint.h>

/* A span of text; not NUL-terminated. */
struct lx_span {
  const char *s;
  size_t n;
};

/* Splits s at spaces and tabs into at most max tokens and returns how many
 * tokens the text holds (which may exceed max: the extra ones are counted,
 * not stored). */
size_t lx_split(struct lx_span s, struct lx_span *tok, size_t max);
/* s without leading and trailing spaces and tabs. */
struct lx_span lx_trim(struct lx_span s);
/* 1 when t equals the C string w (case-sensitive). */
int lx_eq(struct lx_span t, const char *w);
/* 1 when s starts with the C string w. */
int lx_prefix(struct lx_span s, const char *w);
/* Position of w in s, or NULL. */
const char *lx_find(struct lx_span s, const char *w);
/* Copies t into buf as a C string; -1 when it does not fit. */
int lx_cstr(struct lx_span t, char *buf, size_t len);

/* Strict conversions: the whole token must be the number. They return 0, or
 * -1 when the token is empty, has trailing text, overflows or is out of
 * [min, max]. Decimal only; no sign for unsigned values. */
int lx_u64(struct lx_span t, uint64_t *out);
int lx_long(struct lx_span t, long min, long max, long *out);
int lx_int(struct lx_span t, int min, int max, int *out);
/* A finite double >= 0 (nccl-tests prints times, bandwidths and #wrong with
 * %f, %e or %g). */
int lx_nonneg(struct lx_span t, double *out);

/* Writes t into buf for a message: at most 40 characters, "..." when cut,
 * non-printable bytes as '?'. */
void lx_quote(struct lx_span t, char *buf, size_t len);

#endif
