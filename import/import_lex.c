/*
 * Lexing helpers of the importer (see import_lex.h). Numbers go through
 * strto* on a bounded NUL-terminated copy, so a token is never read past its
 * end and garbage is never turned into 0.
 */
#include "import_lex.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c) { return c == ' ' || c == '\t'; }

size_t lx_split(struct lx_span s, struct lx_span *tok, size_t max) {
  size_t n = 0, i = 0;
  while (i < s.n) {
    while (i < s.n && is_blank(s.s[i])) i++;
    if (i == s.n) break;
    size_t start = i;
    while (i < s.n && !is_blank(s.s[i])) i++;
    if (n < max) tok[n] = (struct lx_span){s.s + start, i - start};
    n++;
  }
  return n;
}

struct lx_span lx_trim(struct lx_span s) {
  while (s.n && is_blank(s.s[0])) s.s++, s.n--;
  while (s.n && is_blank(s.s[s.n - 1])) s.n--;
  return s;
}

int lx_eq(struct lx_span t, const char *w) {
  size_t n = strlen(w);
  return t.n == n && !memcmp(t.s, w, n);
}

int lx_prefix(struct lx_span s, const char *w) {
  size_t n = strlen(w);
  return s.n >= n && !memcmp(s.s, w, n);
}

const char *lx_find(struct lx_span s, const char *w) {
  return memmem(s.s, s.n, w, strlen(w));
}

int lx_cstr(struct lx_span t, char *buf, size_t len) {
  if (t.n >= len) return -1;
  memcpy(buf, t.s, t.n);
  buf[t.n] = '\0';
  return 0;
}

/* Numbers longer than this are not numbers nccl-tests prints. */
#define LX_NUM_MAX 48

int lx_u64(struct lx_span t, uint64_t *out) {
  char buf[LX_NUM_MAX], *end;
  /* strtoull accepts a sign and leading spaces; a size never has either. */
  if (lx_cstr(t, buf, sizeof buf) || buf[0] < '0' || buf[0] > '9') return -1;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

int lx_long(struct lx_span t, long min, long max, long *out) {
  char buf[LX_NUM_MAX], *end;
  if (lx_cstr(t, buf, sizeof buf) || !t.n || is_blank(buf[0])) return -1;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || *end || end == buf || v < min || v > max) return -1;
  *out = v;
  return 0;
}

int lx_int(struct lx_span t, int min, int max, int *out) {
  long v;
  if (lx_long(t, min, max, &v)) return -1;
  *out = (int)v;
  return 0;
}

int lx_nonneg(struct lx_span t, double *out) {
  char buf[LX_NUM_MAX], *end;
  if (lx_cstr(t, buf, sizeof buf) || !t.n) return -1;
  /* Digits or a dot first: refuses signs, spaces, "inf" and "nan". */
  if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.')) return -1;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || *end || end == buf || !isfinite(v) || v < 0) return -1;
  *out = v;
  return 0;
}

void lx_quote(struct lx_span t, char *buf, size_t len) {
  size_t max = 40, o = 0;
  if (!len) return;
  for (size_t i = 0; i < t.n && i < max && o + 1 < len; i++) {
    unsigned char c = (unsigned char)t.s[i];
    buf[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (t.n > max && o + 4 < len) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
}
