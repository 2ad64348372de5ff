/*
 * Whether a profile was measured where it now runs (docs/decisions.md, "At
 * communicator init", and "Why the same answer on every rank"). Compares
 * provenance.box with the host's GPUs from sysfs and the profile's NCCL
 * minor version with the process's, at init only.
 *
 * Every input that can make the plugin passive is the same on every rank
 * of the communicator: the profile's bytes, nNodes, the NCCL library, and,
 * on a single node, the host itself. On several nodes the hosts may differ,
 * so there the host only ever warns.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pcie/core.h"
#include "pcie/hostinfo.h"
#include "pcie/ncclver.h"

static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 3 >= len) return;
  if (n) {
    snprintf(buf + n, len - n, "; ");
    n += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

/* The host's GPUs, read from sysfs once per process: a process's GPUs do
 * not change under it, and with 10^4 other PCI functions one reading took
 * 60-100 ms of every communicator's init. Read again only when the sysfs
 * root (PCIE_TUNER_SYSFS_ROOT, a test hook) names another tree. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int valid, rc;
  char root[PATH_MAX + 1], err[256];
  struct pt_box_fp fp;
} host_cache;

static int host_read_once(struct pt_box_fp *out, char *err, size_t len) {
  const char *root = getenv("PCIE_TUNER_SYSFS_ROOT");
  int rc;
  if (!root) root = "";
  pthread_mutex_lock(&host_lock);
  if (!host_cache.valid || strncmp(host_cache.root, root, sizeof host_cache.root)) {
    host_cache.rc = pt_host_read(root, &host_cache.fp, host_cache.err, sizeof host_cache.err);
    snprintf(host_cache.root, sizeof host_cache.root, "%s", root);
    /* A root too long to keep is read afresh every time (and refused). */
    host_cache.valid = strlen(root) < sizeof host_cache.root;
  }
  rc = host_cache.rc;
  *out = host_cache.fp;
  snprintf(err, len, "%s", host_cache.err);
  pthread_mutex_unlock(&host_lock);
  return rc;
}

/* The box: what differs goes to must (single node) or warn (several). */
static void check_box(const struct pt_profile *p, size_t nnodes, char *must, char *warn,
                      size_t len) {
  char diff[800], err[256];
  char *sev = nnodes > 1 ? warn : must;
  struct pt_box_fp *host = malloc(sizeof *host);
  if (!host) {
    add(sev, len, "out of memory reading the host's GPUs");
    return;
  }
  if (host_read_once(host, err, sizeof err)) {
    add(sev, len, "cannot read this host's GPUs (%s)", err);
  } else {
    int d = pt_fp_compare(p->prov.box, host, diff, sizeof diff);
    if (d & PT_FP_DIFF_BOX) add(sev, len, "measured on another box: %s", diff);
    else if (d & PT_FP_DIFF_DRIVER) add(warn, len, "%s", diff);
  }
  free(host);
}

static void check_nccl(const struct pt_profile *p, const struct pt_nccl_ver *v, char *must,
                       size_t len) {
  int major, minor;
  if (pt_nccl_version_parse(p->prov.nccl_version, &major, &minor)) {
    add(must, len, "provenance.nccl_version '%s' is no NCCL version, so nothing shows which "
                   "NCCL it was measured with",
        p->prov.nccl_version);
    return;
  }
  if (v->code && (v->major != major || v->minor != minor))
    add(must, len, "measured with NCCL %d.%d, this process runs NCCL %s", major, minor, v->how);
  else if (!v->code && (major != 2 || minor < v->minor_lo || minor > v->minor_hi))
    add(must, len, "measured with NCCL %d.%d, this process's NCCL is %s", major, minor, v->how);
}

int pt_prov_check(const struct pt_profile *p, size_t nnodes, const void *nccl_fn, int abi,
                  int accept_foreign, char *must, char *warn, size_t len, char *note,
                  size_t note_len) {
  struct pt_nccl_ver v;
  must[0] = warn[0] = 0;
  pt_nccl_version(nccl_fn, abi, &v);
  snprintf(note, note_len, "NCCL %s", v.how);
  if (pt_profile_measured(p)) {
    if (nnodes > 1 && p->match_nnodes < 2)
      add(must, len, "measured on a single node (match.nnodes is %d), this communicator spans "
                     "%zu nodes",
          p->match_nnodes, nnodes);
    if (!p->prov.box)
      add(nnodes > 1 ? warn : must, len,
          "records no provenance.box, so nothing shows it was measured on this box");
    else
      check_box(p, nnodes, must, warn, len);
    check_nccl(p, &v, must, len);
  }
  /* A box from logs holds some fields only: the init line says which were
   * compared and which were not recorded (issue 26 §2). */
  if (pt_profile_measured(p) && p->prov.box && (!p->prov.box->host_gpus || !p->prov.box->gpu[0].npath)) {
    char fields[600];
    size_t n = strlen(note);
    pt_fp_fields(p->prov.box, fields, sizeof fields);
    snprintf(note + n, note_len - n, ", %s", fields);
  }
  if ((must[0] || warn[0]) && accept_foreign) {
    /* Accepted on purpose: the init line says so and why, no WARN. */
    size_t n = strlen(note);
    snprintf(note + n, note_len - n, ", foreign profile accepted (PCIE_TUNER_ACCEPT_FOREIGN=1): %s%s%s",
             must, must[0] && warn[0] ? "; " : "", warn);
    must[0] = warn[0] = 0;
  }
  return must[0] != 0;
}
