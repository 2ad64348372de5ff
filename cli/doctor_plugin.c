/*
 * What the plugin did, from NCCL's plugin lines and the plugin's own: per
 * process whether NCCL loaded it (with which tuner ABI, or why not), per
 * communicator the profile or refusal of every rank, and the traced
 * decisions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "pcie/ncclver.h"

/* The newest tuner ABI an NCCL release tries first: the plugin's own
 * table (tuner/ncclver.c); 0 when unknown. */
static int newest_abi(const char *version) {
  int maj = 0, min = 0;
  if (pt_nccl_version_parse(version, &maj, &min) || maj != 2) return 0;
  return pt_nccl_tuner_abi(min);
}

static int proc_abi(const struct dr_proc *p) {
  if (p->abi) return p->abi;
  if (!p->name[0]) return 0;
  /* NCCL <= 2.27 names no version; it tries the newest first and says which
   * symbols were missing. */
  if (p->nosym_min) return p->nosym_min - 1;
  return newest_abi(p->version);
}

int dr_loaded_ours(const struct dr_proc *p) {
  return p->ours || !strcmp(p->name, PT_NAME) || strstr(p->loaded, "libnccl-tuner-pcie");
}

/* Why a process did not load this plugin, from what NCCL said. */
static void why_not_loaded(const struct dr_proc *p) {
  if (p->unsupported[0])
    printf("  %s:%ld: NCCL opened %s but found no tuner ABI it supports (wrong ABI: this NCCL "
           "tries up to v%d; see README, Compatibility)\n",
           p->host, p->pid, p->unsupported, newest_abi(p->version));
  else if (p->name[0] && strcmp(p->name, PT_NAME))
    printf("  %s:%ld: NCCL loaded another tuner plugin, '%s'\n", p->host, p->pid, p->name);
  else if (p->openerr[0])
    printf("  %s:%ld: the library failed to load: %s\n", p->host, p->pid, p->openerr);
  else if (p->notfound[0] && strchr(p->notfound, '/'))
    /* NCCL says "Could not find" only for ENOENT: dlerror naming the file
     * itself with "No such file or directory" (src/plugin/plugin_open.cc,
     * tryOpenLib, 2.26-dev; src/misc/tuner.cc, 2.24-2.25; errno in 2.21-2.23).
     * A missing dependency names the dependency and is reported as the
     * loader's message instead, so the path itself is absent. */
    printf("  %s:%ld: %s does not exist as this process sees the filesystem (NCCL's dlopen "
           "said 'No such file or directory'): is the job in a container without that mount, "
           "or on another host than the file? Install or mount the library there, or point "
           "NCCL_TUNER_PLUGIN at where it is inside the job\n",
           p->host, p->pid, p->notfound);
  else if (p->notfound[0])
    printf("  %s:%ld: not found: NCCL tried %s (wrong name, or not in the loader's path: give "
           "NCCL_TUNER_PLUGIN the absolute path of libnccl-tuner-pcie.so)\n",
           p->host, p->pid, p->notfound);
  else if (p->nosym_min)
    printf("  %s:%ld: the library exports no tuner ABI this NCCL knows (wrong ABI)\n", p->host,
           p->pid);
  else if (!p->tuner_env[0])
    printf("  %s:%ld: NCCL_TUNER_PLUGIN is not set in this process (NCCL_DEBUG_SUBSYS must "
           "include ENV to show it; with Ray, set it in the workers' runtime_env)\n",
           p->host, p->pid);
  else
    printf("  %s:%ld: NCCL_TUNER_PLUGIN=%s but NCCL said nothing more about the tuner (add TUNING "
           "to NCCL_DEBUG_SUBSYS)\n",
           p->host, p->pid, p->tuner_env);
}

