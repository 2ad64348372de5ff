# GPU backend of `pcie-tune profile --backend nccl` (measure/gpu_*.c). It is
# always built: NCCL and the CUDA runtime are opened with dlopen at run time
# (measure/gpu_api.h), so no CUDA header or library is needed to build, and
# a CUDA 11, 12 or 13 stack (or the test double) is chosen when measuring.
#
#   NCCL_HOME  where a libnccl.so.2 may be found at build time (default
#              /usr/local/cuda); it is only a fallback after the loader's
#              path and --nccl-lib.
NCCL_HOME ?= /usr/local/cuda
GPU_NCCL_LIB := $(firstword $(wildcard $(NCCL_HOME)/lib64/libnccl.so.2 $(NCCL_HOME)/lib/libnccl.so.2 \
  /usr/lib/x86_64-linux-gnu/libnccl.so.2))
ifneq ($(GPU_NCCL_LIB),)
$(BUILD)/obj/measure/gpu_api.o: CPPFLAGS += -DPT_NCCL_LIB='"$(GPU_NCCL_LIB)"'
endif
CLI_LIBS += -ldl -lpthread

# Objects do not depend on flags, so a changed fallback is recorded in a
# stamp gpu_api.o depends on; it is rewritten only when it changes.
GPU_STAMP := $(BUILD)/gpu-config
GPU_CONFIG := dlopen:$(GPU_NCCL_LIB)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(GPU_STAMP) 2>/dev/null)" = "$(GPU_CONFIG)" ] || \
  echo "$(GPU_CONFIG)" > $(GPU_STAMP); })
$(BUILD)/obj/measure/gpu_api.o: $(GPU_STAMP)
