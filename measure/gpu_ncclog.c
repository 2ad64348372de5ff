/* NCCL INFO lines -> channel count and transports (measure/gpu_ncclog.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ncclog.h"
#include "import/ncclog.h"

static void keep(struct pt_ncclog *l, const char *line) {
  if (l->nexcerpt >= sizeof l->excerpt / sizeof l->excerpt[0]) return;
  const char *m = strstr(line, "NCCL INFO ");
  snprintf(l->excerpt[l->nexcerpt], sizeof l->excerpt[0], "%s", m ? m + 10 : line);
  l->excerpt[l->nexcerpt][strcspn(l->excerpt[l->nexcerpt], "\n")] = 0;
  l->nexcerpt++;
}

static void link_of(struct pt_ncclog *l, const char *line) {
  /* "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC" (NCCL's transport.cc). */
  const char *c = strstr(line, "Channel ");
  int from, to, fd, td;
  char via[32];
  if (!c || sscanf(c, "Channel %*d/%*d : %d[%d] -> %d[%d] via %31s", &from, &fd, &to, &td, via) != 5) return;
  for (size_t i = 0; i < l->nlinks; i++)
    if (l->links[i].from == from && l->links[i].to == to) return;
  if (l->nlinks == PT_NCCLOG_MAX_LINKS) return;
  l->links[l->nlinks].from = from;
  l->links[l->nlinks].to = to;
  snprintf(l->links[l->nlinks].via, sizeof l->links[0].via, "%s", via);
  l->nlinks++;
  keep(l, line);
}

/* The channel count is read by the one reader of NCCL's log lines
 * (import/ncclog.h), which pcie-tune doctor and import use too. Called from
 * the parent after the workers are gone: nl_parse's lazy setup is not
 * meant for concurrent first calls. */
void pt_ncclog_scan(FILE *f, struct pt_ncclog *l) {
  char line[1024];
  struct nl_line nl;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (nl_parse(line, &nl) && nl.kind == NL_CHANNELS) {
      int n = atoi(nl.field[0]);
      if (n > 0 && (!l->comm_channels || n < l->comm_channels)) l->comm_channels = n;
      keep(l, line);
    } else if (strstr(line, " via ")) {
      link_of(l, line);
    } else if (strstr(line, "NCCL version") || strstr(line, "TUNER/Plugin")) {
      keep(l, line);
    }
  }
}
