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
	@bad=$$(grep -lE '#include "(cli/|cmds\.h|args\.h|progress\.h|svg\.h)' \
	  tuner/* net/* sim/* measure/* import/* include/*/* 2>/dev/null); \
	if [ -n "$$bad" ]; then echo "layout: these include a cli/ header: $$bad"; exit 1; fi

# The CUDA runtime + NCCL double that the GPU backend's tests run through.
include test/double/module.mk
include test/ncclver_double/module.mk
