/* Provenance text that needs no GPU (measure/gpu_prov.h). */
#include <stdlib.h>
#include <string.h>

#include "gpu_prov.h"
#include "pcie/hostinfo.h"

void pt_prov_box(struct pt_box_fp *fp) {
  char err[256];
  if (pt_host_read(NULL, fp, err, sizeof err)) fp->ngpus = 0;
}

void pt_prov_quote(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int pt_prov_nccl_env(FILE *f, const char *const *envp) {
  size_t n = 0, k = 0;
  for (size_t i = 0; envp[i]; i++) n += !strncmp(envp[i], "NCCL_", 5);
  const char **v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; envp[i]; i++)
    if (!strncmp(envp[i], "NCCL_", 5)) v[k++] = envp[i];
  /* Sorted, so two profiles of the same setup compare equal as text. */
  qsort(v, n, sizeof *v, by_name);
  fputs("nccl_env = [", f);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ", " : " ", f);
    pt_prov_quote(f, v[i]);
  }
  fputs(" ];", f);
  free(v);
  return 0;
}
