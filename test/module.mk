# Every test/test_*.c is one Check suite binary; test/support/*.c is shared.
TESTS += $(notdir $(basename $(wildcard test/test_*.c)))
TEST_SUPPORT_SRCS += $(wildcard test/support/*.c)
# Suites with threads, also run under TSan by `make tsan`.
TSAN_TESTS += test_tuner_concurrency test_io_plugin
# The GPU backend through the device double: rank threads (single process),
# the double's streams and rendezvous.
TSAN_TESTS += test_measure_double

# The layout's one rule (README, "Layout"): nothing outside cli/ includes a
# cli/ header. Run before the suites by `make test`.
layout-check:
	@bad=$$(grep -lE '#include "(cli/|cmds\.h|opt\.h|progress\.h|svg\.h)' \
	  tuner/* net/* sim/* measure/* import/* include/*/* 2>/dev/null); \
	if [ -n "$$bad" ]; then echo "layout: these include a cli/ header: $$bad"; exit 1; fi

# The CUDA runtime + NCCL double that the GPU backend's tests run through.
include test/double/module.mk
include test/ncclver_double/module.mk

# make e2e-table: rewrite the table of docs/performance.md's "Simulated
# tuning quality" section (between its e2e-table markers) from what
# test_e2e prints; test_e2e fails when a row there differs from its run.
e2e-table: all $(BUILD)/test/test_e2e
	@PCIE_TUNER_SO=$(abspath $(SO)) PCIE_TUNE=$(abspath $(CLI)) PT_SRCDIR=$(CURDIR) PT_E2E_NO_DOCS=1 \
	  $(BUILD)/test/test_e2e | sed -n 's/^e2e-row //p' > $(BUILD)/e2e-rows.md
	@awk -v rows=$(BUILD)/e2e-rows.md \
	  '/<!-- e2e-table end -->/ { while ((getline l < rows) > 0) print l; skip = 0 } \
	   !skip { print } \
	   /<!-- e2e-table begin -->/ { print "| box (mode) | tuned/oracle geomean | worst | NCCL default / tuned, 32–256 KB geomean | min |"; \
	     print "|---|---|---|---|---|"; skip = 1 }' docs/performance.md > $(BUILD)/performance.md.new
	@mv $(BUILD)/performance.md.new docs/performance.md
	@echo "docs/performance.md: e2e table rewritten ($$(wc -l < $(BUILD)/e2e-rows.md) rows)"
.PHONY: e2e-table
