/*
 * Findings from the logs beyond the plugin's own outcome (issue 27 §4):
 * settings that undo the plugin where they act, and known defects.
 *  - a global NCCL_PROTO or NCCL_ALGO ("NCCL_PROTO set by environment to
 *    Simple", src/misc/param.cc) with the plugin's WARN naming the size
 *    ranges where the profile would have chosen otherwise (tuner/core.c);
 *  - the NCCL version against doctor_defects.c's table;
 *  - PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True with vLLM's custom
 *    all-reduce, both shown by the engine's own lines (vllm-project/vllm
 *    #42609: cudaIpcGetMemHandle refuses the expandable segments' memory).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"

static int in_job(const struct dr_doctor *d, size_t i, int job) {
  return job < 0 || d->procs[i].job == job;
}

static void global_env(const struct dr_doctor *d, int job, struct dr_findings *fs) {
  const struct dr_proc *at = NULL, *warned = NULL;
  const char *name = NULL, *value = NULL;
  for (size_t i = 0; i < d->nproc; i++) {
    const struct dr_proc *p = &d->procs[i];
    if (!in_job(d, i, job)) continue;
    if (p->global_warn[0] && !warned) warned = p;
    for (int e = 0; e < p->nenv && !at; e++)
      if (!strcmp(p->env[e][0], "NCCL_PROTO") || !strcmp(p->env[e][0], "NCCL_ALGO"))
        at = p, name = p->env[e][0], value = p->env[e][1];
  }
  if (!at && !warned) return;
  struct dr_finding f;
  memset(&f, 0, sizeof f);
  f.sev = DR_WARN;
  SET(f.id, "global-proto-algo");
  if (at) snprintf(f.about, sizeof f.about, "%s=%s", name, value);
  else SET(f.about, "NCCL_PROTO/NCCL_ALGO");
  snprintf(f.what, sizeof f.what, "set for the whole job: it removes every choice the profile "
                                  "measured outside it");
  if (at)
    snprintf(f.evidence, sizeof f.evidence, "%s:%ld: \"%s set by environment to %s\"%s%.400s",
             at->host, at->pid, name, value, warned ? "; the plugin: " : "",
             warned ? warned->global_warn : "");
  else
    snprintf(f.evidence, sizeof f.evidence, "%s:%ld: %.500s", warned->host, warned->pid,
             warned->global_warn);
  SET(f.effect, warned ? "NCCL does not run the profile's choice in the size ranges the plugin "
                         "named (for NCCL_PROTO=Simple: the LL a PCIe profile finds at small sizes)"
                       : "where the profile's choice is outside it, NCCL does not run it (the "
                         "plugin's WARN names the ranges when it is loaded with a profile)");
  SET(f.source, "tuner/core.c (the init WARN); teams set NCCL_PROTO=Simple to protect prefill "
                "(docs/decisions.md): on 4x DGX Spark LL was 28-34 % faster at 4-16 KB");
  SET(f.fix, "unset it, or restrict it to a collective (NCCL_PROTO=\"AllGather:Simple\"), or "
             "measure the profile under it (pcie-tune profile with the same setting)");
  dr_add_finding(fs, &f);
}

static int engine_kind(const char *line) {
  if (strstr(line, "expandable_segments:True")) return DR_ENG_EXPANDABLE;
  if (strstr(line, "custom_all_reduce") || strstr(line, "CustomAllreduce") ||
      strstr(line, "custom allreduce") || strstr(line, "custom all-reduce"))
    return DR_ENG_CUSTOM_AR;
  return -1;
}

/* Keeps the first line of each kind per process (and per input while it
 * has no NCCL line yet), so a finding is told under the job whose
 * processes wrote it, once, whatever other jobs the input holds. */
void dr_engine_line(struct dr_doctor *d, const char *line) {
  int kind = engine_kind(line);
  if (kind < 0 || d->neng >= DR_MAX_ENG) return;
  for (size_t i = 0; i < d->neng; i++)
    if (d->eng[i].kind == kind && d->eng[i].proc == d->last_proc &&
        (d->last_proc >= 0 || d->eng[i].file == d->file))
      return;
  struct dr_engine_note *n = realloc(d->eng, (d->neng + 1) * sizeof *n);
  if (!n) {
    d->oom = 1;
    return;
  }
  d->eng = n;
  n = &d->eng[d->neng++];
  n->kind = kind, n->proc = d->last_proc, n->file = d->file;
  SET(n->text, line);
}

void dr_engine_tie(struct dr_doctor *d, int pi) {
  if (d->last_proc == pi) return;
  for (size_t i = 0; i < d->neng; i++)
    if (d->eng[i].proc < 0 && d->eng[i].file == d->file) d->eng[i].proc = pi;
  d->last_proc = pi;
}

/* The note of kind in job; notes from an input without NCCL lines go with
 * the most recent job, so each is told once. */
static const char *engine_note(const struct dr_doctor *d, int job, int kind) {
  for (size_t i = 0; i < d->neng; i++) {
    const struct dr_engine_note *n = &d->eng[i];
    if (n->kind != kind) continue;
    if (n->proc >= 0 ? in_job(d, (size_t)n->proc, job) : job < 0 || job == d->last_job) return n->text;
  }
  return NULL;
}

static void engine(const struct dr_doctor *d, int job, struct dr_findings *fs) {
  const char *expandable = engine_note(d, job, DR_ENG_EXPANDABLE);
  const char *custom_ar = engine_note(d, job, DR_ENG_CUSTOM_AR);
  if (!expandable || !custom_ar) return;
  struct dr_finding f;
  memset(&f, 0, sizeof f);
  f.sev = DR_WARN;
  SET(f.id, "expandable-custom-ar");
  SET(f.about, "the engine");
  SET(f.what, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True with vLLM's custom all-reduce");
  snprintf(f.evidence, sizeof f.evidence, "\"%.280s\"; \"%.280s\"", expandable, custom_ar);
  SET(f.effect, "custom all-reduce exports its CUDA-graph buffers with cudaIpcGetMemHandle, "
                "which refuses expandable-segment memory: the workers die at graph capture "
                "('custom_all_reduce.cuh ... invalid argument'), or newer vLLM turns custom "
                "all-reduce off and every all-reduce goes to NCCL");
  SET(f.source, "vllm-project/vllm#42609; vllm-project/vllm#56193, #55135 (the guard that "
                "turns it off)");
  SET(f.fix, "drop expandable_segments:True from PYTORCH_CUDA_ALLOC_CONF for the serving job, "
             "or pass --disable-custom-all-reduce and let NCCL (and this plugin) do the "
             "all-reduces");
  dr_add_finding(fs, &f);
}

void dr_log_findings(const struct dr_doctor *d, int job, struct dr_findings *fs) {
  global_env(d, job, fs);
  const char *version = "";
  for (size_t i = 0; i < d->nproc; i++)
    if (in_job(d, i, job) && d->procs[i].version[0]) version = d->procs[i].version;
  if (!version[0]) version = d->bare_version;
  dr_defects(version, fs);
  engine(d, job, fs);
}
