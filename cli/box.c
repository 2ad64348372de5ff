/*
 * pcie-tune box: shows a simulated box (its hardware, NCCL's view of it and
 * NCCL's default at every size), or writes a box file from NCCL's own
 * topology dump (NCCL_TOPO_DUMP_FILE), so a user can simulate their box
 * before measuring it (docs/sim.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "nccl/common.h"
#include "pcie/files.h"
#include "pcie/nccl_topo.h"
#include "pcie/sim_box.h"

static const char usage[] =
    "usage: pcie-tune box NAME|FILE\n"
    "       pcie-tune box --from-topo TOPO.xml --out FILE [--name NAME] [--based-on BOX]\n"
    "                     [--no-p2p] [--force]\n"
    "\n"
    "The first form prints a simulated box: its hardware, NCCL's view of it\n"
    "(derived by NCCL's topology search, or typed by hand) and NCCL's default\n"
    "all-reduce choice from 8 B to 256 MB.\n"
    "\n"
    "The second writes a box file whose hardware comes from an NCCL topology\n"
    "dump (run a job once with NCCL_TOPO_DUMP_FILE=TOPO.xml). The box's truth\n"
    "(how it really behaves) is the physical model computed from that hardware\n"
    "with the parameters fitted on the published tables (docs/sim.md).\n"
    "\n"
    "  --from-topo TOPO   NCCL topology XML to read\n"
    "  --out FILE         box file to write ('-' for stdout)\n"
    "  --name NAME        the box's name (default: TOPO's file name)\n"
    "  --based-on BOX     built-in box whose noise to use (default: gen5-8x-p2p,\n"
    "                     or gen4-4x-shm with --no-p2p)\n"
    "  --no-p2p           the driver does not allow GPU peer-to-peer (consumer cards)\n"
    "  --force            overwrite FILE\n";

static const char *const vendors[] = {"other", "intel", "amd"};
static const char *const intel_gens[] = {"bdw", "skl", "srp", "erp"};

static void parent_name(const struct pt_hw_dev *d, char *buf, size_t len) {
  if (d->parent < 0) snprintf(buf, len, "cpu%d", -d->parent - 1);
  else snprintf(buf, len, "switch%d", d->parent);
}

/* The hardware group of a box file; runs of identical GPUs become one entry
 * with a count. */
static void write_hw(FILE *f, const struct pt_hw *hw) {
  char parent[32];
  fprintf(f, "hardware = {\n  cpus = %d;\n  cpu_vendor = \"%s\";\n", hw->ncpus, vendors[hw->cpu_vendor]);
  if (hw->cpu_vendor == PT_CPU_INTEL) fprintf(f, "  intel_gen = \"%s\";\n", intel_gens[hw->cpu_model]);
  if (hw->nswitches) {
    fprintf(f, "  switches = (\n");
    for (int i = 0; i < hw->nswitches; i++) {
      parent_name(&hw->sw[i], parent, sizeof parent);
      fprintf(f, "    { parent = \"%s\"; gen = %d; lanes = %d; }%s   # switch%d\n", parent, hw->sw[i].gen,
              hw->sw[i].lanes, i + 1 < hw->nswitches ? "," : "", i);
    }
    fprintf(f, "  );\n");
  }
  fprintf(f, "  gpus = (\n");
  for (int i = 0; i < hw->ngpus;) {
    const struct pt_hw_dev *d = &hw->gpu[i];
    int n = 1;
    while (i + n < hw->ngpus && !memcmp(&hw->gpu[i + n], d, sizeof *d)) n++;
    parent_name(d, parent, sizeof parent);
    fprintf(f, "    { parent = \"%s\"; gen = %d; lanes = %d; sm = %d; count = %d; }%s\n", parent, d->gen,
            d->lanes, d->sm, n, i + n < hw->ngpus ? "," : "");
    i += n;
  }
  fprintf(f, "  );\n  p2p = %s;\n", hw->p2p ? "true" : "false");
  fprintf(f, "  # env = { NCCL_P2P_LEVEL = \"SYS\"; NCCL_PROTO = \"LL,LL128,Simple\"; NCCL_MIN_NCHANNELS = 4; };\n");
  fprintf(f, "};\n");
}