static int same_lib(const struct dr_proc *a, const struct dr_proc *b) {
  return dr_loaded_ours(a) && dr_loaded_ours(b) && !strcmp(a->loaded, b->loaded) &&
         proc_abi(a) == proc_abi(b);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether process i belongs to job (-1: any). */
static int in_job(const struct dr_doctor *d, size_t i, int job) {
  return job < 0 || d->procs[i].job == job;
}

size_t dr_plugin_header(const struct dr_doctor *d, int job, size_t *nproc, int quiet) {
  const char *version = d->bare_version;
  size_t loaded = 0, hosts = 0, np = 0;
  for (size_t i = 0; i < d->nproc; i++) {
    if (!in_job(d, i, job)) continue;
    np++;
    if (d->procs[i].version[0]) version = d->procs[i].version;
    loaded += dr_loaded_ours(&d->procs[i]) != 0;
  }
  *nproc = np;
  if (quiet) return loaded;
  /* Distinct host names, sorted: a job may span hundreds of hosts. */
  const char **names = malloc((d->nproc + 1) * sizeof *names);
  if (names) {
    size_t n = 0;
    for (size_t i = 0; i < d->nproc; i++)
      if (in_job(d, i, job)) names[n++] = d->procs[i].host;
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) hosts += !i || strcmp(names[i], names[i - 1]);
    free(names);
  }
  printf("NCCL %s, %zu process%s on %zu host%s\n", version[0] ? version : "version not in the log",
         np, np == 1 ? "" : "es", hosts, hosts == 1 ? "" : "s");
  for (size_t i = 0; i < d->nproc; i++) {
    const struct dr_proc *p = &d->procs[i];
    if (in_job(d, i, job) && p->version[0] && strcmp(p->version, version))
      printf("  %s:%ld runs NCCL %s: the ranks mix NCCL versions\n", p->host, p->pid, p->version);
  }
  /* The loaded library and ABI, once per distinct pair (few distinct). */
  struct {
    size_t first, count;
  } kinds[16];
  size_t nk = 0;
  for (size_t i = 0; i < d->nproc; i++) {
    const struct dr_proc *p = &d->procs[i];
    if (!in_job(d, i, job) || !dr_loaded_ours(p)) continue;
    size_t k = 0;
    while (k < nk && !same_lib(&d->procs[kinds[k].first], p)) k++;
    if (k == nk && nk < 16) kinds[nk++].first = i, kinds[k].count = 0;
    if (k < nk) kinds[k].count++;
  }
  for (size_t k = 0; k < nk; k++) {
    const struct dr_proc *p = &d->procs[kinds[k].first];
    char abi[32], where[600];
    if (proc_abi(p)) snprintf(abi, sizeof abi, "v%d", proc_abi(p));
    else snprintf(abi, sizeof abi, "version not in the log");
    /* NCCL <= 2.27 prints no path; the variable it was given is next best. */
    if (p->loaded[0]) SET(where, p->loaded);
    else if (p->tuner_env[0]) snprintf(where, sizeof where, "NCCL_TUNER_PLUGIN=%.500s", p->tuner_env);
    else SET(where, "path not in the log");
    printf("tuner plugin loaded: %s (%s, ABI %s) in %zu of %zu processes\n", where,
           p->name[0] ? p->name : PT_NAME, abi, kinds[k].count, np);
  }
  if (loaded < np) {
    printf("tuner plugin NOT loaded in %zu of %zu processes:\n", np - loaded, np);
    size_t shown = 0;
    for (size_t i = 0; i < d->nproc; i++)
      if (in_job(d, i, job) && !dr_loaded_ours(&d->procs[i]) && shown++ < 16) why_not_loaded(&d->procs[i]);
    if (shown > 16) printf("  ... and %zu more\n", shown - 16);
  }
  return loaded;
}

static int same_outcome(const struct dr_doctor *d, const struct dr_member *a, const struct dr_member *b) {
  if (a->out.state != b->out.state) return 0;
  if (a->out.state == DR_PROFILE) return !strcmp(a->out.hash, b->out.hash);
  if (a->out.state == DR_REFUSED) return !strcmp(a->out.reason, b->out.reason);
  return dr_loaded_ours(&d->procs[a->proc]) == dr_loaded_ours(&d->procs[b->proc]);
}

static void describe(const struct dr_doctor *d, const struct dr_member *m, char *buf, size_t len) {
  const struct dr_outcome *o = &m->out;
  if (o->state == DR_PROFILE)
    snprintf(buf, len, "profile '%s' hash %s (%s, %d intervals)", o->name, o->hash, o->path,
             o->intervals);
  else if (o->state == DR_REFUSED)
    snprintf(buf, len, "left to NCCL, %s%s: %s", o->cls, o->warn ? " (WARN)" : "", o->reason);
  else if (dr_loaded_ours(&d->procs[m->proc]))
    snprintf(buf, len, "no word from the plugin (NCCL_DEBUG_SUBSYS without INIT or TUNING?)");
  else
    snprintf(buf, len, "plugin not loaded in this process");
}

