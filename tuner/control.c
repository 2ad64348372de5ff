/*
 * The profiler's control interface (include/pcie/control.h): one atomic
 * word holding the forced choice, and two counters. Exported only as
 * pcieTunerControl_v1, found by pcie-tune with dlsym.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/control.h"
#include "core_internal.h"
#include "pcie/profile.h"

/* bit 63: forcing; 40..43 algo; 44..45 proto; 46..52 channels; 0..31 chunk */
_Atomic uint64_t pt__forced;
static atomic_ulong n_applied, n_disabled;

static int control_force(int algo, int proto, int channels, size_t chunk) {
  if (algo < 0) {
    atomic_store(&pt__forced, 0);
    return 0;
  }
  if (algo >= NCCL_NUM_ALGORITHMS || proto < 0 || proto >= NCCL_NUM_PROTOCOLS || channels < 0 ||
      channels > PT_MAX_CHANNELS || chunk > UINT32_MAX)
    return -1;
  atomic_store(&n_applied, 0);
  atomic_store(&n_disabled, 0);
  atomic_store(&pt__forced, (uint64_t)1 << 63 | (uint64_t)algo << 40 | (uint64_t)proto << 44 |
                            (uint64_t)channels << 46 | (uint64_t)chunk);
  return 0;
}

static void control_stats(struct pt_control_stats *out) {
  out->applied = atomic_load(&n_applied);
  out->disabled = atomic_load(&n_disabled);
}

int pt__control_forced(struct pt_hot *h, uint32_t *chunk) {
  uint64_t f = atomic_load_explicit(&pt__forced, memory_order_relaxed);
  if (!(f >> 63)) return 0;
  memset(h, 0, sizeof *h);
  h->n = 1;
  h->algo[0] = (int8_t)(f >> 40 & 0xf);
  h->proto[0] = (int8_t)(f >> 44 & 0x3);
  h->channels[0] = (uint8_t)(f >> 46 & 0x7f);
  *chunk = (uint32_t)f;
  return 1;
}

void pt__control_count(int applied) {
  atomic_fetch_add_explicit(applied ? &n_applied : &n_disabled, 1, memory_order_relaxed);
}

PCIE_EXPORT const pcieTunerControl_v1_t pcieTunerControl_v1 = {
    .version = 1,
    .force = control_force,
    .stats = control_stats,
};
