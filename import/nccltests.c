/*
 * nccl-tests output parser (see nccltests.h): a line-by-line state machine
 * over a memory buffer. Outside a run any text is allowed (logs often carry
 * shell output); inside a table only rows, '#' lines, blank lines, NCCL debug
 * lines and NCCL_X=value lines are, so a damaged table is never half-read.
 */
#include "nccltests.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "import_lex.h"
#include "ncclog.h"

enum state { S_OUTSIDE, S_HEADER, S_TABLE };

/* 13 columns; a timestamp column adds date and time tokens. */
#define NT_COLS 13
#define NT_MAX_TOKENS 24
/* nThread * nGpus above this is not a box nccl-tests ran on. */
#define NT_MAX_LOCAL_RANKS 4096

struct ctx {
  const char *name; /* for error records, even before log->name exists */
  struct nt_log *log;
  struct pt_error_rec *err;
  enum state state;
  size_t cap_runs, cap_rows, cap_dev, cap_vars;
  int oob_seen;  /* "Out of bounds values" seen in the current table */
  int table_line; /* the column header line of the current table */
  int last_row;   /* line of the last row of the current table */
  /* Lines that precede "# nThread" belong to the next run. */
  char pend_version[32];
  long pend_library;
  char pend_prog[64];
  int pend_prog_line;
};

static const char *const env_names[NT_NENV] = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
                                               "NCCL_MAX_NCHANNELS"};

const char *nt_env_name(int v) { return v >= 0 && v < NT_NENV ? env_names[v] : NULL; }

__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, int line, const char *fmt,
                                                      ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(c->err, PT_EINVAL, c->name, line, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static int oom(struct ctx *c) {
  pt_error_set(c->err, 0, c->name, 0, "out of memory");
  return PT_ENOMEM;
}

/* Grows *arr (of *cap elements of size sz) to hold n + 1. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 16;
  void *p = realloc(*arr, ncap * sz);
  if (!p) return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

static struct nt_run *cur(struct ctx *c) { return &c->log->runs[c->log->nruns - 1]; }

/* ---- settings and versions found in any line ---------------------------- */

static int set_env(struct ctx *c, int var, struct lx_span val, int line) {
  char q[64];
  struct nt_env *e = &c->log->env[var];
  val = lx_trim(val);
  /* NCCL quotes nothing, shells and env files may. */
  if (val.n >= 2 && (val.s[0] == '"' || val.s[0] == '\'') && val.s[val.n - 1] == val.s[0])
    val.s++, val.n -= 2;
  if (!val.n) return 0; /* NCCL treats an empty variable as unset */
  lx_quote(val, q, sizeof q);
  if (val.n >= sizeof e->value) return fail(c, line, "%s value too long ('%s')", env_names[var], q);
  if (e->line) {
    if (strlen(e->value) == val.n && !strncasecmp(e->value, val.s, val.n)) return 0;
    return fail(c, line, "%s set to '%s' here but to '%s' at line %d", env_names[var], q,
                e->value, e->line);
  }
  lx_cstr(val, e->value, sizeof e->value);
  e->line = line;
  return 0;
}

static int set_version(struct ctx *c, struct lx_span v, int line) {
  char q[64];
  struct lx_span tok[1];
  if (!lx_split(v, tok, 1)) return fail(c, line, "'NCCL version' without a version");
  lx_quote(tok[0], q, sizeof q);
  if (tok[0].n >= sizeof c->log->nccl_version)
    return fail(c, line, "NCCL version too long ('%s')", q);
  if (c->log->nccl_version_line) {
    if (lx_eq(tok[0], c->log->nccl_version)) return 0;
    return fail(c, line, "NCCL version '%s' differs from '%s' at line %d", q,
                c->log->nccl_version, c->log->nccl_version_line);
  }
  lx_cstr(tok[0], c->log->nccl_version, sizeof c->log->nccl_version);
  c->log->nccl_version_line = line;
  return 0;
}

/* "host:pid:tid [dev] NCCL INFO ..." or a bare "NCCL version 2.x" line. */
static int is_debug(struct lx_span s) {
  s = lx_trim(s);
  return lx_prefix(s, "NCCL version ") || lx_find(s, " NCCL INFO") || lx_find(s, " NCCL WARN") ||
         lx_find(s, " NCCL TRACE") || lx_prefix(s, "NCCL INFO") || lx_prefix(s, "NCCL WARN");
}

/* An NCCL_* variable NCCL said it read: kept once; a second value for it
 * (another rank or process told otherwise) is refused with both lines. */
static int add_var(struct ctx *c, const char *name, const char *value, int line) {
  struct nt_log *log = c->log;
  if (strlen(name) >= sizeof log->vars[0].name || strlen(value) >= sizeof log->vars[0].value)
    return fail(c, line, "%.64s set by environment to a value too long to record", name);
  for (size_t i = 0; i < log->nvars; i++) {
    if (strcmp(log->vars[i].name, name)) continue;
    if (!strcmp(log->vars[i].value, value)) return 0;
    return fail(c, line,
                "%s set by environment to '%s' here but to '%s' at line %d (ranks ran with "
                "different settings; import logs of one setting each)",
                name, value, log->vars[i].value, log->vars[i].line);
  }
  if (grow((void **)&log->vars, &c->cap_vars, log->nvars, sizeof *log->vars)) return oom(c);
  struct nt_nccl_var *v = &log->vars[log->nvars++];
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->value, sizeof v->value, "%s", value);
  v->line = line;
  return 0;
}