/* "0-3,5,7" into buf from sorted ranks (-1 unknown); a rank seen twice (the
 * same file given twice) is one rank. Compacts r in place. */
static void ranks_text(char *buf, size_t len, int *r, size_t n) {
  size_t used = 0, u = 0, unknown = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i] < 0) unknown++;
    else if (!u || r[i] != r[u - 1]) r[u++] = r[i];
  buf[0] = 0;
  /* NCCL's comm lines name the rank; the plugin's alone do not. */
  if (unknown)
    used = (size_t)snprintf(buf, len, "? (%zu without NCCL's comm lines: NCCL_DEBUG_SUBSYS needs INIT)",
                            unknown);
  for (size_t i = 0; i < u && used + 1 < len;) {
    size_t j = i;
    while (j + 1 < u && r[j + 1] == r[j] + 1) j++;
    if (j > i)
      used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", r[i], r[j]);
    else
      used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", r[i]);
    if (used >= len) break; /* truncated; snprintf kept it terminated */
    i = j + 1;
  }
}

#define DR_NOUTCOME 32

int dr_plugin_comm(const struct dr_doctor *d, const struct dr_comms *c, size_t k, int quiet, int *tuned) {
  size_t from = c->start[k], to = c->start[k + 1], rep[DR_NOUTCOME], nrep = 0, cnt[DR_NOUTCOME];
  const struct dr_member *first = &d->mem[c->order[from]];
  int seen = dr_ranks_seen(d, c, k), all_profile = 1;
  int *ranks = malloc((to - from) * sizeof *ranks);
  if (!ranks) return -1;
  /* Distinct outcomes (a handful); members are sorted by rank. */
  for (size_t i = from; i < to; i++) {
    const struct dr_member *m = &d->mem[c->order[i]];
    size_t r = 0;
    while (r < nrep && !same_outcome(d, &d->mem[c->order[rep[r]]], m)) r++;
    if (r == nrep && nrep < DR_NOUTCOME) rep[nrep] = i, cnt[nrep++] = 0;
    if (r < nrep) cnt[r]++;
    all_profile &= m->out.state == DR_PROFILE;
  }
  if (!quiet) {
    printf("\ncommunicator %s: nRanks %d nNodes %d, %d rank%s in the log\n",
           first->commid[0] ? first->commid : "(no commId in the log)", first->nranks,
           first->nnodes, seen, seen == 1 ? "" : "s");
    for (size_t r = 0; r < nrep; r++) {
      size_t n = 0;
      for (size_t i = from; i < to; i++)
        if (same_outcome(d, &d->mem[c->order[rep[r]]], &d->mem[c->order[i]]))
          ranks[n++] = d->mem[c->order[i]].rank;
      char rt[256], what[1200];
      ranks_text(rt, sizeof rt, ranks, n);
      describe(d, &d->mem[c->order[rep[r]]], what, sizeof what);
      printf("  rank%s %s: %s\n", strpbrk(rt, ",-?") ? "s" : "", rt, what);
    }
    if (first->nranks > 0 && seen < first->nranks)
      printf("  (only %d of %d ranks in these logs: pass every rank's file)\n", seen, first->nranks);
  }
  if (nrep > 1) {
    /* Name the ranks that differ from the most common outcome. */
    size_t major = 0;
    for (size_t r = 1; r < nrep; r++)
      if (cnt[r] > cnt[major]) major = r;
    fprintf(stderr,
            "pcie-tune doctor: %sERROR: the ranks of communicator %s (nRanks %d) disagree: NCCL "
            "needs the same decision on every rank; give every rank the same profile and "
            "environment\n",
            d->label ? d->label : "", first->commid[0] ? first->commid : "?", first->nranks);
    size_t named = 0;
    for (size_t i = from; i < to; i++) {
      const struct dr_member *m = &d->mem[c->order[i]];
      if (same_outcome(d, &d->mem[c->order[rep[major]]], m)) continue;
      char where[256], what[1200];
      if (named++ == 8) {
        fprintf(stderr, "  ... and more\n");
        break;
      }
      dr_where(d, m, where, sizeof where);
      describe(d, m, what, sizeof what);
      if (m->rank >= 0)
        fprintf(stderr, "  rank %d (%s) differs: %s\n", m->rank, where, what);
      else
        fprintf(stderr, "  a rank of %s (rank not in the log) differs: %s\n", where, what);
    }
  }
  free(ranks);
  if (all_profile && nrep == 1) (*tuned)++;
  return nrep > 1;
}

