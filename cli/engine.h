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

#include "pcie/profile.h"

/* The engines --engine takes, as a table row's choice list, in index order. */
#define CLI_ENGINES "none|vllm|sglang"
/* The name of engine index i of CLI_ENGINES. */
const char *cli_engine_name(int i);

/* Sets engine's variables in this process's environment where unset (as
 * the engines do: each leaves a variable the user set alone), and writes
 * one line saying what was set and what was kept into msg ("" for none). */
void cli_engine_apply(const char *engine, char *msg, size_t len);

/* For a profile that recorded its NCCL environment: each variable an
 * engine sets in its workers (where this shell leaves it unset) at another
 * value than the measurement had, with what it means in such a job and
 * what to do, appended to buf as "; in a vLLM or SGLang job ..." (nothing
 * when none differs). */
void cli_engine_env_note(const struct pt_profile *p, char *buf, size_t len);

#endif
