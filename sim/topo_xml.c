/*
 * NCCL topology XML (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE) to struct pt_hw:
 * <cpu> elements become sockets, <pci> bridges become switches, a <pci>
 * holding a <gpu> becomes a GPU with that PCI element's link. NICs, NVLinks
 * and anything else are skipped with their subtrees. The reader is a small
 * tokenizer for the subset of XML NCCL writes (elements, attributes in double
 * quotes, comments, the <?xml?> prolog), not a general XML parser.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcie/files.h"
#include "pcie/nccl_topo.h"

#define MAX_DEPTH 32
#define MAX_ATTRS 16

struct tag {
  char name[32];
  int nattr;
  char key[MAX_ATTRS][32], val[MAX_ATTRS][128];
  int closing, selfclose;
};

struct rd {
  const char *path, *p;
  int line;
  char *err;
  size_t errlen;
};

static int fail(struct rd *r, const char *what, const char *arg) {
  snprintf(r->err, r->errlen, "%s:%d: %s%s", r->path, r->line, what, arg ? arg : "");
  return -1;
}

static void skip_space(struct rd *r) {
  while (*r->p && isspace((unsigned char)*r->p)) r->line += *r->p++ == '\n';
}

/* Skips to and past the string end, counting lines; -1 when absent. */
static int skip_past(struct rd *r, const char *end) {
  const char *e = strstr(r->p, end);
  if (!e) return -1;
  for (; r->p < e; r->p++) r->line += *r->p == '\n';
  r->p += strlen(end);
  return 0;
}

static int word(struct rd *r, char *dst, size_t len) {
  size_t n = 0;
  while (*r->p && (isalnum((unsigned char)*r->p) || strchr("_-:.", *r->p))) {
    if (n + 1 >= len) return fail(r, "name too long", NULL);
    dst[n++] = *r->p++;
  }
  dst[n] = 0;
  return n ? 0 : fail(r, "expected a name", NULL);
}

/* The next tag, skipping text, comments and the prolog; 1 at the end. */
static int next_tag(struct rd *r, struct tag *t) {
  for (;;) {
    while (*r->p && *r->p != '<') r->line += *r->p++ == '\n';
    if (!*r->p) return 1;
    if (!strncmp(r->p, "<!--", 4)) {
      if (skip_past(r, "-->")) return fail(r, "unterminated comment", NULL);
    } else if (!strncmp(r->p, "<?", 2)) {
      if (skip_past(r, "?>")) return fail(r, "unterminated <?...?>", NULL);
    } else {
      break;
    }
  }
  memset(t, 0, sizeof *t);
  r->p++;
  if (*r->p == '/') {
    t->closing = 1;
    r->p++;
  }
  if (word(r, t->name, sizeof t->name)) return -1;
  for (;;) {
    skip_space(r);
    if (*r->p == '>') {
      r->p++;
      return 0;
    }
    if (r->p[0] == '/' && r->p[1] == '>') {
      t->selfclose = 1;
      r->p += 2;
      return 0;
    }
    if (!*r->p) return fail(r, "unterminated tag <", t->name);
    if (t->nattr == MAX_ATTRS) return fail(r, "too many attributes in <", t->name);
    if (word(r, t->key[t->nattr], sizeof t->key[0])) return -1;
    skip_space(r);
    if (*r->p++ != '=') return fail(r, "expected '=' after attribute ", t->key[t->nattr]);
    skip_space(r);
    if (*r->p++ != '"') return fail(r, "expected '\"' for attribute ", t->key[t->nattr]);
    const char *e = strchr(r->p, '"');
    if (!e || (size_t)(e - r->p) >= sizeof t->val[0]) return fail(r, "bad value of attribute ", t->key[t->nattr]);
    memcpy(t->val[t->nattr], r->p, (size_t)(e - r->p));
    r->p = e + 1;
    t->nattr++;
  }
}

static const char *attr(const struct tag *t, const char *key) {
  for (int i = 0; i < t->nattr; i++)
    if (!strcmp(t->key[i], key)) return t->val[i];
  return NULL;
}

/* kvDictPciGen: "32.0 GT/s PCIe" -> 5; unknown speeds fall back to Gen3 as in NCCL. */
static int pci_gen(const char *speed) {
  double gts = speed ? atof(speed) : 0;
  return gts >= 64 ? 6 : gts >= 32 ? 5 : gts >= 16 ? 4 : gts >= 8 ? 3 : gts >= 5 ? 2 : gts >= 2.5 ? 1 : 3;
}

static void cpu_kind(const struct tag *t, struct pt_hw *hw) {
  const char *v = attr(t, "vendor");
  const char *fam = attr(t, "familyid"), *mod = attr(t, "modelid");
  long f = fam ? strtol(fam, NULL, 0) : 0, m = mod ? strtol(mod, NULL, 0) : 0;
  hw->cpu_family = f > 0 && f < 0x10000 ? (int)f : 0;
  hw->cpu_modelid = m > 0 && m < 0x10000 ? (int)m : 0;
  if (v && !strcmp(v, "GenuineIntel")) {
    hw->cpu_vendor = PT_CPU_INTEL;
    hw->cpu_model = f == 6 && m >= 0xCF ? PT_INTEL_ERP : f == 6 && m >= 0x8F ? PT_INTEL_SRP
                    : f == 6 && m >= 0x55 ? PT_INTEL_SKL : PT_INTEL_BDW;
  } else if (v && !strcmp(v, "AuthenticAMD")) {
    hw->cpu_vendor = PT_CPU_AMD;
  }
}

