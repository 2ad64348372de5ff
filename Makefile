# nccl-pcie-tuner build. One Makefile; each component adds its sources in its
# own module.mk (tuner/, sim/, net/, measure/, import/, cli/, test/, bench/).
#
#   make            build/libnccl-tuner-pcie.so and build/pcie-tune
#   make test       the Check suites
#   make asan       the suites under ASan+UBSan (build-asan/)
#   make tsan       the threaded suites under TSan (build-tsan/)
#   make demo       profile a simulated box, then show and simulate it
#   make install PREFIX=/usr/local   (make uninstall PREFIX=... removes it)
#   make deb        build/nccl-pcie-tuner_VERSION_ARCH.deb, checked with lintian
#   make deps       install what the build, the tests and make deb need when missing
#   make mutate     the suites against the one-line mutants of mk/mutants.txt (slow; not CI)

.DEFAULT_GOAL := all
PREFIX ?= /usr/local
DATADIR = $(PREFIX)/share/nccl-pcie-tuner
MANDIR = $(PREFIX)/share/man
# One version (include/pcie/version.h), the one `pcie-tune --version` prints.
VERSION := $(shell sed -n 's/^\#define PT_VERSION "\(.*\)"/\1/p' include/pcie/version.h)
SAN ?=
ifeq ($(SAN),asan)
BUILD ?= build-asan
SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SAN),tsan)
BUILD ?= build-tsan
SANFLAGS = -fsanitize=thread -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS =
endif

CC ?= cc
OPT ?= -O2
WARN = -Wall -Wextra -Werror -Wstrict-prototypes -Wvla -Wwrite-strings -Wpointer-arith \
       -Wformat-security -Wshadow
# Recursively expanded on purpose: pkg-config runs only after `deps` did.
PKG_CFLAGS = $(shell pkg-config --cflags libconfig check 2>/dev/null)
LIBCONFIG_LIBS = $(shell pkg-config --libs libconfig 2>/dev/null)
# The plugin and pcie-tune carry libconfig inside them (a copy of Debian's
# libconfig.a): an inference container that has NCCL but not libconfig.so.9
# still loads the plugin. Nothing of it is exported (mk/exports.txt); LICENSE
# states the LGPL terms. The archive is PIE code whose scanner names libc's
# stdin/stdout/stderr directly, which a shared object cannot; the copy names
# hidden variables instead (mk/libconfig_streams.c, linked as an object, not
# from an archive, so that every link has them).
LIBCONFIG_SYS_A = $(shell pkg-config --variable=libdir libconfig 2>/dev/null)/libconfig.a
LIBCONFIG_A = $(BUILD)/libconfig-static.a
LIBCONFIG_GLUE = $(BUILD)/obj/mk/libconfig_streams.o
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
# -I.: a header from another folder is named with its folder
# ("measure/isolate.h"), so every include shows which way it points.
CPPFLAGS += -Iinclude -I. -D_GNU_SOURCE -DPT_DATADIR='"$(DATADIR)/profiles"'
CFLAGS += -std=c11 $(OPT) -g -fPIC -fvisibility=hidden $(WARN) $(SANFLAGS)
LDFLAGS += $(SANFLAGS)
LDLIBS_SYS = -lm -lpthread -ldl
LDLIBS_CORE = $(LIBCONFIG_LIBS) $(LDLIBS_SYS)
# The plugin and pcie-tune: libconfig linked in.
LDLIBS_STATIC = $(LIBCONFIG_GLUE) $(LIBCONFIG_A) $(LDLIBS_SYS)

SO = $(BUILD)/libnccl-tuner-pcie.so
CORE_LIB = $(BUILD)/libpcie-core.a
SIM_LIB = $(BUILD)/libpcie-sim.a
MEASURE_LIB = $(BUILD)/libpcie-measure.a
IMPORT_LIB = $(BUILD)/libpcie-import.a
CLI = $(BUILD)/pcie-tune
# pcie-tune(1), generated from docs/cli.md so that the two cannot drift.
MAN = $(BUILD)/pcie-tune.1
DEB = $(BUILD)/nccl-pcie-tuner_$(VERSION)_$(shell dpkg --print-architecture 2>/dev/null || echo unknown).deb
DEPS_STAMP = $(BUILD)/.deps-ok