/* "... cudaDev 0 nvmlDev 0 busId 17000 ..." (src/init.cc, the Init START and
 * COMPLETE lines of every release from 2.21 and dev): each rank's GPU, kept
 * once, for provenance.box. */
static int add_bus(struct ctx *c, const char *msg, int line) {
  const char *p = strstr(msg, " busId ");
  char hex[32], id[PT_FP_ID_LEN];
  if (!p || !strstr(msg, " cudaDev ")) return 0;
  p += strlen(" busId ");
  size_t n = strspn(p, "0123456789abcdefABCDEF");
  if (!n || n >= sizeof hex) return fail(c, line, "a busId NCCL would not print");
  memcpy(hex, p, n);
  hex[n] = 0;
  if (pt_fp_bus_id_from_nccl(hex, id, sizeof id))
    return fail(c, line, "busId %s is no PCI address", hex);
  for (int i = 0; i < c->log->nbus; i++)
    if (!strcmp(c->log->bus[i], id)) return 0;
  if (c->log->nbus == PT_FP_MAX_GPUS)
    return fail(c, line, "more than %d GPUs in one log", PT_FP_MAX_GPUS);
  snprintf(c->log->bus[c->log->nbus++], PT_FP_ID_LEN, "%s", id);
  return 0;
}

/* The INFO lines import keeps besides the version: the communicator's
 * channel count and the variables NCCL read, through the one reader of
 * NCCL's log lines (import/ncclog.h). */
static int on_info(struct ctx *c, struct lx_span s, int line) {
  char *text = malloc(s.n + 1);
  struct nl_line *l = malloc(sizeof *l);
  int rc = 0;
  if (!text || !l) {
    rc = oom(c);
    goto out;
  }
  memcpy(text, s.s, s.n);
  text[s.n] = 0;
  if (!nl_parse(text, l) || l->level != NL_INFO) goto out;
  if (l->kind == NL_CHANNELS) {
    int n = atoi(l->field[0]);
    if (n < 1 || n > PT_MAX_CHANNELS)
      rc = fail(c, line, "NCCL reports %s coll channels; expected 1..%d", l->field[0], PT_MAX_CHANNELS);
    else if (!c->log->comm_channels || n < c->log->comm_channels) {
      /* The smallest: a job's every communicator has at least that many. */
      c->log->comm_channels = n;
      c->log->comm_channels_line = line;
    }
  } else if (l->kind == NL_ENV) {
    rc = add_var(c, l->field[0], l->field[1], line);
  } else if (l->kind == NL_TUNER_ENV) {
    rc = add_var(c, "NCCL_TUNER_PLUGIN", l->field[0], line);
  } else {
    rc = add_bus(c, l->msg, line);
  }
out:
  free(text);
  free(l);
  return rc;
}

