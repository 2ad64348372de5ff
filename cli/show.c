/*
 * pcie-tune show: prints, per size interval, what the plugin decides for a
 * profile. It compiles the profile with the tuner core's own pt_table_build
 * and reads the intervals back, so the output is exactly the plugin's
 * decision table; nothing here ranks candidates.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "pcie/files.h"
#include "pcie/table.h"
#include "svg.h"

static const char usage_text[] =
    "usage: pcie-tune show PROFILE [--nranks N] [--collective C] [--graph|--eager]\n"
    "                      [--svg FILE [--force]] [--json]\n"
    "\n"
    "Prints, per message-size interval, the candidate the plugin ranks first\n"
    "(algo/proto/channels), its expected latency, NCCL default's and the speed-up.\n"
    "\n"
    "  --nranks N        fail unless the profile applies to N ranks\n"
    "  --collective C    allreduce (default), allgather, reducescatter, broadcast, reduce\n"
    "  --graph|--eager   launch mode (default graph: CUDA-graph capture, regBuff=1)\n"
    "  --svg FILE        also draw latency against size for every candidate, the\n"
    "                    chosen envelope and NCCL's default (never overwritten\n"
    "                    without --force, never the profile; '-': standard\n"
    "                    output, instead of the table)\n"
    "  --force           replace an existing --svg FILE\n"
    "  --json            print the table as JSON instead of text\n"
    "  -q, --quiet       print nothing (with --svg: only the chart)\n";

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "pcie-tune show: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see 'pcie-tune show --help')\n");
  return 2;
}

static void human(char *buf, size_t len, uint64_t n) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = (double)n;
  if (n == UINT64_MAX) {
    snprintf(buf, len, "max");
    return;
  }
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, unit[u]);
}

static void choice_name(char *buf, size_t len, const struct pt_choice *c) {
  snprintf(buf, len, "%s/%s/%d%s", pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels,
           c->from_rule ? " (rule)" : "");
}

static void print_text(const struct pt_profile *p, const struct pt_ivset *set, int coll, int mode) {
  char lo[32], hi[32], ch[64];
  printf("profile %s (%s): %s, %s mode\n", p->name, p->path ? p->path : "-", pt_coll_name(coll), pt_mode_name(mode));
  /* Which NCCL the data was measured with; on a simulated box, whether its
   * NCCL view was derived from hardware or typed by hand (docs/sim.md). */
  if (p->prov.backend && p->prov.nccl_version)
    printf("measured with backend %s, NCCL %s\n", p->prov.backend, p->prov.nccl_version);
  printf("%12s %12s  %-22s %12s %12s %9s  %s\n", "from", "to", "choice", "latency", "NCCL", "speed-up", "fallbacks");
  for (size_t i = 0; i < set->n; i++) {
    const struct pt_interval *iv = &set->iv[i];
    human(lo, sizeof lo, iv->lo);
    human(hi, sizeof hi, iv->hi);
    if (!iv->n) {
      printf("%12s %12s  %-22s %12s %12s %9s\n", lo, hi, "(NCCL decides)", "-", "-", "-");
      continue;
    }
    choice_name(ch, sizeof ch, &iv->c[0]);
    printf("%12s %12s  %-22s", lo, hi, ch);
    if (iv->c[0].lat_us > 0) printf(" %9.1f \u00b5s", iv->c[0].lat_us);
    else printf(" %12s", "-");
    if (iv->default_us > 0) printf(" %9.1f \u00b5s", iv->default_us);
    else printf(" %12s", "-");
    if (iv->default_us > 0 && iv->c[0].lat_us > 0) printf(" %8.2fx", iv->default_us / iv->c[0].lat_us);
    else printf(" %9s", "-");
    printf(" ");
    for (int k = 1; k < iv->n; k++) {
      choice_name(ch, sizeof ch, &iv->c[k]);
      printf(" %s", ch);
    }
    printf("\n");
  }
}

