/*
 * Safe input and output files (include/pcie/files.h). The plugin reads its
 * profiles here inside a user's job, so nothing may block (a FIFO), read
 * without bound (/dev/zero, a sparse file) or exit (libconfig's @include);
 * the commands use the same code so that they refuse exactly what the
 * plugin refuses. Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/files.h"

static const char *kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

static int not_regular(struct pt_error_rec *err, const char *path, mode_t m, const char *hint) {
  return pt_error_set(err, PT_EIO, path, 0, "is %s, not a regular file; %s", kind(m), hint);
}

/* Reads fd to its end, at most max bytes (one byte more tells "larger");
 * hint is the expected size. */
static int read_fd(int fd, const char *path, size_t hint, size_t max, char **text, size_t *len,
                   struct pt_error_rec *err) {
  size_t cap = hint < 4096 ? 4096 : hint + 1, n = 0;
  char *buf, *nb;
  int rc = 0;
  if (cap > max + 1) cap = max + 1;
  if (!(buf = malloc(cap + 1))) return pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
  for (;;) {
    if (n == cap) {
      if (n > max) break;
      cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
      if (!(nb = realloc(buf, cap + 1))) {
        rc = pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
        break;
      }
      buf = nb;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      rc = pt_error_set(err, PT_EIO, path, 0, "cannot read: %s", strerror(errno));
      break;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  if (!rc && n > max)
    rc = pt_error_set(err, PT_EIO, path, 0, "larger than the %zu-byte limit for this input", max);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}

/* PT_READ_TEXT: the first NUL byte, by line; frees the text on refusal. */
static int refuse_nul(const char *path, char **text, size_t *len, struct pt_error_rec *err) {
  const char *nul = memchr(*text, '\0', *len);
  int line = 1;
  if (!nul) return 0;
  for (const char *p = *text; p < nul; p++) line += *p == '\n';
  free(*text);
  *text = NULL;
  *len = 0;
  return pt_error_set(err, PT_EINVAL, path, line,
                      "NUL byte in the file (a text file has none); is it the right file?");
}

int pt_file_read(const char *path, size_t max, unsigned flags, char **text, size_t *len,
                 struct pt_error_rec *err) {
  struct stat st, fst;
  int fd, rc;
  memset(err, 0, sizeof *err);
  *text = NULL;
  *len = 0;
  if ((flags & PT_READ_STDIN) && !strcmp(path, "-")) {
    rc = read_fd(STDIN_FILENO, "<stdin>", 0, max, text, len, err);
    if (!rc && (flags & PT_READ_TEXT)) rc = refuse_nul("<stdin>", text, len, err);
    return rc;
  }
  /* stat first, so a device node is never even opened (opening some has
   * side effects); fstat after, on what was actually opened. */
  if (stat(path, &st) != 0)
    return pt_error_set(err, PT_EIO, path, 0, "cannot open: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return not_regular(err, path, st.st_mode, "name a file");
  /* O_NONBLOCK: should a FIFO replace the file after the stat, open
   * returns at once instead of waiting for a writer. */
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return pt_error_set(err, PT_EIO, path, 0, "cannot open: %s", strerror(errno));
  if (fstat(fd, &fst) != 0) {
    rc = pt_error_set(err, PT_EIO, path, 0, "cannot stat: %s", strerror(errno));
  } else if (!S_ISREG(fst.st_mode)) {
    rc = not_regular(err, path, fst.st_mode, "name a file");
  } else if ((size_t)fst.st_size > max) {
    rc = pt_error_set(err, PT_EIO, path, 0,
                      "is %lld bytes, larger than the %zu-byte limit for this input; is it the "
                      "right file?",
                      (long long)fst.st_size, max);
  } else {
    rc = read_fd(fd, path, (size_t)fst.st_size, max, text, len, err);
  }
  close(fd);
  if (!rc && (flags & PT_READ_TEXT)) rc = refuse_nul(path, text, len, err);
  return rc;
}

int pt_text_refuse_include(const char *text, const char *file, struct pt_error_rec *err) {
  int line = 1;
  /* libconfig's scanner takes "@include" only at the start of a line after
   * blanks; matching that (case-insensitively, and even inside a comment or
   * a string, where it would be harmless) errs on the side of refusing. */
  for (const char *p = text; *p; line++) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v') p++;
    if (!strncasecmp(p, "@include", 8))
      return pt_error_set(err, PT_EINVAL, file, line,
                          "@include is not allowed: a profile must be self-contained (an "
                          "included file resolves per working directory and is not covered "
                          "by the hash); paste its settings here instead");
    p = strchr(p, '\n');
    if (!p) break;
    p++;
  }
  return 0;
}

/* Per open group (index = depth; 0 is the file's top level): how many
 * named settings it holds so far, the name-check work they cost and the
 * line it opened on. Deeper than the depth limit is refused anyway. */
struct scan_group {
  size_t members, work;
  int line;
};

/* One pass over the bytes, as libconfig's scanner splits them: comments
 * ('#', '//', C style) and blanks cost nothing; each name, number, string
 * literal and opening bracket is one token, which is roughly one
 * config_setting_t (or one string) libconfig would allocate. */
struct scan {
  size_t tokens, depth, max_depth, longest, longest_word, strbytes;
  size_t name_work, worst_work, worst_members;
  int line, longest_line, word_line, deep_line, worst_line;
  struct scan_group group[PT_MAX_PROFILE_DEPTH + 2];
};

static int word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '+' || c == '*';
}

/* Skips a string literal at p (p[0] == '"'); returns the byte after it. */
static const char *skip_string(const char *p, const char *end, struct scan *sc) {
  const char *q = p + 1;
  int start = sc->line;
  while (q < end && *q != '"') {
    if (*q == '\\' && q + 1 < end) q++;
    if (*q == '\n') sc->line++;
    q++;
  }
  if ((size_t)(q - p) > sc->longest) {
    sc->longest = (size_t)(q - p);
    sc->longest_line = start;
  }
  sc->strbytes += (size_t)(q - p);
  return q < end ? q + 1 : q;
}

/* The next byte that is neither a blank nor inside a comment. */
static const char *next_significant(const char *p, const char *end) {
  while (p < end) {
    if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v') {
      p++;
    } else if (*p == '#' || (*p == '/' && p + 1 < end && p[1] == '/')) {
      while (p < end && *p != '\n') p++;
    } else if (*p == '/' && p + 1 < end && p[1] == '*') {
      for (p += 2; p + 1 < end && !(p[0] == '*' && p[1] == '/'); p++) {
      }
      p = p + 1 < end ? p + 2 : end;
    } else {
      break;
    }
  }
  return p;
}

