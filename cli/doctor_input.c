/*
 * doctor's input: a log file or standard input, read as a stream of lines.
 * A named input must be a regular file (checked before it is opened, and
 * again on what was opened, so a FIFO or a device never blocks or streams
 * forever, as in tuner/files.c). Standard input is the user's own pipe and
 * may be anything, so it is bounded instead: at most DR_MAX_LINE bytes a
 * line, and a NUL byte ends the read: NCCL and the engines write text, and
 * /dev/zero or /dev/urandom piped in meet a NUL within a few hundred bytes.
 * Memory stays one read buffer and one line whatever the input's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor.h"

#define DR_MAX_LINE ((size_t)1 << 20)
#define DR_CHUNK ((size_t)64 << 10)

static const char *kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

static int refuse(const char *path, mode_t m) {
  fprintf(stderr,
          "pcie-tune doctor: %s: is %s, not a regular file; name a log file, or pipe the output "
          "in: pcie-tune doctor - < %s\n",
          path, kind(m), path);
  return -1;
}

static int open_input(const char *path) {
  struct stat st;
  int fd;
  if (!strcmp(path, "-")) {
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode)) return refuse("<stdin>", st.st_mode);
    return STDIN_FILENO;
  }
  /* stat first, so a device node is never even opened. */
  if (stat(path, &st) != 0) {
    fprintf(stderr, "pcie-tune doctor: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) return refuse(path, st.st_mode);
  /* O_NONBLOCK: a FIFO put in its place after the stat cannot block. */
  fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    fprintf(stderr, "pcie-tune doctor: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return refuse(path, st.st_mode);
  }
  return fd;
}

int dr_read(const char *path, void (*fn)(void *arg, const char *line), void *arg) {
  const char *name = strcmp(path, "-") ? path : "<stdin>";
  char *chunk = malloc(DR_CHUNK), *line = NULL;
  size_t len = 0, cap = 0;
  unsigned long lineno = 1;
  int rc = 0, fd = -1;
  if (!chunk) {
    fprintf(stderr, "pcie-tune doctor: out of memory\n");
    return -1;
  }
  if ((fd = open_input(path)) < 0) {
    rc = -1;
    goto out;
  }
  for (;;) {
    ssize_t got = read(fd, chunk, DR_CHUNK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "pcie-tune doctor: %s: cannot read: %s\n", name, strerror(errno));
      rc = -1;
      break;
    }
    if (got == 0) break;
    for (ssize_t i = 0; i < got && !rc; i++) {
      char c = chunk[i];
      if (c == '\n' || c == '\r') {
        /* '\r' too: progress bars rewrite one line; NCCL ends its own with '\n'. */
        if (len) {
          line[len] = 0;
          fn(arg, line);
        }
        len = 0;
        lineno += c == '\n';
        continue;
      }
      if (c == 0) {
        fprintf(stderr,
                "pcie-tune doctor: %s: line %lu holds a NUL byte: this is binary data, not a "
                "log; give the job's text output or its NCCL_DEBUG_FILE\n",
                name, lineno);
        rc = -1;
      } else if (len + 1 >= DR_MAX_LINE) {
        fprintf(stderr,
                "pcie-tune doctor: %s: line %lu is longer than %zu bytes: not a log NCCL or an "
                "engine wrote; give the job's text output or its NCCL_DEBUG_FILE\n",
                name, lineno, DR_MAX_LINE - 1);
        rc = -1;
      } else {
        if (len + 1 >= cap) {
          size_t ncap = cap ? cap * 2 : 4096;
          char *n = realloc(line, ncap);
          if (!n) {
            fprintf(stderr, "pcie-tune doctor: out of memory\n");
            rc = -1;
            break;
          }
          line = n;
          cap = ncap;
        }
        line[len++] = c;
      }
    }
    if (rc) break;
  }
  if (!rc && len) {
    line[len] = 0;
    fn(arg, line);
  }
out:
  if (fd > STDIN_FILENO) close(fd);
  free(chunk);
  free(line);
  return rc;
}