static int on_debug(struct ctx *c, struct lx_span s, int line) {
  const char *p = lx_find(s, "NCCL version ");
  if (p) {
    size_t off = (size_t)(p - s.s) + strlen("NCCL version ");
    return set_version(c, (struct lx_span){s.s + off, s.n - off}, line);
  }
  int rc = on_info(c, s, line);
  if (rc) return rc;
  for (int v = 0; v < NT_NENV; v++) {
    char key[64];
    snprintf(key, sizeof key, "%s set by environment to ", env_names[v]);
    p = lx_find(s, key);
    if (!p) continue;
    size_t off = (size_t)(p - s.s) + strlen(key);
    struct lx_span val = lx_trim((struct lx_span){s.s + off, s.n - off});
    /* Integer parameters are logged as "to 4." */
    if (val.n && val.s[val.n - 1] == '.') val.n--;
    return set_env(c, v, val, line);
  }
  return 0;
}

static int is_name_char(char ch, int first) {
  return ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
         (!first && ch >= '0' && ch <= '9');
}

/* Length of NAME in "NAME=value", or 0. */
static size_t assignment(struct lx_span t) {
  size_t i = 0;
  while (i < t.n && is_name_char(t.s[i], i == 0)) i++;
  return i && i < t.n && t.s[i] == '=' ? i : 0;
}

/* "NCCL_ALGO=Ring", "export NCCL_PROTO=LL", "+ NCCL_ALGO=Ring X=1 ./all_reduce_perf":
 * leading assignments of a line. Returns 1 when the line was one. */
static int on_assignments(struct ctx *c, struct lx_span s, int line, int *rc) {
  struct lx_span tok[NT_MAX_TOKENS];
  size_t n = lx_split(s, tok, NT_MAX_TOKENS), i = 0;
  if (n > NT_MAX_TOKENS) n = NT_MAX_TOKENS;
  if (i < n && (lx_eq(tok[i], "export") || lx_eq(tok[i], "+"))) i++;
  if (i == n || !assignment(tok[i])) return 0;
  *rc = 0;
  for (; i < n && !*rc; i++) {
    size_t k = assignment(tok[i]);
    if (!k) break;
    for (int v = 0; v < NT_NENV; v++)
      if (k == strlen(env_names[v]) && !memcmp(tok[i].s, env_names[v], k))
        *rc = set_env(c, v, (struct lx_span){tok[i].s + k + 1, tok[i].n - k - 1}, line);
  }
  return 1;
}

/* ---- run header ---------------------------------------------------------- */

static int start_run(struct ctx *c, int line) {
  if (grow((void **)&c->log->runs, &c->cap_runs, c->log->nruns, sizeof *c->log->runs)) return oom(c);
  struct nt_run *r = &c->log->runs[c->log->nruns++];
  memset(r, 0, sizeof *r);
  r->line = line;
  memcpy(r->tests_version, c->pend_version, sizeof r->tests_version);
  r->nccl_library = c->pend_library;
  memcpy(r->program, c->pend_prog, sizeof r->program);
  r->program_line = c->pend_prog_line;
  c->pend_version[0] = c->pend_prog[0] = '\0';
  c->pend_library = 0;
  c->pend_prog_line = 0;
  c->cap_rows = c->cap_dev = 0;
  c->oob_seen = 0;
  c->state = S_HEADER;
  return 0;
}

/* "nThread 1 nGpus 2 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup
 * iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 [unalign: 0]" */
