/* NCCL INFO lines -> channel count and transports (measure/gpu_ncclog.h). */
#include <stdio.h>
#include <string.h>

#include "gpu_ncclog.h"

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

void pt_ncclog_scan(FILE *f, struct pt_ncclog *l) {
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    const char *p = strstr(line, " coll channels, ");
    if (p) {
      /* The number just before " coll channels". */
      const char *s = p;
      while (s > line && s[-1] >= '0' && s[-1] <= '9') s--;
      int n = 0;
      if (s < p && sscanf(s, "%d", &n) == 1 && n > 0 && (!l->comm_channels || n < l->comm_channels))
        l->comm_channels = n;
      keep(l, line);
    } else if (strstr(line, " via ")) {
      link_of(l, line);
    } else if (strstr(line, "NCCL version") || strstr(line, "TUNER/Plugin")) {
      keep(l, line);
    }
  }
}
