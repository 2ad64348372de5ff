/*
 * The host's GPUs from sysfs (include/pcie/hostinfo.h). Read at init only:
 * one directory listing of /sys/bus/pci/devices and a few small files per
 * NVIDIA GPU, each opened without blocking and read with a bound.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pcie/hostinfo.h"

int pt_fp_bus_id_ok(const char *s) {
  /* dddd:bb:dd.f, lower-case hex; the function digit is 0..7. */
  static const char shape[] = "xxxx:xx:xx.x";
  if (strlen(s) != sizeof shape - 1) return 0;
  for (size_t i = 0; shape[i]; i++) {
    int c = (unsigned char)s[i];
    if (shape[i] == 'x' ? !(isdigit(c) || (c >= 'a' && c <= 'f')) : c != shape[i]) return 0;
  }
  return s[11] <= '7';
}

int pt_fp_bus_id_from_nccl(const char *hex, char *out, size_t len) {
  /* NCCL's busId is domain << 20 | bus << 12 | device << 4 | function
   * (src/misc/utils.cc, int64ToBusId). */
  char *end;
  if (!hex || !isxdigit((unsigned char)hex[0])) return -1;
  unsigned long long id = strtoull(hex, &end, 16);
  if (*end || id >> 36) return -1;
  snprintf(out, len, "%04llx:%02llx:%02llx.%01llx", id >> 20, (id >> 12) & 0xff, (id >> 4) & 0xff,
           id & 0xf);
  return pt_fp_bus_id_ok(out) ? 0 : -1;
}