static int parse_nthread(struct ctx *c, struct lx_span s, int line) {
  static const struct {
    const char *k1, *k2;
  } keys[] = {{"nThread", NULL}, {"nGpus", NULL},          {"minBytes", NULL},
              {"maxBytes", NULL}, {"step:", NULL},          {"warmup", "iters:"},
              {"iters:", NULL},  {"agg", "iters:"},        {"validation:", NULL},
              {"graph:", NULL}};
  struct lx_span tok[NT_MAX_TOKENS], val[10];
  size_t n = lx_split(s, tok, NT_MAX_TOKENS), i = 0;
  char q[64];
  if (n > NT_MAX_TOKENS) n = NT_MAX_TOKENS;
  for (size_t k = 0; k < 10; k++) {
    if (i < n && lx_eq(tok[i], keys[k].k1)) i++;
    else return fail(c, line, "run header lacks '%s'", keys[k].k1);
    if (keys[k].k2) {
      if (i < n && lx_eq(tok[i], keys[k].k2)) i++;
      else return fail(c, line, "run header lacks '%s %s'", keys[k].k1, keys[k].k2);
    }
    if (i == n) return fail(c, line, "run header lacks the value of '%s'", keys[k].k1);
    val[k] = tok[i++];
  }
  struct nt_run *r = cur(c);
  int bad = -1;
  if (lx_int(val[0], 1, NT_MAX_LOCAL_RANKS, &r->nthread)) bad = 0;
  else if (lx_int(val[1], 1, NT_MAX_LOCAL_RANKS, &r->ngpus)) bad = 1;
  else if (lx_u64(val[2], &r->min_bytes)) bad = 2;
  else if (lx_u64(val[3], &r->max_bytes)) bad = 3;
  if (bad < 0) {
    /* "2(factor)" or "1048576(bytes)" */
    struct lx_span v = val[4];
    const char *paren = memchr(v.s, '(', v.n);
    size_t k = paren ? (size_t)(paren - v.s) : v.n;
    struct lx_span unit = {v.s + k, v.n - k};
    r->step_factor = lx_eq(unit, "(factor)");
    if (!paren || (!r->step_factor && !lx_eq(unit, "(bytes)")) ||
        lx_u64((struct lx_span){v.s, k}, &r->step))
      bad = 4;
  }
  if (bad < 0 && lx_int(val[5], 0, INT_MAX, &r->warmup)) bad = 5;
  if (bad < 0 && lx_int(val[6], 0, INT_MAX, &r->iters)) bad = 6;
  if (bad < 0 && lx_int(val[7], 0, INT_MAX, &r->agg_iters)) bad = 7;
  if (bad < 0 && lx_int(val[8], 0, INT_MAX, &r->validation)) bad = 8;
  if (bad < 0 && lx_int(val[9], 0, INT_MAX, &r->graph)) bad = 9;
  if (bad >= 0) {
    lx_quote(val[bad], q, sizeof q);
    return fail(c, line, "bad value of '%s' in the run header ('%s')", keys[bad].k2 ? "iters" : keys[bad].k1, q);
  }
  if (r->nthread * r->ngpus > NT_MAX_LOCAL_RANKS)
    return fail(c, line, "nThread x nGpus too large (%d x %d)", r->nthread, r->ngpus);
  return 0;
}

