/* Issue 17 §1-§2: a profile is used only where it was measured, and every
 * rank decides alike. The host's GPUs come from sysfs (tuner/hostinfo.c),
 * here from the tree the simulated host writes for a built-in box; NCCL's
 * version comes from the library whose logger NCCL passes to init, here a
 * test double loaded RTLD_LOCAL. Everything runs through dlopen of the
 * built plugin. */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcie/ncclver.h"
#include "nccl/common.h"
#include "pcie/host.h"
#include "pcie/hostinfo.h"
#include "pcie/sim_box.h"
#include "pcie/sim_fp.h"
#include "support/pt_test.h"

static char *dir;
static char sysroot[PATH_MAX];

static void setup(void) {
  dir = pt_test_tmpdir();
  sysroot[0] = 0;
  /* The check itself is under test here (pt_test_main accepts foreign
   * profiles for the other suites). */
  unsetenv("PCIE_TUNER_ACCEPT_FOREIGN");
  unsetenv("PCIE_TUNER_SYSFS_ROOT");
  unsetenv("PTDOUBLE_NCCL_VERSION");
  unsetenv("NCCL_P2P_LEVEL");
  ph_log_clear();
}

static void teardown(void) {
  ph_box_withdraw(sysroot);
  pt_test_rmtree(dir);
  free(dir);
}

static const struct pt_box *box(const char *name) {
  const struct pt_box *b = pt_box_builtin(name);
  ck_assert_msg(b != NULL, "no built-in box %s", name);
  return b;
}

/* The simulated host runs on box b: the plugin's sysfs reader sees it. */
static void run_on(const char *name) {
  char err[512];
  ph_box_withdraw(sysroot);
  ck_assert_msg(ph_box_present(box(name), sysroot, sizeof sysroot, err, sizeof err) == 0, "%s",
                err);
}

/* A profile measured on box `on` (NULL: no provenance.box) with NCCL
 * version ver, whose ring/LL/2 beats NCCL's default by 2x everywhere,
 * written by the real writer; PCIE_TUNER_PROFILE points at it. */
static void use_profile(const char *on, const char *ver, const char *match, const char *more) {
  char *text = NULL, *out = NULL;
  struct pt_profile p;
  struct pt_error_rec e;
  ck_assert(asprintf(&text,
                     "version = 1;\nname = \"prov\";\nmatch = { %s };\n"
                     "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"%s\"; "
                     "date = \"2026-12-01\"; mode = \"both\"; };\n%s"
                     "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
                     "  nccl_default = ( 20.0, 200.0 );\n"
                     "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; "
                     "latency = ( 10.0, 100.0 ); } ); }; };\n",
                     match, ver, more) > 0);
  ck_assert_msg(pt_profile_load_string(&p, text, "prov.cfg", &e) == 0, "%s", e.msg);
  if (on) {
    ck_assert_ptr_nonnull(p.prov.box = malloc(sizeof *p.prov.box));
    ck_assert_int_eq(pt_box_fingerprint(box(on), p.prov.box), 0);
  }
  ck_assert_int_eq(pt_profile_render(&p, &out), 0);
  char *path = pt_test_write(dir, "prov.cfg", out);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  free(path);
  free(out);
  free(text);
  pt_profile_release(&p);
}

/* Opens the plugin (ABI version, 0 = newest), inits one communicator and
 * returns whether it tunes all-reduce at 4 KiB. */
static int tunes(int version, size_t nranks, size_t nnodes, ncclDebugLogger_t logger) {
  struct ph_plugin pl;
  struct ph_comm c;
  struct ph_choice ch;
  float t[7][3], before[7][3];
  char err[512];
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), version, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init_log(&c, &pl, nranks, nnodes, 1, logger), ncclSuccess);
  pt_test_nccl_table(t, ncclFuncAllReduce, 4096, (int)nranks, 0);
  memcpy(before, t, sizeof t);
  ph_decide(&c, ncclFuncAllReduce, 4096, 0, t, &ch);
  int changed = memcmp(before, t, sizeof t) != 0 || ch.nchannels != 0;
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  ph_plugin_close(&pl);
  return changed;
}

static int info_has(const char *needle) { return ph_log_find(NCCL_LOG_INFO, needle) > 0; }