/* s as a libconfig string's body: a quote, a backslash or a control byte
 * (a newline in a folder name) is escaped, so that no path can end the
 * string or the line and inject settings. */
static void put_escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\x%02x", *p);
    else fputc(*p, f);
  }
}

/* The box file's text (malloc'ed), or NULL when out of memory. The dump's
 * path appears only inside strings (desc): a comment ends at a newline,
 * which a folder name may hold. */
static char *render_box(const char *desc, const char *name, const char *based_on, const struct pt_hw *hw) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  fprintf(f, "# Box file written by pcie-tune box --from-topo (docs/sim.md).\n");
  fprintf(f, "# The hardware is NCCL's topology dump (desc); NCCL's view is derived from it.\n");
  fprintf(f, "# The truth (how the box really behaves) is the physical model computed from\n"
             "# this hardware (no truth group); the noise is %s's.\n", based_on);
  fputs("name = \"", f);
  put_escaped(f, name);
  fputs("\";\ndesc = \"", f);
  put_escaped(f, desc);
  fprintf(f, "\";\nbased_on = \"%s\";\n", based_on);
  write_hw(f, hw);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    free(text);
    return NULL;
  }
  return text;
}

static int box_error(const struct pt_error_rec *e, const char *what) {
  char line[1200];
  pt_error_format(e, line, sizeof line);
  fprintf(stderr, "pcie-tune box: %s%s\n", what, line);
  return 1;
}

/* Checks the text loads before anything is written, so the command never
 * leaves a file it would call broken; then writes it with the shared
 * atomic writer (include/pcie/files.h). */
static int write_box_file(const char *out, const char *topo, const char *name, const char *based_on,
                          const struct pt_hw *hw, int force) {
  struct pt_box b;
  struct pt_error_rec e;
  char label[256], desc[sizeof b.desc];
  /* desc holds at most sizeof b.desc - 1 bytes: a longer path keeps its
   * file name. */
  const char *slash = strrchr(topo, '/');
  if (snprintf(desc, sizeof desc, "from NCCL topology %s", topo) >= (int)sizeof desc && slash)
    snprintf(desc, sizeof desc, "from NCCL topology .../%s", slash + 1);
  char *text = render_box(desc, name, based_on, hw);
  int rc = 1;
  if (!text) {
    fprintf(stderr, "pcie-tune box: out of memory\n");
    return 1;
  }
  if (pt_box_parse(&b, text, out, &e)) /* a bug here, never a user error: say so */
    box_error(&e, "the box file would not load (a bug; please report it): ");
  else if (pt_output_write(out, text, strlen(text), force ? PT_OUT_FORCE : 0, &e))
    box_error(&e, "");
  else
    rc = 0;
  if (!rc && strcmp(out, "-")) {
    pt_box_view_label(&b, label, sizeof label);
    fprintf(stderr, "wrote %s: %d GPUs; NCCL view %s\n", out, b.nranks, label);
  }
  free(text);
  return rc;
}

static void print_view(FILE *f, const struct pt_box *b) {
  char label[256];
  pt_box_view_label(b, label, sizeof label);
  fprintf(f, "box %s: %s\n", b->name, b->desc);
  fprintf(f, "NCCL view: %s\n", label);
  const char *caveat = pt_box_truth_caveat(b);
  if (caveat) fprintf(f, "truth: physical model; %s\n", caveat);
  if (b->view_source == PT_VIEW_DERIVED) {
    const struct pt_nccl_view *v = &b->derived;
    fprintf(f, "  ring graph: %d x %.2f GB/s %s%s; tree graph: %d x %.2f GB/s %s; comm->nChannels %d\n",
            v->ring.nchannels, (double)v->ring.bw_intra, pt_path_type_name(v->ring.type_intra),
            v->ring.fallback ? " (no ring fitted: NCCL's fallback)" : "", v->tree.nchannels,
            (double)v->tree.bw_intra, pt_path_type_name(v->tree.type_intra), v->comm_channels);
  }
  fprintf(f, "%12s  %-6s %-7s %4s %12s\n", "bytes", "algo", "proto", "nch", "NCCL cost");
  for (uint64_t n = 8; n <= (256u << 20); n *= 2) {
    float t[7][3];
    int a, p, c;
    if (pt_box_nccl_default(b, PT_ALLREDUCE, n, &a, &p, &c)) continue;
    pt_box_nccl_table(b, PT_ALLREDUCE, n, t);
    fprintf(f, "%12llu  %-6s %-7s %4d %9.2f us\n", (unsigned long long)n, a == NCCL_ALGO_TREE ? "tree" : "ring",
            p == NCCL_PROTO_LL ? "ll" : p == NCCL_PROTO_LL128 ? "ll128" : "simple", c, (double)t[a][p]);
  }
}