/* The first line of a small sysfs file, without its newline; -1 when absent. */
static int read_line(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int read_line(char *buf, size_t len, const char *fmt, ...) {
  char path[PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(path, sizeof path, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof path) return -1;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t got = read(fd, buf, len - 1);
  close(fd);
  if (got <= 0) return -1;
  buf[got] = 0;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

static long hex_of(const char *s) {
  char *end;
  long v = strtol(s, &end, 16);
  return end == s ? -1 : v;
}

/* "32.0 GT/s PCIe" -> 5; 0 when unknown. */
static int gen_of(const char *speed) {
  static const double gts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
  double v = strtod(speed, NULL);
  for (int g = 0; g < (int)(sizeof gts / sizeof gts[0]); g++)
    if (v > gts[g] * 0.9 && v < gts[g] * 1.1) return g + 1;
  return 0;
}

static int by_bus_id(const void *a, const void *b) {
  return strcmp(((const struct pt_fp_gpu *)a)->bus_id, ((const struct pt_fp_gpu *)b)->bus_id);
}

void pt_fp_sort(struct pt_box_fp *fp) {
  qsort(fp->gpu, (size_t)fp->ngpus, sizeof fp->gpu[0], by_bus_id);
}

/* The bridges above the device whose canonical directory is real, below
 * devices (the canonical ROOT/sys/devices): "pci0000:00/0000:00:01.0/...". */
static void fill_path(struct pt_fp_gpu *g, const char *real, const char *devices) {
  size_t dl = strlen(devices);
  g->npath = 0;
  if (strncmp(real, devices, dl) || real[dl] != '/') return;
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", real + dl + 1);
  int n = 0;
  char *save = NULL;
  char *parts[PT_FP_MAX_PATH + 1];
  for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
    if (n == PT_FP_MAX_PATH + 1 || strlen(t) >= PT_FP_ID_LEN) return; /* not representable */
    parts[n++] = t;
  }
  if (n < 2 || strcmp(parts[n - 1], g->bus_id)) return; /* the last is the GPU itself */
  for (int i = 0; i < n - 1; i++) snprintf(g->path[i], PT_FP_ID_LEN, "%s", parts[i]);
  g->npath = n - 1;
}

static void fill_gpu(struct pt_fp_gpu *g, const char *devdir, const char *devices) {
  char v[64], real[PATH_MAX];
  g->numa = read_line(v, sizeof v, "%s/numa_node", devdir) ? PT_FP_NUMA_UNKNOWN : atoi(v);
  if (!read_line(v, sizeof v, "%s/device", devdir) && hex_of(v) >= 0)
    snprintf(g->model, sizeof g->model, "10de:%04lx", hex_of(v) & 0xffff);
  if (!read_line(v, sizeof v, "%s/current_link_width", devdir)) g->link_width = atoi(v);
  /* The generation the link can run at: the lower of what the GPU and the
   * port above it support. current_link_speed is not it: an idle GPU
   * trains its link down to 2.5 GT/s. */
  int gen = read_line(v, sizeof v, "%s/max_link_speed", devdir) ? 0 : gen_of(v);
  if (realpath(devdir, real)) {
    fill_path(g, real, devices);
    char *slash = strrchr(real, '/');
    if (slash && g->npath) {
      *slash = 0;
      int up = read_line(v, sizeof v, "%s/max_link_speed", real) ? 0 : gen_of(v);
      if (up && (!gen || up < gen)) gen = up;
    }
  }
  if (!gen && !read_line(v, sizeof v, "%s/current_link_speed", devdir)) gen = gen_of(v);
  g->link_gen = gen;
}

int pt_host_read(const char *root, struct pt_box_fp *fp, char *err, size_t errlen) {
  char base[PATH_MAX], devices[PATH_MAX], dir[PATH_MAX + 64], v[64];
  int rc = 0;
  memset(fp, 0, sizeof *fp);
  fp->host_gpus = 1;
  if (!root) root = getenv("PCIE_TUNER_SYSFS_ROOT");
  if (!root) root = "";
  /* Refused, not cut: a cut root names some other directory. */
  if ((size_t)snprintf(base, sizeof base, "%s/sys/bus/pci/devices", root) >= sizeof base) {
    snprintf(err, errlen, "the sysfs root (%zu bytes) is longer than PATH_MAX (%d) allows",
             strlen(root), PATH_MAX);
    return -1;
  }
  snprintf(dir, sizeof dir, "%s/sys/devices", root);
  if (!realpath(dir, devices)) devices[0] = 0;
  DIR *d = opendir(base);
  if (!d) {
    snprintf(err, errlen, "cannot list %s", base);
    return -1;
  }
  for (struct dirent *e; (e = readdir(d)) && !rc;) {
    if (!pt_fp_bus_id_ok(e->d_name)) continue;
    snprintf(dir, sizeof dir, "%s/%.15s", base, e->d_name); /* 12 characters: checked above */
    if (read_line(v, sizeof v, "%s/vendor", dir) || hex_of(v) != 0x10de) continue;
    /* VGA (0x0300) or 3D controller (0x0302): NVIDIA's audio and USB
     * functions share the vendor id. */
    if (read_line(v, sizeof v, "%s/class", dir)) continue;
    long cls = hex_of(v) >> 8;
    if (cls != 0x0300 && cls != 0x0302) continue;
    if (fp->ngpus == PT_FP_MAX_GPUS) {
      snprintf(err, errlen, "more than %d NVIDIA GPUs under %s", PT_FP_MAX_GPUS, base);
      rc = -1;
      break;
    }
    struct pt_fp_gpu *g = &fp->gpu[fp->ngpus++];
    snprintf(g->bus_id, sizeof g->bus_id, "%.12s", e->d_name);
    fill_gpu(g, dir, devices);
  }
  closedir(d);
  if (read_line(fp->driver, sizeof fp->driver, "%s/sys/module/nvidia/version", root))
    fp->driver[0] = 0;
  pt_fp_sort(fp);
  return rc;
}

/* Appends one difference to msg, at most three; later ones are counted. */
static void add_diff(char *msg, size_t len, int *ndiff, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_diff(char *msg, size_t len, int *ndiff, const char *fmt, ...) {
  size_t n = strlen(msg);
  if (++*ndiff > 3 || n + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  if (n) snprintf(msg + n, len - n, "; ");
  n = strlen(msg);
  vsnprintf(msg + n, len - n, fmt, ap);
  va_end(ap);
}

int pt_fp_bus_id_given_ok(const char *s) {
  size_t n = strlen(s);
  if (pt_fp_bus_id_ok(s)) return 1;
  /* nccl-tests' [%04x:%02x:%02x]: domain, bus, device; no function. */
  if (n == 10) {
    char full[16];
    snprintf(full, sizeof full, "%s.0", s);
    return pt_fp_bus_id_ok(full);
  }
  /* Older nccl-tests' [0x%02x]: the bus number alone. */
  if (n < 3 || n > 4 || s[0] != '0' || s[1] != 'x') return 0;
  for (size_t i = 2; i < n; i++)
    if (!(isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* Whether a bus id as recorded (full, or as nccl-tests gave it) names the
 * GPU at the full sysfs id `full`: equal, the same domain:bus:device, or
 * the same bus number. */
int pt_fp_bus_id_matches(const char *given, const char *full) {
  if (!strcmp(given, full)) return 1;
  if (strlen(given) == 10) return !strncmp(given, full, 10) && full[10] == '.';
  if (given[0] == '0' && given[1] == 'x' && strlen(full) >= 7)
    return strtol(given + 2, NULL, 16) == strtol(full + 5, NULL, 16);
  return 0;
}

static const struct pt_fp_gpu *find_gpu(const struct pt_box_fp *fp, const char *bus_id) {
  for (int i = 0; i < fp->ngpus; i++)
    if (pt_fp_bus_id_matches(fp->gpu[i].bus_id, bus_id) || pt_fp_bus_id_matches(bus_id, fp->gpu[i].bus_id))
      return &fp->gpu[i];
  return NULL;
}

/* Appends s to buf, escaped for a one-line message: a directory name in
 * sysfs (or a string in a profile) may hold a quote, a backslash or a
 * newline, which must not reach NCCL's log raw. */
static void append_escaped(char *buf, size_t len, const char *s) {
  size_t n = strlen(buf);
  for (; *s && n + 1 < len; s++) {
    unsigned char c = (unsigned char)*s;
    char e[5];
    if (c == '"' || c == '\\') snprintf(e, sizeof e, "\\%c", c);
    else if (c == '\n') snprintf(e, sizeof e, "\\n");
    else if (c < 0x20 || c >= 0x7f) snprintf(e, sizeof e, "\\x%02x", c);
    else snprintf(e, sizeof e, "%c", c);
    if (n + strlen(e) >= len) break;
    memcpy(buf + n, e, strlen(e) + 1);
    n += strlen(e);
  }
}

void pt_fp_fields(const struct pt_box_fp *fp, char *buf, size_t len) {
  int full = 1, devfn = 0, busonly = 0, model = 0, link = 0, numa = 0, path = 0, name = 0, host = 0;
  for (int i = 0; i < fp->ngpus; i++) {
    const struct pt_fp_gpu *g = &fp->gpu[i];
    full &= pt_fp_bus_id_ok(g->bus_id);
    devfn |= strlen(g->bus_id) == 10;
    busonly |= g->bus_id[0] == '0' && g->bus_id[1] == 'x';
    model |= g->model[0] != 0;
    link |= g->link_gen || g->link_width;
    numa |= g->numa != PT_FP_NUMA_UNKNOWN;
    path |= g->npath > 0;
    name |= g->name[0] != 0;
    host |= g->host[0] != 0;
  }
  snprintf(buf, len, "box compared on: bus ids%s%s%s%s%s%s", full ? "" : " (as nccl-tests gave them:",
           full ? "" : devfn && busonly ? " domain:bus:device or bus number only)"
                       : devfn ? " domain:bus:device)" : " bus number only)",
           fp->host_gpus ? ", GPU count" : "", model ? ", PCI model" : "",
           link ? ", PCIe link" : "", numa ? ", NUMA node" : "");
  if (path) snprintf(buf + strlen(buf), len > strlen(buf) ? len - strlen(buf) : 0, ", PCIe tree");
  if (!model || !link || !numa || !path || !fp->host_gpus)
    snprintf(buf + strlen(buf), len > strlen(buf) ? len - strlen(buf) : 0, "; not recorded:%s%s%s%s%s",
             fp->host_gpus ? "" : " the host's other GPUs,", model ? "" : " PCI model,",
             link ? "" : " PCIe link,", numa ? "" : " NUMA node,", path ? "" : " PCIe tree,");
  size_t n = strlen(buf);
  if (n && buf[n - 1] == ',') buf[n - 1] = 0;
  if (name || host)
    snprintf(buf + strlen(buf), len > strlen(buf) ? len - strlen(buf) : 0,
             "; recorded, not compared: %s%s%s", name ? "GPU names (sysfs has none)" : "",
             name && host ? ", " : "", host ? "host names (a container's differs from its box's)" : "");
}

static void path_str(const struct pt_fp_gpu *g, char *buf, size_t len) {
  buf[0] = 0;
  for (int i = 0; i < g->npath; i++) {
    if (i) append_escaped(buf, len, "/");
    append_escaped(buf, len, g->path[i]);
  }
  if (!g->npath) snprintf(buf, len, "unknown");
}

/* The measured GPUs missing here (the first three), and where this host's
 * are instead when the profile knows the host's whole set. */
static int missing_gpus(const struct pt_box_fp *prof, const struct pt_box_fp *host, char *msg,
                        size_t len, int *nd) {
  char gone[160] = "", here[160] = "";
  int ngone = 0;
  for (int i = 0; i < prof->ngpus; i++)
    if (!find_gpu(host, prof->gpu[i].bus_id) && ngone++ < 3)
      snprintf(gone + strlen(gone), sizeof gone - strlen(gone), "%s%s", ngone > 1 ? ", " : "",
               prof->gpu[i].bus_id);
  if (!ngone) return 0;
  for (int i = 0, k = 0; prof->host_gpus && i < host->ngpus; i++)
    if (!find_gpu(prof, host->gpu[i].bus_id) && k++ < 3)
      snprintf(here + strlen(here), sizeof here - strlen(here), "%s%s", k > 1 ? ", " : "",
               host->gpu[i].bus_id);
  add_diff(msg, len, nd, "%d measured GPU%s not on this host (%s%s)%s%s%s", ngone,
           ngone == 1 ? " is" : "s are", gone, ngone > 3 ? ", ..." : "",
           here[0] ? "; here the GPUs are at " : "", here, here[0] && host->ngpus > 3 ? ", ..." : "");
  return PT_FP_DIFF_BOX;
}

/* What differs on one measured GPU found here: model, link, NUMA node,
 * the bridges above it (each only where the profile recorded it). */
static int gpu_diffs(const struct pt_fp_gpu *p, const struct pt_fp_gpu *h, char *msg, size_t len,
                     int *nd) {
  int before = *nd;
  if (p->model[0] && strcmp(p->model, h->model))
    add_diff(msg, len, nd, "GPU %s is %s here, %s when measured", p->bus_id,
             h->model[0] ? h->model : "unknown", p->model);
  if (p->link_gen && p->link_gen != h->link_gen)
    add_diff(msg, len, nd, "GPU %s link gen %d here, %d when measured", p->bus_id, h->link_gen,
             p->link_gen);
  if (p->link_width && p->link_width != h->link_width)
    add_diff(msg, len, nd, "GPU %s link x%d here, x%d when measured", p->bus_id, h->link_width,
             p->link_width);
  if (p->numa != PT_FP_NUMA_UNKNOWN && p->numa != h->numa)
    add_diff(msg, len, nd, "GPU %s on NUMA node %d here, %d when measured", p->bus_id, h->numa,
             p->numa);
  int same_path = p->npath == h->npath;
  for (int k = 0; same_path && k < p->npath; k++) same_path = !strcmp(p->path[k], h->path[k]);
  if (p->npath && !same_path) {
    char a[800], b[800];
    path_str(h, a, sizeof a);
    path_str(p, b, sizeof b);
    add_diff(msg, len, nd, "GPU %s hangs under %s here, %s when measured", p->bus_id, a, b);
  }
  return *nd != before ? PT_FP_DIFF_BOX : 0;
}

int pt_fp_compare(const struct pt_box_fp *prof, const struct pt_box_fp *host, char *msg,
                  size_t len) {
  int r = 0, nd = 0;
  if (len) msg[0] = 0;
  if (prof->host_gpus && prof->ngpus != host->ngpus) {
    add_diff(msg, len, &nd, "%d NVIDIA GPU%s here, %d when measured", host->ngpus,
             host->ngpus == 1 ? "" : "s", prof->ngpus);
    r |= PT_FP_DIFF_BOX;
  }
  r |= missing_gpus(prof, host, msg, len, &nd);
  for (int i = 0; i < prof->ngpus; i++) {
    const struct pt_fp_gpu *h = find_gpu(host, prof->gpu[i].bus_id);
    if (h) r |= gpu_diffs(&prof->gpu[i], h, msg, len, &nd);
  }
  if (nd > 3) {
    size_t n = strlen(msg);
    snprintf(msg + n, len > n ? len - n : 0, "; and %d more difference%s", nd - 3,
             nd - 3 == 1 ? "" : "s");
  }
  if (prof->driver[0] && host->driver[0] && strcmp(prof->driver, host->driver)) {
    size_t n = strlen(msg);
    char drv_here[4 * sizeof host->driver] = "", drv_then[4 * sizeof prof->driver] = "";
    append_escaped(drv_here, sizeof drv_here, host->driver);
    append_escaped(drv_then, sizeof drv_then, prof->driver);
    snprintf(msg + n, len > n ? len - n : 0, "%sNVIDIA driver %s here, %s when measured",
             n ? "; " : "", drv_here, drv_then);
    r |= PT_FP_DIFF_DRIVER;
  }
  return r;
}

/* Appends s to a comma list in buf unless it is there already. */
static void add_distinct(char *buf, size_t len, const char *s) {
  size_t n = strlen(s);
  for (const char *p = buf; (p = strstr(p, s)); p++)
    if ((p == buf || p[-1] == ' ') && (p[n] == ',' || !p[n])) return;
  size_t l = strlen(buf);
  snprintf(buf + l, len > l ? len - l : 0, "%s%s", l ? ", " : "", s);
}

void pt_fp_summary(const struct pt_box_fp *fp, char *buf, size_t len) {
  char models[256] = "", links[128] = "", numa[128] = "", roots[512] = "", bridges[2048] = "";
  char t[PT_FP_NAME_LEN + 32];
  int nbridge = 0, nroot = 0;
  for (int i = 0; i < fp->ngpus; i++) {
    const struct pt_fp_gpu *g = &fp->gpu[i];
    if (g->model[0] || g->name[0]) {
      if (!g->model[0]) snprintf(t, sizeof t, "%s", g->name);
      else snprintf(t, sizeof t, "%s%s%s%s", g->model, g->name[0] ? " (" : "", g->name,
                    g->name[0] ? ")" : "");
      add_distinct(models, sizeof models, t);
    }
    if (g->link_gen || g->link_width) {
      snprintf(t, sizeof t, "gen%d x%d", g->link_gen, g->link_width);
      add_distinct(links, sizeof links, t);
    }
    if (g->numa != PT_FP_NUMA_UNKNOWN) {
      snprintf(t, sizeof t, "%d", g->numa);
      add_distinct(numa, sizeof numa, t);
    }
    for (int k = 0; k < g->npath; k++) {
      char *list = k ? bridges : roots;
      size_t l = strlen(list);
      add_distinct(list, k ? sizeof bridges : sizeof roots, g->path[k]);
      if (strlen(list) != l) *(k ? &nbridge : &nroot) += 1;
    }
  }
  snprintf(buf, len, "%d GPU%s%s", fp->ngpus, fp->ngpus == 1 ? "" : "s",
           fp->host_gpus ? "" : " of the communicator");
#define ADD(...) snprintf(buf + strlen(buf), len > strlen(buf) ? len - strlen(buf) : 0, __VA_ARGS__)
  if (models[0]) ADD(" %s", models);
  if (links[0]) ADD(", PCIe %s", links);
  if (numa[0]) ADD(", NUMA node%s %s", strchr(numa, ',') ? "s" : "", numa);
  if (nroot) ADD(", %d root complex%s and %d bridge port%s above them", nroot,
                 nroot == 1 ? "" : "es", nbridge, nbridge == 1 ? "" : "s");
  if (fp->driver[0]) ADD(", driver %s", fp->driver);
  int partial = 0;
  for (int i = 0; i < fp->ngpus; i++) partial |= !pt_fp_bus_id_ok(fp->gpu[i].bus_id);
  if (fp->ngpus && !models[0] && !links[0] && !nroot) ADD(" (bus ids only)");
  else if (partial) ADD(" (bus ids as nccl-tests gave them)");
#undef ADD
}

int pt_host_line(char *buf, size_t len, const char *path) {
  return read_line(buf, len, "%s", path);
}

long pt_host_bytes(const char *path, void *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  return (long)got;
}
