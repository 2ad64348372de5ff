# Simulated NCCL host and simulated PCIe boxes (libpcie-sim.a, used by the
# CLI, the tests and the benches; never by the plugin).
SIM_SRCS += $(wildcard sim/*.c)

# make demo: show a simulated box where NCCL mis-tunes (its NCCL view derived
# by NCCL's own topology search), profile it, show and simulate the profile,
# and print the two lines that use the plugin (docs/cli.md). Runs any number
# of times; everything it writes stays in $(BUILD)/demo. The build is quiet:
# only errors reach the terminal.
DEMO_BOX ?= gen5-8x-dual-misdetect
DEMO_DIR = $(BUILD)/demo
DEMO_PROFILE = $(DEMO_DIR)/$(DEMO_BOX).cfg
# Two compile jobs unless make was given its own -j (a fresh clone builds in
# about 20 s on two cores instead of 40).
DEMO_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j2)
demo:
	@$(MAKE) --no-print-directory -s $(DEMO_JOBS) all
	@mkdir -p $(DEMO_DIR)
	@echo "== The box, and what NCCL makes of it (pcie-tune box $(DEMO_BOX))"
	@$(CLI) box $(DEMO_BOX) | sed -n '1,3p'
	@echo
	@echo "== Measuring every candidate on it (pcie-tune profile --backend sim)"
	@$(CLI) profile --backend sim --box $(DEMO_BOX) --out $(DEMO_PROFILE) --force --quiet
	@$(CLI) show $(DEMO_PROFILE) --svg $(DEMO_DIR)/$(DEMO_BOX).svg --force
	@echo
	@echo "== A job on the box with the plugin (pcie-tune simulate)"
	@PCIE_TUNER_SO=$(abspath $(SO)) $(CLI) simulate $(DEMO_PROFILE) --box $(DEMO_BOX)
	@echo
	@echo "Chart: $(abspath $(DEMO_DIR)/$(DEMO_BOX).svg)"
	@echo "This profile describes the simulated box: a job on real GPUs refuses it (another box)."
	@echo "On your box, measure it, then use the plugin in the job:"
	@echo "$(abspath $(CLI)) profile --backend nccl --gpus 0-7 --engine vllm --out my-box.cfg  # or --engine sglang"
	@echo "export NCCL_TUNER_PLUGIN=$(abspath $(SO))"
	@echo "export PCIE_TUNER_PROFILE=\$$PWD/my-box.cfg"
