/* PLACEHOLDER until its issue lands: replaced by the real subcommand. */
#include <stdio.h>
#include "cmds.h"
int cmd_import(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "pcie-tune import: not built yet\n");
  return 2;
}
