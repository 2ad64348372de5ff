# GPU backend of `pcie-tune profile --backend nccl` (measure/gpu_*.c): built only
# where the CUDA runtime and NCCL are found; otherwise measure/gpu_absent.c says
# how to get it and everything else builds and tests as before. Include it
# after measure/module.mk:   -include mk/gpu.mk
#
#   CUDA_HOME  toolkit root (cuda_runtime.h, libcudart_static.a)
#   NCCL_HOME  NCCL root (nccl.h, libnccl.so.2); defaults to CUDA_HOME
#
# cudart is linked statically, so pcie-tune starts on machines without the
# CUDA runtime (it needs the driver only when measuring GPUs). libnccl is
# dlopen'ed by the worker (measure/gpu_ncclapi.c), never linked: NCCL is only
# needed where GPUs are measured, and --nccl-lib can pick the one the
# inference stack uses; the one found here is the fallback.
CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)

GPU_CUDA_INC := $(firstword $(wildcard $(CUDA_HOME)/include/cuda_runtime.h))
GPU_NCCL_INC := $(firstword $(wildcard $(NCCL_HOME)/include/nccl.h /usr/include/nccl.h))
GPU_CUDART := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart_static.a \
  $(CUDA_HOME)/lib/libcudart_static.a $(CUDA_HOME)/targets/x86_64-linux/lib/libcudart_static.a))
GPU_NCCL_LIB := $(firstword $(wildcard $(NCCL_HOME)/lib64/libnccl.so.2 $(NCCL_HOME)/lib/libnccl.so.2 \
  /usr/lib/x86_64-linux-gnu/libnccl.so.2))

ifneq ($(and $(GPU_CUDA_INC),$(GPU_NCCL_INC),$(GPU_CUDART),$(GPU_NCCL_LIB)),)
GPU_BUILT := 1
# -isystem: CUDA's headers are not held to our warnings. /usr/include is
# searched anyway and must not be reordered.
GPU_INCS := $(addprefix -isystem ,$(filter-out /usr/include/,$(sort $(dir $(GPU_CUDA_INC) $(GPU_NCCL_INC)))))
GPU_CPPFLAGS := -DPT_HAVE_GPU=1 -DPT_NCCL_LIB='"$(GPU_NCCL_LIB)"' $(GPU_INCS)
CLI_LIBS += $(GPU_CUDART) -lrt -ldl -lpthread
else
GPU_BUILT := 0
GPU_CPPFLAGS :=
endif

$(BUILD)/obj/measure/gpu_%.o: CPPFLAGS += $(GPU_CPPFLAGS)
# test_measure_gpu* check that the backend is built exactly when it should be.
$(patsubst test/%.c,$(BUILD)/test/%,$(wildcard test/test_measure_gpu*.c)): CPPFLAGS += -DPT_GPU_EXPECTED=$(GPU_BUILT)

# Objects do not depend on flags, so a changed detection (CUDA installed,
# CUDA_HOME moved) is recorded in a stamp they depend on; it is rewritten
# only when the detection changes.
GPU_STAMP := $(BUILD)/gpu-config
GPU_CONFIG := $(GPU_BUILT):$(CUDA_HOME):$(NCCL_HOME):$(GPU_CUDART):$(GPU_NCCL_LIB)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(GPU_STAMP) 2>/dev/null)" = "$(GPU_CONFIG)" ] || \
  echo "$(GPU_CONFIG)" > $(GPU_STAMP); })
$(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard measure/gpu_*.c)): $(GPU_STAMP)
$(patsubst test/%.c,$(BUILD)/test/%,$(wildcard test/test_measure_gpu*.c)): $(GPU_STAMP)
