/*
 * The profile model: what a measured profile holds in memory, how it is read
 * from and written to libconfig text (docs/profile-format.md), and the error
 * record every loader fills.
 *
 * A profile is plain data owned by its struct pt_profile; pt_profile_release()
 * frees everything it points to. Nothing here is thread-safe by itself; a
 * loaded profile that is never written again may be read from any thread.
 * Functions return 0 or a negative PT_E* code and never print.
 */
#ifndef PCIE_PROFILE_H
#define PCIE_PROFILE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define PT_PROFILE_VERSION 1

struct pt_box_fp;
#define PT_MAX_CHANNELS 64

enum pt_error {
  PT_OK = 0,
  PT_ENOMEM = -1,
  PT_EIO = -2,      /* the file could not be read or written */
  PT_ESYNTAX = -3,  /* libconfig syntax error */
  PT_EINVAL = -4,   /* the file parsed but violates the format */
  PT_EEXIST = -5,   /* refusing to overwrite without force */
  PT_ENOENT = -6,   /* nothing found */
  PT_EAMBIG = -7,   /* two equally specific profiles */
};
const char *pt_strerror(int code);

/* Where and why loading failed: "file:line: message". */
struct pt_error_rec {
  char file[512];
  int line; /* 0 when no line applies */
  char msg[512];
};
/* Fills *e (file, line, printf-style message) and returns code, so that a
 * report-and-return is one statement. The v form is for wrappers that add
 * their own context. */
int pt_error_set(struct pt_error_rec *e, int code, const char *file, int line, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));
int pt_error_vset(struct pt_error_rec *e, int code, const char *file, int line, const char *fmt,
                  va_list ap) __attribute__((format(printf, 5, 0)));
/* Formats "file:line: msg" (or "file: msg") into buf. */
void pt_error_format(const struct pt_error_rec *e, char *buf, size_t len);

/* Collective indices equal ncclFunc_t values, so the hot path needs no map. */
enum pt_coll {
  PT_BROADCAST = 0,
  PT_REDUCE = 1,
  PT_ALLGATHER = 2,
  PT_REDUCESCATTER = 3,
  PT_ALLREDUCE = 4,
  PT_NCOLL = 5,
};
/* Measurements are kept per launch mode. NCCL passes regBuff=1 during
 * CUDA-graph capture, so graph data serve regBuff=1 and eager data the rest. */
enum pt_mode { PT_MODE_EAGER = 0, PT_MODE_GRAPH = 1, PT_NMODES = 2 };

/* Algorithm and protocol indices are NCCL's (NCCL_ALGO_*, NCCL_PROTO_*). */
const char *pt_coll_name(int coll);   /* "allreduce", ... or NULL */
const char *pt_algo_name(int algo);   /* "ring", "tree", ... or NULL */
const char *pt_proto_name(int proto); /* "ll", "ll128", "simple" or NULL */
const char *pt_mode_name(int mode);   /* "eager", "graph" */
/* Case-insensitive name lookups; -1 when unknown. */
int pt_coll_parse(const char *s);
int pt_algo_parse(const char *s);
int pt_proto_parse(const char *s);

/* The state of one measured point. Only PT_PT_OK carries a latency. */
enum pt_point_state {
  PT_PT_OK = 0,
  PT_PT_MISSING,     /* not measured */
  PT_PT_UNSUPPORTED, /* NCCL had the combination disabled */
  PT_PT_WRONG,       /* wrong result: the candidate is never chosen */
  PT_PT_CRASH,       /* the run crashed: never chosen */
  PT_PT_HANG,        /* the run timed out: never chosen */
};
const char *pt_point_state_name(int state); /* "-", "unsupported", ... */

struct pt_point {
  double lat_us;  /* median latency in us when state == PT_PT_OK */
  double spread;  /* optional relative spread (e.g. IQR/median), 0 if unknown */
  int state;      /* enum pt_point_state */
};