static const char *arg_value(int argc, char **argv, int *i) {
  const char *eq = strchr(argv[*i], '=');
  if (eq) return eq + 1;
  if (*i + 1 >= argc) return NULL;
  return argv[++*i];
}

int cmd_box(int argc, char **argv) {
  const char *topo = NULL, *out = NULL, *name = NULL, *based_on = NULL, *box = NULL;
  int force = 0, no_p2p = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **dst = !strncmp(a, "--from-topo", 11) ? &topo
                       : !strncmp(a, "--out", 5)      ? &out
                       : !strncmp(a, "--name", 6)     ? &name
                       : !strncmp(a, "--based-on", 10) ? &based_on
                                                       : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage, stdout);
      return 0;
    } else if (!strcmp(a, "--force")) {
      force = 1;
    } else if (!strcmp(a, "--no-p2p")) {
      no_p2p = 1;
    } else if (dst) {
      if (!(*dst = arg_value(argc, argv, &i))) {
        fprintf(stderr, "pcie-tune box: %s needs a value\n\n%s", a, usage);
        return 2;
      }
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "pcie-tune box: unknown option '%s'\n\n%s", a, usage);
      return 2;
    } else if (!box) {
      box = a;
    } else {
      fprintf(stderr, "pcie-tune box: one box at a time ('%s')\n\n%s", a, usage);
      return 2;
    }
  }
  if (!topo) {
    struct pt_box b;
    struct pt_error_rec e;
    char line[1200];
    if (!box) {
      fputs(usage, stderr);
      return 2;
    }
    if (pt_box_resolve(&b, box, &e)) {
      pt_error_format(&e, line, sizeof line);
      fprintf(stderr, "pcie-tune box: %s\n", line);
      return 1;
    }
    print_view(stdout, &b);
    return 0;
  }
  if (box || !out) {
    fprintf(stderr, "pcie-tune box: --from-topo needs --out FILE and no box name\n\n%s", usage);
    return 2;
  }
  struct pt_hw hw;
  struct pt_error_rec e;
  char err[600], base[sizeof ((struct pt_box *)0)->name];
  /* Before reading: the dump itself, under any name, is never the output. */
  int rc = pt_output_check(out, force ? PT_OUT_FORCE : 0, &topo, 1, &e);
  if (rc == PT_EEXIST) {
    fprintf(stderr, "pcie-tune box: %s exists; use --force to overwrite it\n", out);
    return 1;
  }
  if (rc) return box_error(&e, "");
  if (pt_hw_from_topo_xml(topo, &hw, err, sizeof err)) {
    fprintf(stderr, "pcie-tune box: %s\n", err);
    return 1;
  }
  hw.p2p = !no_p2p;
  if (!based_on) based_on = no_p2p ? "gen4-4x-shm" : "gen5-8x-p2p";
  if (!pt_box_builtin(based_on)) {
    fprintf(stderr, "pcie-tune box: unknown built-in box '%s' for --based-on\n", based_on);
    return 2;
  }
  if (name && strlen(name) >= sizeof base) {
    fprintf(stderr, "pcie-tune box: --name is longer than %zu characters\n", sizeof base - 1);
    return 2;
  }
  if (!name) { /* the dump's file name, cut to what a box name holds */
    const char *slash = strrchr(topo, '/');
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : topo);
    char *dot = strrchr(base, '.');
    if (dot && dot != base) *dot = 0;
    name = base;
  }
  return write_box_file(out, topo, name, based_on, &hw, force);
}
