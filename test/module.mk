# Every test/test_*.c is one Check suite binary; test/support/*.c is shared.
TESTS += $(notdir $(basename $(wildcard test/test_*.c)))
TEST_SUPPORT_SRCS += $(wildcard test/support/*.c)
# Suites with threads, also run under TSan by `make tsan`.
TSAN_TESTS += test_concurrency
