/* What `check` and `show` say about where a profile was measured. */
#ifndef PCIE_CLI_PROV_TEXT_H
#define PCIE_CLI_PROV_TEXT_H

#include <stddef.h>

#include "pcie/profile.h"

/* "8 GPUs 10de:2330, PCIe gen5 x16, NUMA nodes 0, 1, ..." from
 * provenance.box, or, without one, what the plugin then does. */
void cli_prov_box(const struct pt_profile *p, char *buf, size_t len);

#endif
