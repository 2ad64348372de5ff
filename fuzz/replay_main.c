/*
 * A main for the fuzz targets without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named on the command line, as
 * libFuzzer does when given files. `make test` builds every target with it
 * (gcc, no clang needed) and replays the seeds and the kept crashes, so a
 * target cannot rot unnoticed where clang is missing (mk/fuzz.mk).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    char *buf = NULL;
    size_t len = 0;
    if (!f) {
      perror(argv[i]);
      return 1;
    }
    /* A copy of exactly the file's bytes, as libFuzzer hands them. */
    for (int c; (c = fgetc(f)) != EOF;) {
      char *nb = realloc(buf, len + 1);
      if (!nb) return 1;
      buf = nb;
      buf[len++] = (char)c;
    }
    fclose(f);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
  }
  printf("fuzz replay: %d input%s, no crash\n", argc - 1, argc == 2 ? "" : "s");
  return 0;
}