/* What each open element is, for closing tags and parents. */
enum { E_SKIP, E_SYSTEM, E_CPU, E_SWITCH, E_GPUPCI, E_GPU };
struct frame {
  int kind, index; /* index: CPU, switch or GPU */
};

static int open_pci(struct rd *r, const struct tag *t, struct pt_hw *hw, const struct frame *up,
                    struct frame *f) {
  const char *cls = attr(t, "class");
  const char *width = attr(t, "link_width");
  int lanes = width ? atoi(width) : 16;
  struct pt_hw_dev d = {.parent = up->kind == E_CPU ? -up->index - 1 : up->index,
                        .gen = pci_gen(attr(t, "link_speed")), .lanes = lanes ? lanes : 16};
  if (cls && !strncmp(cls, "0x03", 4)) {
    if (hw->ngpus == PT_HW_MAX_GPUS) return fail(r, "too many GPUs", NULL);
    f->kind = E_GPUPCI;
    f->index = hw->ngpus;
    hw->gpu[hw->ngpus] = d; /* counted once its <gpu> is seen */
    return 0;
  }
  if (cls && (!strncmp(cls, "0x02", 4) || !strncmp(cls, "0x0680", 6))) {
    f->kind = E_SKIP; /* a NIC or an NVSwitch */
    return 0;
  }
  if (hw->nswitches == PT_HW_MAX_SWITCHES) return fail(r, "too many PCI switches", NULL);
  f->kind = E_SWITCH;
  f->index = hw->nswitches;
  hw->sw[hw->nswitches++] = d;
  return 0;
}

static int walk(struct rd *r, struct pt_hw *hw) {
  struct frame stack[MAX_DEPTH];
  int depth = 0;
  struct tag t;
  int rc;
  while ((rc = next_tag(r, &t)) == 0) {
    if (t.closing) {
      if (depth == 0) return fail(r, "unexpected </", t.name);
      depth--;
      continue;
    }
    if (depth == MAX_DEPTH) return fail(r, "elements nested too deep", NULL);
    struct frame f = {E_SKIP, 0}, up = depth ? stack[depth - 1] : (struct frame){E_SYSTEM, 0};
    if (up.kind == E_SKIP || up.kind == E_GPU) {
      f.kind = E_SKIP;
    } else if (!strcmp(t.name, "system")) {
      f.kind = E_SYSTEM;
    } else if (!strcmp(t.name, "cpu") && up.kind == E_SYSTEM) {
      if (hw->ncpus == PT_HW_MAX_CPUS) return fail(r, "too many CPU sockets", NULL);
      const char *arch = attr(&t, "arch");
      if (arch && strcmp(arch, "x86_64")) return fail(r, "only x86_64 CPUs are modelled, not ", arch);
      cpu_kind(&t, hw);
      f.kind = E_CPU;
      f.index = hw->ncpus++;
    } else if (!strcmp(t.name, "pci") && (up.kind == E_CPU || up.kind == E_SWITCH)) {
      if (open_pci(r, &t, hw, &up, &f)) return -1;
    } else if (!strcmp(t.name, "gpu") && up.kind == E_GPUPCI) {
      const char *sm = attr(&t, "sm"), *rank = attr(&t, "rank");
      if (!sm) return fail(r, "<gpu> without sm", NULL);
      if (!rank || atoi(rank) >= 0) {
        hw->gpu[up.index].sm = atoi(sm);
        hw->ngpus = up.index + 1;
      }
      f.kind = E_GPU;
    }
    if (!t.selfclose) stack[depth++] = f;
  }
  if (rc < 0) return -1;
  if (depth) return fail(r, "unclosed elements at the end of the file", NULL);
  return 0;
}

int pt_hw_from_topo_xml(const char *path, struct pt_hw *hw, char *err, size_t errlen) {
  struct pt_error_rec e;
  char *buf = NULL;
  size_t len;
  int rc = -1;
  memset(hw, 0, sizeof *hw);
  hw->p2p = 1;
  /* The shared reader (include/pcie/files.h): a FIFO or a device is refused
   * instead of blocking, the size is bounded, a NUL byte is named. */
  if (pt_file_read(path, (size_t)16 << 20, PT_READ_TEXT, &buf, &len, &e)) {
    pt_error_format(&e, err, errlen);
    return -1;
  }
  struct rd r = {path, buf, 1, err, errlen};
  if (walk(&r, hw)) goto out;
  if (hw->ngpus == 0) {
    snprintf(err, errlen, "%s: no <gpu> in the topology", path);
    goto out;
  }
  if (pt_hw_check(hw, err, errlen)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err);
    snprintf(err, errlen, "%s: %s", path, msg);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  return rc;
}