START_TEST(sysfs_reader_reads_each_box_as_presented) {
  struct pt_box_fp want, got;
  char err[256];
  for (size_t i = 0; i < pt_box_builtin_count(); i++) {
    const struct pt_box *b = pt_box_builtin_at(i);
    run_on(b->name);
    ck_assert_int_eq(pt_box_fingerprint(b, &want), 0);
    ck_assert_msg(pt_host_read(NULL, &got, err, sizeof err) == 0, "%s: %s", b->name, err);
    char diff[512];
    ck_assert_int_eq(got.ngpus, want.ngpus);
    ck_assert_msg(pt_fp_compare(&want, &got, diff, sizeof diff) == 0, "%s: %s", b->name, diff);
    /* The tree says the idle link runs at 2.5 GT/s; the reader reports
     * what the link can run at. */
    ck_assert_int_eq(got.gpu[0].link_gen, want.gpu[0].link_gen);
    ck_assert_int_gt(got.gpu[0].npath, 1);
  }
}
END_TEST

static void put_file(const char *d, const char *name, const char *text) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", d, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "%s\n", text);
  ck_assert_int_eq(fclose(f), 0);
}

/* One PCI function under root/sys/devices/<path>, linked from the bus. */
static void pci_fn(const char *root, const char *path, const char *id, const char *vendor,
                   const char *cls, const char *maxspeed) {
  char d[PATH_MAX], cmd[PATH_MAX * 2], link[PATH_MAX], target[PATH_MAX];
  snprintf(d, sizeof d, "%s/sys/devices/%s/%s", root, path, id);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s/sys/bus/pci/devices'", d, root);
  ck_assert_int_eq(system(cmd), 0);
  put_file(d, "vendor", vendor);
  put_file(d, "class", cls);
  put_file(d, "device", "0x2330");
  put_file(d, "numa_node", "1");
  put_file(d, "current_link_speed", "2.5 GT/s PCIe");
  put_file(d, "current_link_width", "16");
  if (maxspeed) put_file(d, "max_link_speed", maxspeed);
  snprintf(link, sizeof link, "%s/sys/bus/pci/devices/%s", root, id);
  snprintf(target, sizeof target, "../../../devices/%s/%s", path, id);
  ck_assert_int_eq(symlink(target, link), 0);
}

