# Benchmarks (never part of `make test`): every bench/*.c is one binary.
BENCHES += $(notdir $(basename $(wildcard bench/*.c)))
