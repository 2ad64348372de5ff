/* PLACEHOLDER until its issue lands: replaced by the real subcommand. */
#include <stdio.h>
#include "cmds.h"
int cmd_simulate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "pcie-tune simulate: not built yet\n");
  return 2;
}
