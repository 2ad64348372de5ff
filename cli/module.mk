# pcie-tune: cli/main.c dispatches to one file per subcommand; nothing else
# links cli/. The engine is measure/, the importers import/.
CLI_SRCS += $(wildcard cli/*.c)
CLI_LIBS +=
EXTRA_ALL +=
