# Benchmarks (never part of `make test`): every bench/*.c is one binary.
BENCHES += $(notdir $(basename $(wildcard bench/*.c)))
# bench/net makes its network namespaces with the tests' helper
# (test/support/net_ns.c).
$(BUILD)/bench/net: $(BUILD)/obj/test/support/net_ns.o
$(BUILD)/bench/net: CPPFLAGS += -Itest
$(BUILD)/bench/net: LDFLAGS += $(BUILD)/obj/test/support/net_ns.o
