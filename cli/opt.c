/* The option tables' parser, help, record and worker line; cli/opt.h says
 * what each does and the wordings. */
#include "opt.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/profile.h"

static int flatten(const struct cli_opt *rows, struct cli_state *st) {
  for (const struct cli_opt *r = rows; r->kind != CLI_END; r++) {
    if (r->kind == CLI_ROWS) {
      if (flatten(r->rows, st)) return -1;
    } else if (st->nrows == CLI_MAX_ROWS) {
      return -1;
    } else {
      st->row[st->nrows++] = r;
    }
  }
  return 0;
}

static int takes_arg(const struct cli_opt *r) { return r->kind != CLI_FLAG && r->kind != CLI_SET; }

static void *field(void *opts, const struct cli_opt *r) { return (char *)opts + r->off; }

/* "a|b|c" as "a, b or c", the accepted form in an error. */
static void choices_text(const char *arg, char *out, size_t len) {
  size_t k = 0;
  const char *last = strrchr(arg, '|');
  for (const char *p = arg; *p && k + 5 < len; p++) {
    if (*p != '|') out[k++] = *p;
    else if (p == last) k += (size_t)snprintf(out + k, len - k, " or ");
    else k += (size_t)snprintf(out + k, len - k, ", ");
  }
  out[k < len ? k : len - 1] = 0;
}

/* The index of v among arg's "a|b|c", or -1. */
static int choice_index(const char *arg, const char *v) {
  size_t n = strlen(v);
  int i = 0;
  for (const char *p = arg;; i++) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, v, n)) return i;
    if (!bar) return -1;
    p = bar + 1;
  }
}

static int parse_uint(const struct cli_opt *r, const char *v, unsigned long long *out, char *why, size_t len) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (end != v && !*end && !errno && *v != '-' && !isspace((unsigned char)*v) && n >= r->lo && n <= r->hi) {
    *out = n;
    return 0;
  }
  if (r->hi == ULLONG_MAX) snprintf(why, len, "a whole number >= %llu", r->lo);
  else snprintf(why, len, "%llu..%llu", r->lo, r->hi);
  return -1;
}

/* The --resume record is one space-separated line that --resume splits
 * again, so what it stores must be one non-empty word. */
static int one_word(const char *v, char *why, size_t len) {
  const char *c = v;
  while (*c && !isspace((unsigned char)*c)) c++;
  if (*v && !*c) return 0;
  snprintf(why, len, "%s; the resume record stores it as one word (rename the file or use a symlink)",
           *v ? "contains whitespace" : "is empty");
  return -1;
}

/* Stores v (NULL for flags) into the row's field; -1 with why. */
static int apply(const struct cli_opt *r, void *opts, const char *v, char *why, size_t len) {
  switch (r->kind) {
  case CLI_FLAG:
    *(int *)field(opts, r) = 1;
    return 0;
  case CLI_SET:
    *(int *)field(opts, r) = (int)r->lo;
    return 0;
  case CLI_UINT:
    return parse_uint(r, v, field(opts, r), why, len);
  case CLI_STR:
    *(const char **)field(opts, r) = v;
    return 0;
  case CLI_CHOICE: {
    int i = choice_index(r->arg, v);
    if (i >= 0) *(int *)field(opts, r) = i;
    else choices_text(r->arg, why, len);
    return i >= 0 ? 0 : -1;
  }
  case CLI_CUSTOM:
    return r->parse(opts, v, why, len);
  default:
    snprintf(why, len, "internal error: row kind %d", (int)r->kind);
    return -1;
  }
}

