/*
 * doctor's table of NCCL releases with known defects on PCIe GPUs, one row
 * per public report, matched against the NCCL version each job printed.
 * NCCL's INFO lines do not name the GPU model, so a row names the GPUs it
 * was reported on and doctor says so: the user checks that part.
 * Add a row only with its source.
 */
#include <stdio.h>
#include <string.h>

#include "doctor.h"

struct defect {
  const char *id;
  int lo[3], hi[3]; /* affected NCCL versions, inclusive (as reported) */
  const char *fixed, *gpus, *what, *source, *fix;
};

static const struct defect table[] = {
    {"nccl-2.26.2-ima-512k",
     {2, 26, 2},
     {2, 26, 2},
     "2.31.2 (not reproduced there)",
     "2x RTX PRO 6000 Workstation (Blackwell)",
     "an illegal memory access in collectives of 512 KiB and more",
     "NVIDIA/nccl#2418 (closed 2026-09)",
     "run NCCL 2.31.2 or later (the wheel nvidia-nccl-cu*, or VLLM_NCCL_SO_PATH for vLLM)"},
};

static int cmp3(const int *a, const int *b) {
  for (int i = 0; i < 3; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

void dr_defects(const char *version, struct dr_findings *fs) {
  int v[3] = {0, 0, 0};
  if (sscanf(version, "%d.%d.%d", &v[0], &v[1], &v[2]) != 3) return;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    const struct defect *d = &table[i];
    if (cmp3(v, d->lo) < 0 || cmp3(v, d->hi) > 0) continue;
    struct dr_finding f;
    memset(&f, 0, sizeof f);
    f.sev = DR_WARN;
    SET(f.id, d->id);
    snprintf(f.about, sizeof f.about, "NCCL %s", version);
    snprintf(f.what, sizeof f.what, "a known defect of this NCCL on %s: %s", d->gpus, d->what);
    snprintf(f.evidence, sizeof f.evidence,
             "the log's \"NCCL version %s\"; the GPU model is not in NCCL's log: check that yours "
             "are %s",
             version, d->gpus);
    snprintf(f.effect, sizeof f.effect, "%s; not seen with NCCL %s", d->what, d->fixed);
    SET(f.source, d->source);
    SET(f.fix, d->fix);
    dr_add_finding(fs, &f);
  }
}
