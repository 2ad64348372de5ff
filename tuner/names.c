/*
 * Names of collectives, algorithms, protocols, modes and point states, and
 * the error strings. The only place these spellings live.
 */
#include <stddef.h>
#include <strings.h>

#include "nccl/common.h"
#include "pcie/profile.h"

static const char *const coll_names[PT_NCOLL] = {"broadcast", "reduce", "allgather",
                                                 "reducescatter", "allreduce"};
static const char *const algo_names[NCCL_NUM_ALGORITHMS] = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char *const proto_names[NCCL_NUM_PROTOCOLS] = {"ll", "ll128", "simple"};
static const char *const state_names[] = {"ok", "-", "unsupported", "wrong", "crash", "hang"};

static int lookup(const char *const *names, int n, const char *s) {
  if (!s) return -1;
  for (int i = 0; i < n; i++)
    if (!strcasecmp(names[i], s)) return i;
  return -1;
}

const char *pt_coll_name(int c) { return c >= 0 && c < PT_NCOLL ? coll_names[c] : NULL; }
const char *pt_algo_name(int a) { return a >= 0 && a < NCCL_NUM_ALGORITHMS ? algo_names[a] : NULL; }
const char *pt_proto_name(int p) { return p >= 0 && p < NCCL_NUM_PROTOCOLS ? proto_names[p] : NULL; }
const char *pt_mode_name(int m) { return m == PT_MODE_GRAPH ? "graph" : "eager"; }
const char *pt_point_state_name(int s) {
  return s >= 0 && s <= PT_PT_HANG ? state_names[s] : NULL;
}
int pt_coll_parse(const char *s) { return lookup(coll_names, PT_NCOLL, s); }
int pt_algo_parse(const char *s) { return lookup(algo_names, NCCL_NUM_ALGORITHMS, s); }
int pt_proto_parse(const char *s) { return lookup(proto_names, NCCL_NUM_PROTOCOLS, s); }

const char *pt_strerror(int code) {
  switch (code) {
  case PT_OK: return "success";
  case PT_ENOMEM: return "out of memory";
  case PT_EIO: return "input/output error";
  case PT_ESYNTAX: return "syntax error";
  case PT_EINVAL: return "invalid profile";
  case PT_EEXIST: return "file exists";
  case PT_ENOENT: return "not found";
  case PT_EAMBIG: return "ambiguous profile selection";
  default: return "unknown error";
  }
}