static int cmp_dec(const void *a, const void *b) {
  const struct dr_decision *x = a, *y = b;
  int c = strcmp(x->coll, y->coll);
  if (!c) c = strcmp(x->mode, y->mode);
  if (!c) c = x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
  if (!c) c = strcmp(x->choice, y->choice);
  if (!c) c = x->ch - y->ch;
  if (!c) c = strcmp(x->why, y->why);
  return c;
}

/* What to do about each class of refusal (import/ncclog.c,
 * nl_refusal_class) whose reason does not say it already. */
static const struct {
  const char *cls, *todo;
} todo[] = {
    {"not fitting", "give the job a profile for its communicators (measure with as many GPUs as the job "
                    "uses, or import nccl-tests logs of that rank count) in the directory "
                    "PCIE_TUNER_PROFILE names; `pcie-tune check DIR --nranks N --nnodes M` says why each "
                    "profile there does not fit"},
    {"partial", "finish the sweep: pcie-tune profile --resume --out FILE"},
    {"unreadable", "PCIE_TUNER_PROFILE is opened by every rank, inside the job's container: give a path "
                   "that exists there and is readable"},
    {"invalid", "`pcie-tune check FILE` shows what the plugin refuses and what to do"},
};

/* The refusals in job, then once per class what to do. */
static void refusals(const struct dr_doctor *d, int job) {
  int seen[sizeof todo / sizeof todo[0]] = {0}, refused = 0;
  for (size_t i = 0; i < d->nmem; i++) {
    const struct dr_member *m = &d->mem[i];
    if (m->out.state != DR_REFUSED || !in_job(d, (size_t)m->proc, job)) continue;
    if (!refused++) printf("\nrefusals (the plugin left these communicators to NCCL):\n");
    printf("  %s:%ld rank %d nRanks %d: [%s] %s\n", d->procs[m->proc].host, d->procs[m->proc].pid,
           m->rank, m->nranks, m->out.cls, m->out.reason);
    for (size_t k = 0; k < sizeof todo / sizeof todo[0]; k++) seen[k] |= !strcmp(m->out.cls, todo[k].cls);
  }
  for (size_t k = 0; k < sizeof todo / sizeof todo[0]; k++)
    if (seen[k]) printf("  what to do (%s): %s\n", todo[k].cls, todo[k].todo);
}

void dr_plugin_footer(const struct dr_doctor *d, int job) {
  refusals(d, job);
  /* The job's decisions, summed over its processes. */
  struct dr_decision *dec = malloc((d->ndec + 1) * sizeof *dec);
  size_t n = 0, u = 0;
  unsigned long calls = 0, nccl = 0;
  if (!dec) return;
  for (size_t i = 0; i < d->ndec; i++)
    if (in_job(d, (size_t)d->dec[i].proc, job)) dec[n++] = d->dec[i];
  qsort(dec, n, sizeof *dec, cmp_dec);
  for (size_t i = 0; i < n; i++) {
    calls += dec[i].count;
    if (!dec[i].choice[0]) nccl += dec[i].count;
    if (u && !cmp_dec(&dec[i], &dec[u - 1])) dec[u - 1].count += dec[i].count;
    else dec[u++] = dec[i];
  }
  if (u) {
    printf("\ndecisions traced (PCIE_TUNER_TRACE=1), calls summed over ranks:\n");
    printf("  %-14s %-5s %12s  %-22s %8s  %s\n", "collective", "mode", "bytes", "choice", "calls",
           "why");
  }
  for (size_t i = 0; i < u; i++) {
    const struct dr_decision *x = &dec[i];
    char ch[64];
    if (x->choice[0]) snprintf(ch, sizeof ch, "%s %d ch", x->choice, x->ch);
    else snprintf(ch, sizeof ch, "NCCL's own");
    printf("  %-14s %-5s %12llu  %-22s %8lu  %s\n", x->coll, x->mode, x->bytes, ch, x->count, x->why);
  }
  if (u) printf("  %lu of %lu traced calls left to NCCL\n", nccl, calls);
  free(dec);
}
