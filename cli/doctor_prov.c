/*
 * The profile's provenance against the job: the NCCL version it was
 * measured on (provenance.nccl_version) and the box's GPUs
 * (provenance.box.gpus[].bus_id, canonical dddd:bb:dd.f), against the
 * version the job's NCCL printed and the busId of each rank's GPU
 * (src/init.cc, "... busId %lx ... Init START/COMPLETE"). Read with
 * libconfig directly, key by key, so a profile that predates those keys
 * (or carries more of them) is compared on what it has. The path is the one
 * the plugin logged, so it is read here only where it resolves to the same
 * file; otherwise doctor says so.
 */
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doctor.h"
#include "pcie/hostinfo.h"
#include "pcie/files.h"

#define DR_NBUS 64

/* "2.28.9+cuda12.9" -> "2.28.9" */
static void plain_version(const char *v, char *buf, size_t len) {
  size_t n = strspn(v, "0123456789.");
  if (n >= len) n = len - 1;
  memcpy(buf, v, n);
  buf[n] = 0;
}

/* A profile's bus id may be partial, as nccl-tests gave it ("0000:41:00",
 * "0x41"): it names the job's GPU at that precision (tuner/hostinfo.c). */
static int has_bus(char (*list)[32], int n, const char *bus) {
  for (int i = 0; i < n; i++)
    if (!strcasecmp(list[i], bus) || pt_fp_bus_id_matches(list[i], bus)) return 1;
  return 0;
}

void dr_prov_report(const struct dr_doctor *d, const struct dr_comms *c, size_t k) {
  const struct dr_member *m = NULL;
  for (size_t i = c->start[k]; i < c->start[k + 1] && !m; i++)
    if (d->mem[c->order[i]].out.state == DR_PROFILE) m = &d->mem[c->order[i]];
  if (!m) return;
  const char *path = m->out.path;
  char *text = NULL, job_v[32] = "", prof_v[32] = "", job_bus[DR_NBUS][32], prof_bus[DR_NBUS][32];
  size_t len;
  int njob = 0, nprof = 0, has_box = 0;
  struct pt_error_rec err;
  config_t cfg;
  memset(&err, 0, sizeof err);
  config_init(&cfg);
  if (pt_file_read(path, PT_MAX_PROFILE_BYTES, 0, &text, &len, &err) ||
      pt_text_refuse_include(text, path, &err) || pt_text_prescan(text, len, path, &err) ||
      config_read_string(&cfg, text) != CONFIG_TRUE) {
    char why[1100];
    if (err.msg[0]) pt_error_format(&err, why, sizeof why);
    else snprintf(why, sizeof why, "%s:%d: %s", path, config_error_line(&cfg), config_error_text(&cfg));
    printf("  profile provenance: not compared: %s (run doctor where the job ran to compare the "
           "box and NCCL version)\n",
           why);
    goto out;
  }
  const char *s;
  if (config_lookup_string(&cfg, "provenance.nccl_version", &s) == CONFIG_TRUE)
    plain_version(s, prof_v, sizeof prof_v);
  config_setting_t *gpus = config_lookup(&cfg, "provenance.box.gpus");
  if (gpus && config_setting_is_list(gpus)) {
    has_box = 1;
    for (int i = 0; i < config_setting_length(gpus) && nprof < DR_NBUS; i++) {
      config_setting_t *g = config_setting_get_elem(gpus, (unsigned)i);
      if (g && config_setting_lookup_string(g, "bus_id", &s) == CONFIG_TRUE) SET(prof_bus[nprof++], s);
    }
  }
  for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
    const struct dr_member *x = &d->mem[c->order[i]];
    char bus[32];
    if (!job_v[0] && d->procs[x->proc].version[0]) plain_version(d->procs[x->proc].version, job_v, sizeof job_v);
    if (x->busid < 0 || njob == DR_NBUS) continue;
    dr_busid(x->busid, bus, sizeof bus);
    if (!has_bus(job_bus, njob, bus)) SET(job_bus[njob++], bus);
  }
  if (!job_v[0] && d->bare_version[0]) plain_version(d->bare_version, job_v, sizeof job_v);
  printf("  profile provenance (%s):", path);
  if (!prof_v[0]) printf(" no NCCL version recorded;");
  else if (!job_v[0]) printf(" measured on NCCL %s, the job's version is not in the log;", prof_v);
  else if (strcmp(prof_v, job_v))
    printf(" measured on NCCL %s, this job runs %s: the profile's timings may not hold "
           "(re-measure with this NCCL);",
           prof_v, job_v);
  else printf(" NCCL %s as measured;", prof_v);
  if (!has_box) printf(" no box recorded (provenance.box)\n");
  else if (!njob) printf(" the ranks' busIds are not in the log (NCCL_DEBUG_SUBSYS needs INIT)\n");
  else {
    int missing = 0;
    for (int i = 0; i < njob; i++) missing += !has_bus(prof_bus, nprof, job_bus[i]);
    if (!missing) {
      printf(" the %d GPU%s of this communicator are on the measured box\n", njob, njob == 1 ? "" : "s");
    } else {
      printf(" %d of this communicator's %d GPUs are not on the measured box:", missing, njob);
      for (int i = 0, shown = 0; i < njob && shown < 8; i++)
        if (!has_bus(prof_bus, nprof, job_bus[i])) printf(" %s", job_bus[i]), shown++;
      printf(" (the profile lists");
      for (int i = 0; i < nprof && i < 8; i++) printf(" %s", prof_bus[i]);
      printf("%s): measure this box, or run on the GPUs it was measured on\n", nprof > 8 ? " ..." : "");
    }
  }
out:
  config_destroy(&cfg);
  free(text);
}
