/*
 * Tells the runs in doctor's input apart (issue 27 §1): NCCL_DEBUG_FILE
 * leaves one file per process and earlier runs' files stay beside today's;
 * two jobs' outputs get concatenated. What it relies on, in order:
 *  - commIds: every rank of a communicator prints the same one (src/init.cc,
 *    "Init START/COMPLETE ... commId 0x%llx"); processes sharing one are one
 *    job, transitively;
 *  - a process without a commId in the log joins the job whose lines its
 *    own are interleaved with (one stream of a running job); the rest form
 *    one job together (old NCCL, or NCCL_DEBUG_SUBSYS without INIT);
 *  - order: files' modification times where two jobs came from different
 *    files (NCCL_DEBUG_FILE writes each process's file as it runs), else
 *    their place in the input (a concatenation keeps runs in order);
 *  - a job is superseded when a later job started after its last line on
 *    one of its GPUs (host and busId, or the host where no busId is in the
 *    log): the user re-ran the job there (judged for up to 64 jobs and 4096
 *    ranks; beyond, every job counts). NCCL_DEBUG prints no timestamps
 *    on INFO lines by default, so doctor does not read them.
 */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

static int find(int *parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

static void unite(int *parent, int a, int b) {
  a = find(parent, a), b = find(parent, b);
  if (a != b) parent[a < b ? b : a] = a < b ? a : b;
}

static const struct dr_doctor *sort_d;

static int cmp_commid(const void *a, const void *b) {
  return strcmp(sort_d->mem[*(const int *)a].commid, sort_d->mem[*(const int *)b].commid);
}

struct span {
  unsigned long first, last;
  int root;
};

static int cmp_span(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* Joins each process without a commId to the job its lines interleave with:
 * the commId job whose span of lines, among those starting before the
 * process's last line, starts last and covers its first line. */
static int join_strays(const struct dr_doctor *d, int *parent, const char *attached) {
  struct span *s = malloc((d->nproc + 1) * sizeof *s);
  int *at = malloc((d->nproc + 1) * sizeof *at), stray = -1;
  size_t n = 0;
  if (!s || !at) {
    free(s);
    free(at);
    return -1;
  }
  for (size_t i = 0; i < d->nproc; i++) at[i] = -1;
  for (size_t i = 0; i < d->nproc; i++) {
    if (!attached[i]) continue;
    int r = find(parent, (int)i);
    if (at[r] < 0) at[r] = (int)n, s[n++] = (struct span){d->procs[i].first, d->procs[i].last, r};
    struct span *x = &s[at[r]];
    if (d->procs[i].first < x->first) x->first = d->procs[i].first;
    if (d->procs[i].last > x->last) x->last = d->procs[i].last;
  }
  qsort(s, n, sizeof *s, cmp_span);
  for (size_t i = 0; i < d->nproc; i++) {
    if (attached[i]) continue;
    size_t lo = 0, hi = n; /* the last span starting at or before our last line */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (s[mid].first <= d->procs[i].last) lo = mid + 1;
      else hi = mid;
    }
    if (lo && s[lo - 1].last >= d->procs[i].first) unite(parent, (int)i, s[lo - 1].root);
    else if (stray < 0) stray = (int)i;
    else unite(parent, stray, (int)i);
  }
  free(s);
  free(at);
  return 0;
}

/* Whether job b ran after job a's last line. */
static int later(const struct dr_job *a, const struct dr_job *b) {
  if (a->mtime_hi && b->mtime_lo && a->mtime_hi != b->mtime_hi) return b->mtime_lo > a->mtime_hi;
  return b->first > a->last;
}

/* Whether jobs a and b used a GPU in common. */
static int share_gpu(const struct dr_doctor *d, int a, int b) {
  for (size_t i = 0; i < d->nmem; i++) {
    const struct dr_member *x = &d->mem[i];
    if (d->procs[x->proc].job != a) continue;
    for (size_t k = 0; k < d->nmem; k++) {
      const struct dr_member *y = &d->mem[k];
      if (d->procs[y->proc].job != b || strcmp(d->procs[x->proc].host, d->procs[y->proc].host))
        continue;
      if (x->busid < 0 || y->busid < 0 || x->busid == y->busid) return 1;
    }
  }
  /* Processes that logged no member: the host decides. */
  for (size_t i = 0; i < d->nproc; i++)
    for (size_t k = 0; k < d->nproc && d->procs[i].job == a && d->procs[i].head < 0; k++)
      if (d->procs[k].job == b && !strcmp(d->procs[i].host, d->procs[k].host)) return 1;
  return 0;
}

static struct dr_job *sort_jobs;

static int cmp_job(const void *a, const void *b) {
  const struct dr_job *x = &sort_jobs[*(const int *)a], *y = &sort_jobs[*(const int *)b];
  if (x->mtime_hi && y->mtime_hi && x->mtime_hi != y->mtime_hi) return x->mtime_hi < y->mtime_hi ? -1 : 1;
  return x->last < y->last ? -1 : x->last > y->last;
}

int dr_jobs(struct dr_doctor *d, struct dr_jobs *j) {
  int *parent = malloc((d->nproc + 1) * sizeof *parent), *ids = malloc((d->nmem + 1) * sizeof *ids);
  int *num = malloc((d->nproc + 1) * sizeof *num), *order = NULL, rc = -1;
  char *attached = calloc(d->nproc + 1, 1);
  size_t n = 0;
  memset(j, 0, sizeof *j);
  if (!parent || !ids || !num || !attached) goto out;
  for (size_t i = 0; i < d->nproc; i++) parent[i] = (int)i, num[i] = -1;
  for (size_t i = 0; i < d->nmem; i++)
    if (d->mem[i].commid[0]) ids[n++] = (int)i, attached[d->mem[i].proc] = 1;
  sort_d = d;
  qsort(ids, n, sizeof *ids, cmp_commid);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(d->mem[ids[i]].commid, d->mem[ids[i - 1]].commid))
      unite(parent, d->mem[ids[i]].proc, d->mem[ids[i - 1]].proc);
  if (join_strays(d, parent, attached)) goto out;
  /* Number the roots, then order them oldest first. */
  for (size_t i = 0; i < d->nproc; i++) {
    int r = find(parent, (int)i);
    if (num[r] < 0) num[r] = (int)j->n++;
  }
  if (!(j->job = calloc(j->n + 1, sizeof *j->job)) || !(order = malloc((j->n + 1) * sizeof *order)))
    goto out;
  for (size_t i = 0; i < d->nproc; i++) {
    struct dr_job *x = &j->job[num[find(parent, (int)i)]];
    const struct dr_proc *p = &d->procs[i];
    if (!x->nproc++) x->first = p->first, x->last = p->last, x->mtime_lo = x->mtime_hi = p->mtime;
    if (p->first < x->first) x->first = p->first;
    if (p->last > x->last) x->last = p->last;
    if (p->mtime && (!x->mtime_lo || p->mtime < x->mtime_lo)) x->mtime_lo = p->mtime;
    if (p->mtime > x->mtime_hi) x->mtime_hi = p->mtime;
  }
  for (size_t k = 0; k < j->n; k++) order[k] = (int)k;
  sort_jobs = j->job;
  qsort(order, j->n, sizeof *order, cmp_job);
  /* order[k] is the old number of the k-th oldest job; num[root] the old
   * number of root's job. */
  struct dr_job *sorted = calloc(j->n + 1, sizeof *sorted);
  int *renum = malloc((j->n + 1) * sizeof *renum);
  if (!sorted || !renum) {
    free(sorted);
    free(renum);
    goto out;
  }
  for (size_t k = 0; k < j->n; k++) sorted[k] = j->job[order[k]], renum[order[k]] = (int)k;
  free(j->job);
  j->job = sorted;
  for (size_t i = 0; i < d->nproc; i++) d->procs[i].job = renum[num[find(parent, (int)i)]];
  free(renum);
  for (size_t a = 0; a < j->n; a++) {
    j->job[a].superseded_by = -1;
    for (size_t b = j->n; b-- > a + 1;)
      if (j->n <= 64 && d->nmem <= 4096 && d->nproc <= 4096 && later(&j->job[a], &j->job[b]) && share_gpu(d, (int)a, (int)b)) {
        j->job[a].superseded_by = (int)b;
        break;
      }
  }
  rc = 0;
out:
  free(parent);
  free(ids);
  free(num);
  free(order);
  free(attached);
  if (rc) dr_jobs_free(j);
  return rc;
}

void dr_jobs_free(struct dr_jobs *j) {
  free(j->job);
  j->job = NULL;
  j->n = 0;
}
