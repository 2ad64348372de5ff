/*
 * The simulated NCCL host (include/pcie/host.h): plugin loading, per-version
 * init and getCollInfo calls, NCCL's selection, and the recorded log. It
 * mirrors NCCL's src/plugin/tuner.cc, tuner_v2..v7 wrappers and
 * enqueue.cc's topoGetAlgoInfo, so tests exercise the binary as NCCL would.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/host.h"
#include "pcie/ncclver.h"
#include "pcie/sim_box.h"
#include "pcie/nccl_model.h"
#include "pcie/sim_fp.h"

#define LOG_CAP 4096

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ph_log_entry log_entries[LOG_CAP];
static size_t log_n;
static int log_echo;

void ph_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
               const char *fmt, ...) {
  struct ph_log_entry e = {.level = (int)level, .flags = flags};
  va_list ap;
  (void)file;
  (void)line;
  va_start(ap, fmt);
  vsnprintf(e.msg, sizeof e.msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_lock);
  if (log_n < LOG_CAP) log_entries[log_n++] = e;
  if (log_echo) fprintf(stderr, "[nccl %d] %s\n", e.level, e.msg);
  pthread_mutex_unlock(&log_lock);
}

void ph_log_clear(void) {
  pthread_mutex_lock(&log_lock);
  log_n = 0;
  pthread_mutex_unlock(&log_lock);
}

size_t ph_log_count(void) {
  pthread_mutex_lock(&log_lock);
  size_t n = log_n;
  pthread_mutex_unlock(&log_lock);
  return n;
}

int ph_log_get(size_t i, struct ph_log_entry *out) {
  int rc = -1;
  pthread_mutex_lock(&log_lock);
  if (i < log_n) {
    *out = log_entries[i];
    rc = 0;
  }
  pthread_mutex_unlock(&log_lock);
  return rc;
}

size_t ph_log_find(int level, const char *needle) {
  size_t hits = 0;
  pthread_mutex_lock(&log_lock);
  for (size_t i = 0; i < log_n; i++)
    if (log_entries[i].level == level && (!needle || strstr(log_entries[i].msg, needle))) hits++;
  pthread_mutex_unlock(&log_lock);
  return hits;
}

void ph_log_echo(int on) { log_echo = on; }

int ph_plugin_open(struct ph_plugin *pl, const char *so_path, int version, char *err,
                   size_t errlen) {
  memset(pl, 0, sizeof *pl);
  pl->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!pl->dl) {
    snprintf(err, errlen, "dlopen %s: %s", so_path, dlerror());
    return -1;
  }
  /* NCCL probes the newest version it knows first, down to v2
   * (src/plugin/tuner.cc): the simulated host is the release the boxes
   * model, and which ABI that release tries first is the plugin's own table
   * (tuner/ncclver.c). Asked for v7 by name, it is NCCL 2.32. */
  int major = 0, minor = 0, newest = 0;
  if (!pt_nccl_version_parse(PT_SIM_NCCL, &major, &minor)) newest = pt_nccl_tuner_abi(minor);
  for (int v = version ? version : newest; v >= (version ? version : 2); v--) {
    char name[32];
    snprintf(name, sizeof name, "ncclTunerPlugin_v%d", v);
    pl->sym = dlsym(pl->dl, name);
    if (pl->sym) {
      pl->version = v;
      return 0;
    }
  }
  snprintf(err, errlen, "%s exports no usable ncclTunerPlugin symbol", so_path);
  dlclose(pl->dl);
  pl->dl = NULL;
  return -1;
}

void ph_plugin_close(struct ph_plugin *pl) {
  if (pl->dl) dlclose(pl->dl);
  memset(pl, 0, sizeof *pl);
}

int ph_comm_init(struct ph_comm *c, const struct ph_plugin *pl, size_t nranks, size_t nnodes,
                 uint64_t comm_id) {
  return ph_comm_init_log(c, pl, nranks, nnodes, comm_id, ph_logger);
}

int ph_comm_init_log(struct ph_comm *c, const struct ph_plugin *pl, size_t nranks, size_t nnodes,
                     uint64_t comm_id, ncclDebugLogger_t logger) {
  memset(c, 0, sizeof *c);
  c->pl = pl;
  c->nranks = nranks;
  c->nnodes = nnodes;
  /* What NCCL fills in even without NVLink (init.cc). */
  c->nvl = (ncclNvlDomainInfo_v5_t){(int)nnodes, (int)(nranks / nnodes), (int)(nranks / nnodes)};
  switch (pl->version) {
  case 2: return ((const ncclTuner_v2_t *)pl->sym)->init(nranks, nnodes, logger, &c->ctx);
  case 3: return ((const ncclTuner_v3_t *)pl->sym)->init(nranks, nnodes, logger, &c->ctx);
  case 4: return ((const ncclTuner_v4_t *)pl->sym)->init(nranks, nnodes, logger, &c->ctx);
  case 5:
    return ((const ncclTuner_v5_t *)pl->sym)
        ->init(&c->ctx, comm_id, nranks, nnodes, logger, &c->nvl, &c->constants);
  case 6:
    return ((const ncclTuner_v6_t *)pl->sym)
        ->init(&c->ctx, comm_id, nranks, nnodes, logger, &c->nvl, &c->constants);
  default:
    return ((const ncclTuner_v7_t *)pl->sym)
        ->init(&c->ctx, comm_id, nranks, nnodes, logger, &c->nvl, &c->constants7);
  }
}

