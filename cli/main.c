/*
 * pcie-tune: dispatches to one subcommand per file (cli/<name>.c). Owns the
 * top-level usage only; each subcommand declares its options in one table
 * (cli/opt.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "pcie/version.h"

struct subcommand {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary; /* NULL: hidden */
};

static const struct subcommand subcommands[] = {
    {"profile", cmd_profile, "measure candidates on GPUs or a simulated box and write a profile"},
    {"import", cmd_import, "build a profile from nccl-tests logs"},
    {"show", cmd_show, "print (and draw) the decisions a profile makes"},
    {"check", cmd_check, "validate profiles"},
    {"screen", cmd_screen, "screen a profile's LL128 choices for correctness on this box's GPUs"},
    {"simulate", cmd_simulate, "drive the plugin over a workload on a simulated box"},
    {"doctor", cmd_doctor, "read a job's NCCL_DEBUG=INFO log: is the plugin loaded and working?"},
    {"box", cmd_box, "show a simulated box, or write one from an NCCL topology dump"},
    {"worker", cmd_worker, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: pcie-tune <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    if (subcommands[i].summary) fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
  fprintf(f, "\n'pcie-tune <command> --help' describes one command; see docs/cli.md.\n");
}

/* Every command's standard output, checked once for all: what a full disk
 * or a closed pipe swallowed is an error, in the shared writer's words
 * (tuner/files.c), never a silent success. */
static int stdout_checked(const char *cmd, int status) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return status;
  fprintf(stderr, "pcie-tune %s: <stdout>: cannot write: %s\n", cmd, strerror(errno ? errno : EIO));
  return status ? status : 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return stdout_checked("--help", 0);
  }
  if (!strcmp(argv[1], "--version")) {
    printf("pcie-tune " PT_VERSION "\n");
    return 0;
  }
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    if (!strcmp(argv[1], subcommands[i].name))
      return stdout_checked(subcommands[i].name, subcommands[i].fn(argc - 1, argv + 1));
  fprintf(stderr, "pcie-tune: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
