/* The provenance line of `check` and `show` (cli/prov_text.h). */
#include "prov_text.h"

#include <stdio.h>
#include <string.h>

#include "pcie/hostinfo.h"

void cli_prov_box(const struct pt_profile *p, char *buf, size_t len) {
  char box[1024];
  if (p->prov.box) pt_fp_summary(p->prov.box, box, sizeof box);
  else if (pt_profile_measured(p))
    snprintf(box, sizeof box,
             "no box recorded (no provenance.box): the plugin refuses it on a single node unless "
             "PCIE_TUNER_ACCEPT_FOREIGN=1");
  else
    snprintf(box, sizeof box, "no box recorded (rules only: none needed)");
  snprintf(buf, len, "%s%s", box, p->match_nnodes > 1 ? ", measured on several nodes" : "");
}

int cli_ll128_text(const struct pt_profile *p, const char *path, char *buf, size_t len) {
  size_t n = pt_profile_ll128_choices(p);
  buf[0] = 0;
  if (!n || pt_profile_ll128_usable(p)) return 0;
  if (p->ll128_screen == PT_LL128_UNUSABLE)
    snprintf(buf, len, "%zu LL128 choice%s never made: LL128 failed its correctness screen on this box "
                       "(provenance.extra.ll128_screen), so the plugin also sets NCCL's own LL128 aside", n,
             n == 1 ? "" : "s");
  else
    snprintf(buf, len, "%zu LL128 choice%s left to NCCL: no passing LL128 correctness screen is recorded "
                       "(LL128 over PCIe returns wrong results where a 128-byte line tears, and a time says "
                       "nothing about that); screen it on the box: pcie-tune screen %s --gpus LIST --out FILE",
             n, n == 1 ? "" : "s", path ? path : "PROFILE");
  return 1;
}