/* A setting's name of len bytes joins the innermost open group. libconfig
 * (config_setting_add) compares each new name with every earlier member of
 * its group, strcmp over at most the new name's length, so a group of N
 * names of L bytes costs it O(N^2 * L): that, not the token count, bounds
 * such a file. Each comparison is counted as its bytes plus a fixed
 * overhead for reaching the earlier member. */
static void add_name(struct scan *sc, size_t len) {
  struct scan_group *g = &sc->group[sc->depth < PT_MAX_PROFILE_DEPTH + 1 ? sc->depth
                                                                         : PT_MAX_PROFILE_DEPTH + 1];
  size_t cost = g->members * (len + PT_NAME_COMPARE_OVERHEAD);
  g->members++;
  g->work += cost;
  sc->name_work += cost;
  if (g->work > sc->worst_work) {
    sc->worst_work = g->work;
    sc->worst_members = g->members;
    sc->worst_line = g->line;
  }
}

/* Stops as soon as the tokens exceed the bound: the rest cannot undo it. */
static void scan_text(const char *p, const char *end, struct scan *sc) {
  while (p < end && sc->tokens <= PT_MAX_PROFILE_TOKENS) {
    unsigned char c = (unsigned char)*p;
    if (c == '\n') sc->line++;
    if (c == '#' || (c == '/' && p + 1 < end && p[1] == '/')) {
      while (p < end && *p != '\n') p++;
    } else if (c == '/' && p + 1 < end && p[1] == '*') {
      for (p += 2; p + 1 < end && !(p[0] == '*' && p[1] == '/'); p++)
        if (*p == '\n') sc->line++;
      p = p + 1 < end ? p + 2 : end;
    } else if (c == '"') {
      sc->tokens++;
      p = skip_string(p, end, sc);
    } else if (c == '{' || c == '(' || c == '[') {
      sc->tokens++;
      if (++sc->depth > sc->max_depth) {
        sc->max_depth = sc->depth;
        sc->deep_line = sc->line;
      }
      if (sc->depth <= PT_MAX_PROFILE_DEPTH + 1)
        sc->group[sc->depth] = (struct scan_group){.line = sc->line};
      p++;
    } else if (c == '}' || c == ')' || c == ']') {
      sc->depth -= sc->depth > 0;
      p++;
    } else if (word_char(c)) {
      const char *q = p;
      while (q < end && word_char((unsigned char)*q)) q++;
      sc->tokens++;
      if ((size_t)(q - p) > sc->longest_word) {
        sc->longest_word = (size_t)(q - p);
        sc->word_line = sc->line;
      }
      /* A word followed by '=' or ':' names a setting (a list or array
       * holds none; counting one there anyway only errs on refusing). */
      const char *after = next_significant(q, end);
      if (after < end && (*after == '=' || *after == ':')) add_name(sc, (size_t)(q - p));
      p = q;
    } else {
      p++;
    }
  }
}

