/*
 * The plugin's control interface for `pcie-tune profile --backend nccl`: the
 * profiler loads this library as NCCL's tuner (NCCL_TUNER_PLUGIN set before
 * NCCL initialises), then finds pcieTunerControl_v1 with dlsym on the already
 * loaded library (dlopen with RTLD_NOLOAD) and forces the decisions it wants
 * to measure. Not an NCCL interface; nothing else should use it.
 *
 * State is process-wide and lock-free: force() publishes one atomic word
 * that every following getCollInfo/getChunkSize call reads (one relaxed
 * load on the hot path when nothing is forced). The profiler drives all
 * ranks from one process, so every rank sees the same forced choice.
 */
#ifndef PCIE_CONTROL_H
#define PCIE_CONTROL_H

#include <stddef.h>

#define PCIE_CONTROL_SYMBOL "pcieTunerControl_v1"

struct pt_control_stats {
  unsigned long applied;  /* decisions forced since the last force() */
  unsigned long disabled; /* decisions where NCCL had the combination disabled
                             (entry < 0): the table was left alone, so NCCL
                             ran its own choice and the measurement is void */
};

typedef struct {
  int version; /* 1 */
  /* Forces every following decision to (algo, proto, channels) and, on ABI
   * v6, the chunk size (0 = NCCL's). channels 0 leaves *nChannels as NCCL
   * set it (NCCL's own count: how all-gather and CollNet candidates are
   * measured, measure/sweep.c). algo < 0 stops forcing (the profile, if
   * any, decides again). Resets the stats. Returns 0, or -1 for values out of
   * range (algo 0..6, proto 0..2, channels 0..64, chunk < 2^32). */
  int (*force)(int algo, int proto, int channels, size_t chunk);
  /* What happened since the last force(). */
  void (*stats)(struct pt_control_stats *out);
} pcieTunerControl_v1_t;

#endif
