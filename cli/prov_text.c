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
