/*
 * A simulated NCCL host: loads a tuner plugin the way NCCL does (dlopen with
 * RTLD_NOW|RTLD_LOCAL, newest symbol first), initialises communicators as
 * each ABI version expects, hands getCollInfo a cost table and selects from
 * it exactly as NCCL's topoGetAlgoInfo does. Used by the tests, the benches
 * and `pcie-tune simulate`, so they all drive the real plugin binary.
 *
 * Messages the plugin logs are recorded process-wide (NCCL's logger has no
 * user pointer); the record is mutex-protected.
 */
#ifndef PCIE_HOST_H
#define PCIE_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/tuner_v2.h"
#include "nccl/tuner_v3.h"
#include "nccl/tuner_v4.h"
#include "nccl/tuner_v6.h"
#include "nccl/tuner_v7.h"

struct ph_plugin {
  void *dl;
  int version; /* 2..6 */
  const void *sym; /* the ncclTunerPlugin_vN struct */
};

/* Opens so_path and resolves ncclTunerPlugin_v<version>, or, when version
 * is 0, the newest the simulated release (PT_SIM_NCCL) tries first, down
 * to v2. Returns 0, or -1 with a message in err. */
int ph_plugin_open(struct ph_plugin *pl, const char *so_path, int version, char *err, size_t errlen);
void ph_plugin_close(struct ph_plugin *pl);

struct ph_comm {
  const struct ph_plugin *pl;
  void *ctx;
  size_t nranks, nnodes;
  ncclTunerConstants_v5_t constants; /* what v5/v6 init received */
  ncclTunerConstants_v7_t constants7; /* what v7 init received (NCCL 2.32's larger tables) */
  ncclNvlDomainInfo_v5_t nvl;
};

/* Calls the plugin's init as NCCL would for its version. Returns the
 * plugin's ncclResult_t. */
int ph_comm_init(struct ph_comm *c, const struct ph_plugin *pl, size_t nranks, size_t nnodes,
                 uint64_t comm_id);
/* The same with the logger NCCL would pass (its own ncclDebugLog, which the
 * plugin uses to find NCCL's library); ph_comm_init passes ph_logger. */
int ph_comm_init_log(struct ph_comm *c, const struct ph_plugin *pl, size_t nranks, size_t nnodes,
                     uint64_t comm_id, ncclDebugLogger_t logger);
int ph_comm_finalize(struct ph_comm *c);

/* Presents a simulated box's GPUs to the plugin's host check: writes its
 * sysfs tree (include/pcie/sim_fp.h) under a fresh directory below $TMPDIR
 * and points PCIE_TUNER_SYSFS_ROOT there, so the plugin reads that box as
 * the host it runs on. Returns 0 with the directory in root (for
 * ph_box_withdraw), or -1 with a message in err. */
struct pt_box;
int ph_box_present(const struct pt_box *b, char *root, size_t len, char *err, size_t errlen);
/* Removes the tree and restores PCIE_TUNER_SYSFS_ROOT's absence. */
void ph_box_withdraw(const char *root);

struct ph_choice {
  int algo, proto; /* -1 when nothing is usable */
  int nchannels;   /* the plugin's override, 0 = NCCL's own */
  float cost;      /* the selected entry after the plugin's edits */
  int rc;          /* what getCollInfo returned */
};

/* Runs one decision: table (float[7][3], NCCL's costs, edited in place) goes
 * to getCollInfo; the v2 path emulates NCCL's v2 wrapper. */
void ph_decide(struct ph_comm *c, int coll, size_t nbytes, int reg_buff, float table[7][3],
               struct ph_choice *out);

/* Calls v6 getChunkSize when the plugin has one; returns its result and
 * leaves *chunk alone otherwise. */
int ph_chunk_size(struct ph_comm *c, int coll, size_t nbytes, int algo, int proto, size_t *chunk);

/* The recorded log. */
struct ph_log_entry {
  int level;
  unsigned long flags;
  char msg[1024];
};
void ph_log_clear(void);
size_t ph_log_count(void);
/* Copies entry i; returns 0, or -1 when i is out of range. */
int ph_log_get(size_t i, struct ph_log_entry *out);
/* Number of recorded messages at level containing needle (NULL = any). */
size_t ph_log_find(int level, const char *needle);
/* When set, recorded messages are also printed to stderr. */
void ph_log_echo(int on);
/* The logger passed to the plugin. */
void ph_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