CORE_SRCS :=
PLUGIN_SRCS :=
SIM_SRCS :=
MEASURE_SRCS :=
IMPORT_SRCS :=
CLI_SRCS :=
TEST_SUPPORT_SRCS :=
TESTS :=
TSAN_TESTS :=
BENCHES :=
EXTRA_ALL :=

include tuner/module.mk
include sim/module.mk
-include net/module.mk
include measure/module.mk
include import/module.mk
include cli/module.mk
include mk/gpu.mk
include test/module.mk
include bench/module.mk
include mk/fuzz.mk

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
CORE_OBJS = $(call obj,$(CORE_SRCS))
PLUGIN_OBJS = $(call obj,$(PLUGIN_SRCS))
SIM_OBJS = $(call obj,$(SIM_SRCS))
MEASURE_OBJS = $(call obj,$(MEASURE_SRCS))
IMPORT_OBJS = $(call obj,$(IMPORT_SRCS))
CLI_MAIN_OBJ = $(BUILD)/obj/cli/main.o
CLI_LIB_OBJS = $(call obj,$(filter-out cli/main.c,$(CLI_SRCS)))
CLI_LIB = $(BUILD)/libpcie-cli.a
TEST_SUPPORT_OBJS = $(call obj,$(TEST_SUPPORT_SRCS))
TEST_BINS = $(addprefix $(BUILD)/test/,$(TESTS))
BENCH_BINS = $(addprefix $(BUILD)/bench/,$(BENCHES))

.SECONDARY:
.PHONY: layout-check all deps test asan tsan check-build install uninstall demo clean bench fuzz deb mutate
all: $(SO) $(CLI) $(MAN) $(EXTRA_ALL)

$(MAN): docs/cli.md mk/md2man.awk include/pcie/version.h
	@mkdir -p $(@D)
	awk -v version=$(VERSION) -f mk/md2man.awk docs/cli.md > $@.tmp && mv $@.tmp $@

