# `make fuzz`: the nccl-tests parser under libFuzzer (clang, ASan, UBSan)
# for FUZZ_TIME seconds over fuzz/corpus/ (seeded from the importer's
# fixtures). Inputs that crash are copied into
# test/data/nccltests/fuzz-regressions/, which test_import_nccltests replays, and
# the target fails. Not part of `make test`: it needs clang's libFuzzer.
#
# So that the targets cannot rot: `make fuzz-build` builds them with clang
# (.ci/run does when clang is present) and replays the seeds and kept
# crashes once each; `make test` builds them with $(CC) and
# fuzz/replay_main.c instead of libFuzzer and replays the same inputs.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_BUILD = build-fuzz
FUZZ_SRCS = fuzz/fuzz_nccltests.c import/nccltests.c import/import_lex.c import/import_coll.c import/ncclog.c \
            import/import_setting.c tuner/names.c tuner/profile_model.c tuner/hostinfo.c
FUZZ_BIN = $(FUZZ_BUILD)/fuzz_nccltests
FUZZ_REGRESS = test/data/nccltests/fuzz-regressions

$(FUZZ_BIN): $(FUZZ_SRCS) import/nccltests.h import/import_lex.h import/import_coll.h import/import_setting.h import/ncclog.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -g -O1 -Iinclude -I. -D_GNU_SOURCE \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $(FUZZ_SRCS)

FUZZ_INPUTS = fuzz/corpus/*.txt $(FUZZ_REGRESS)/*
FUZZ_REPLAY = $(BUILD)/fuzz/fuzz_nccltests-replay

fuzz-build: $(FUZZ_BIN)
	$(FUZZ_BIN) -runs=0 $(FUZZ_INPUTS)

# Linked with the libraries the suites use (the importer and the core).
$(FUZZ_REPLAY): fuzz/fuzz_nccltests.c fuzz/replay_main.c $(IMPORT_LIB) $(CORE_LIB) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ fuzz/fuzz_nccltests.c fuzz/replay_main.c \
	  $(IMPORT_LIB) $(CORE_LIB) $(LDFLAGS) $(LDLIBS_CORE)

fuzz-replay: $(FUZZ_REPLAY)
	$(FUZZ_REPLAY) $(FUZZ_INPUTS)
test: fuzz-replay
.PHONY: fuzz-build fuzz-replay

# The seeds are the fixtures themselves, copied so that libFuzzer's additions
# to the working corpus never land in test/data.
fuzz: $(FUZZ_BIN)
	@rm -rf $(FUZZ_BUILD)/crashes; mkdir -p $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/crashes
	@cp fuzz/corpus/* test/data/nccltests/real/*.txt test/data/nccltests/synth/*.txt \
	  $(FUZZ_REGRESS)/* $(FUZZ_BUILD)/corpus/ 2>/dev/null; rm -f $(FUZZ_BUILD)/corpus/README.md
	@status=0; $(FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
	  -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crashes/ $(FUZZ_BUILD)/corpus || status=$$?; \
	found=0; for f in $(FUZZ_BUILD)/crashes/*; do [ -f "$$f" ] || continue; \
	  cp "$$f" $(FUZZ_REGRESS)/; found=$$((found + 1)); done; \
	if [ $$found -gt 0 ] || [ $$status -ne 0 ]; then \
	  echo "fuzz: $$found crashing input(s) kept in $(FUZZ_REGRESS)/ (status $$status)"; exit 1; fi; \
	echo "fuzz: no crash in $(FUZZ_TIME)s"