START_TEST(sysfs_reader_takes_nvidia_gpus_only) {
  char root[PATH_MAX], err[256];
  struct pt_box_fp fp;
  snprintf(root, sizeof root, "%s/root", dir);
  /* A Gen5 GPU behind a Gen4 root port: the link runs at Gen4. */
  pci_fn(root, "pci0000:00", "0000:00:01.0", "0x8086", "0x060400", "16.0 GT/s PCIe");
  pci_fn(root, "pci0000:00/0000:00:01.0", "0000:17:00.0", "0x10de", "0x030200", "32.0 GT/s PCIe");
  pci_fn(root, "pci0000:00/0000:00:01.0", "0000:17:00.1", "0x10de", "0x040300", NULL); /* audio */
  pci_fn(root, "pci0000:00", "0000:03:00.0", "0x1002", "0x030000", NULL);             /* AMD */
  pci_fn(root, "pci0000:80", "0000:80:00.0", "0x10de", "0x030000", "8.0 GT/s PCIe");  /* VGA */
  char nv[PATH_MAX + 32];
  snprintf(nv, sizeof nv, "mkdir -p '%s/sys/module/nvidia'", root);
  ck_assert_int_eq(system(nv), 0);
  snprintf(nv, sizeof nv, "%s/sys/module/nvidia", root);
  put_file(nv, "version", "550.54.15");
  ck_assert_msg(pt_host_read(root, &fp, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(fp.ngpus, 2);
  ck_assert_str_eq(fp.gpu[0].bus_id, "0000:17:00.0");
  ck_assert_str_eq(fp.gpu[0].model, "10de:2330");
  ck_assert_int_eq(fp.gpu[0].link_gen, 4);
  ck_assert_int_eq(fp.gpu[0].link_width, 16);
  ck_assert_int_eq(fp.gpu[0].numa, 1);
  ck_assert_int_eq(fp.gpu[0].npath, 2);
  ck_assert_str_eq(fp.gpu[0].path[0], "pci0000:00");
  ck_assert_str_eq(fp.gpu[0].path[1], "0000:00:01.0");
  ck_assert_str_eq(fp.gpu[1].bus_id, "0000:80:00.0");
  ck_assert_int_eq(fp.gpu[1].link_gen, 3);
  ck_assert_str_eq(fp.driver, "550.54.15");
  /* The same through the variable the plugin reads. */
  setenv("PCIE_TUNER_SYSFS_ROOT", root, 1);
  struct pt_box_fp again;
  ck_assert_int_eq(pt_host_read(NULL, &again, err, sizeof err), 0);
  ck_assert_int_eq(pt_fp_compare(&fp, &again, err, sizeof err), 0);
  /* A root without a PCI bus is an error, not an empty box. */
  ck_assert_int_eq(pt_host_read(dir, &fp, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "sys/bus/pci/devices"));
}
END_TEST

START_TEST(nccl_bus_ids_become_sysfs_ones) {
  char b[32];
  ck_assert_int_eq(pt_fp_bus_id_from_nccl("17000", b, sizeof b), 0);
  ck_assert_str_eq(b, "0000:17:00.0");
  ck_assert_int_eq(pt_fp_bus_id_from_nccl("10b1c1", b, sizeof b), 0);
  ck_assert_str_eq(b, "0001:0b:1c.1");
  ck_assert_int_eq(pt_fp_bus_id_from_nccl("zz", b, sizeof b), -1);
  ck_assert(pt_fp_bus_id_ok("0000:17:00.0"));
  ck_assert(!pt_fp_bus_id_ok("0000:1A:00.0"));
  ck_assert(!pt_fp_bus_id_ok("0000:17:00.8"));
}
END_TEST

#define BOXED(gpus)                                                                            \
  "version = 1;\nname = \"b\";\nprovenance = { tool = \"t\"; backend = \"b\"; nccl_version = " \
  "\"2.30.7\"; date = \"d\"; mode = \"eager\";\n box = { driver = \"550\"; gpus = (\n" gpus    \
  " ); };\n};\nrules = ( { collective = \"allreduce\"; min_bytes = 1L; max_bytes = 1024L; "     \
  "algo = \"ring\"; proto = \"ll\"; } );\n"

static void refused(const char *text, int line, const char *needle) {
  struct pt_profile p;
  struct pt_error_rec e;
  ck_assert_int_eq(pt_profile_load_string(&p, text, "bad.cfg", &e), PT_EINVAL);
  ck_assert_msg(strstr(e.msg, needle), "'%s' lacks '%s'", e.msg, needle);
  ck_assert_int_eq(e.line, line);
}

START_TEST(box_round_trips_and_bad_boxes_are_refused) {
  struct pt_profile p, q;
  struct pt_error_rec e;
  char *out = NULL;
  ck_assert_msg(pt_profile_load_string(&p, BOXED(
      "  { bus_id = \"0000:65:00.0\"; model = \"10de:2330\"; name = \"H100 \\\"PCIe\\\"\";"
      " link_gen = 5; link_width = 16; numa = 1; path = [ \"pci0000:64\", \"0000:64:01.0\" ]; },\n"
      "  { bus_id = \"0000:17:00.0\"; }\n"), "ok.cfg", &e) == 0, "%s", e.msg);
  ck_assert_int_eq(p.prov.box->ngpus, 2);
  ck_assert_str_eq(p.prov.box->gpu[0].bus_id, "0000:17:00.0"); /* sorted */
  ck_assert_int_eq(p.prov.box->gpu[0].numa, PT_FP_NUMA_UNKNOWN);
  ck_assert_int_eq(pt_profile_render(&p, &out), 0);
  ck_assert_msg(pt_profile_load_string(&q, out, "again.cfg", &e) == 0, "%s\n%s", e.msg, out);
  char diff[256];
  ck_assert_int_eq(pt_fp_compare(p.prov.box, q.prov.box, diff, sizeof diff), 0);
  ck_assert_str_eq(q.prov.box->gpu[1].name, "H100 \"PCIe\"");
  ck_assert_str_eq(q.prov.box->driver, "550");
  pt_profile_release(&p);
  pt_profile_release(&q);
  free(out);
  refused(BOXED("  { bus_id = \"0000:1A:00.0\"; }\n"), 5, "sysfs form");
  refused(BOXED("  { bus_id = \"0000:17:00.0\"; },\n  { bus_id = \"0000:17:00.0\"; }\n"), 6,
          "appears twice");
  refused(BOXED("  { bus_id = \"0000:17:00.0\"; colour = 1; }\n"), 5, "unknown key 'colour'");
  refused(BOXED("  { model = \"10de:2330\"; }\n"), 5, "needs bus_id");
  refused(BOXED("  { bus_id = \"0000:17:00.0\"; link_gen = 9; }\n"), 5, "link_gen");
  refused(BOXED("  { bus_id = \"0000:17:00.0\"; path = [ \"a\", \"b\", \"c\", \"d\", \"e\", \"f\","
                " \"g\", \"h\", \"i\", \"j\", \"k\", \"l\", \"m\" ]; }\n"),
          5, "1..12 strings");
  refused(BOXED(""), 4, "1..32 GPUs");
  /* More GPUs than a fingerprint holds: refused, never read past the array. */
  char *many = NULL, *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&many, &len);
  for (int i = 0; i < 33; i++) fprintf(f, "%s  { bus_id = \"0000:%02x:00.0\"; }\n", i ? "," : "", i);
  fclose(f);
  ck_assert(asprintf(&text, BOXED("%s"), many) > 0);
  refused(text, 4, "1..32 GPUs");
  free(text);
  free(many);
}
END_TEST

START_TEST(profile_from_another_box_is_refused) {
  use_profile("gen5-8x-dual-misdetect", "2.30.7", "nranks = 8;", "");
  run_on("gen5-8x-p2p");
  ck_assert(!tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured on another box: 8 measured GPUs are not on "
                                               "this host"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "PCIE_TUNER_ACCEPT_FOREIGN=1"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "; leaving every decision to NCCL"), 1);
  /* On the box it was measured on: silent, and it tunes. */
  ph_log_clear();
  run_on("gen5-8x-dual-misdetect");
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  /* The test binary exports no ncclGetVersion: the ABI bounds it. */
  ck_assert(info_has("(NCCL unknown, tuner ABI v6 implies NCCL 2.30-2.31)"));
  /* Same GPUs, another link or NUMA node: still another box. */
  struct pt_box b = *box("gen5-8x-dual-misdetect");
  b.hw.gpu[3].lanes = 8;
  char err[256];
  ph_box_withdraw(sysroot);
  ck_assert_int_eq(ph_box_present(&b, sysroot, sizeof sysroot, err, sizeof err), 0);
  ph_log_clear();
  ck_assert(!tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "link x8 here, x16 when measured"), 1);
}
END_TEST

