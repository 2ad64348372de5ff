/*
 * What a simulated figure at 0.5-2 MiB may be off by (issue 28 §5): the
 * physical truth's error on a machine's published rows there when every
 * table of that machine is left out of the fit (test_sim_loo computes
 * these figures and fails when they are not the ones below). A machine is
 * named by its table's last two words, source and host.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pcie/sim_box.h"

static const struct pt_oos_err measured[] = {
#include "oos_figures.h"
};

void pt_table_machine(const char *name, char *out, size_t len) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  size_t n = strcspn(base, "."), i = n;
  int dashes = 0;
  while (i > 0 && dashes < 2)
    if (base[--i] == '-') dashes++;
  if (base[i] == '-') i++;
  snprintf(out, len, "%.*s", (int)(n - i), base + i);
}

const struct pt_oos_err *pt_oos_find(const char *machine) {
  for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++)
    if (measured[i].rows && !strcmp(measured[i].machine, machine)) return &measured[i];
  return NULL;
}

const struct pt_oos_err *pt_box_oos(const struct pt_box *b) {
  char m[64];
  /* The machine its fitted rows come from (held-out rows are another
   * machine's, printed only). */
  for (size_t i = 0; i < b->nanchors; i++) {
    if (b->anchors[i].held_out || !b->anchors[i].source[0]) continue;
    pt_table_machine(b->anchors[i].source, m, sizeof m);
    return pt_oos_find(m);
  }
  return NULL;
}

void pt_box_oos_line(const struct pt_box *b, char *buf, size_t len) {
  const struct pt_oos_err *e = pt_box_oos(b);
  if (!e)
    snprintf(buf, len, "no published row of this box's machine at 0.5-2 MiB: figures there are the model's "
                       "extrapolation, their error unknown");
  else
    snprintf(buf, len, "at 0.5-2 MiB the model is off by median |ln| %.3f (x%.2f), p90 %.3f (x%.2f) on the %d "
                       "published rows of %s, that machine left out of the fit (test_sim_loo)",
             e->median, exp(e->median), e->p90, exp(e->p90), e->rows, e->machine);
}
