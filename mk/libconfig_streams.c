/*
 * The three streams libconfig's scanner names, for the copy of libconfig.a
 * linked into the plugin and pcie-tune (Makefile, LIBCONFIG_A).
 *
 * Debian builds libconfig.a as position-independent executable code: its
 * flex scanner refers to libc's stdin, stdout and stderr with PC-relative
 * relocations, which a shared object cannot make to data in another
 * library. The build renames those three references in its copy of the
 * archive (objcopy --redefine-sym) to the hidden variables below, which
 * then live inside the library itself and are pointed at libc's streams
 * when it loads. libconfig reads profiles from memory (config_read_string),
 * so the scanner never reads stdin; stderr is its message before exit on an
 * internal failure, the same as with the shared libconfig.
 */
#include <stdio.h>

__attribute__((visibility("hidden"))) FILE *pt_libconfig_stdin, *pt_libconfig_stdout, *pt_libconfig_stderr;

__attribute__((constructor)) static void pt_libconfig_streams(void) {
  pt_libconfig_stdin = stdin;
  pt_libconfig_stdout = stdout;
  pt_libconfig_stderr = stderr;
}