START_TEST(foreign_profile_accepted_on_purpose) {
  use_profile("gen5-8x-dual-misdetect", "2.30.7", "nranks = 8;", "");
  run_on("gen5-8x-p2p");
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "1", 1);
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  ck_assert(info_has("foreign profile accepted (PCIE_TUNER_ACCEPT_FOREIGN=1): measured on another box"));
  /* Anything else than a yes is a no. */
  setenv("PCIE_TUNER_ACCEPT_FOREIGN", "0", 1);
  ph_log_clear();
  ck_assert(!tunes(0, 8, 1, ph_logger));
}
END_TEST

START_TEST(several_nodes_host_only_warns) {
  /* Measured on two nodes (match.nnodes = 2): on two nodes the hosts may
   * differ from rank to rank, so another box only warns. */
  use_profile("gen5-8x-dual-misdetect", "2.30.7", "nranks = 16; nnodes = 2;", "");
  run_on("gen5-8x-p2p");
  ck_assert(tunes(0, 16, 2, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured on another box"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "the profile still decides, alike on every rank"), 1);
  /* Measured on one node: never used on several (nNodes is the same on
   * every rank: init.cc initTransportsRank counts it from AllGather1). */
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 16;", "");
  ph_log_clear();
  ck_assert(!tunes(0, 16, 2, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured on a single node"), 1);
}
END_TEST

/* Issue 26 §2: a box as nccl-tests logs give it (each rank's bus id as
 * printed, GPU name, host name; no model, link or tree), made from box
 * `on`'s GPUs: form 0 "0x41" (older nccl-tests: the bus number), form 1
 * "0000:41:00" (domain:bus:device). */
static void use_log_box(const char *on, int form) {
  struct pt_box_fp fp;
  char *text = NULL, *out = NULL;
  struct pt_profile p;
  struct pt_error_rec e;
  ck_assert_int_eq(pt_box_fingerprint(box(on), &fp), 0);
  for (int i = 0; i < fp.ngpus; i++) {
    struct pt_fp_gpu g = {.numa = PT_FP_NUMA_UNKNOWN};
    if (form) snprintf(g.bus_id, sizeof g.bus_id, "%.10s", fp.gpu[i].bus_id);
    else snprintf(g.bus_id, sizeof g.bus_id, "0x%.2s", fp.gpu[i].bus_id + 5);
    snprintf(g.name, sizeof g.name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
    snprintf(g.host, sizeof g.host, "container-%d", i);
    fp.gpu[i] = g;
  }
  fp.host_gpus = 0;
  fp.driver[0] = 0;
  ck_assert(asprintf(&text,
                     "version = 1;\nname = \"logs\";\nmatch = { nranks = 8; };\n"
                     "provenance = { tool = \"pcie-tune import\"; backend = \"nccl-tests\"; "
                     "nccl_version = \"2.30.7\"; date = \"2026-12-01\"; mode = \"eager\"; };\n"
                     "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
                     "  nccl_default = ( 20.0, 200.0 );\n"
                     "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; "
                     "latency = ( 10.0, 100.0 ); } ); }; };\n") > 0);
  ck_assert_msg(pt_profile_load_string(&p, text, "logs.cfg", &e) == 0, "%s", e.msg);
  ck_assert_ptr_nonnull(p.prov.box = malloc(sizeof *p.prov.box));
  *p.prov.box = fp;
  ck_assert_int_eq(pt_profile_render(&p, &out), 0);
  char *path = pt_test_write(dir, "logs.cfg", out);
  setenv("PCIE_TUNER_PROFILE", path, 1);
  free(path);
  free(out);
  free(text);
  pt_profile_release(&p);
}

START_TEST(box_from_nccl_tests_logs_compared_on_what_it_holds) {
  for (int form = 0; form < 2; form++) {
    use_log_box("gen5-8x-dual-misdetect", form);
    run_on("gen5-8x-dual-misdetect");
    ph_log_clear();
    ck_assert_msg(tunes(0, 8, 1, ph_logger), "form %d refused", form);
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
    ck_assert(info_has(form ? "box compared on: bus ids (as nccl-tests gave them: domain:bus:device)"
                            : "box compared on: bus ids (as nccl-tests gave them: bus number only)"));
    ck_assert(info_has("; not recorded: the host's other GPUs, PCI model, PCIe link, NUMA node, PCIe tree"
                       "; recorded, not compared: GPU names (sysfs has none), host names"));
    /* Another box's GPUs sit elsewhere: refused, naming the ids. */
    run_on("gen5-8x-p2p");
    ph_log_clear();
    ck_assert(!tunes(0, 8, 1, ph_logger));
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured on another box: 8 measured GPUs are not on this host"),
                      1);
  }
}
END_TEST

/* Issue 26 §4: a profile measured with vLLM's NCCL_CUMEM_ENABLE=0 warns in
 * a job whose value differs (unset: cuMem on), as for other NCCL_*
 * variables, and still decides; the same value is silent. */
START_TEST(cumem_enable_differs_warns) {
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "nccl_env = { NCCL_CUMEM_ENABLE = \"0\"; };\n");
  run_on("gen5-8x-p2p");
  unsetenv("NCCL_CUMEM_ENABLE");
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "NCCL_CUMEM_ENABLE is unset here but was '0' when measured"), 1);
  ph_log_clear();
  setenv("NCCL_CUMEM_ENABLE", "0", 1);
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  unsetenv("NCCL_CUMEM_ENABLE");
}
END_TEST

START_TEST(profile_without_box_is_refused) {
  run_on("gen5-8x-p2p");
  pt_test_use_example_profile();
  ck_assert(!tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "records no provenance.box"), 1);
  /* A hand rule is no measurement: it needs no box. */
  char *p = pt_test_write(dir, "rules.cfg",
                          "version = 1;\nname = \"r\";\nprovenance = { tool = \"t\"; backend = "
                          "\"rules\"; nccl_version = \"x\"; date = \"d\"; mode = \"eager\"; };\n"
                          "rules = ( { collective = \"allreduce\"; min_bytes = 1L; max_bytes = 1048576L; "
                          "algo = \"tree\"; proto = \"simple\"; } );\n");
  setenv("PCIE_TUNER_PROFILE", p, 1);
  free(p);
  ph_log_clear();
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
}
END_TEST