/* "Rank  0 [Group  0] Pid 1 on host device  0 [0x1a] NVIDIA GeForce RTX 4090" */
static int parse_device(struct ctx *c, struct lx_span s, int line) {
  struct lx_span tok[NT_MAX_TOKENS];
  size_t n = lx_split(s, tok, NT_MAX_TOKENS), i = 2;
  struct nt_device d = {.line = line};
  int num;
  if (n > NT_MAX_TOKENS) n = NT_MAX_TOKENS;
  if (n < 2 || lx_int(tok[1], 0, INT_MAX, &d.rank)) return fail(c, line, "bad rank in device line");
  if (i + 1 < n && lx_eq(tok[i], "Group")) i += 2;
  if (!(i + 1 < n && lx_eq(tok[i], "Pid") && !lx_int(tok[i + 1], 0, INT_MAX, &num)))
    return fail(c, line, "device line lacks 'Pid N'");
  i += 2;
  if (!(i + 1 < n && lx_eq(tok[i], "on"))) return fail(c, line, "device line lacks 'on HOST'");
  if (lx_cstr(tok[i + 1], d.host, sizeof d.host)) return fail(c, line, "host name too long");
  i += 2;
  if (!(i + 1 < n && lx_eq(tok[i], "device") && !lx_int(tok[i + 1], 0, INT_MAX, &num)))
    return fail(c, line, "device line lacks 'device N'");
  i += 2;
  if (!(i < n && tok[i].n >= 2 && tok[i].s[0] == '[' && tok[i].s[tok[i].n - 1] == ']'))
    return fail(c, line, "device line lacks the '[bus id]'");
  /* nccl-tests prints [%04x:%02x:%02x] (domain, bus, device), older
   * versions [0x%02x] (the bus number); another form is kept out of the box. */
  if (tok[i].n - 2 < sizeof d.bus) {
    for (size_t k = 0; k + 2 < tok[i].n; k++) d.bus[k] = (char)tolower((unsigned char)tok[i].s[k + 1]);
    if (!pt_fp_bus_id_given_ok(d.bus)) d.bus[0] = 0;
  }
  i++;
  if (i == n) return fail(c, line, "device line lacks the GPU name");
  const char *end = s.s + s.n;
  struct lx_span gpu = lx_trim((struct lx_span){tok[i].s, (size_t)(end - tok[i].s)});
  /* Names are for provenance only: a long one is cut, not rejected. */
  if (gpu.n >= sizeof d.gpu) gpu.n = sizeof d.gpu - 1;
  lx_cstr(gpu, d.gpu, sizeof d.gpu);
  struct nt_run *r = cur(c);
  if (grow((void **)&r->dev, &c->cap_dev, r->ndev, sizeof *r->dev)) return oom(c);
  r->dev[r->ndev++] = d;
  return 0;
}

/* The devices decide the rank count, so they must list each rank once. */
static int check_devices(struct ctx *c, int line) {
  struct nt_run *r = cur(c);
  int local = r->nthread * r->ngpus;
  if (!r->ndev) return fail(c, line, "run has no '#  Rank' device lines before its table");
  if (r->ndev > INT_MAX || r->ndev % (size_t)local)
    return fail(c, line, "%zu device lines are not a multiple of nThread x nGpus (%d)", r->ndev, local);
  char *seen = calloc(r->ndev, 1);
  if (!seen) return oom(c);
  int rc = 0;
  for (size_t i = 0; i < r->ndev && !rc; i++) {
    int k = r->dev[i].rank;
    if ((size_t)k >= r->ndev || seen[k])
      rc = fail(c, r->dev[i].line, "rank %d listed twice or out of range 0..%zu", k, r->ndev - 1);
    else
      seen[k] = 1;
  }
  free(seen);
  r->nranks = (int)r->ndev;
  r->nprocs = r->nranks / local;
  return rc;
}

/* ---- table ----------------------------------------------------------------- */

/* "size count type redop root time algbw busbw #wrong time algbw busbw #wrong [timestamp]" */
static int parse_columns(struct ctx *c, struct lx_span *tok, size_t n, int line) {
  static const char *const want[NT_COLS] = {"size", "count", "type",  "redop", "root",
                                            "time", "algbw", "busbw", "#wrong", "time",
                                            "algbw", "busbw", "#wrong"};
  int ok = n == NT_COLS || (n == NT_COLS + 1 && lx_eq(tok[NT_COLS], "timestamp"));
  for (size_t i = 0; ok && i < NT_COLS; i++)
    ok = lx_eq(tok[i], want[i]) || ((i == 5 || i == 9) && lx_eq(tok[i], "cputime"));
  if (!ok)
    return fail(c, line, "unsupported table layout (expected 'size count type redop root time "
                         "algbw busbw #wrong time algbw busbw #wrong')");
  if (c->state == S_OUTSIDE)
    return fail(c, line, "table without its run header ('# nThread ... graph: N')");
  if (c->state == S_TABLE) {
    if (!c->oob_seen) return fail(c, c->last_row ? c->last_row : c->table_line,
                                  "table ends without its summary lines (truncated); rerun it, or leave this log out");
    return fail(c, line, "second table in one run");
  }
  int rc = check_devices(c, line);
  if (rc) return rc;
  cur(c)->timestamps = n > NT_COLS;
  c->state = S_TABLE;
  c->table_line = line;
  c->last_row = 0;
  return 0;
}

