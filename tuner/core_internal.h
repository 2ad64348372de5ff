/* Between the tuner core and the profiler's control interface; not installed. */
#ifndef PCIE_CORE_INTERNAL_H
#define PCIE_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "pcie/table.h"

/* The forced choice, 0 when nothing is forced (layout in control.c). The
 * hot path tests it inline with one relaxed load. */
extern _Atomic uint64_t pt__forced;
static inline int pt__control_active(void) {
  return atomic_load_explicit(&pt__forced, memory_order_relaxed) != 0;
}
/* When the profiler forces a choice: fills *h (one candidate) and *chunk
 * and returns 1; otherwise 0. */
int pt__control_forced(struct pt_hot *h, uint32_t *chunk);
/* Counts a forced decision as applied (1) or disabled by NCCL (0). */
void pt__control_count(int applied);

#endif