int ph_comm_finalize(struct ph_comm *c) {
  int rc;
  switch (c->pl->version) {
  case 2: rc = ((const ncclTuner_v2_t *)c->pl->sym)->destroy(c->ctx); break;
  case 3: rc = ((const ncclTuner_v3_t *)c->pl->sym)->destroy(c->ctx); break;
  case 4: rc = ((const ncclTuner_v4_t *)c->pl->sym)->destroy(c->ctx); break;
  case 5: rc = ((const ncclTuner_v5_t *)c->pl->sym)->finalize(c->ctx); break;
  default: rc = ((const ncclTuner_v6_t *)c->pl->sym)->finalize(c->ctx); break;
  }
  c->ctx = NULL;
  return rc;
}

/* NCCL's v2 wrapper (tuner_v2.cc): derives the support flags from the table,
 * then writes 0 into the answer's entry unless that entry is -1. */
static int decide_v2(struct ph_comm *c, int coll, size_t nbytes, float table[7][3], int *nch) {
  int algo = -1, proto = -1;
  int collnet = table[NCCL_ALGO_COLLNET_DIRECT][NCCL_PROTO_SIMPLE] != -1.0f ||
                table[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] != -1.0f;
  int nvls = table[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != -1.0f ||
             table[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] != -1.0f;
  int rc = ((const ncclTuner_v2_t *)c->pl->sym)
               ->getCollInfo(c->ctx, (ncclFunc_t)coll, nbytes, collnet, nvls, 1, &algo, &proto, nch);
  if (algo >= 0 && algo < 7 && proto >= 0 && proto < 3 && table[algo][proto] != -1.0f)
    table[algo][proto] = 0.0f;
  return rc;
}

void ph_decide(struct ph_comm *c, int coll, size_t nbytes, int reg_buff, float table[7][3],
               struct ph_choice *out) {
  int nch = 0; /* NCCL presets 0 = keep its own */
  float **t = (float **)table;
  switch (c->pl->version) {
  case 2: out->rc = decide_v2(c, coll, nbytes, table, &nch); break;
  case 3:
    out->rc = ((const ncclTuner_v3_t *)c->pl->sym)
                  ->getCollInfo(c->ctx, (ncclFunc_t)coll, nbytes, 1, t, 7, 3, &nch);
    break;
  case 4:
    out->rc = ((const ncclTuner_v4_t *)c->pl->sym)
                  ->getCollInfo(c->ctx, (ncclFunc_t)coll, nbytes, 1, t, 7, 3, reg_buff, &nch);
    break;
  case 5:
    out->rc = ((const ncclTuner_v5_t *)c->pl->sym)
                  ->getCollInfo(c->ctx, (ncclFunc_t)coll, nbytes, 1, t, 7, 3, reg_buff, &nch);
    break;
  default:
    out->rc = ((const ncclTuner_v6_t *)c->pl->sym)
                  ->getCollInfo(c->ctx, (ncclFunc_t)coll, nbytes, 1, t, 7, 3, reg_buff, &nch);
    break;
  }
  out->nchannels = nch;
  out->cost = -1.0f;
  if (pt_nccl_select(table, &out->algo, &out->proto) == 0) out->cost = table[out->algo][out->proto];
}

int ph_chunk_size(struct ph_comm *c, int coll, size_t nbytes, int algo, int proto, size_t *chunk) {
  if (c->pl->version < 6) return 0;
  const ncclTuner_v6_t *t = c->pl->sym;
  if (!t->getChunkSize) return 0;
  /* Ring/Tree chunking is per channel partition, with nChannels = 1. */
  return t->getChunkSize(c->ctx, (ncclFunc_t)coll, nbytes, algo, proto, 1, chunk);
}

int ph_box_present(const struct pt_box *b, char *root, size_t len, char *err, size_t errlen) {
  struct pt_box_fp *fp = malloc(sizeof *fp);
  const char *tmp = getenv("TMPDIR");
  int rc = -1;
  if (!fp) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  snprintf(root, len, "%s/pcie-sim-sysfs-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (pt_box_fingerprint(b, fp)) {
    snprintf(err, errlen, "box %s has more GPUs or PCIe levels than a fingerprint holds", b->name);
  } else if (!mkdtemp(root)) {
    snprintf(err, errlen, "cannot create %s", root);
  } else if (pt_sysfs_write(fp, root, err, errlen)) {
    pt_sysfs_remove(root);
  } else {
    setenv("PCIE_TUNER_SYSFS_ROOT", root, 1);
    rc = 0;
  }
  free(fp);
  return rc;
}

void ph_box_withdraw(const char *root) {
  unsetenv("PCIE_TUNER_SYSFS_ROOT");
  if (root && root[0]) pt_sysfs_remove(root);
}
