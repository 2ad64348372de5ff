# Simulated NCCL host and simulated PCIe boxes (libpcie-sim.a, used by the
# CLI, the tests and the benches; never by the plugin).
SIM_SRCS += $(wildcard sim/*.c)

# make demo: profile the default simulated 8-GPU box, then show and
# simulate it (docs/cli.md). Everything it writes stays in $(BUILD)/demo.
DEMO_BOX ?= gen5-8x-p2p
demo: all
	@mkdir -p $(BUILD)/demo
	$(CLI) profile --backend sim --box $(DEMO_BOX) --out $(BUILD)/demo/$(DEMO_BOX).cfg --force
	$(CLI) show $(BUILD)/demo/$(DEMO_BOX).cfg --svg $(BUILD)/demo/$(DEMO_BOX).svg
	PCIE_TUNER_SO=$(abspath $(SO)) $(CLI) simulate $(BUILD)/demo/$(DEMO_BOX).cfg --box $(DEMO_BOX)
