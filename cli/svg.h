/* Draws one series of a profile as an SVG chart (cli/svg.c): latency against
 * size on log-log axes for every candidate, the envelope the compiled table
 * chooses, and NCCL's default. */
#ifndef PCIE_CLI_SVG_H
#define PCIE_CLI_SVG_H

#include "pcie/profile.h"
#include "pcie/table.h"

/* Writes the chart to path atomically (a temporary beside it, then moved
 * into place). An existing path is replaced only with force; otherwise it
 * is left alone and the call fails with errno EEXIST. Returns 0, or -1
 * with errno set. */
int pt_svg_write(const char *path, const char *title, const struct pt_series *s,
                 const struct pt_ivset *set, int force);

/* Log-log interpolation of candidate c of s at nbytes (the measured range
 * only, between two usable points); -1 where it has no value. */
double pt_series_interp(const struct pt_series *s, const struct pt_point *pts, double nbytes);

#endif
