# Tuner core (static library shared by the plugin, the CLI and the tests) and
# the ABI shims, which only the plugin links.
CORE_SRCS += $(filter-out tuner/tuner_v%.c,$(wildcard tuner/*.c))
PLUGIN_SRCS += $(wildcard tuner/tuner_v*.c)
