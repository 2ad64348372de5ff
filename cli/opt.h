/*
 * Options, declared once: each command has one table of struct cli_opt rows
 * (after git's parse-options, written anew). A row says the option's name,
 * short name, argument kind and range, default, help line, and whether the
 * --resume record stores it and the measuring worker receives it. From the
 * table come:
 *  - the parser (cli_parse): --opt value, --opt=value, -q, "--" and
 *    positionals in any order, defaults applied first, and one wording for
 *    every usage error, naming the option and the form it accepts:
 *      unknown option '--x'
 *      --x needs a value (--x N)
 *      --x given twice (give it once)
 *      --graph and --eager exclude each other (give one)
 *      bad --x 'V' (0..1000)
 *    printed as "pcie-tune CMD: MESSAGE" and "(see 'pcie-tune CMD --help')";
 *  - the --help text (cli_help), and through it docs/cli.md and the man page;
 *  - the --resume record and the worker's command line (cli_emit).
 *
 * Adding an option is one row in the command's table (docs/design.md,
 * "Options"): a field in the command's options struct, a row naming it.
 */
#ifndef PCIE_CLI_OPT_H
#define PCIE_CLI_OPT_H

#include <stddef.h>
#include <stdio.h>

enum cli_kind {
  CLI_END = 0, /* the table's last row */
  CLI_FLAG,    /* int field set to 1 */
  CLI_SET,     /* int field set to lo; rows with the same field form a group of which one may be
                  given (--graph|--eager|--both); the group's row with a def is its default */
  CLI_UINT,    /* unsigned long long field, lo..hi */
  CLI_STR,     /* const char * field: the argument as given */
  CLI_CHOICE,  /* int field: the index of the argument in arg ("per-gpu|single") */
  CLI_CUSTOM,  /* parse(opts, value, why): the row's own syntax, into the command's fields */
  CLI_ROWS,    /* the rows of another table, here (rows shared by two commands) */
};

enum cli_flags {
  CLI_RECORD = 1u << 0, /* the --resume record stores it */
  CLI_WORKER = 1u << 1, /* the worker's command line carries it */
  CLI_RESUME = 1u << 2, /* may be given with --resume (it replaces the recorded value) */
  CLI_MULTI = 1u << 3,  /* may be given more than once (CLI_CUSTOM rows: parse collects) */
};

/* Returns 0; -1 with why saying what the option accepts ("ll, ll128,
 * simple or all"), printed as "bad --NAME 'VALUE' (why)"; or CLI_WHOLE
 * when why is the whole message ("--workload: w.txt:3: ..."), for errors
 * in what the value names rather than in its form. */
#define CLI_WHOLE (-2)
typedef int (*cli_parse_fn)(void *opts, const char *value, char *why, size_t len);

struct cli_opt {
  const char *name;      /* without "--" */
  char short_name;       /* 'q' for -q; 0: none */
  enum cli_kind kind;
  const char *arg;       /* the argument's placeholder ("N", "FILE"); CLI_CHOICE: "a|b|c" */
  size_t off;            /* offsetof(the command's options struct, field) */
  unsigned long long lo; /* CLI_UINT: the least value; CLI_SET: the value set */
  unsigned long long hi; /* CLI_UINT: the greatest value */
  const char *def;       /* the default, as text parsed like a given value; NULL: none */
  unsigned flags;        /* enum cli_flags */
  unsigned scope;        /* the command's own bits (profile: which backend); 0: every one */
  const char *help;      /* one line; '\n' continues it on the next */
  cli_parse_fn parse;    /* CLI_CUSTOM */
  const struct cli_opt *rows; /* CLI_ROWS */
};

/* A row on one line: CLI_ROW(name, short, kind, arg, offset, lo, hi, default,
 * flags, scope, help[, .parse = fn]); a table ends with CLI_END_ROW. */
#define CLI_ROW(n, s, k, a, o, l, h, d, f, sc, hl, ...)                                                          \
  {.name = n, .short_name = s, .kind = k, .arg = a, .off = o, .lo = l, .hi = h, .def = d, .flags = f, .scope = sc, \
   .help = hl, __VA_ARGS__}
#define CLI_INCLUDE(table) {.kind = CLI_ROWS, .rows = table}
#define CLI_END_ROW {.kind = CLI_END}

/* Positionals, in order (import ties each log to the --setting before it). */
typedef int (*cli_pos_fn)(void *opts, const char *arg, char *why, size_t len);

struct cli_cmd {
  const char *name;           /* "profile" */
  const char *usage;          /* the usage lines and what the command does, before the options */
  const char *epilog;         /* after the options (exit statuses); may be NULL */
  const struct cli_opt *opts; /* ends with a CLI_END row */
  cli_pos_fn positional;      /* NULL: no positional argument is accepted */
};

#define CLI_MAX_ROWS 64
#define CLI_MAX_GIVEN 128

/* What one parse saw: the table flattened, and each option given in order
 * with its argument (pointing into argv). */
struct cli_state {
  const struct cli_opt *row[CLI_MAX_ROWS];
  size_t nrows;
  struct {
    size_t row;
    const char *value; /* NULL for flags */
  } given[CLI_MAX_GIVEN];
  size_t ngiven;
  char msg[512]; /* the usage error, when cli_parse returned CLI_BAD */
};

enum { CLI_OK = 0, CLI_HELP = -1, CLI_BAD = 2 };

/* Parses argv[1..argc) into opts (which the caller zeroed): defaults first,
 * then each argument. Returns CLI_OK; CLI_HELP after printing --help on
 * stdout; CLI_BAD after printing the usage error on stderr (report = 0:
 * only into st->msg, for the worker, which reports through its frames). */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *opts, struct cli_state *st, int report);

/* Prints the help: usage, one line per row (every option accepted is
 * listed), epilog. */
void cli_help(const struct cli_cmd *c, FILE *f);

/* Prints "pcie-tune CMD: MESSAGE" and the see-help line; returns CLI_BAD. */
int cli_bad(const struct cli_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The command's rows, flattened (CLI_ROWS expanded) into st->row. */
void cli_rows(const struct cli_cmd *c, struct cli_state *st);

/* How many times the option was given (0: its default holds). */
int cli_given(const struct cli_state *st, const char *name);

/* The rows carrying flag whose scope is 0 or meets scope, as "--name value"
 * pairs from opts' fields (CLI_CUSTOM rows: the arguments given, else the
 * default). With argv, into argv[0..max) (NULL-terminated) with numbers
 * printed into store; with buf, as one space-separated line. Returns the
 * number of argv entries or bytes, or -1 when it does not fit. */
int cli_emit_argv(const struct cli_cmd *c, const void *opts, const struct cli_state *st, unsigned flag,
                  unsigned scope, const char **argv, size_t max, char *store, size_t storelen);
int cli_emit_line(const struct cli_cmd *c, const void *opts, const struct cli_state *st, unsigned flag,
                  unsigned scope, char *buf, size_t len);

/* The rows that may be given with flag (CLI_RESUME): the first given option
 * without it, or NULL. */
const char *cli_given_without(const struct cli_state *st, unsigned flag);

struct pt_error_rec;
/* Prints an error record on stderr, after "CMD: " when cmd is not NULL:
 * the one wording every command uses for the library's errors. */
void cli_print_error(const char *cmd, const struct pt_error_rec *e);

#endif