static int parse_cell(struct ctx *c, struct lx_span *t, struct nt_cell *cell, int line) {
  static const char *const what[4] = {"time", "algbw", "busbw", "#wrong"};
  double *dst[4] = {&cell->time_us, &cell->algbw, &cell->busbw, &cell->wrong};
  static const unsigned na[4] = {NT_TIME_NA, NT_BW_NA, NT_BW_NA, NT_WRONG_NA};
  char q[64];
  for (int k = 0; k < 4; k++) {
    *dst[k] = 0;
    if (lx_eq(t[k], "N/A")) {
      cell->flags |= na[k];
      continue;
    }
    if (lx_nonneg(t[k], dst[k])) {
      lx_quote(t[k], q, sizeof q);
      return fail(c, line, "bad %s value ('%s')", what[k], q);
    }
  }
  return 0;
}

static int parse_row(struct ctx *c, struct lx_span s, int line) {
  struct lx_span tok[NT_MAX_TOKENS];
  size_t n = lx_split(s, tok, NT_MAX_TOKENS);
  struct nt_run *r = cur(c);
  struct nt_row row = {.line = line};
  char q[64];
  lx_quote(lx_trim(s), q, sizeof q);
  if (n < NT_COLS)
    return fail(c, line, "truncated row: %zu of %d columns ('%s')", n, NT_COLS, q);
  if (n > NT_COLS && !r->timestamps)
    return fail(c, line, "row has %zu columns, expected %d ('%s')", n, NT_COLS, q);
  if (lx_u64(tok[0], &row.size)) return fail(c, line, "bad size ('%s')", q);
  if (lx_u64(tok[1], &row.count)) return fail(c, line, "bad count ('%s')", q);
  if (lx_cstr(tok[2], row.type, sizeof row.type)) return fail(c, line, "bad type ('%s')", q);
  if (lx_cstr(tok[3], row.redop, sizeof row.redop)) return fail(c, line, "bad redop ('%s')", q);
  if (lx_int(tok[4], -1, INT_MAX, &row.root)) return fail(c, line, "bad root ('%s')", q);
  int rc = parse_cell(c, tok + 5, &row.oop, line);
  if (!rc) rc = parse_cell(c, tok + 9, &row.ip, line);
  if (rc) return rc;
  if (grow((void **)&r->rows, &c->cap_rows, r->nrows, sizeof *r->rows)) return oom(c);
  r->rows[r->nrows++] = row;
  c->last_row = line;
  return 0;
}

/* "Out of bounds values : 0 OK" and "Avg bus bandwidth    : 1.18707 [OK]" */
static int parse_summary(struct ctx *c, struct lx_span s, int line, int avg) {
  struct lx_span tok[8];
  size_t n = lx_split(s, tok, 8);
  if (c->state != S_TABLE) return fail(c, line, "summary line outside a table");
  struct nt_run *r = cur(c);
  if (!r->nrows) return fail(c, line, "table has no rows");
  if (avg && !c->oob_seen) return fail(c, line, "'Avg bus bandwidth' before 'Out of bounds values'");
  if (!avg && c->oob_seen) return fail(c, line, "second 'Out of bounds values' line");
  if (avg) {
    /* "Avg bus bandwidth : X [OK|FAILED]" */
    if (n < 5 || n > 6 || !lx_eq(tok[3], ":") || lx_nonneg(tok[4], &r->avg_busbw))
      return fail(c, line, "bad 'Avg bus bandwidth' line");
    c->state = S_OUTSIDE;
    return 0;
  }
  /* "Out of bounds values : N OK|FAILED" */
  if (n != 7 || !lx_eq(tok[4], ":") || lx_nonneg(tok[5], &r->oob) ||
      !(lx_eq(tok[6], "OK") || lx_eq(tok[6], "FAILED")))
    return fail(c, line, "bad 'Out of bounds values' line");
  r->oob_failed = lx_eq(tok[6], "FAILED");
  c->oob_seen = 1;
  return 0;
}