struct pt_candidate {
  int algo, proto, channels; /* channels 1..64 */
  size_t chunk;              /* bytes; 0 = leave NCCL's chunk size */
  struct pt_point *points;   /* one per size of the series */
  int line;                  /* source line, 0 when built in memory */
};

/* One collective's measurements in one launch mode. */
struct pt_series {
  size_t nsizes;
  uint64_t *sizes;            /* bytes, strictly ascending, > 0 */
  struct pt_point *nccl_default; /* NULL, or one per size: NCCL's own choice */
  size_t ncand;
  struct pt_candidate *cand;
  int line;
};

/* A hand rule. Rules are tried in file order; the first whose conditions
 * hold and whose (algo, proto) NCCL has enabled decides. */
struct pt_rule {
  int coll;
  int mode; /* -1 = both modes */
  uint64_t min_bytes, max_bytes; /* inclusive */
  int algo, proto;
  int channels;   /* 0 = keep NCCL's channel count */
  size_t chunk;
  int nranks, nnodes;             /* 0 = any communicator */
  int min_pipe_ops, max_pipe_ops; /* numPipeOps range, inclusive; 0 = unbounded */
  int line;
};

/* One NCCL_* variable in effect when the profile was measured. */
struct pt_env_var {
  char *name, *value;
};

#define PT_DEFAULT_MARGIN 0.02 /* minimum relative gain over NCCL's default */
/* Above this ratio to NCCL's own best entry, a cost-table entry is NCCL
 * steering away (fp8 Ring x1024, enqueue.cc updateCollCostTable). */
#define PT_STEER_AWAY_RATIO 100.0

struct pt_provenance {
  char *tool, *backend, *nccl_version, *date, *mode; /* mode: graph|eager|both */
  char *note;                                        /* free text, optional */
  char *extra;  /* optional: verbatim libconfig group body written as provenance.extra */
  struct pt_box_fp *box; /* provenance.box (include/pcie/hostinfo.h); NULL when absent */
  /* The measurement's buffers (docs/gpu.md, "Buffers"): "cudaMalloc" or
   * "ncclMemAlloc"; NULL = not recorded. */
  char *buffers;
  int has_graph_register; /* graph_register below is recorded */
  int graph_register;     /* NCCL_GRAPH_REGISTER's effective value when measured */
};

struct pt_profile {
  int version;
  char *name;
  int match_nranks; /* 0 = any */
  int match_nnodes; /* 0 = any */
  struct pt_provenance prov;
  struct pt_series *series[PT_NCOLL][PT_NMODES]; /* NULL when absent */
  size_t nrules;
  struct pt_rule *rules;
  /* communicator.channels: comm->nChannels when measured; 0 = unknown. */
  int comm_channels;
  /* nccl_env: the NCCL_* variables set when measured. env_recorded = 0 when
   * the profile does not say (then nenv is 0 too). */
  int env_recorded;
  size_t nenv;
  struct pt_env_var *env;
  double margin;     /* 0 = PT_DEFAULT_MARGIN */
  char *sweep_state; /* provenance.extra.sweep.state; NULL when not a sweep */
  int ll128_screen;  /* enum pt_ll128_screen: provenance.extra.ll128_screen.result */
  char *path;       /* where it was loaded from, or NULL */
  uint64_t hash;    /* FNV-1a 64 of the file's bytes; 0 when built in memory */
};

/* Loads and strictly validates path. On failure fills *err and leaves *p
 * released. *p must be zeroed or released before the call. */
int pt_profile_load(struct pt_profile *p, const char *path, struct pt_error_rec *err);
/* The same from a memory buffer; name is used in error records. */
int pt_profile_load_string(struct pt_profile *p, const char *text, const char *name,
                           struct pt_error_rec *err);
/* Validates a profile built in memory (writers call this before writing). */
int pt_profile_validate(const struct pt_profile *p, struct pt_error_rec *err);
void pt_profile_release(struct pt_profile *p);

