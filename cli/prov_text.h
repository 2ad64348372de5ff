/* What `check`, `show` and `import` say about where a profile was
 * measured, and about its LL128 screen. */
#ifndef PCIE_CLI_PROV_TEXT_H
#define PCIE_CLI_PROV_TEXT_H

#include <stddef.h>

#include "pcie/profile.h"

/* "8 GPUs 10de:2330, PCIe gen5 x16, NUMA nodes 0, 1, ..." from
 * provenance.box, or, without one, what the plugin then does. */
void cli_prov_box(const struct pt_profile *p, char *buf, size_t len);

/* What the plugin does with p's LL128 choices (pt_profile_ll128_usable)
 * when no passing screen is recorded, and what to run (path: the profile
 * as the user named it). Returns 1 with buf filled, or 0 (buf "") when
 * there is nothing to say: no LL128 choice, or a passing screen. */
int cli_ll128_text(const struct pt_profile *p, const char *path, char *buf, size_t len);

#endif
