# pcie-tune: cli/main.c dispatches to one file per subcommand.
CLI_SRCS += $(wildcard cli/*.c)
CLI_LIBS +=
EXTRA_ALL +=
