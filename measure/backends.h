/* Constructors of the measurement backends `pcie-tune profile` can use; each
 * lives in measure/backend_<name>.c and fills a struct pt_backend
 * (include/pcie/sweep.h). The caller releases it with b->close(b->self). */
#ifndef PCIE_CLI_BACKENDS_H
#define PCIE_CLI_BACKENDS_H

#include <stdint.h>

#include "pcie/sim_box.h"
#include "pcie/sweep.h"

/* A simulated box; seed selects the noise. Returns 0 or PT_ENOMEM. */
int pt_backend_sim_open(struct pt_backend *b, const struct pt_box *box, uint64_t seed);

#endif