/* Inits one communicator of 8 on an open plugin; whether it tunes. */
static int tunes_on(const struct ph_plugin *pl, uint64_t id) {
  struct ph_comm c;
  struct ph_choice ch;
  float t[7][3], before[7][3];
  ck_assert_int_eq(ph_comm_init(&c, pl, 8, 1, id), ncclSuccess);
  pt_test_nccl_table(t, ncclFuncAllReduce, 4096, 8, 0);
  memcpy(before, t, sizeof t);
  ph_decide(&c, ncclFuncAllReduce, 4096, 0, t, &ch);
  int changed = memcmp(before, t, sizeof t) != 0 || ch.nchannels != 0;
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  return changed;
}

/* Issue 30 §4: the host is read from sysfs once per process (with 10^4
 * other PCI functions one reading took 60-100 ms of every init). The tree
 * under the same root is replaced by another box's after the first init:
 * the next communicator of the process still sees the host it read. */
START_TEST(host_is_read_once_per_process) {
  struct ph_plugin pl;
  struct pt_box_fp other;
  char err[512];
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  run_on("gen5-8x-p2p");
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert(tunes_on(&pl, 1));
  pt_sysfs_remove(sysroot);
  ck_assert_int_eq(mkdir(sysroot, 0700), 0);
  ck_assert_int_eq(pt_box_fingerprint(box("gen5-8x-dual-misdetect"), &other), 0);
  ck_assert_msg(pt_sysfs_write(&other, sysroot, err, sizeof err) == 0, "%s", err);
  ck_assert(tunes_on(&pl, 2));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  ph_plugin_close(&pl);
  /* A fresh process (the plugin loaded anew) reads the new tree. */
  ck_assert(!tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured on another box"), 1);
}
END_TEST

/* Issue 30 §4: a sysfs root longer than PATH_MAX is refused, not cut (a cut
 * one names another directory), and says so. */
START_TEST(overlong_sysfs_root_is_refused) {
  char *root = malloc(PATH_MAX + 100);
  ck_assert_ptr_nonnull(root);
  snprintf(root, PATH_MAX + 100, "%s/", dir);
  size_t n = strlen(root);
  memset(root + n, '/', PATH_MAX + 99 - n);
  root[PATH_MAX + 99] = 0;
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  setenv("PCIE_TUNER_SYSFS_ROOT", root, 1);
  ck_assert(!tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "cannot read this host's GPUs (the sysfs root "
                                               "(4195 bytes) is longer than PATH_MAX (4096) allows)"),
                    1);
  free(root);
}
END_TEST

