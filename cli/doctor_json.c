/*
 * doctor --json: the verdicts, findings and host in one JSON document, its
 * schema versioned ("schema": "pcie-tune-doctor/1"; docs/cli.md describes
 * every key). A key is added in a compatible way; removing or changing one
 * raises the version. Text output is untouched: --json replaces it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "json.h"

struct dr_job_out *dr_json_job(struct dr_json *js) {
  struct dr_job_out *n = realloc(js->jobs, (js->njobs + 1) * sizeof *n);
  if (!n) {
    js->oom = 1;
    return NULL;
  }
  js->jobs = n;
  memset(&n[js->njobs], 0, sizeof *n);
  n[js->njobs].superseded_by = -1;
  return &n[js->njobs++];
}

void dr_json_comm(struct dr_json *js, const struct dr_comm_out *c) {
  if (!js->njobs) return;
  struct dr_job_out *j = &js->jobs[js->njobs - 1];
  struct dr_comm_out *n = realloc(j->comms, (j->ncomm + 1) * sizeof *n);
  if (!n) {
    js->oom = 1;
    return;
  }
  j->comms = n;
  j->comms[j->ncomm++] = *c;
}

static const char *verdict_name(int rc) {
  switch (rc) {
  case EXIT_WORKING: return "working";
  case EXIT_NOT_LOADED: return "not_loaded";
  case EXIT_IDLE: return "idle";
  case EXIT_MISMATCH: return "mismatch";
  case EXIT_DEGRADED: return "degraded";
  default: return "no_input";
  }
}

static void key(const char *k, int first) {
  printf("%s", first ? "" : ", ");
  cli_json_str(k);
  printf(": ");
}

static void str(const char *k, const char *v, int first) {
  key(k, first);
  cli_json_str(v);
}

static void findings(const struct dr_findings *fs) {
  printf("[");
  for (size_t i = 0; i < fs->n; i++) {
    const struct dr_finding *f = &fs->f[i];
    printf("%s{", i ? ", " : "");
    str("id", f->id, 1);
    str("severity", f->sev == DR_DEGRADES ? "degrades" : f->sev == DR_WARN ? "warn" : "info", 0);
    str("about", f->about, 0);
    str("what", f->what, 0);
    str("evidence", f->evidence, 0);
    str("effect", f->effect, 0);
    str("source", f->source, 0);
    str("fix", f->fix, 0);
    printf("}");
  }
  printf("]");
}

static void job(const struct dr_json *js, size_t k) {
  const struct dr_job_out *j = &js->jobs[k];
  printf("{\"job\": %zu, \"most_recent\": %s, \"superseded_by\": ", k + 1,
         k + 1 == js->njobs ? "true" : "false");
  if (j->superseded_by >= 0) printf("%d", j->superseded_by + 1);
  else printf("null");
  printf(", \"counted\": %s", j->superseded_by < 0 ? "true" : "false");
  printf(", \"processes\": %zu, \"plugin_loaded_in\": %zu", j->nproc, j->loaded);
  str("nccl_version", j->version, 0);
  str("verdict", verdict_name(j->rc), 0);
  printf(", \"exit\": %d, \"communicators\": [", j->rc);
  for (size_t i = 0; i < j->ncomm; i++) {
    const struct dr_comm_out *c = &j->comms[i];
    printf("%s{", i ? ", " : "");
    str("comm_id", c->id, 1);
    printf(", \"nranks\": %d, \"nnodes\": %d, \"ranks_in_log\": %d", c->nranks, c->nnodes, c->seen);
    str("verdict", c->disagree ? "ranks_disagree" : c->tuned ? "tuned" : "left_to_nccl", 0);
    printf(", \"degraded\": %s", c->degraded ? "true" : "false");
    key("profile", 0);
    if (c->tuned) {
      printf("{");
      str("name", c->profile, 1);
      str("hash", c->hash, 0);
      printf("}");
    } else {
      printf("null");
    }
    printf("}");
  }
  printf("], \"findings\": ");
  findings(&j->fs);
  printf("}");
}

static void host(const struct dr_json *js) {
  const struct dr_host *h = js->host;
  printf("{\"gpus\": [");
  for (int i = 0; i < h->fp.ngpus; i++) {
    const struct pt_fp_gpu *g = &h->fp.gpu[i];
    const struct dr_hgpu *x = &h->gpu[i];
    printf("%s{", i ? ", " : "");
    str("bus_id", g->bus_id, 1);
    str("model", g->model, 0);
    printf(", \"numa\": %d", g->numa);
    str("link_speed", x->cur_speed, 0);
    printf(", \"link_width\": %d", x->cur_width);
    str("max_link_speed", x->max_speed, 0);
    printf(", \"max_link_width\": %d", x->max_width);
    str("slot_link_speed", x->port_speed, 0);
    printf(", \"slot_link_width\": %d", x->port_width);
    str("iommu_group", x->group, 0);
    str("iommu_type", x->group_type, 0);
    printf(", \"bar1_bytes\": %llu, \"bridges\": [", x->bar1);
    for (int k = 0; k < g->npath; k++) {
      printf("%s", k ? ", " : "");
      cli_json_str(g->path[k]);
    }
    printf("]}");
  }
  printf("], \"pairs\": [");
  int first = 1;
  for (int a = 0; a < h->fp.ngpus; a++)
    for (int b = a + 1; b < h->fp.ngpus; b++) {
      int other_rc;
      const char *type = dr_host_path(h, a, b, &other_rc);
      int p2p = !strcmp(type, "PIX") || !strcmp(type, "PXB") || (h->amd && h->fp.ngpus <= 2);
      printf("%s{", first ? "" : ", ");
      first = 0;
      str("a", h->fp.gpu[a].bus_id, 1);
      str("b", h->fp.gpu[b].bus_id, 0);
      str("path", type, 0);
      printf(", \"other_root_complex\": %s", other_rc ? "true" : "false");
      str("default_transport", p2p ? "P2P" : "SHM", 0);
      printf("}");
    }
  printf("], \"iommu_present\": %s", h->iommu > 0 ? "true" : h->iommu == 0 ? "false" : "null");
  str("cmdline", h->cmdline, 0);
  printf(", \"cpu_amd\": %s, \"exit\": %d, \"findings\": ", h->amd ? "true" : "false", js->host_rc);
  findings(&js->host_fs);
  printf("}");
}

void dr_json_print(const struct dr_json *js) {
  printf("{\"schema\": \"pcie-tune-doctor/1\", \"exit\": %d", js->rc);
  if (js->logs_rc >= 0) {
    str("verdict", verdict_name(js->logs_rc), 0);
    printf(", \"worst_job\": %d", js->worst_job + 1);
  } else {
    printf(", \"verdict\": null, \"worst_job\": null");
  }
  printf(", \"jobs\": [");
  for (size_t k = 0; k < js->njobs; k++) {
    printf("%s", k ? ", " : "");
    job(js, k);
  }
  printf("], \"host\": ");
  if (js->host) host(js);
  else printf("null");
  printf(", \"workload\": [");
  for (size_t i = 0; i < js->workload.n; i++) {
    const struct dr_wl_item *it = &js->workload.items[i];
    printf("%s{", i ? ", " : "");
    str("comm_id", it->comm, 1);
    str("step", it->step, 0);
    str("collective", it->coll, 0);
    printf(", \"bytes\": %llu, \"count\": %lu}", it->bytes, it->count);
  }
  printf("]}\n");
}

void dr_json_free(struct dr_json *js) {
  for (size_t k = 0; k < js->njobs; k++) {
    free(js->jobs[k].comms);
    free(js->jobs[k].fs.f);
  }
  free(js->jobs);
  free(js->host_fs.f);
  free(js->workload.items);
}