enum pt_write_flags { PT_WRITE_FORCE = 1 << 0 };
/* Validates p, then writes it atomically (temp file in the same directory,
 * fsync, rename). Without PT_WRITE_FORCE an existing path is PT_EEXIST. */
int pt_profile_write(const struct pt_profile *p, const char *path, unsigned flags,
                     struct pt_error_rec *err);
/* Sets the top-level setting name of provenance.extra to setting (its
 * libconfig text, "name = ...;\n"), replacing one of that name already
 * there. Returns 0, PT_ENOMEM, or PT_EINVAL when the extra text held does
 * not parse (p unchanged on error). */
int pt_profile_extra_put(struct pt_profile *p, const char *name, const char *setting);
/* Renders p as libconfig text into a malloc'ed string (caller frees). */
int pt_profile_render(const struct pt_profile *p, char **out);

/* Builders for writers (importer, sweep engine). All copy their inputs. */
struct pt_series *pt_series_new(const uint64_t *sizes, size_t nsizes);
/* Appends a candidate with every point PT_PT_MISSING; returns it or NULL. */
struct pt_candidate *pt_series_add_candidate(struct pt_series *s, int algo, int proto,
                                             int channels, size_t chunk);
/* Adds an all-missing nccl_default array if absent; returns it or NULL. */
struct pt_point *pt_series_default(struct pt_series *s);
void pt_series_free(struct pt_series *s);
char *pt_strdup(const char *s); /* NULL-safe */

uint64_t pt_hash_bytes(const void *data, size_t len);

/* The margin in effect (the profile's, or PT_DEFAULT_MARGIN). */
double pt_profile_margin(const struct pt_profile *p);
/* 1 when the profile is a sweep that did not finish: sweep.state is not
 * "complete", or NCCL's default is missing at a measured size (a complete
 * sweep measures it everywhere). msg gets how much is measured. */
int pt_profile_partial(const struct pt_profile *p, char *msg, size_t len);

/* What a profile says about LL128's correctness on its box (the screen
 * `pcie-tune profile` runs before measuring LL128, measure/screen.h). */
enum pt_ll128_screen {
  PT_LL128_UNSCREENED = 0, /* no screen recorded, or it did not run */
  PT_LL128_SCREENED = 1,   /* result "pass" */
  PT_LL128_UNUSABLE = 2,   /* result "fail": torn lines, a crash or a hang */
};
/* 1 when the plugin may choose LL128 from p: only with a passing screen
 * recorded, whatever made the profile (a sweep, an import of nccl-tests
 * logs run with NCCL_PROTO including LL128, hand rules). LL128 on PCIe
 * can return wrong results where a 128-byte line tears, and a measured
 * time says nothing about correctness: without a screen the plugin leaves
 * those choices to NCCL (`pcie-tune screen` records one). */
int pt_profile_ll128_usable(const struct pt_profile *p);
/* How many LL128 choices p holds: LL128 candidates with a measured time
 * and LL128 rules. Without pt_profile_ll128_usable, the plugin leaves each
 * of them to NCCL. */
size_t pt_profile_ll128_choices(const struct pt_profile *p);
/* 1 when series s has candidates but NCCL's default measured at no size
 * (no nccl_default, or one without a measured time): a candidate is chosen
 * only where the default was measured too (tuner/table.c), so the plugin
 * leaves every size of it to NCCL. */
int pt_series_lacks_default(const struct pt_series *s);
/* 1 when some series of p lacks its default (above). */
int pt_profile_lacks_default(const struct pt_profile *p);
/* 1 when the profile holds measurements (any series), not only rules: it
 * then needs provenance.box to be used (docs/decisions.md). */
int pt_profile_measured(const struct pt_profile *p);
/* The recorded value of NCCL variable name, or NULL (unset or unknown). */
const char *pt_profile_env(const struct pt_profile *p, const char *name);

#endif
