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
#include "opt.h"
#include "nccl/common.h"
#include "pcie/files.h"
#include "pcie/nccl_topo.h"
#include "pcie/sim_box.h"

struct box_opts {
  const char *topo, *out, *name, *based_on, *box;
  int force, no_p2p;
};

static int one_box(void *opts, const char *arg, char *why, size_t len) {
  struct box_opts *o = opts;
  if (!o->box) o->box = arg;
  else snprintf(why, len, "one box at a time ('%s')", arg);
  return o->box == arg ? 0 : -1;
}

#define F(x) offsetof(struct box_opts, x)

static const struct cli_opt box_rows[] = {
    CLI_ROW("from-topo", 0, CLI_STR, "TOPO", F(topo), 0, 0, NULL, 0, 0, "NCCL topology XML to read"),
    CLI_ROW("out", 0, CLI_STR, "FILE", F(out), 0, 0, NULL, 0, 0, "box file to write ('-' for stdout)"),
    CLI_ROW("name", 0, CLI_STR, "NAME", F(name), 0, 0, NULL, 0, 0, "the box's name (default: TOPO's file name)"),
    CLI_ROW("based-on", 0, CLI_STR, "BOX", F(based_on), 0, 0, NULL, 0, 0,
            "built-in box whose noise to use (default: gen5-8x-p2p,\nor gen4-4x-shm with --no-p2p)"),
    CLI_ROW("no-p2p", 0, CLI_FLAG, NULL, F(no_p2p), 0, 0, NULL, 0, 0,
            "the driver does not allow GPU peer-to-peer (consumer cards)"),
    CLI_ROW("force", 0, CLI_FLAG, NULL, F(force), 0, 0, NULL, 0, 0, "overwrite FILE"),
    CLI_END_ROW,
};

const struct cli_cmd box_cli = {
    "box",
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
    "with the parameters fitted on the published tables (docs/sim.md).\n",
    NULL,
    box_rows,
    one_box,
};

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
  if (b->phys) {
    char oos[400];
    pt_box_oos_line(b, oos, sizeof oos);
    fprintf(f, "truth: %s\n", oos);
  }
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

int cmd_box(int argc, char **argv) {
  struct box_opts o;
  struct cli_state st;
  memset(&o, 0, sizeof o);
  int prc = cli_parse(&box_cli, argc, argv, &o, &st, 1);
  if (prc) return prc == CLI_HELP ? 0 : prc;
  const char *topo = o.topo, *out = o.out, *name = o.name, *based_on = o.based_on, *box = o.box;
  int force = o.force, no_p2p = o.no_p2p;
  if (!topo) {
    struct pt_box b;
    struct pt_error_rec e;
    char line[1200];
    if (!box) return cli_bad(&box_cli, "missing NAME|FILE (a box to show) or --from-topo TOPO.xml");
    if (pt_box_resolve(&b, box, &e)) {
      pt_error_format(&e, line, sizeof line);
      fprintf(stderr, "pcie-tune box: %s\n", line);
      return 1;
    }
    print_view(stdout, &b);
    return 0;
  }
  if (box || !out) {
    return cli_bad(&box_cli, "--from-topo needs --out FILE and no box name");
  }
  struct pt_hw hw;
  struct pt_error_rec e;
  char err[600], base[sizeof ((struct pt_box *)0)->name];
  /* Before reading: the dump itself, under any name, is never the output. */
  int rc = pt_output_check(out, force ? PT_OUT_FORCE : 0, &topo, 1, &e);
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