/* How many sizes nccl-tests runs from minBytes to maxBytes (its loop in
 * src/common.cu: size *= stepFactor or size += stepBytes while size <=
 * maxBytes), and the last of them; at most NT_MAX_STEPS. */
#define NT_MAX_STEPS 100000
static size_t run_sizes(const struct nt_run *r, uint64_t *last) {
  uint64_t s = r->min_bytes;
  size_t n = 1;
  *last = s;
  if (r->step_factor ? r->step < 2 : r->step == 0) return 1;
  /* Whether a next size fits is decided before it is formed: no overflow. */
  for (; n < NT_MAX_STEPS && s <= r->max_bytes; n++) {
    if (r->step_factor ? !s || s > r->max_bytes / r->step : r->step > r->max_bytes - s) break;
    s = r->step_factor ? s * r->step : s + r->step;
  }
  *last = s;
  return n;
}

/* A table that ends before its summary lines: refused as truncated, unless
 * every size up to maxBytes is there (a whole table copied without its two
 * summary lines), which is kept and marked for a warning. A row's size may
 * be below the nominal one (nccl-tests rounds the count down to whole
 * elements per rank), so the last row need only lie past the size before. */
static int table_cut(struct ctx *c) {
  struct nt_run *r = cur(c);
  uint64_t last;
  size_t want = run_sizes(r, &last);
  uint64_t before = want < 2 ? 0 : r->step_factor ? last / r->step : last - r->step;
  if (r->nrows == want && r->rows[r->nrows - 1].size > before && r->rows[r->nrows - 1].size <= last) {
    r->no_summary_line = c->last_row;
    c->state = S_OUTSIDE;
    return 0;
  }
  return fail(c, c->last_row ? c->last_row : c->table_line,
              "table ends without its summary lines (truncated); rerun it, or leave this log out");
}

/* ---- '#' lines ------------------------------------------------------------- */

/* A new header while a table is open means the table was cut short. */
static int close_open_run(struct ctx *c, int line) {
  if (c->state == S_TABLE) return table_cut(c);
  if (c->state == S_HEADER) return fail(c, cur(c)->line, "run has no result table");
  (void)line;
  return 0;
}

static int on_comment(struct ctx *c, struct lx_span s, int line) {
  struct lx_span body = lx_trim((struct lx_span){s.s + 1, s.n - 1}); /* after '#' */
  struct lx_span tok[NT_MAX_TOKENS];
  size_t n = lx_split(body, tok, NT_MAX_TOKENS);
  int rc;
  if (lx_prefix(body, "nccl-tests version ")) {
    if ((rc = close_open_run(c, line))) return rc;
    if (n < 3 || lx_cstr(tok[2], c->pend_version, sizeof c->pend_version))
      return fail(c, line, "bad nccl-tests version line");
    c->pend_library = 0;
    for (size_t i = 3; i < n && i < NT_MAX_TOKENS; i++)
      if (lx_prefix(tok[i], "nccl-library=") &&
          lx_long((struct lx_span){tok[i].s + 13, tok[i].n - 13}, 0, 999999, &c->pend_library))
        return fail(c, line, "bad nccl-library code");
    return 0;
  }
  if (lx_prefix(body, "Collective test starting:")) {
    if ((rc = close_open_run(c, line))) return rc;
    if (n != 4) return fail(c, line, "bad 'Collective test starting' line");
    struct lx_span prog = tok[3];
    const char *slash = memrchr(prog.s, '/', prog.n);
    if (slash) prog = (struct lx_span){slash + 1, prog.n - (size_t)(slash + 1 - prog.s)};
    if (lx_cstr(prog, c->pend_prog, sizeof c->pend_prog))
      return fail(c, line, "test program name too long");
    c->pend_prog_line = line;
    return 0;
  }
  if (n >= 1 && lx_eq(tok[0], "nThread")) {
    if ((rc = close_open_run(c, line)) || (rc = start_run(c, line))) return rc;
    return parse_nthread(c, body, line);
  }
  if (n >= 1 && lx_eq(tok[0], "Rank") && c->state == S_HEADER) return parse_device(c, body, line);
  if (n >= 2 && lx_eq(tok[0], "size") && lx_eq(tok[1], "count"))
    return parse_columns(c, tok, n > NT_MAX_TOKENS ? NT_MAX_TOKENS : n, line);
  if (lx_prefix(body, "Out of bounds values")) return parse_summary(c, body, line, 0);
  if (lx_prefix(body, "Avg bus bandwidth")) return parse_summary(c, body, line, 1);
  return 0; /* every other '#' line is a comment */
}