int pt_text_prescan(const char *text, size_t len, const char *file, struct pt_error_rec *err) {
  struct scan sc = {.line = 1, .group[0].line = 1};
  scan_text(text, text + len, &sc);
  if (sc.tokens > PT_MAX_PROFILE_TOKENS)
    return pt_error_set(err, PT_EINVAL, file, 0,
                        "holds %zu settings and values, more than the %d a profile may have (a "
                        "full sweep has about 10000); is it the right file? Trim "
                        "provenance.extra if a tool filled it",
                        sc.tokens, PT_MAX_PROFILE_TOKENS);
  if (sc.max_depth > PT_MAX_PROFILE_DEPTH)
    return pt_error_set(err, PT_EINVAL, file, sc.deep_line,
                        "groups and lists nest %zu deep here, more than the %d a profile may "
                        "have; is it the right file?",
                        sc.max_depth, PT_MAX_PROFILE_DEPTH);
  if (sc.longest_word > PT_MAX_PROFILE_WORD)
    return pt_error_set(err, PT_EINVAL, file, sc.word_line,
                        "a name or number of %zu bytes, more than the %d a profile may have; is "
                        "it the right file?",
                        sc.longest_word, PT_MAX_PROFILE_WORD);
  if (sc.longest > PT_MAX_PROFILE_STRING)
    return pt_error_set(err, PT_EINVAL, file, sc.longest_line,
                        "a string of %zu bytes starts here, more than the %d a profile may "
                        "have; is it the right file?",
                        sc.longest, PT_MAX_PROFILE_STRING);
  if (sc.strbytes > PT_MAX_PROFILE_STRINGS)
    return pt_error_set(err, PT_EINVAL, file, 0,
                        "holds %zu bytes of strings, more than the %d a profile may have; is it "
                        "the right file?",
                        sc.strbytes, PT_MAX_PROFILE_STRINGS);
  if (sc.name_work > PT_MAX_PROFILE_NAME_WORK)
    return pt_error_set(err, PT_EINVAL, file, sc.worst_line,
                        "the group that opens here has %zu members: checking their names for "
                        "duplicates (each against every earlier one) would cost %zu byte "
                        "comparisons in all, more than the %d a profile may need; is it the "
                        "right file? Split it into smaller groups, or trim provenance.extra if "
                        "a tool filled it",
                        sc.worst_members, sc.name_work, PT_MAX_PROFILE_NAME_WORK);
  return 0;
}

/* dirname() of a copy; malloc'ed. */
static char *dir_of(const char *path) {
  char *copy = strdup(path), *d = NULL;
  if (copy) d = strdup(dirname(copy));
  free(copy);
  return d;
}

char *pt_output_target(const char *path) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) return realpath(path, NULL);
  return strdup(path);
}

/* The checks shared by pt_output_check and pt_output_write, on the file a
 * write of path would replace. *target is malloc'ed on success. */
