/* PLACEHOLDER until its issue lands: replaced by the real subcommand. */
#include <stdio.h>
#include "cmds.h"
int cmd_profile(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "pcie-tune profile: not built yet\n");
  return 2;
}