static int say(struct cli_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(struct cli_state *st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  return CLI_BAD;
}

/* The row an argument names: "--name", "--name=v" (*eq at the '='), "-s". */
static long find(const struct cli_state *st, const char *a, const char **eq) {
  *eq = NULL;
  if (a[1] != '-') {
    for (size_t k = 0; k < st->nrows; k++)
      if (st->row[k]->short_name && st->row[k]->short_name == a[1] && !a[2]) return (long)k;
    return -1;
  }
  const char *name = a + 2, *e = strchr(name, '=');
  size_t n = e ? (size_t)(e - name) : strlen(name);
  *eq = e;
  for (size_t k = 0; k < st->nrows; k++)
    if (strlen(st->row[k]->name) == n && !strncmp(st->row[k]->name, name, n)) return (long)k;
  return -1;
}

/* Refuses a second --x, or two rows of one --graph|--eager group. */
static int repeated(struct cli_state *st, size_t k) {
  const struct cli_opt *r = st->row[k];
  for (size_t g = 0; g < st->ngiven; g++) {
    const struct cli_opt *o = st->row[st->given[g].row];
    if (st->given[g].row == k && !(r->flags & CLI_MULTI)) return say(st, "--%s given twice (give it once)", r->name);
    if (st->given[g].row != k && r->kind == CLI_SET && o->kind == CLI_SET && o->off == r->off)
      return say(st, "--%s and --%s exclude each other (give one)", o->name, r->name);
  }
  return 0;
}

static int defaults(struct cli_state *st, void *opts) {
  char why[256];
  for (size_t k = 0; k < st->nrows; k++) {
    const struct cli_opt *r = st->row[k];
    if (!r->def) continue;
    if (apply(r, opts, r->kind == CLI_SET ? NULL : r->def, why, sizeof why))
      return say(st, "internal error: the default of --%s: %s", r->name, why);
  }
  return 0;
}

/* One option at argv[*i]; CLI_OK, CLI_HELP or CLI_BAD. */
static int option(int argc, char **argv, int *i, void *opts, struct cli_state *st) {
  const char *a = argv[*i], *eq, *v = NULL;
  char why[300];
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) return CLI_HELP;
  long found = find(st, a, &eq);
  if (found < 0) {
    int n = eq ? (int)(eq - a) : (int)strlen(a);
    return say(st, "unknown option '%.*s'", n, a);
  }
  size_t k = (size_t)found;
  const struct cli_opt *r = st->row[k];
  if (takes_arg(r)) {
    if (eq) v = eq + 1;
    else if (*i + 1 < argc) v = argv[++*i];
    else return say(st, "--%s needs a value (--%s %s)", r->name, r->name, r->arg);
  } else if (eq) {
    return say(st, "bad --%s '%s' (it takes no value)", r->name, eq + 1);
  }
  if (repeated(st, k)) return CLI_BAD;
  if (st->ngiven == CLI_MAX_GIVEN) return say(st, "more than %d options", CLI_MAX_GIVEN);
  if ((r->flags & CLI_RECORD) && v && one_word(v, why, sizeof why)) return say(st, "--%s '%s' %s", r->name, v, why);
  int bad = apply(r, opts, v, why, sizeof why);
  if (bad == CLI_WHOLE) return say(st, "%s", why);
  if (bad) return say(st, "bad --%s '%s' (%s)", r->name, v ? v : "", why);
  st->given[st->ngiven].row = k;
  st->given[st->ngiven++].value = v;
  return CLI_OK;
}

static int parse(const struct cli_cmd *c, int argc, char **argv, void *opts, struct cli_state *st) {
  int dashdash = 0, rc;
  char why[300];
  if (flatten(c->opts, st)) return say(st, "internal error: more than %d options", CLI_MAX_ROWS);
  if ((rc = defaults(st, opts))) return rc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!dashdash && !strcmp(a, "--")) {
      dashdash = 1;
    } else if (!dashdash && a[0] == '-' && a[1]) {
      if ((rc = option(argc, argv, &i, opts, st))) return rc;
    } else if (!c->positional) {
      return say(st, "unexpected argument '%s'", a);
    } else if (c->positional(opts, a, why, sizeof why)) {
      return say(st, "%s", why);
    }
  }
  return CLI_OK;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *opts, struct cli_state *st, int report) {
  memset(st, 0, sizeof *st);
  int rc = parse(c, argc, argv, opts, st);
  if (rc == CLI_HELP && report) cli_help(c, stdout);
  if (rc == CLI_BAD && report) cli_bad(c, "%s", st->msg);
  return rc;
}

int cli_bad(const struct cli_cmd *c, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "pcie-tune %s: ", c->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(see 'pcie-tune %s --help')\n", c->name);
  return CLI_BAD;
}

#define HELP_COL 24

static void help_row(FILE *f, const struct cli_opt *r) {
  char head[128];
  int n;
  if (r->short_name) n = snprintf(head, sizeof head, "  -%c, --%s", r->short_name, r->name);
  else n = snprintf(head, sizeof head, "  --%s", r->name);
  if (takes_arg(r) && n > 0 && (size_t)n < sizeof head) snprintf(head + n, sizeof head - (size_t)n, " %s", r->arg);
  if (strlen(head) + 2 > HELP_COL) fprintf(f, "%s\n%*s", head, HELP_COL, "");
  else fprintf(f, "%-*s", HELP_COL, head);
  for (const char *p = r->help; *p; p++) {
    fputc(*p, f);
    if (*p == '\n') fprintf(f, "%*s", HELP_COL, "");
  }
  if (r->kind == CLI_SET && r->def) fprintf(f, " (default)");
  else if (r->def) fprintf(f, " (default %s)", r->def);
  fputc('\n', f);
}

void cli_help(const struct cli_cmd *c, FILE *f) {
  struct cli_state st;
  memset(&st, 0, sizeof st);
  flatten(c->opts, &st);
  fputs(c->usage, f);
  fputc('\n', f);
  for (size_t k = 0; k < st.nrows; k++) help_row(f, st.row[k]);
  fprintf(f, "  -h, --help%*sprint this help\n", HELP_COL - 12, "");
  if (c->epilog) {
    fputc('\n', f);
    fputs(c->epilog, f);
  }
}

