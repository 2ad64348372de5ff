/* PLACEHOLDER until its issue lands: replaced by the real subcommand. */
#include <stdio.h>
#include "cmds.h"
int cmd_check(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "pcie-tune check: not built yet\n");
  return 2;
}
