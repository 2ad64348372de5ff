/*
 * A simulated box as the plugin's host check sees it (sim/box_fp.c): its
 * fingerprint (include/pcie/hostinfo.h), which the sim backend records in a
 * profile, and a sysfs tree under a scratch root that presents it, so that
 * the simulated host (pcie-tune simulate, the tests) runs the plugin's real
 * sysfs reader and comparison with PCIE_TUNER_SYSFS_ROOT pointing there.
 */
#ifndef PCIE_SIM_FP_H
#define PCIE_SIM_FP_H

#include <stddef.h>

#include "pcie/hostinfo.h"
#include "pcie/sim_box.h"

/* Fills fp from b's hardware (one node), or one GPU per rank of a node on
 * its own root port when the box has no hardware. Returns 0, or -1 when the
 * box does not fit the fingerprint's bounds. */
int pt_box_fingerprint(const struct pt_box *b, struct pt_box_fp *fp);

/* Writes ROOT/sys/bus/pci/devices and ROOT/sys/devices for fp's GPUs (and
 * ROOT/sys/module/nvidia/version). root must exist. Returns 0, or -1 with a
 * message in err. pt_sysfs_remove deletes root and everything below. */
int pt_sysfs_write(const struct pt_box_fp *fp, const char *root, char *err, size_t errlen);
void pt_sysfs_remove(const char *root);

#endif