static void json_string(const char *s) {
  putchar('"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

static void print_json(const struct pt_profile *p, const struct pt_ivset *set, int coll, int mode) {
  printf("{\"profile\": ");
  json_string(p->name);
  printf(", \"collective\": \"%s\", \"mode\": \"%s\", \"intervals\": [", pt_coll_name(coll), pt_mode_name(mode));
  for (size_t i = 0; i < set->n; i++) {
    const struct pt_interval *iv = &set->iv[i];
    printf("%s\n  {\"lo\": %llu, \"hi\": %llu, ", i ? "," : "", (unsigned long long)iv->lo,
           (unsigned long long)iv->hi);
    if (iv->default_us > 0) printf("\"default_us\": %.3f, ", iv->default_us);
    else printf("\"default_us\": null, ");
    printf("\"ranked\": [");
    for (int k = 0; k < iv->n; k++) {
      const struct pt_choice *c = &iv->c[k];
      printf("%s{\"algo\": \"%s\", \"proto\": \"%s\", \"channels\": %d, \"rule\": %s", k ? ", " : "",
             pt_algo_name(c->algo), pt_proto_name(c->proto), c->channels, c->from_rule ? "true" : "false");
      if (c->lat_us > 0) printf(", \"lat_us\": %.3f", c->lat_us);
      printf("}");
    }
    printf("]");
    if (iv->n && iv->c[0].lat_us > 0 && iv->default_us > 0)
      printf(", \"speedup\": %.4f", iv->default_us / iv->c[0].lat_us);
    printf("}");
  }
  printf("\n]}\n");
}

static int svg_check(const char *svg, int force, const char *profile) {
  struct pt_error_rec e;
  char buf[1200];
  if (!pt_output_check(svg, force ? PT_OUT_FORCE : 0, &profile, 1, &e)) return 0;
  pt_error_format(&e, buf, sizeof buf);
  fprintf(stderr, "pcie-tune show: %s\n", buf);
  return -1;
}

/* Writes the chart to svg: through a symlink (checked above: only with
 * --force), or to standard output for '-' by way of a private temporary
 * file, as pt_svg_write writes only files. */
static int svg_write(const char *svg, const char *title, const struct pt_series *s,
                     const struct pt_ivset *set, int force) {
  const char *tmp = getenv("TMPDIR");
  char *target = NULL, *dir = NULL, *file = NULL, *text = NULL;
  struct pt_error_rec e;
  size_t len;
  int rc = -1, saved;
  if (strcmp(svg, "-")) {
    if (!(target = pt_output_target(svg))) return -1;
    rc = pt_svg_write(target, title, s, set, force);
  } else if (asprintf(&dir, "%s/pcie-tune-svg.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0) {
    dir = NULL;
  } else if (mkdtemp(dir) && asprintf(&file, "%s/chart.svg", dir) >= 0) {
    if (!pt_svg_write(file, title, s, set, 0) &&
        !pt_file_read(file, (size_t)64 << 20, 0, &text, &len, &e))
      rc = pt_output_write("-", text, len, 0, &e) ? -1 : 0;
    unlink(file);
    rmdir(dir);
  } else {
    file = NULL;
  }
  saved = errno;
  free(target);
  free(dir);
  free(file);
  free(text);
  errno = saved;
  return rc;
}

int cmd_show(int argc, char **argv) {
  const char *path = NULL, *svg = NULL;
  int coll = PT_ALLREDUCE, mode = PT_MODE_GRAPH, json = 0, force = 0, quiet = 0, status = 1;
  long nranks = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage_text, stdout);
      return 0;
    } else if (!strcmp(a, "--graph")) mode = PT_MODE_GRAPH;
    else if (!strcmp(a, "--eager")) mode = PT_MODE_EAGER;
    else if (!strcmp(a, "--json")) json = 1;
    else if (!strcmp(a, "--quiet")) quiet = 1;
    else if (!strcmp(a, "--force")) force = 1;
    else if (!strcmp(a, "--svg") || !strcmp(a, "--collective") || !strcmp(a, "--nranks")) {
      if (!v) return bad("option '%s' needs a value", a);
      i++;
      if (!strcmp(a, "--svg")) svg = v;
      else if (!strcmp(a, "--collective")) {
        if ((coll = pt_coll_parse(v)) < 0)
          return bad("unknown collective '%s' (allreduce, allgather, reducescatter, broadcast, reduce)", v);
      } else {
        char *end;
        errno = 0;
        nranks = strtol(v, &end, 10);
        if (end == v || *end || errno || nranks < 1 || nranks > 65536) return bad("bad --nranks '%s'", v);
      }
    } else if (a[0] == '-' && a[1]) {
      return bad("unknown option '%s'", a);
    } else if (path) {
      return bad("more than one profile given ('%s')", a);
    } else {
      path = a;
    }
  }
  if (!path) return bad("missing PROFILE%s", "");
  if (force && !svg) return bad("--force only applies to --svg FILE%s", "");
  /* Refuse before printing anything: an existing chart without --force, a
   * FIFO or device, the profile itself (include/pcie/files.h). The write
   * itself also refuses (link), should the file appear meanwhile. */
  if (svg && svg_check(svg, force, path)) return 1;

  struct pt_profile p;
  struct pt_table t;
  struct pt_error_rec e;
  char buf[1200];
  int built = 0;
  memset(&p, 0, sizeof p);
  if (pt_profile_load(&p, path, &e)) {
    pt_error_format(&e, buf, sizeof buf);
    fprintf(stderr, "pcie-tune show: %s\n", buf);
    return 1;
  }
  if (nranks && p.match_nranks && p.match_nranks != nranks) {
    fprintf(stderr, "pcie-tune show: %s: profile applies to %d ranks, not %ld\n", path, p.match_nranks, nranks);
    goto out;
  }
  if (pt_table_build(&t, &p)) {
    fprintf(stderr, "pcie-tune show: out of memory\n");
    goto out;
  }
  built = 1;
  const struct pt_ivset *set = t.set[coll][mode];
  if (!set) {
    fprintf(stderr, "pcie-tune show: %s: no %s data in this profile\n", path, pt_coll_name(coll));
    goto out;
  }
  /* The series drawn is the one the table serves this mode from. */
  const struct pt_series *s = p.series[coll][mode] ? p.series[coll][mode] : p.series[coll][!mode];
  /* --quiet prints nothing but the chart; with --svg -, standard output
   * carries the chart alone. */
  if (!quiet && (!svg || strcmp(svg, "-"))) {
    if (json) print_json(&p, set, coll, mode);
    else print_text(&p, set, coll, mode);
  }
  if (svg) {
    char title[300];
    snprintf(title, sizeof title, "%s: %s, %s mode", p.name, pt_coll_name(coll), pt_mode_name(mode));
    if (svg_write(svg, title, s, set, force)) {
      fprintf(stderr, "pcie-tune show: cannot write %s: %s\n", svg, strerror(errno));
      goto out;
    }
    if (!json && !quiet && strcmp(svg, "-")) printf("chart written to %s\n", svg);
  }
  status = 0;
out:
  if (built) pt_table_release(&t);
  pt_profile_release(&p);
  return status;
}
