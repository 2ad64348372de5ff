/*
 * The files the plugin and the tools read and write
 * (docs/profile-format.md, "Files the tools read and write").
 *
 * Inputs are regular files only. They are opened without blocking, so a
 * FIFO cannot hang a job or a command, and their size is checked before
 * reading, so /dev/zero or a huge sparse file costs nothing. Outputs are
 * written atomically (temporary file beside the target, fsync, link or
 * rename), never replace anything but a regular file, and are never one of
 * the inputs. '-' names standard output for every output.
 *
 * Functions return 0 or a negative PT_E* code with *err filled, and never
 * print. They take no lock, so callers decide what they hold meanwhile.
 */
#ifndef PCIE_FILES_H
#define PCIE_FILES_H

#include <stddef.h>

#include "pcie/profile.h"

/* Far above any real profile (a full sweep of five collectives in both
 * modes is a few MiB); keeps a wrong file out before a byte is read. */
#define PT_MAX_PROFILE_BYTES ((size_t)16 << 20)
/* Box descriptions and workload files: hand-written, a few KiB. */
#define PT_MAX_SMALL_INPUT ((size_t)1 << 20)

enum pt_read_flags {
  PT_READ_STDIN = 1 << 0, /* "-" reads standard input (the user's own pipe) */
  /* A text file: a NUL byte is refused with its line. Parsers that take a
   * C string (libconfig, the workload and topology readers) would
   * otherwise stop there and silently lose the rest of the file. */
  PT_READ_TEXT = 1 << 1,
};

/* Reads all of path into a malloc'ed NUL-terminated buffer (*len bytes, a
 * NUL inside possible). Refuses anything that is not a regular file and
 * anything larger than max bytes, with a message that says what to do. */
int pt_file_read(const char *path, size_t max, unsigned flags, char **text, size_t *len,
                 struct pt_error_rec *err);

/* Refuses libconfig's @include directive, with the line it is on. An
 * included file is resolved against each process's working directory and
 * is not covered by the profile's hash, and libconfig exits the process
 * when it cannot read one: a profile or box file must be self-contained. */
int pt_text_refuse_include(const char *text, const char *file, struct pt_error_rec *err);

/* What a profile may hold, so that reading any file costs little (tens of
 * ms and a few MB: libconfig allocates a setting per value, ~100 bytes and
 * ~0.3 us each). A full sweep of every collective in both modes has about
 * 10^4 tokens, a nesting depth of 6 and strings of a few hundred bytes. */
#define PT_MAX_PROFILE_TOKENS 65536
#define PT_MAX_PROFILE_DEPTH 32
#define PT_MAX_PROFILE_WORD 256      /* a name or a number */
#define PT_MAX_PROFILE_STRING 65536  /* one string literal */
#define PT_MAX_PROFILE_STRINGS (1 << 20) /* all of them */
/* libconfig checks each new member of a group against every earlier one
 * (O(N^2 * L) for N names of L bytes): the sum over all groups of
 * earlier-members x (name length + PT_NAME_COMPARE_OVERHEAD). 2000 names of
 * 248 bytes in one group took 1.6 s; at this bound any shape costs a few
 * ms (docs/performance.md, "Profile init"). A simulated sweep profile needs ~5000. */
#define PT_MAX_PROFILE_NAME_WORK 4000000
#define PT_NAME_COMPARE_OVERHEAD 16

/* Refuses, before any parsing, a profile text over those bounds: more
 * tokens (names, numbers, strings, opening brackets) than
 * PT_MAX_PROFILE_TOKENS, groups or lists nested deeper than
 * PT_MAX_PROFILE_DEPTH, a longer name, number or string, more bytes of
 * strings in all, or groups whose duplicate-name checks in libconfig would
 * exceed PT_MAX_PROFILE_NAME_WORK. One linear pass; allocates nothing. */
int pt_text_prescan(const char *text, size_t len, const char *file, struct pt_error_rec *err);

/* The atomic write's flags; PT_WRITE_FORCE (pcie/profile.h) is 1 << 0. */
enum pt_output_flags {
  PT_OUT_FORCE = 1 << 0, /* replace an existing regular file (through a symlink) */
};

/* Checks, before any work is done, that path can be written: '-' (standard
 * output); a missing file in a writable directory; or, with PT_OUT_FORCE, an
 * existing regular file or a symlink to one (written through: the link
 * stays). Refuses a FIFO, device, socket or directory, an existing file
 * without force, a missing or read-only directory, and any of the ninputs
 * input paths (by device and inode, so a second name for it is caught). */
int pt_output_check(const char *path, unsigned flags, const char *const *inputs, size_t ninputs,
                    struct pt_error_rec *err);

/* The file a write of path replaces: a malloc'ed copy of path, or, for a
 * symlink, the canonical path of the file it names. NULL when out of
 * memory or when the link leads nowhere. */
char *pt_output_target(const char *path);

/* Writes len bytes of data to path: to standard output for '-', else
 * atomically with the rules of pt_output_check (no input list here: call
 * it first). Without PT_OUT_FORCE an existing file is PT_EEXIST, even one
 * that appeared since the check. */
int pt_output_write(const char *path, const void *data, size_t len, unsigned flags,
                    struct pt_error_rec *err);

#endif
