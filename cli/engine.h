/*
 * pcie-tune profile --engine: the NCCL variables an inference engine sets
 * in its own processes before NCCL starts, which change NCCL's transports,
 * buffers or algorithms, applied to the profiler's environment so that the
 * workers measure what the engine's NCCL runs and the profile's nccl_env
 * records them (the plugin then warns when a job's differ). docs/gpu.md,
 * "Engines", cites each setting.
 */
#ifndef PCIE_CLI_ENGINE_H
#define PCIE_CLI_ENGINE_H

#include <stddef.h>

/* The engines --engine takes, as a table row's choice list, in index order. */
#define CLI_ENGINES "none|vllm|sglang"
/* The name of engine index i of CLI_ENGINES. */
const char *cli_engine_name(int i);

/* Sets engine's variables in this process's environment where unset (as
 * the engines do: each leaves a variable the user set alone), and writes
 * one line saying what was set and what was kept into msg ("" for none). */
void cli_engine_apply(const char *engine, char *msg, size_t len);

#endif
