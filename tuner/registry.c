/*
 * The process-wide cache of loaded profiles: each file is parsed, validated
 * and compiled once per process and shared by every communicator using it,
 * then freed when the last one finalizes. The mutex is taken only here, at
 * communicator init and finalize; published entries are never written again
 * (only the reference count, under the mutex), so lookups need no lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pcie/core.h"

struct entry {
  struct pt_loaded loaded; /* first member: a pt_loaded* is an entry* */
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  int refs;
  struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;

static int same_file(const struct entry *e, const struct stat *st) {
  return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
         e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

int pt_registry_acquire(const char *path, const struct pt_loaded **out, struct pt_error_rec *err) {
  struct stat st;
  struct entry *e;
  int rc = 0;
  memset(err, 0, sizeof *err);
  pthread_mutex_lock(&lock);
  if (stat(path, &st) != 0) {
    pt_error_set(err, 0, path, 0, "cannot open: no such file");
    rc = PT_EIO;
    goto out;
  }
  for (e = entries; e; e = e->next)
    if (same_file(e, &st)) break;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) {
      rc = PT_ENOMEM;
      goto out;
    }
    rc = pt_profile_load(&e->loaded.prof, path, err);
    if (!rc) rc = pt_table_build(&e->loaded.table, &e->loaded.prof);
    if (rc) {
      pt_profile_release(&e->loaded.prof);
      free(e);
      goto out;
    }
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime = st.st_mtim;
    e->next = entries;
    entries = e;
  }
  e->refs++;
  *out = &e->loaded;
out:
  pthread_mutex_unlock(&lock);
  if (rc == PT_ENOMEM && !err->msg[0]) {
    pt_error_set(err, 0, path, 0, "out of memory");
  }
  return rc;
}

void pt_registry_release(const struct pt_loaded *l) {
  if (!l) return;
  pthread_mutex_lock(&lock);
  for (struct entry **pp = &entries; *pp; pp = &(*pp)->next) {
    struct entry *e = *pp;
    if (&e->loaded != l) continue;
    if (--e->refs == 0) {
      *pp = e->next;
      pt_table_release(&e->loaded.table);
      pt_profile_release(&e->loaded.prof);
      free(e);
    }
    break;
  }
  pthread_mutex_unlock(&lock);
}

size_t pt_registry_count(void) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (struct entry *e = entries; e; e = e->next) n++;
  pthread_mutex_unlock(&lock);
  return n;
}