deps: $(DEPS_STAMP)
$(DEPS_STAMP): mk/deps.sh
	@sh mk/deps.sh
	@mkdir -p $(@D) && touch $@

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
$(CLI_LIB): $(CLI_LIB_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
$(SIM_LIB): $(SIM_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
$(MEASURE_LIB): $(MEASURE_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
$(IMPORT_LIB): $(IMPORT_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# Link order follows the layout's arrows: cli -> measure, import -> sim -> tuner.
APP_LIBS = $(CLI_LIB) $(MEASURE_LIB) $(IMPORT_LIB) $(SIM_LIB) $(CORE_LIB)

# Only the plugin structs leave the .so: -fvisibility=hidden hides the code,
# the version script made from mk/exports.txt is the second lock
# (test_tuner_plugin and test_io_package compare the dynamic symbols with
# the same list).
$(BUILD)/plugin.map: mk/exports.txt
	@mkdir -p $(@D)
	awk 'BEGIN { print "{\n  global:" } !/^#/ && NF { print "    " $$1 ";" } END { print "  local:\n    *;\n};" }' $< > $@
$(LIBCONFIG_A): | $(DEPS_STAMP)
	@test -f $(LIBCONFIG_SYS_A) || { echo "missing $(LIBCONFIG_SYS_A) (libconfig-dev ships it; run make deps)"; exit 1; }
	@mkdir -p $(@D)
	objcopy --redefine-sym stdin=pt_libconfig_stdin --redefine-sym stdout=pt_libconfig_stdout \
	  --redefine-sym stderr=pt_libconfig_stderr $(LIBCONFIG_SYS_A) $@

$(SO): $(PLUGIN_OBJS) $(CORE_LIB) $(LIBCONFIG_GLUE) $(LIBCONFIG_A) $(BUILD)/plugin.map
	$(CC) -shared -o $@ $(PLUGIN_OBJS) $(CORE_LIB) $(LDFLAGS) -Wl,--version-script=$(BUILD)/plugin.map \
	  -Wl,-z,defs -Wl,--no-undefined -Wl,-z,relro,-z,now -Wl,--as-needed $(LDLIBS_STATIC)
	ln -sf $(notdir $@) $(BUILD)/libnccl-net-pcie.so

$(CLI): $(CLI_MAIN_OBJ) $(APP_LIBS) $(LIBCONFIG_GLUE) $(LIBCONFIG_A)
	$(CC) -o $@ $(CLI_MAIN_OBJ) $(APP_LIBS) $(LDFLAGS) -Wl,-z,relro,-z,now -Wl,--as-needed $(LDLIBS_STATIC) $(CLI_LIBS)

$(BUILD)/test/%: test/%.c $(TEST_SUPPORT_OBJS) $(APP_LIBS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itest $(PKG_CFLAGS) $(CFLAGS) -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJS) \
	  $(APP_LIBS) $(LDFLAGS) $(CHECK_LIBS) $(LDLIBS_CORE) $(CLI_LIBS)

$(BUILD)/bench/%: bench/%.c $(APP_LIBS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(APP_LIBS) $(LDFLAGS) $(LDLIBS_CORE) $(CLI_LIBS)

# Every suite runs even when one fails; the target fails if any did.
test: all $(TEST_BINS) layout-check
	@fail=0; for t in $(TESTS); do \
	  echo "== $$t"; \
	  PCIE_TUNER_SO=$(abspath $(SO)) PCIE_TUNE=$(abspath $(CLI)) PT_SRCDIR=$(CURDIR) \
	    $(BUILD)/test/$$t || fail=1; \
	done; exit $$fail

asan:
	$(MAKE) SAN=asan test
# A TSan report must fail the suite, not just print.
tsan:
	TSAN_OPTIONS="halt_on_error=1 $${TSAN_OPTIONS:-}" $(MAKE) SAN=tsan TESTS="$(TSAN_TESTS)" test

# Applies each mutant of mk/mutants.txt to a scratch copy of the tree, builds
# it and runs its suites; prints the score (docs/performance.md's neighbour,
# docs/design.md "Testing", records the last one). Slow, so not part of CI.
mutate: all
	@sh mk/mutate.sh mk/mutants.txt

bench: all $(BENCH_BINS)
	@for b in $(BENCHES); do PCIE_TUNER_SO=$(abspath $(SO)) PT_SRCDIR=$(CURDIR) $(BUILD)/bench/$$b || exit 1; done

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(DATADIR)/profiles \
	  $(DESTDIR)$(DATADIR)/examples $(DESTDIR)$(PREFIX)/share/doc/nccl-pcie-tuner
	install -m 755 $(SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libnccl-tuner-pcie.so $(DESTDIR)$(PREFIX)/lib/libnccl-net-pcie.so
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/
	# Illustrations (example-*.cfg) must never be picked up automatically:
	# they go beside the profiles directory the plugin scans, not into it.
	for f in profiles/*.cfg; do case $${f##*/} in \
	  example-*) install -m 644 $$f $(DESTDIR)$(DATADIR)/examples/ ;; \
	  *) install -m 644 $$f $(DESTDIR)$(DATADIR)/profiles/ ;; esac; done
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/nccl-pcie-tuner/
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(MAN) $(DESTDIR)$(MANDIR)/man1/
	@sh mk/ldconfig.sh install $(PREFIX)/lib $(DESTDIR)

# Removes what install put there, by name: a profile the user added to the
# profiles directory stays, and so does the directory then.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libnccl-tuner-pcie.so $(DESTDIR)$(PREFIX)/lib/libnccl-net-pcie.so \
	  $(DESTDIR)$(PREFIX)/bin/pcie-tune $(DESTDIR)$(MANDIR)/man1/pcie-tune.1
	for f in profiles/*.cfg; do rm -f $(DESTDIR)$(DATADIR)/profiles/$${f##*/} \
	  $(DESTDIR)$(DATADIR)/examples/$${f##*/}; done
	for f in README.md docs/*.md; do rm -f $(DESTDIR)$(PREFIX)/share/doc/nccl-pcie-tuner/$${f##*/}; done
	-rmdir $(DESTDIR)$(DATADIR)/profiles $(DESTDIR)$(DATADIR)/examples $(DESTDIR)$(DATADIR) \
	  $(DESTDIR)$(PREFIX)/share/doc/nccl-pcie-tuner 2>/dev/null
	@sh mk/ldconfig.sh uninstall $(PREFIX)/lib $(DESTDIR)

# The Debian package: `make install` into a staging root with PREFIX=/usr,
# then mk/deb.sh adds the package's metadata, builds it and runs lintian.
deb: all
	rm -rf $(BUILD)/deb
	$(MAKE) --no-print-directory install DESTDIR=$(abspath $(BUILD))/deb/root PREFIX=/usr
	sh mk/deb.sh $(BUILD)/deb/root $(VERSION) $(DEB)

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
