/*
 * Ranks of one double communicator meet in a POSIX shared-memory segment
 * named after the unique id (test/double/dbl.h): the same code serves ranks
 * in separate processes and ranks on threads of one process. The
 * all-reduce copies each rank's data through a fixed slot per rank, chunk by
 * chunk, between two barriers, so memory stays bounded at any size.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dbl.h"

#define SLOT_FLOATS ((size_t)64 << 10) /* 256 KiB per rank per chunk */

struct hdr {
  atomic_int joined;
  atomic_uint gen;
  atomic_int count;
  double arrive[DBL_MAX_DEV];
  int dev[DBL_MAX_DEV];                  /* each rank's CUDA device (dbl_shm_peers) */
  unsigned long long host[DBL_MAX_DEV];  /* and host hash */
};

struct dbl_shm {
  struct hdr *h;
  float *slots;
  size_t len;
  int rank, n;
};

static void name_of(const pt_nccl_uid *id, char *out, size_t len) {
  unsigned long long a, b;
  memcpy(&a, id->internal, 8);
  memcpy(&b, id->internal + 8, 8);
  snprintf(out, len, "/ptdouble-%016llx%016llx", a, b);
}

static void pause_a_little(unsigned *spins) {
  if (++*spins < 64) {
    sched_yield();
    return;
  }
  nanosleep(&(struct timespec){0, 20 * 1000}, NULL);
}

/* Sense-reversing barrier; a peer that never comes (hang, crash) blocks
 * the others forever, as a real collective does. */
static void barrier(struct dbl_shm *s) {
  unsigned g = atomic_load(&s->h->gen), spins = 0;
  if (atomic_fetch_add(&s->h->count, 1) == s->n - 1) {
    atomic_store(&s->h->count, 0);
    atomic_fetch_add(&s->h->gen, 1);
    return;
  }
  while (atomic_load(&s->h->gen) == g) pause_a_little(&spins);
}

struct dbl_shm *dbl_shm_join(const pt_nccl_uid *id, int nranks, int rank, double timeout_s) {
  char name[64];
  struct dbl_shm *s = calloc(1, sizeof *s);
  int fd = -1;
  if (!s || nranks < 1 || nranks > DBL_MAX_DEV) goto fail;
  name_of(id, name, sizeof name);
  s->rank = rank;
  s->n = nranks;
  s->len = sizeof(struct hdr) + (size_t)nranks * SLOT_FLOATS * sizeof(float);
  fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)s->len)) goto fail;
  void *p = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) goto fail;
  close(fd);
  fd = -1;
  s->h = p;
  s->slots = (float *)((char *)p + sizeof(struct hdr));
  atomic_fetch_add(&s->h->joined, 1);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned spins = 0;
  while (atomic_load(&s->h->joined) < nranks) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > timeout_s) {
      if (rank == 0) shm_unlink(name);
      goto fail;
    }
    pause_a_little(&spins);
  }
  /* Everyone has it mapped: the name is no longer needed, so nothing is
   * left in /dev/shm whatever happens next. */
  if (rank == 0) shm_unlink(name);
  return s;
fail:
  if (fd >= 0) close(fd);
  dbl_shm_leave(s);
  return NULL;
}

int dbl_shm_peers(struct dbl_shm *s, int dev, unsigned long long host, int *dup) {
  int nhosts = 0;
  s->h->dev[s->rank] = dev;
  s->h->host[s->rank] = host;
  barrier(s);
  *dup = -1;
  for (int r = 0; r < s->n; r++) {
    int first = 1;
    for (int q = 0; q < r; q++) first &= s->h->host[q] != s->h->host[r];
    nhosts += first;
    if (r != s->rank && *dup < 0 && s->h->host[r] == host && s->h->dev[r] == dev) *dup = r;
  }
  return nhosts;
}

void dbl_shm_leave(struct dbl_shm *s) {
  if (!s) return;
  if (s->h) munmap(s->h, s->len);
  free(s);
}

double dbl_shm_allreduce(struct dbl_shm *s, const float *send, float *recv, size_t count,
                         double arrive_us) {
  double start = 0;
  float *mine = s->slots + (size_t)s->rank * SLOT_FLOATS;
  s->h->arrive[s->rank] = arrive_us;
  size_t off = 0;
  do {
    size_t k = count - off < SLOT_FLOATS ? count - off : SLOT_FLOATS;
    if (k) memcpy(mine, send + off, k * sizeof(float));
    barrier(s);
    if (off == 0)
      for (int r = 0; r < s->n; r++)
        if (s->h->arrive[r] > start) start = s->h->arrive[r];
    for (size_t i = 0; i < k; i++) {
      float sum = 0;
      for (int r = 0; r < s->n; r++) sum += s->slots[(size_t)r * SLOT_FLOATS + i];
      recv[off + i] = sum;
    }
    barrier(s);
    off += k;
  } while (off < count);
  return start;
}
