# The NCCL-version double (test/ncclver_double/ncclver_double.c): NCCL's
# logger and ncclGetVersion in a library of their own, for the plugin's
# version lookup. Built by `make test` only; never installed.
NCCLVER_DOUBLE_SO = $(BUILD)/test/ncclver_double/libnccl-double-version.so

$(NCCLVER_DOUBLE_SO): test/ncclver_double/ncclver_double.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared -o $@ $< $(LDFLAGS)

test: $(NCCLVER_DOUBLE_SO)