void cli_rows(const struct cli_cmd *c, struct cli_state *st) {
  memset(st, 0, sizeof *st);
  flatten(c->opts, st);
}

int cli_given(const struct cli_state *st, const char *name) {
  int n = 0;
  for (size_t g = 0; g < st->ngiven; g++) n += !strcmp(st->row[st->given[g].row]->name, name);
  return n;
}

const char *cli_given_without(const struct cli_state *st, unsigned flag) {
  for (size_t g = 0; g < st->ngiven; g++)
    if (!(st->row[st->given[g].row]->flags & flag)) return st->row[st->given[g].row]->name;
  return NULL;
}

/* Where emitted words go: an argv with a store for numbers, or a line. */
struct sink {
  const char **argv;
  size_t max, n;
  char *store;
  size_t storelen, used;
  char *buf;
  size_t len, k;
  int full;
};

static void put(struct sink *s, const char *w, size_t wlen) {
  if (s->full) return;
  if (s->buf) {
    if (s->k + wlen + 2 > s->len) {
      s->full = 1;
      return;
    }
    if (s->k) s->buf[s->k++] = ' ';
    memcpy(s->buf + s->k, w, wlen);
    s->buf[s->k += wlen] = 0;
    return;
  }
  if (s->n + 2 > s->max || s->used + wlen + 1 > s->storelen) {
    s->full = 1;
    return;
  }
  char *copy = s->store + s->used;
  memcpy(copy, w, wlen);
  copy[wlen] = 0;
  s->used += wlen + 1;
  s->argv[s->n++] = copy;
  s->argv[s->n] = NULL;
}

static void put_opt(struct sink *s, const char *name, const char *v, size_t vlen) {
  char w[128];
  int n = snprintf(w, sizeof w, "--%s", name);
  put(s, w, (size_t)n);
  if (v) put(s, v, vlen);
}

static void emit_row(struct sink *s, const struct cli_opt *r, size_t k, const void *opts,
                     const struct cli_state *st) {
  const void *f = (const char *)opts + r->off;
  char num[32];
  int given = 0;
  switch (r->kind) {
  case CLI_FLAG:
    if (*(const int *)f) put_opt(s, r->name, NULL, 0);
    return;
  case CLI_SET:
    if (*(const int *)f == (int)r->lo) put_opt(s, r->name, NULL, 0);
    return;
  case CLI_UINT:
    put_opt(s, r->name, num, (size_t)snprintf(num, sizeof num, "%llu", *(const unsigned long long *)f));
    return;
  case CLI_STR:
    if (*(const char *const *)f) put_opt(s, r->name, *(const char *const *)f, strlen(*(const char *const *)f));
    return;
  case CLI_CHOICE: {
    const char *p = r->arg;
    for (int i = *(const int *)f; i > 0 && p; i--) p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
    if (p) put_opt(s, r->name, p, strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p));
    return;
  }
  case CLI_CUSTOM:
    for (size_t g = 0; g < st->ngiven; g++)
      if (st->given[g].row == k) put_opt(s, r->name, st->given[g].value, strlen(st->given[g].value)), given = 1;
    if (!given && r->def) put_opt(s, r->name, r->def, strlen(r->def));
    return;
  default:
    return;
  }
}

static int emit(const struct cli_cmd *c, const void *opts, const struct cli_state *st, unsigned flag, unsigned scope,
                struct sink *s) {
  struct cli_state rows;
  memset(&rows, 0, sizeof rows);
  flatten(c->opts, &rows);
  for (size_t k = 0; k < rows.nrows; k++) {
    const struct cli_opt *r = rows.row[k];
    if ((r->flags & flag) && (!r->scope || (r->scope & scope))) emit_row(s, r, k, opts, st);
  }
  return s->full ? -1 : 0;
}

int cli_emit_argv(const struct cli_cmd *c, const void *opts, const struct cli_state *st, unsigned flag,
                  unsigned scope, const char **argv, size_t max, char *store, size_t storelen) {
  struct sink s = {.argv = argv, .max = max, .store = store, .storelen = storelen};
  if (max) argv[0] = NULL;
  return emit(c, opts, st, flag, scope, &s) ? -1 : (int)s.n;
}

int cli_emit_line(const struct cli_cmd *c, const void *opts, const struct cli_state *st, unsigned flag,
                  unsigned scope, char *buf, size_t len) {
  struct sink s = {.buf = buf, .len = len};
  if (len) buf[0] = 0;
  return emit(c, opts, st, flag, scope, &s) ? -1 : (int)s.k;
}

void cli_print_error(const char *cmd, const struct pt_error_rec *e) {
  char buf[1200];
  pt_error_format(e, buf, sizeof buf);
  if (cmd)
    fprintf(stderr, "%s: %s\n", cmd, buf);
  else
    fprintf(stderr, "%s\n", buf);
}