/* Issue 30 §4: a quote or newline in a bridge directory's name is escaped
 * in the WARN line, which stays one line. */
START_TEST(bridge_name_is_escaped_in_the_warning) {
  struct pt_box_fp fp;
  char err[512], want[256];
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  ck_assert_int_eq(pt_box_fingerprint(box("gen5-8x-p2p"), &fp), 0);
  ck_assert_int_gt(fp.gpu[0].npath, 1);
  for (int i = 0; i < fp.ngpus; i++)
    if (!strcmp(fp.gpu[i].path[1], fp.gpu[0].path[1])) snprintf(fp.gpu[i].path[1], PT_FP_ID_LEN, "a\"b\nc");
  snprintf(sysroot, sizeof sysroot, "%s/sys-XXXXXX", dir);
  ck_assert_ptr_nonnull(mkdtemp(sysroot));
  ck_assert_msg(pt_sysfs_write(&fp, sysroot, err, sizeof err) == 0, "%s", err);
  setenv("PCIE_TUNER_SYSFS_ROOT", sysroot, 1);
  ck_assert(!tunes(0, 8, 1, ph_logger));
  snprintf(want, sizeof want, "GPU %s hangs under %s/a\\\"b\\nc", fp.gpu[0].bus_id, fp.gpu[0].path[0]);
  ck_assert_msg(ph_log_find(NCCL_LOG_WARN, want) == 1, "no WARN with '%s'", want);
  struct ph_log_entry e;
  for (size_t i = 0; ph_log_get(i, &e) == 0; i++)
    ck_assert_msg(!strchr(e.msg, '\n') && !strstr(e.msg, "a\"b"), "raw in: %s", e.msg);
}
END_TEST

/* The double's library, loaded RTLD_LOCAL as ctypes loads NCCL. */
static void *open_double(ncclDebugLogger_t *logger) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", pt_test_so());
  char *slash = strrchr(path, '/');
  ck_assert_ptr_nonnull(slash);
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path),
           "test/ncclver_double/libnccl-double-version.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "%s", dlerror());
  ck_assert_ptr_null(dlsym(RTLD_DEFAULT, "ncclGetVersion")); /* what ctypes hides */
  void (*set_sink)(ncclDebugLogger_t) = (void (*)(ncclDebugLogger_t))dlsym(h, "ncclDoubleSetSink");
  *logger = (ncclDebugLogger_t)dlsym(h, "ncclDebugLog");
  ck_assert(set_sink && *logger);
  set_sink(ph_logger);
  return h;
}

START_TEST(nccl_version_found_through_its_logger) {
  ncclDebugLogger_t nccl_log;
  void *h = open_double(&nccl_log);
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  run_on("gen5-8x-p2p");
  ck_assert(tunes(0, 8, 1, nccl_log));
  ck_assert(info_has("(NCCL 2.30.7)"));
  /* Another minor: refused, naming both. */
  setenv("PTDOUBLE_NCCL_VERSION", "22809", 1);
  ph_log_clear();
  ck_assert(!tunes(0, 8, 1, nccl_log));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "measured with NCCL 2.30, this process runs NCCL 2.28.9"), 1);
  /* Another patch release of the same minor is the same NCCL here. */
  setenv("PTDOUBLE_NCCL_VERSION", "23003", 1);
  ph_log_clear();
  ck_assert(tunes(0, 8, 1, nccl_log));
  /* ncclGetVersion fails: the ABI NCCL loaded bounds the version. */
  setenv("PTDOUBLE_NCCL_VERSION", "fail", 1);
  ph_log_clear();
  ck_assert(tunes(0, 8, 1, nccl_log));
  ck_assert(info_has("(NCCL unknown, tuner ABI v6 implies NCCL 2.30-2.31)"));
  dlclose(h);
}
END_TEST

