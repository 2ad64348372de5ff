/* Draws one series of a profile as an SVG chart (cli/svg.c): latency against
 * size for every candidate, the envelope the compiled table chooses, NCCL's
 * default, the choice per interval, and the speed-up over NCCL. s may be
 * NULL or empty (a profile of rules only): the choices are still drawn. */
#ifndef PCIE_CLI_SVG_H
#define PCIE_CLI_SVG_H

#include "pcie/profile.h"
#include "pcie/table.h"

/* Writes the chart to path with the shared atomic writer
 * (include/pcie/files.h): '-' is standard output, an existing file or a
 * symlink to one is replaced only with force. Returns 0 or a PT_E* code
 * with *err filled. */
int pt_svg_write(const char *path, const char *title, const struct pt_series *s,
                 const struct pt_ivset *set, int force, struct pt_error_rec *err);

/* Log-log interpolation of one point array of s at nbytes, between the
 * nearest measured sizes around it (sizes an adaptive sweep skipped do not
 * count); -1 outside the measured range or where either neighbour failed. */
double pt_series_interp(const struct pt_series *s, const struct pt_point *pts, double nbytes);

#endif
