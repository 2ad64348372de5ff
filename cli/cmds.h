/* The pcie-tune subcommands; each lives in cli/<name>.c. They take the
 * arguments after the subcommand name and return the process exit status:
 * 0 success, 1 a failed check or operation, 2 bad usage. */
#ifndef PCIE_CLI_CMDS_H
#define PCIE_CLI_CMDS_H

int cmd_profile(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_screen(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_box(int argc, char **argv);
/* Hidden: the isolated measurement worker that `profile` starts. */
int cmd_worker(int argc, char **argv);

/* Each command's option table (cli/opt.h), for tests that hold --help
 * against what the parser accepts. */
struct cli_cmd;
extern const struct cli_cmd profile_cli, import_cli, show_cli, check_cli, simulate_cli, doctor_cli, box_cli,
    worker_cli, screen_cli;

#endif