/* ---- driver ---------------------------------------------------------------- */

/* A line that looks like a table row (a number, then more columns). */
static int looks_like_row(struct lx_span s) {
  struct lx_span tok[6];
  uint64_t v;
  return lx_split(s, tok, 6) >= 5 && !lx_u64(tok[0], &v);
}

/* A line with a table row's shape: 13 columns (15 with a timestamp), size
 * and count numbers. */
static int is_table_row(struct lx_span s) {
  struct lx_span tok[NT_MAX_TOKENS];
  size_t n = lx_split(s, tok, NT_MAX_TOKENS);
  uint64_t v;
  return (n == NT_COLS || n == NT_COLS + 2) && !lx_u64(tok[0], &v) && !lx_u64(tok[1], &v);
}

static int on_line(struct ctx *c, struct lx_span s, int line) {
  struct lx_span t = lx_trim(s);
  int rc = 0;
  if (!t.n) return 0;
  if (t.s[0] == '#') return on_comment(c, t, line);
  if (is_debug(t)) return on_debug(c, t, line);
  if (on_assignments(c, t, line, &rc)) return rc;
  if (c->state == S_TABLE) return parse_row(c, t, line);
  if (looks_like_row(t)) {
    char q[64];
    lx_quote(t, q, sizeof q);
    if (!c->log->nruns && is_table_row(t))
      return fail(c, line,
                  "a fragment? no run header before this row ('%s'); copy nccl-tests' whole output, "
                  "from its '# nThread ...' line on",
                  q);
    return fail(c, line, "table row outside an nccl-tests table ('%s')", q);
  }
  return 0; /* free text: shell output, a run's preamble */
}

int nt_parse(struct nt_log *log, const char *buf, size_t len, const char *name,
             struct pt_error_rec *err) {
  struct ctx c = {.name = name ? name : "<input>", .log = log, .err = err};
  int rc = 0, line = 0;
  memset(log, 0, sizeof *log);
  memset(err, 0, sizeof *err);
  log->name = strdup(c.name);
  if (!log->name) return oom(&c);
  if (len >= INT_MAX) {
    rc = fail(&c, 0, "too large for an nccl-tests log");
    goto out;
  }
  for (size_t pos = 0; pos < len && !rc;) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - buf) : len;
    struct lx_span s = {buf + pos, end - pos};
    line++;
    if (s.n && s.s[s.n - 1] == '\r') s.n--; /* CRLF */
    if (memchr(s.s, '\0', s.n))
      rc = fail(&c, line, "NUL byte: not a text file");
    else
      rc = on_line(&c, s, line);
    pos = end + 1;
  }
  if (!rc && c.state == S_TABLE) rc = table_cut(&c);
  if (rc) goto out;
  if (c.state == S_HEADER)
    rc = fail(&c, cur(&c)->line, "run has no result table");
  else if (!log->nruns)
    rc = fail(&c, line ? 1 : 0, "not nccl-tests output (no '# nThread ... graph: N' run header); give "
                               "an nccl-tests binary's whole output (all_reduce_perf ...), or leave this file out");
  else if (c.pend_prog_line)
    rc = fail(&c, c.pend_prog_line, "'Collective test starting' without a run after it");
out:
  if (rc) {
    /* Keep the name out of the freed log: err->file already has it. */
    nt_log_release(log);
  }
  return rc;
}

void nt_log_release(struct nt_log *log) {
  for (size_t i = 0; i < log->nruns; i++) {
    free(log->runs[i].rows);
    free(log->runs[i].dev);
  }
  free(log->runs);
  free(log->vars);
  free(log->name);
  memset(log, 0, sizeof *log);
}