static int check_target(const char *path, unsigned flags, char **target,
                        struct pt_error_rec *err) {
  struct stat st;
  char *dir = NULL;
  int rc = 0;
  *target = NULL;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    if (stat(path, &st) != 0)
      return pt_error_set(err, PT_EIO, path, 0,
                          "is a symbolic link to a missing file (%s); remove it or name another "
                          "output",
                          strerror(errno));
    if (!S_ISREG(st.st_mode))
      return not_regular(err, path, st.st_mode,
                         "refusing to replace it (write to '-', standard output, and redirect)");
    if (!(flags & PT_OUT_FORCE))
      return pt_error_set(err, PT_EEXIST, path, 0,
                          "already exists (a symbolic link); pass --force to write through it");
  }
  *target = pt_output_target(path);
  if (!*target) return pt_error_set(err, PT_EIO, path, 0, "cannot resolve: %s", strerror(errno));
  if (lstat(*target, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      rc = not_regular(err, path, st.st_mode,
                       "refusing to replace it (write to '-', standard output, and redirect)");
    else if (!(flags & PT_OUT_FORCE))
      rc = pt_error_set(err, PT_EEXIST, path, 0, "already exists; pass --force to overwrite it");
  } else if (errno != ENOENT) {
    rc = pt_error_set(err, PT_EIO, path, 0, "cannot inspect: %s", strerror(errno));
  }
  if (!rc) {
    dir = dir_of(*target);
    if (!dir) rc = pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
    else if (stat(dir, &st) != 0)
      rc = pt_error_set(err, PT_EIO, path, 0, "directory %s does not exist (%s)", dir,
                        strerror(errno));
    else if (!S_ISDIR(st.st_mode))
      rc = pt_error_set(err, PT_EIO, path, 0, "%s is not a directory", dir);
    else if (access(dir, W_OK | X_OK) != 0)
      rc = pt_error_set(err, PT_EIO, path, 0, "cannot write in directory %s (%s)", dir,
                        strerror(errno));
  }
  free(dir);
  if (rc) {
    free(*target);
    *target = NULL;
  }
  return rc;
}

int pt_output_check(const char *path, unsigned flags, const char *const *inputs, size_t ninputs,
                    struct pt_error_rec *err) {
  struct stat out, in;
  char *target = NULL;
  int rc;
  memset(err, 0, sizeof *err);
  if (!strcmp(path, "-")) return 0;
  if ((rc = check_target(path, flags, &target, err))) return rc;
  if (stat(target, &out) == 0)
    for (size_t i = 0; i < ninputs && !rc; i++)
      if (inputs[i] && strcmp(inputs[i], "-") && stat(inputs[i], &in) == 0 &&
          in.st_dev == out.st_dev && in.st_ino == out.st_ino)
        rc = pt_error_set(err, PT_EINVAL, path, 0,
                          "is also an input (%s): writing it would destroy what is being read; "
                          "choose another output",
                          inputs[i]);
  free(target);
  return rc;
}

static int write_all(int fd, const char *data, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return -1;
    }
    off += (size_t)w;
  }
  return 0;
}

int pt_output_write(const char *path, const void *data, size_t len, unsigned flags,
                    struct pt_error_rec *err) {
  char *target = NULL, *tmp = NULL, *dir = NULL;
  const char *base;
  struct stat st;
  int fd = -1, rc;
  memset(err, 0, sizeof *err);
  if (!strcmp(path, "-")) {
    if (write_all(STDOUT_FILENO, data, len) == 0) return 0;
    return pt_error_set(err, PT_EIO, "<stdout>", 0, "cannot write: %s", strerror(errno));
  }
  if ((rc = check_target(path, flags, &target, err))) return rc;
  base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
  dir = dir_of(target);
  if (!dir || asprintf(&tmp, "%s/.%s.XXXXXX", dir, base) < 0) {
    tmp = NULL;
    rc = pt_error_set(err, PT_ENOMEM, path, 0, "out of memory");
    goto out;
  }
  /* mkstemp: a fresh file, never an existing one or a planted symlink. */
  fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    tmp = NULL;
    rc = pt_error_set(err, PT_EIO, path, 0, "cannot create a temporary file beside it: %s",
                      strerror(errno));
    goto out;
  }
  /* A replaced file keeps its permissions; a new one is world-readable. */
  mode_t mode = stat(target, &st) == 0 ? st.st_mode & 0777 : 0644;
  if (write_all(fd, data, len) || fchmod(fd, mode) || fsync(fd)) {
    rc = pt_error_set(err, PT_EIO, path, 0, "cannot write: %s", strerror(errno));
    goto out;
  }
  close(fd);
  fd = -1;
  /* Without force, link() fails if the target appeared meanwhile: no race
   * can clobber a file. With force, rename() replaces atomically; the
   * target was checked to be a regular file (a FIFO or device node put
   * there since is the one race left, and needs write access to the
   * directory). */
  if (flags & PT_OUT_FORCE ? rename(tmp, target) : link(tmp, target)) {
    if (errno == EEXIST)
      rc = pt_error_set(err, PT_EEXIST, path, 0, "already exists; pass --force to overwrite it");
    else
      rc = pt_error_set(err, PT_EIO, path, 0, "cannot move the new file into place: %s",
                        strerror(errno));
  }
out:
  if (fd >= 0) close(fd);
  if (tmp) unlink(tmp); /* after rename it no longer exists; after link it is the spare name */
  free(tmp);
  free(dir);
  free(target);
  return rc;
}
