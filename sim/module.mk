# Simulated NCCL host and simulated PCIe boxes (libpcie-sim.a, used by the
# CLI, the tests and the benches; never by the plugin).
SIM_SRCS += $(wildcard sim/*.c)
