/*
 * A box's NCCL view: derived from its hardware (include/pcie/nccl_topo.h),
 * or typed by hand as an override; and the label that says which, for
 * provenance and `show`.
 */
#include <stdio.h>
#include <string.h>

#include "pcie/sim_box.h"

int pt_box_derive(struct pt_box *b, struct pt_error_rec *err) {
  char msg[400];
  if (!b->has_hw) {
    snprintf(err->msg, sizeof err->msg, "box '%s' has no hardware to derive NCCL's view from", b->name);
    return PT_EINVAL;
  }
  /* The NCCL the box states it models picks the view (2.31's rules from
   * 2.31 on); a box that names none models 2.30. */
  if (!b->hw.nccl_version) b->hw.nccl_version = pt_nccl_version_code(b->nccl_version);
  if (pt_nccl_derive(&b->hw, &b->derived, msg, sizeof msg)) {
    snprintf(err->msg, sizeof err->msg, "hardware: %s", msg);
    return PT_EINVAL;
  }
  b->nccl = b->derived.params;
  b->nranks = b->hw.ngpus;
  b->view_source = PT_VIEW_DERIVED;
  return 0;
}

void pt_box_view_label(const struct pt_box *b, char *buf, size_t len) {
  const struct pt_nccl_params *n = &b->nccl;
  if (b->view_source == PT_VIEW_TYPED) {
    snprintf(buf, len, "typed by hand (override): ring %d x %.1f GB/s, %d channels", n->search_channels,
             n->bw_intra, n->comm_channels);
    return;
  }
  const struct pt_nccl_graph *r = &b->derived.ring;
  snprintf(buf, len, "derived from hardware: ring %d x %.1f GB/s %s%s, %d channels%s", r->nchannels,
           (double)r->bw_intra, pt_path_type_name(r->type_intra), r->fallback ? " (search fallback)" : "",
           n->comm_channels, n->ll128_enabled ? ", LL128 on" : "");
  /* The NCCL the view models, where it is not the 2.28-2.30 default. */
  size_t used = strlen(buf);
  if (n->nccl_version >= PT_NCCL_V2_31 && used < len)
    snprintf(buf + used, len - used, ", NCCL %d.%d view", n->nccl_version / 10000, n->nccl_version / 100 % 100);
}

const char *pt_box_truth_caveat(const struct pt_box *b) {
  if (!b->phys || b->truth.transport != PT_XPORT_SHM) return NULL;
  if (b->has_hw && b->hw.host_staging_gbs > 0)
    return "its SHM (host-staged) copy runs at the box's measured host_staging_gbs; the rest of its SHM "
           "truth rests on two consumer tables (docs/sim.md, \"Host staging\")";
  return "its SHM (host-staged) truth rests on two consumer tables that state no hardware or NCCL "
         "version; on a server host (the held-out ASUS Turin table) it is 8-13x too slow at 512 KB-32 MB; "
         "a box file's host_staging_gbs gives the host's own rate (docs/sim.md, \"Host staging\")";
}
