/*
 * The NCCL version of the process the plugin runs in (tuner/ncclver.c),
 * read once at communicator init.
 */
#ifndef PCIE_NCCLVER_H
#define PCIE_NCCLVER_H

struct pt_nccl_ver {
  int code;                /* NCCL_VERSION_CODE from ncclGetVersion, 0 = not found */
  int major, minor, patch; /* when code != 0 */
  int minor_lo, minor_hi;  /* the 2.x minors it can be (one when known; 99 = open) */
  char how[96];            /* "2.30.7", or "unknown, tuner ABI v6 implies NCCL 2.30-2.31" */
};

/* Finds ncclGetVersion in the library that holds nccl_fn (the logger NCCL
 * passed to init) and calls it. Returns 1 when found; 0 when not, with the
 * range the tuner ABI version abi implies (NCCL loads the newest it knows). */
int pt_nccl_version(const void *nccl_fn, int abi, struct pt_nccl_ver *out);
/* The minor versions of NCCL 2.x that load tuner ABI abi first. */
void pt_nccl_version_range(int abi, int *lo, int *hi);
/* The newest tuner ABI NCCL 2.minor tries first (the same table, read the
 * other way; doctor asks it); 0 for a release without a tuner interface. */
int pt_nccl_tuner_abi(int minor);
/* "2.30.7", "2.30 (sim, derived view)": the major and minor; -1 when the
 * string does not start with them. */
int pt_nccl_version_parse(const char *s, int *major, int *minor);

#endif
