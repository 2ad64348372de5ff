/*
 * The process-wide cache of loaded profiles: each profile is parsed,
 * validated and compiled once per process and shared by every communicator
 * using it, then freed when the last one finalizes.
 *
 * Entries are keyed on the path and the content (length and FNV-1a hash of
 * the bytes), not on the file's inode, size and mtime: a profile rewritten
 * in place with the same size and its mtime restored (cp -p, rsync -t) is a
 * new entry, and a communicator still holding the old one keeps it.
 *
 * The file is read and compiled before the mutex is taken: a slow or odd
 * file must never hold up the init or finalize of another communicator.
 * The mutex guards only the list and the reference counts; published
 * entries are never written again, so lookups on the hot path need no lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/core.h"
#include "profile_internal.h"

struct entry {
  struct pt_loaded loaded; /* first member: a pt_loaded* is an entry* */
  uint64_t hash;           /* of the file's bytes */
  size_t len;
  int refs;
  struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;

/* Contents refused since the process started (invalid, by hash and length
 * of the bytes), so that a bad file is parsed once per process however many
 * communicators try it; the oldest is forgotten first. */
#define REFUSED_MAX 16
static struct refusal {
  uint64_t hash;
  size_t len;
  int rc;
  struct pt_error_rec err;
} refused[REFUSED_MAX];
static size_t nrefused;

/* Called with the lock held. */
static const struct refusal *find_refused(uint64_t hash, size_t len) {
  for (size_t i = 0; i < nrefused && i < REFUSED_MAX; i++)
    if (refused[i].hash == hash && refused[i].len == len) return &refused[i];
  return NULL;
}

/* The stored refusal, for path (the same bytes may have another name). */
static int replay(const struct refusal *r, const char *path, struct pt_error_rec *err) {
  *err = r->err;
  snprintf(err->file, sizeof err->file, "%s", path);
  size_t n = strlen(err->msg);
  snprintf(err->msg + n, sizeof err->msg - n, " (same content refused earlier in this process)");
  return r->rc;
}

/* Called with the lock held. */
static struct entry *find(const char *path, uint64_t hash, size_t len) {
  for (struct entry *e = entries; e; e = e->next)
    if (e->hash == hash && e->len == len && !strcmp(e->loaded.prof.path, path)) return e;
  return NULL;
}

static void entry_free(struct entry *e) {
  if (!e) return;
  pt_table_release(&e->loaded.table);
  pt_profile_release(&e->loaded.prof);
  free(e);
}

/* Parses and compiles text into a fresh, unpublished entry. */
static int compile(const char *path, const char *text, size_t len, struct entry **out,
                   struct pt_error_rec *err) {
  struct entry *e = calloc(1, sizeof *e);
  int rc;
  *out = NULL;
  if (!e) return pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
  rc = pt_profile_load_string(&e->loaded.prof, text, path, err);
  if (!rc && (rc = pt_table_build(&e->loaded.table, &e->loaded.prof)))
    pt_error_set(err, rc, path, 0, "out of memory");
  if (rc) {
    pt_profile_release(&e->loaded.prof);
    free(e);
    return rc;
  }
  e->hash = pt_hash_bytes(text, len);
  e->len = len;
  *out = e;
  return 0;
}

int pt_registry_acquire(const char *path, const struct pt_loaded **out, struct pt_error_rec *err) {
  struct entry *e, *fresh = NULL;
  char *text = NULL;
  size_t len = 0;
  uint64_t hash;
  int rc;
  memset(err, 0, sizeof *err);
  if ((rc = pt__read_file(path, &text, &len, err))) return rc;
  hash = pt_hash_bytes(text, len);
  pthread_mutex_lock(&lock);
  const struct refusal *r = find_refused(hash, len);
  if (r) rc = replay(r, path, err);
  e = r ? NULL : find(path, hash, len);
  if (e) e->refs++;
  pthread_mutex_unlock(&lock);
  if (rc) goto out;
  if (!e) {
    if ((rc = compile(path, text, len, &fresh, err))) {
      if (rc != PT_ENOMEM) { /* out of memory may pass; a bad file does not */
        pthread_mutex_lock(&lock);
        refused[nrefused++ % REFUSED_MAX] = (struct refusal){hash, len, rc, *err};
        pthread_mutex_unlock(&lock);
      }
      goto out;
    }
    pthread_mutex_lock(&lock);
    /* Another communicator may have compiled the same bytes meanwhile:
     * share its entry so that both use one table. */
    e = find(path, hash, len);
    if (!e) {
      e = fresh;
      fresh = NULL;
      e->next = entries;
      entries = e;
    }
    e->refs++;
    pthread_mutex_unlock(&lock);
  }
  *out = &e->loaded;
out:
  entry_free(fresh);
  free(text);
  return rc;
}

void pt_registry_release(const struct pt_loaded *l) {
  struct entry *dead = NULL;
  if (!l) return;
  pthread_mutex_lock(&lock);
  for (struct entry **pp = &entries; *pp; pp = &(*pp)->next) {
    struct entry *e = *pp;
    if (&e->loaded != l) continue;
    if (--e->refs == 0) {
      *pp = e->next;
      dead = e;
    }
    break;
  }
  pthread_mutex_unlock(&lock);
  entry_free(dead); /* outside the lock: freeing a big table takes time */
}

size_t pt_registry_count(void) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (struct entry *e = entries; e; e = e->next) n++;
  pthread_mutex_unlock(&lock);
  return n;
}
