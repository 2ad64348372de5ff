/* pcie-tune doctor --host, run as a user runs it, over sysfs trees built
 * from the trees in test/data/hosts: each names the published lspci / nvidia-smi
 * output it follows in its header, and what was chosen to fill the gaps.
 * The builder lays the tree out as the kernel does: sys/devices/pci.../BDF
 * directories, sys/bus/pci/devices/BDF links to them, config space with the
 * ACS extended capability, iommu_group links, proc/cmdline and cpuinfo. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/pt_json.h"
#include "support/pt_test.h"

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static void put(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(const char *dir, const char *name, const char *fmt, ...) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "%s", path);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  ck_assert_int_eq(fclose(f), 0);
}

static void mkdirs(const char *path) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
  ck_assert_int_eq(system(cmd), 0);
}

/* Config space: 4096 bytes with ACS (ID 0x000d) at 0x100 holding ctl, or
 * 256 bytes (what a user without root reads), or no extended capability. */
static void put_config(const char *dir, const char *acs) {
  unsigned char cfg[4096];
  size_t len = sizeof cfg;
  memset(cfg, 0, sizeof cfg);
  cfg[0] = 0x22, cfg[1] = 0x10; /* vendor */
  if (!strcmp(acs, "unreadable")) {
    len = 256;
  } else if (strcmp(acs, "none")) {
    /* Advanced Error Reporting first (ID 1, next 0x150), then ACS. */
    cfg[0x100] = 0x01, cfg[0x101] = 0x00, cfg[0x102] = 0x01, cfg[0x103] = 0x15;
    unsigned ctl = (unsigned)strtoul(acs, NULL, 16);
    cfg[0x150] = 0x0d, cfg[0x151] = 0x00, cfg[0x152] = 0x01, cfg[0x153] = 0x00;
    cfg[0x156] = ctl & 0xff, cfg[0x157] = ctl >> 8;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/config", dir);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  ck_assert_uint_eq(fwrite(cfg, 1, len, f), len);
  fclose(f);
}

static const char *opt(const char *line, const char *key, char *buf, size_t len) {
  const char *p = strstr(line, key);
  if (!p) return NULL;
  p += strlen(key);
  size_t n = strcspn(p, " \n");
  snprintf(buf, len, "%.*s", (int)n, p);
  return buf;
}

/* Builds test/data/hosts/NAME.tree under a new directory; returns it. */
static char *build(const char *name) {
  char *root = pt_test_tmpdir(), path[4096], line[1024], v[256], w[256];
  snprintf(path, sizeof path, "%s/test/data/hosts/%s.tree", pt_test_srcdir(), name);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  snprintf(path, sizeof path, "%s/sys/bus/pci/devices", root);
  mkdirs(path);
  snprintf(path, sizeof path, "%s/proc", root);
  mkdirs(path);
  while (fgets(line, sizeof line, f)) {
    char kind[16], rel[512];
    if (line[0] == '#' || sscanf(line, "%15s", kind) != 1) continue;
    const char *rest = line + strlen(kind) + 1;
    if (!strcmp(kind, "cpu")) {
      put(root, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: %.*s\n", (int)strcspn(rest, "\n"), rest);
    } else if (!strcmp(kind, "cmdline")) {
      put(root, "proc/cmdline", "%s", rest);
    } else if (!strcmp(kind, "iommu")) {
      snprintf(path, sizeof path, "%s/sys/class/iommu/%.*s", root, (int)strcspn(rest, "\n"), rest);
      mkdirs(path);
    } else if (!strcmp(kind, "group")) {
      ck_assert_int_eq(sscanf(rest, "%255s %255s", v, w), 2);
      snprintf(path, sizeof path, "%s/sys/kernel/iommu_groups/%s", root, v);
      mkdirs(path);
      put(path, "type", "%s\n", w);
    } else {
      ck_assert_int_eq(sscanf(rest, "%511s", rel), 1);
      char dir[4096], link[4200], target[4200];
      snprintf(dir, sizeof dir, "%s/sys/devices/%s", root, rel);
      mkdirs(dir);
      const char *bdf = strrchr(rel, '/') + 1;
      snprintf(link, sizeof link, "%s/sys/bus/pci/devices/%s", root, bdf);
      snprintf(target, sizeof target, "../../../devices/%s", rel);
      ck_assert_int_eq(symlink(target, link), 0);
      if (!strcmp(kind, "bridge")) {
        put(dir, "vendor", "0x1022\n");
        put(dir, "class", "0x060400\n");
        if (opt(rest, "speed=", v, sizeof v)) put(dir, "max_link_speed", "%s GT/s PCIe\n", v);
        if (opt(rest, "width=", v, sizeof v)) put(dir, "max_link_width", "%s\n", v);
        put_config(dir, opt(rest, "acs=", v, sizeof v) ? v : "none");
      } else {
        put(dir, "vendor", "0x10de\n");
        put(dir, "class", "0x030000\n");
        put(dir, "device", "0x%s\n", opt(rest, "device=", v, sizeof v));
        ck_assert(opt(rest, "cur=", v, sizeof v) && strchr(v, ','));
        put(dir, "current_link_speed", "%.*s GT/s PCIe\n", (int)strcspn(v, ","), v);
        put(dir, "current_link_width", "%s\n", strchr(v, ',') + 1);
        ck_assert(opt(rest, "max=", v, sizeof v) && strchr(v, ','));
        put(dir, "max_link_speed", "%.*s GT/s PCIe\n", (int)strcspn(v, ","), v);
        put(dir, "max_link_width", "%s\n", strchr(v, ',') + 1);
        put(dir, "numa_node", "%s\n", opt(rest, "numa=", v, sizeof v));
        unsigned long long mib = opt(rest, "bar1=", v, sizeof v) ? strtoull(v, NULL, 10) : 256;
        unsigned long long base = 0x10000000000ull;
        put(dir, "resource",
            "0x00000000fb000000 0x00000000fbffffff 0x0000000000040200\n"
            "0x%016llx 0x%016llx 0x000000000014220c\n"
            "0x0000000000000000 0x0000000000000000 0x0000000000000000\n",
            base, base + (mib << 20) - 1);
        put_config(dir, "none");
        if (opt(rest, "group=", v, sizeof v)) {
          snprintf(link, sizeof link, "%s/iommu_group", dir);
          snprintf(target, sizeof target, "%s/sys/kernel/iommu_groups/%s", root, v);
          ck_assert_int_eq(symlink(target, link), 0);
        }
      }
    }
  }
  fclose(f);
  return root;
}

/* "doctor --host ARGS" on tree NAME; rc returned, output in *out and *err. */
static int host(const char *name, const char *args, char **out, char **err) {
  char *root = build(name), *cmd = NULL;
  ck_assert(asprintf(&cmd, "PCIE_TUNER_SYSFS_ROOT='%s' '%s' doctor --host %s", root, pt_test_cli(),
                     args) > 0);
  int rc = pt_test_run(cmd, out, err);
  free(cmd);
  pt_test_rmtree(root);
  free(root);
  return rc;
}

START_TEST(acs_redirect_on_the_root_ports) {
  char *out, *err;
  int rc = host("acs-redirect-2x-rtx5880", "", &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "host: 2 NVIDIA GPUs");
  has(out, "IOMMU present (ivhd0); CPU AMD");
  /* Two root complexes of one NUMA node; NCCL allows P2P for 2 GPUs on AMD. */
  has(out, "0000:41:00.0 - 0000:61:00.0: PHB (nvidia-smi: NODE), P2P");
  has(out, "[DEGRADES] GPUs 0000:41:00.0 and 0000:61:00.0: ACS P2P redirect on 2 bridges of their path");
  has(out, "sys/bus/pci/devices/0000:40:01.1/config: ACS control 0x001d (ReqRedir+ CmpltRedir+)");
  has(out, "and through the IOMMU");
  has(out, "setpci -s BDF ECAP_ACS+6.w=0000 (0000:40:01.1 0000:60:01.1");
  has(out, "NVIDIA/nccl#2079");
  has(out, "[WARN] host: the IOMMU translates the DMA of 2 GPUs");
  has(out, "sys/kernel/iommu_groups/30/type = DMA-FQ (GPU 0000:41:00.0)");
  has(out, "host verdict: 1 finding degrades P2P or risks a hang");
  free(out);
  free(err);
  rc = host("acs-redirect-2x-rtx5880", "--strict", &out, &err);
  ck_assert_int_eq(rc, 6);
  free(out);
  free(err);
}
END_TEST

START_TEST(switch_box_pix_and_sys) {
  char *out, *err;
  int rc = host("switch-4x-pex8747", "--strict", &out, &err);
  ck_assert_msg(rc == 6, "exit %d:\n%s%s", rc, out, err);
  has(out, "0000:05:00.0 - 0000:06:00.0: PIX, P2P");
  has(out, "0000:84:00.0 - 0000:85:00.0: PIX, P2P");
  has(out, "0000:05:00.0 - 0000:84:00.0: SYS, SHM (P2P with NCCL_P2P_LEVEL)");
  has(out, "[DEGRADES] GPUs 0000:05:00.0 and 0000:84:00.0: NCCL uses SHM between them by default (path SYS)");
  has(out, "NCCL_P2P_LEVEL=SYS");
  ck_assert_ptr_null(strstr(out, "ACS P2P redirect"));
  ck_assert_ptr_null(strstr(out, "acs-unreadable"));
  has(out, "IOMMU not present; CPU not AMD");
  has(out, "BAR1 16 GiB");
  has(out, "host verdict: 4 findings degrade P2P or risk a hang");
  free(out);
  free(err);
}
END_TEST

START_TEST(dual_socket_direct_attach) {
  char *out, *err;
  int rc = host("dual-socket-2x-rtx3090", "", &out, &err);
  ck_assert_int_eq(rc, 0);
  has(out, "GPU 0000:09:00.0 10de:2204: link 8.0 GT/s PCIe x16 (max 8.0 GT/s PCIe x16; slot 8.0 GT/s PCIe x16), NUMA 0");
  has(out, "0000:09:00.0 - 0000:41:00.0: SYS, SHM (P2P with NCCL_P2P_LEVEL)");
  has(out, "NUMA nodes 0 and 1");
  has(out, "BAR1 256 MiB");
  free(out);
  free(err);
}
END_TEST

START_TEST(phb_workstation_without_root) {
  char *out, *err;
  int rc = host("phb-workstation-2x-rtx5090", "--strict", &out, &err);
  ck_assert_msg(rc == 0, "exit %d:\n%s%s", rc, out, err);
  has(out, "0000:01:00.0 - 0000:02:00.0: PHB, P2P");
  ck_assert_ptr_null(strstr(out, "nvidia-smi: NODE"));
  has(out, "[WARN] host: ACS not read on some bridges between GPUs: config space past 256 bytes needs root");
  has(out, "sudo pcie-tune doctor --host");
  has(out, "IOMMU group 12 (identity)");
  ck_assert_ptr_null(strstr(out, "iommu-translating"));
  ck_assert_ptr_null(strstr(out, "IOMMU translates"));
  has(out, "host verdict: no finding degrades P2P");
  free(out);
  free(err);
}
END_TEST

START_TEST(links_trained_down) {
  char *out, *err;
  int rc = host("link-down-x570-3gpu", "--strict", &out, &err);
  ck_assert_msg(rc == 6, "exit %d:\n%s%s", rc, out, err);
  /* On a riser: x8 Gen3 where the slot and card do x16 Gen4. */
  has(out, "[DEGRADES] GPU 0000:0a:00.0: link trained at x8 where x16 is possible");
  has(out, "[DEGRADES] GPU 0000:0a:00.0: link at 8.0 GT/s PCIe where 16.0 GT/s is possible");
  /* The slot's own width: a warning, not a training fault. */
  has(out, "[WARN] GPU 0000:0b:00.0: an x16 card in an x8 slot");
  has(out, "[WARN] GPU 0000:05:00.0: an x16 card in an x4 slot");
  /* 2.5 GT/s is what an idle GPU trains down to. */
  has(out, "[INFO] GPU 0000:05:00.0: link at 2.5 GT/s PCIe where 16.0 GT/s is possible (likely idle power saving)");
  has(out, "nvidia-smi -q -d PCIe");
  ck_assert_ptr_null(strstr(out, "0000:0b:00.0: link at"));
  free(out);
  free(err);
}
END_TEST

START_TEST(host_errors) {
  char *out, *err;
  char *dir = pt_test_tmpdir(), *cmd = NULL;
  ck_assert(asprintf(&cmd, "PCIE_TUNER_SYSFS_ROOT='%s/none' '%s' doctor --host", dir, pt_test_cli()) > 0);
  int rc = pt_test_run(cmd, &out, &err);
  ck_assert_int_eq(rc, 1);
  has(err, "pcie-tune doctor: --host: cannot list");
  has(err, "PCIE_TUNER_SYSFS_ROOT");
  free(out);
  free(err);
  free(cmd);
  pt_test_rmtree(dir);
  free(dir);
  /* -q: only the verdict line. */
  rc = host("acs-redirect-2x-rtx5880", "-q", &out, &err);
  ck_assert_str_eq(out, "host verdict: 1 finding degrades P2P or risks a hang\n");
  free(out);
  free(err);
}
END_TEST

/* doctor --json --host: the host as one document, read by a parser. */
START_TEST(host_as_json) {
  char *out, *err, msg[128];
  int rc = host("acs-redirect-2x-rtx5880", "--json --strict", &out, &err);
  ck_assert_int_eq(rc, 6);
  struct pt_json *doc = pt_json_parse(out, msg, sizeof msg);
  ck_assert_msg(doc != NULL, "%s in:\n%s", msg, out);
  ck_assert_str_eq(pt_json_at(doc, "schema")->str, "pcie-tune-doctor/1");
  ck_assert_int_eq((int)pt_json_at(doc, "exit")->num, 6);
  ck_assert_int_eq(pt_json_at(doc, "verdict")->type, PT_JSON_NULL);
  ck_assert_uint_eq(pt_json_at(doc, "jobs")->n, 0);
  ck_assert_uint_eq(pt_json_at(doc, "host.gpus")->n, 2);
  ck_assert_str_eq(pt_json_at(doc, "host.gpus.0.bus_id")->str, "0000:41:00.0");
  ck_assert_str_eq(pt_json_at(doc, "host.gpus.0.iommu_type")->str, "DMA-FQ");
  ck_assert_int_eq((int)pt_json_at(doc, "host.gpus.0.bar1_bytes")->num == 0, 0);
  ck_assert_str_eq(pt_json_at(doc, "host.pairs.0.path")->str, "PHB");
  ck_assert_int_eq((int)pt_json_at(doc, "host.pairs.0.other_root_complex")->num, 1);
  ck_assert_str_eq(pt_json_at(doc, "host.pairs.0.default_transport")->str, "P2P");
  ck_assert_str_eq(pt_json_at(doc, "host.findings.0.id")->str, "acs-redirect");
  ck_assert_str_eq(pt_json_at(doc, "host.findings.0.severity")->str, "degrades");
  ck_assert(strstr(pt_json_at(doc, "host.findings.0.evidence")->str, "ACS control 0x001d"));
  ck_assert_str_eq(pt_json_at(doc, "host.findings.1.id")->str, "iommu-translating");
  ck_assert_int_eq((int)pt_json_at(doc, "host.exit")->num, 6);
  pt_json_free(doc);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor_host");
  TCase *tc = tcase_create("doctor_host");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, acs_redirect_on_the_root_ports);
  tcase_add_test(tc, switch_box_pix_and_sys);
  tcase_add_test(tc, dual_socket_direct_attach);
  tcase_add_test(tc, phb_workstation_without_root);
  tcase_add_test(tc, links_trained_down);
  tcase_add_test(tc, host_errors);
  tcase_add_test(tc, host_as_json);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
