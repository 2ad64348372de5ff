/*
 * Whether the plugin will use a profile on this host, as its init decides
 * (tuner/core.c refuse: a partial sweep, then tuner/provenance.c
 * pt_prov_check with this host's sysfs and the NCCL the job loads: the
 * engine's, VLLM_NCCL_SO_PATH or torch's wheel, else the loader's), in
 * one line for import, check and show, with what to do when it will not.
 */
#ifndef PCIE_CLI_HOST_VERDICT_H
#define PCIE_CLI_HOST_VERDICT_H

#include <stddef.h>

#include "pcie/profile.h"

/* Writes "on this host, with NCCL V from PATH: the plugin uses this profile
 * (...)" or "...: the plugin refuses this profile: WHY; WHAT TO DO" into buf, for a
 * communicator of nnodes nodes (0: the profile's match.nnodes, else 1).
 * Returns 1 when the plugin would refuse it, else 0. */
int cli_host_verdict(const struct pt_profile *p, size_t nnodes, char *buf, size_t len);

#endif
