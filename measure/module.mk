# The measurement engine (libpcie-measure.a): the sweep and its checkpoint
# file, the backends (simulated, isolated worker, GPU over NCCL) and worker
# isolation. It depends on tuner/ and sim/, never on cli/. mk/gpu.mk decides
# whether measure/gpu_nccl.c or measure/gpu_absent.c is built.
MEASURE_SRCS += $(wildcard measure/*.c)
