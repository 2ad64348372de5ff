/*
 * libFuzzer target for the nccl-tests parser (import/nccltests.c) and the
 * setting/collective rules that read its output. Built and run by
 * `make fuzz` (mk/fuzz.mk) with ASan and UBSan; a crash is a bug, an error
 * record is the expected answer to garbage, so only its shape is checked.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_coll.h"
#include "import/import_setting.h"
#include "import/nccltests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct nt_log log;
  struct pt_error_rec err;
  int rc = nt_parse(&log, (const char *)data, size, "fuzz.txt", &err);
  if (rc) {
    /* An error must say where and what, and leave nothing allocated. */
    if (rc != PT_EINVAL && rc != PT_ENOMEM) abort();
    if (!err.msg[0] || err.line < 0 || (size_t)err.line > size + 1 || log.runs) abort();
    return 0;
  }
  if (!log.nruns) abort();
  int coll = -1;
  for (size_t i = 0; i < log.nruns; i++) {
    const struct nt_run *r = &log.runs[i];
    if (!r->nrows || r->nranks < 1 || (size_t)r->nranks != r->ndev) abort();
    int c = imp_run_coll(&log, r, &err);
    if (c < 0 && !err.msg[0]) abort();
    if (c >= 0 && coll < 0) coll = c;
  }
  /* The settings as `import` resolves them for the log's collective. */
  struct imp_setting none = IMP_SETTING_NONE, out;
  int dflt, forced;
  if (coll >= 0 && imp_setting_resolve(&log, &none, coll, &out, &dflt, &forced, &err) &&
      !err.msg[0])
    abort();
  nt_log_release(&log);
  return 0;
}