/* Issue 30 §4: NCCL's logger in the main program (NCCL linked in
 * statically: here the test binary's ph_logger, and the binary exports no
 * ncclGetVersion) while an unrelated library loaded RTLD_GLOBAL exports
 * one: that library's version is not NCCL's. The plugin says "unknown" and
 * the ABI bounds the version; it took the other library's 2.28.9 before
 * and refused the profile. */
START_TEST(nccl_version_only_from_the_logger_object) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", pt_test_so());
  char *slash = strrchr(path, '/');
  ck_assert_ptr_nonnull(slash);
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path),
           "test/ncclver_double/libnccl-double-version.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  ck_assert_msg(h != NULL, "%s", dlerror());
  ck_assert_ptr_nonnull(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  setenv("PTDOUBLE_NCCL_VERSION", "22809", 1);
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  run_on("gen5-8x-p2p");
  ck_assert(tunes(0, 8, 1, ph_logger));
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  ck_assert(info_has("(NCCL unknown, tuner ABI v6 implies NCCL 2.30-2.31)"));
  dlclose(h);
}
END_TEST

START_TEST(tuner_abi_bounds_an_unknown_version) {
  static const struct {
    int abi;
    const char *says;
  } abi[] = {{2, "ABI v2 implies NCCL 2.21"},       {3, "ABI v3 implies NCCL 2.22-2.23"},
             {4, "ABI v4 implies NCCL 2.24-2.27"},  {5, "ABI v5 implies NCCL 2.28-2.29"},
             {6, "ABI v6 implies NCCL 2.30-2.31"}};
  run_on("gen5-8x-p2p");
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "");
  for (size_t i = 0; i < sizeof abi / sizeof abi[0]; i++) {
    ph_log_clear();
    int used = tunes(abi[i].abi, 8, 1, ph_logger);
    ck_assert_msg(used == (abi[i].abi == 6), "v%d", abi[i].abi);
    ck_assert_msg(ph_log_find(used ? NCCL_LOG_INFO : NCCL_LOG_WARN, abi[i].says) == 1, "v%d: %s",
                  abi[i].abi, abi[i].says);
  }
}
END_TEST

/* One table maps NCCL releases to tuner ABIs, read both ways: by the
 * plugin (an ABI bounds an unknown version) and by doctor (a release's
 * newest ABI). 2.19 and 2.20 know only v1; v2 is 2.21's alone. */
START_TEST(release_abi_table_reads_both_ways) {
  ck_assert_int_eq(pt_nccl_tuner_abi(18), 0);
  ck_assert_int_eq(pt_nccl_tuner_abi(19), 1);
  ck_assert_int_eq(pt_nccl_tuner_abi(20), 1);
  ck_assert_int_eq(pt_nccl_tuner_abi(21), 2);
  ck_assert_int_eq(pt_nccl_tuner_abi(23), 3);
  ck_assert_int_eq(pt_nccl_tuner_abi(29), 5);
  ck_assert_int_eq(pt_nccl_tuner_abi(31), 6);
  ck_assert_int_eq(pt_nccl_tuner_abi(40), 7);
  for (int minor = 19; minor <= 40; minor++) {
    int lo, hi;
    pt_nccl_version_range(pt_nccl_tuner_abi(minor), &lo, &hi);
    ck_assert_msg(lo <= minor && minor <= hi, "2.%d: ABI v%d's range is 2.%d-2.%d", minor, pt_nccl_tuner_abi(minor),
                  lo, hi);
  }
}
END_TEST

/* §2: the reproducer. A profile that recorded an empty NCCL
 * environment; one rank runs as-is, the other with NCCL_P2P_LEVEL=SYS (a
 * launcher that sets it on some ranks). Both must decide alike. */
