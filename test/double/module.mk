# The device double (test/double/README.md): a stand-in for the CUDA runtime
# and NCCL, for tests only. Built by `make test`, never by `make all`, never
# installed; its name says what it is so nobody mistakes it for NCCL.
DOUBLE_SO = $(BUILD)/test/double/libnccl-double-cudart-nccl.so
DOUBLE_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard test/double/*.c))

$(DOUBLE_SO): $(DOUBLE_OBJS) $(SIM_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $(DOUBLE_OBJS) $(SIM_LIB) $(CORE_LIB) $(LDFLAGS) -Wl,-z,defs $(LDLIBS_CORE) -lrt

test: $(DOUBLE_SO)