START_TEST(ranks_with_different_environments_decide_alike) {
  use_profile("gen5-8x-p2p", "2.30.7", "nranks = 8;", "communicator = { channels = 2; };\nnccl_env = { };\n");
  run_on("gen5-8x-p2p");
  struct ph_plugin pl;
  struct ph_comm rank[2];
  char err[512];
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(ph_comm_init(&rank[0], &pl, 8, 1, 7), ncclSuccess);
  setenv("NCCL_P2P_LEVEL", "SYS", 1);
  ck_assert_int_eq(ph_comm_init(&rank[1], &pl, 8, 1, 7), ncclSuccess);
  unsetenv("NCCL_P2P_LEVEL");
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "NCCL_P2P_LEVEL is 'SYS' here but was unset"), 1);
  int tuned = 0;
  for (uint64_t n = 4; n <= (1ull << 30); n *= 2) {
    struct ph_choice c[2];
    for (int r = 0; r < 2; r++) {
      float t[7][3];
      pt_test_nccl_table(t, ncclFuncAllReduce, n, 8, 0); /* NCCL's table: the same on both */
      ph_decide(&rank[r], ncclFuncAllReduce, n, 0, t, &c[r]);
    }
    ck_assert_msg(c[0].algo == c[1].algo && c[0].proto == c[1].proto &&
                      c[0].nchannels == c[1].nchannels,
                  "%llu B: rank 0 %d/%d/%d, rank 1 %d/%d/%d", (unsigned long long)n, c[0].algo,
                  c[0].proto, c[0].nchannels, c[1].algo, c[1].proto, c[1].nchannels);
    tuned += c[0].nchannels != 0;
  }
  ck_assert_int_gt(tuned, 0); /* both tune, not both passive */
  ph_comm_finalize(&rank[0]);
  ph_comm_finalize(&rank[1]);
  ph_plugin_close(&pl);
}
END_TEST

/* A box that lists only the communicator's GPUs (an import): those must be
 * on the host, which may have more. */
START_TEST(communicator_gpus_must_be_on_the_host) {
  struct pt_box_fp fp;
  ck_assert_int_eq(pt_box_fingerprint(box("gen5-8x-p2p"), &fp), 0);
  run_on("gen5-8x-p2p");
  for (int missing = 0; missing < 2; missing++) {
    char *text = NULL;
    ck_assert(asprintf(&text,
                       "version = 1;\nname = \"imp\";\nmatch = { nranks = 2; };\n"
                       "provenance = { tool = \"t\"; backend = \"nccl-tests\"; nccl_version = "
                       "\"2.30.7\"; date = \"d\"; mode = \"eager\";\n"
                       "  box = { host_gpus = false; gpus = ( { bus_id = \"%s\"; }, "
                       "{ bus_id = \"%s\"; } ); };\n};\n"
                       "allreduce = { eager = { sizes = [ 1024L, 1048576L ];\n"
                       "  nccl_default = ( 20.0, 200.0 );\n"
                       "  candidates = ( { algo = \"ring\"; proto = \"ll\"; channels = 2; "
                       "latency = ( 10.0, 100.0 ); } ); }; };\n",
                       fp.gpu[0].bus_id, missing ? "0000:ee:00.0" : fp.gpu[1].bus_id) > 0);
    char *path = pt_test_write(dir, "imp.cfg", text);
    setenv("PCIE_TUNER_PROFILE", path, 1);
    ph_log_clear();
    ck_assert_int_eq(tunes(0, 2, 1, ph_logger), !missing);
    ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "1 measured GPU is not on this host (0000:ee:00.0)"),
                      (size_t)missing);
    free(path);
    free(text);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("provenance");
  TCase *tc = tcase_create("dlopen");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, sysfs_reader_reads_each_box_as_presented);
  tcase_add_test(tc, sysfs_reader_takes_nvidia_gpus_only);
  tcase_add_test(tc, nccl_bus_ids_become_sysfs_ones);
  tcase_add_test(tc, box_round_trips_and_bad_boxes_are_refused);
  tcase_add_test(tc, profile_from_another_box_is_refused);
  tcase_add_test(tc, foreign_profile_accepted_on_purpose);
  tcase_add_test(tc, several_nodes_host_only_warns);
  tcase_add_test(tc, profile_without_box_is_refused);
  tcase_add_test(tc, cumem_enable_differs_warns);
  tcase_add_test(tc, box_from_nccl_tests_logs_compared_on_what_it_holds);
  tcase_add_test(tc, communicator_gpus_must_be_on_the_host);
  tcase_add_test(tc, host_is_read_once_per_process);
  tcase_add_test(tc, overlong_sysfs_root_is_refused);
  tcase_add_test(tc, bridge_name_is_escaped_in_the_warning);
  tcase_add_test(tc, nccl_version_found_through_its_logger);
  tcase_add_test(tc, nccl_version_only_from_the_logger_object);
  tcase_add_test(tc, tuner_abi_bounds_an_unknown_version);
  tcase_add_test(tc, release_abi_table_reads_both_ways);
  tcase_add_test(tc, ranks_with_different_environments_decide_alike);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return pt_test_main(suite()); }
