/* The LL128 correctness screen (measure/screen.h). */
#include "screen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/common.h"
#include "pcie/profile.h"

/* Sizes in bytes of fp32 data: 512 whole LL128 lines of 120 data bytes;
 * the same plus one word, so the last line is partial (its flag thread
 * stores fewer data words); 16384 lines, many in flight in every step;
 * 65536 lines (7.5 MiB), more than one channel's LL128 loop at 8 ranks
 * (nranks x ~576 KB of data per step), so the chunk is recomputed too. */
static const uint64_t screen_sizes[PT_SCREEN_MAX_SIZES] = {61440, 61444, 1966080, 7864320};

static void pick_sizes(uint64_t lo, uint64_t hi, struct pt_screen *s) {
  s->nsizes = 0;
  for (size_t i = 0; i < PT_SCREEN_MAX_SIZES; i++)
    if (screen_sizes[i] >= lo && screen_sizes[i] <= hi) s->sizes[s->nsizes++] = screen_sizes[i];
  /* A sweep narrower than every screen size: screen where it measures. */
  if (!s->nsizes) s->sizes[s->nsizes++] = hi >= 4 ? hi / 4 * 4 : 4;
}

int pt_screen_ll128(const struct pt_backend *b, int coll, int mode, const struct pt_cand_spec *cands,
                    size_t ncand, uint64_t min_bytes, uint64_t max_bytes, struct pt_screen *out,
                    struct pt_error_rec *err) {
  static double samples[PT_SCREEN_REPLAYS];
  struct pt_cand_spec pick[NCCL_NUM_ALGORITHMS];
  size_t npick = 0, ran = 0;
  memset(out, 0, sizeof *out);
  /* Per algorithm the LL128 candidate with the most channels: the most
   * lines in flight at once. */
  for (size_t i = 0; i < ncand; i++) {
    if (cands[i].proto != NCCL_PROTO_LL128) continue;
    size_t j = 0;
    while (j < npick && pick[j].algo != cands[i].algo) j++;
    if (j == npick) pick[npick++] = cands[i];
    else if (cands[i].channels > pick[j].channels) pick[j] = cands[i];
  }
  if (!npick) return 0;
  out->replays = PT_SCREEN_REPLAYS;
  pick_sizes(min_bytes, max_bytes, out);
  for (size_t j = 0; j < npick; j++) {
    size_t n = strlen(out->cands);
    snprintf(out->cands + n, sizeof out->cands - n, "%s%s/ll128/%d", n ? " " : "", pt_algo_name(pick[j].algo),
             pick[j].channels);
  }
  for (size_t j = 0; j < npick; j++)
    for (size_t i = 0; i < out->nsizes; i++) {
      struct pt_measure_req req = {coll, mode, out->sizes[i], 0, pick[j].algo, NCCL_PROTO_LL128, pick[j].channels,
                                   0, PT_SCREEN_REPLAYS, 1, 0};
      struct pt_measure_res res = {PT_PT_OK, ""};
      int rc = b->measure(b->self, &req, samples, &res, err);
      if (rc < 0) return rc;
      if (res.state == PT_PT_UNSUPPORTED || res.state == PT_PT_MISSING) continue;
      ran++;
      if (res.state != PT_PT_OK) {
        out->state = PT_SCREEN_FAIL;
        snprintf(out->reason, sizeof out->reason, "%s/ll128/%d at %llu B: %s", pt_algo_name(pick[j].algo),
                 pick[j].channels, (unsigned long long)out->sizes[i], res.detail[0] ? res.detail : "wrong result");
        return 0;
      }
    }
  out->state = ran ? PT_SCREEN_PASS : PT_SCREEN_DISABLED;
  if (!ran) snprintf(out->reason, sizeof out->reason, "NCCL has LL128 disabled (NCCL_PROTO enables it on PCIe)");
  return 0;
}

char *pt_screen_render(const struct pt_screen *s) {
  static const char *const names[] = {"none", "pass", "fail", "disabled"};
  char sizes[160] = "";
  char *text = NULL;
  for (size_t i = 0; i < s->nsizes; i++) {
    size_t n = strlen(sizes);
    snprintf(sizes + n, sizeof sizes - n, "%s%lluL", i ? ", " : "", (unsigned long long)s->sizes[i]);
  }
  /* The reason holds the backend's detail: keep it a valid string. */
  char reason[sizeof s->reason];
  size_t k = 0;
  for (const char *c = s->reason; *c && k + 1 < sizeof reason; c++) reason[k++] = *c == '"' || *c == '\\' ? '\'' : *c;
  reason[k] = 0;
  if (asprintf(&text, "ll128_screen = { result = \"%s\"; replays = %u; sizes = [ %s ]; candidates = \"%s\"; "
                      "reason = \"%s\"; };\n", names[s->state], s->replays, sizes, s->cands, reason) < 0)
    return NULL;
  return text;
}

int pt_screen_sweep(const struct pt_backend *b, const struct pt_sweep_opts *o, struct pt_cand_spec *cands,
                    size_t *ncand, struct pt_screen *out, struct pt_error_rec *err) {
  int coll = (o->coll_mask & (1u << PT_ALLREDUCE)) || !o->coll_mask ? PT_ALLREDUCE : __builtin_ctz(o->coll_mask);
  int mode = (o->mode_mask & (1u << PT_MODE_GRAPH)) || !o->mode_mask ? PT_MODE_GRAPH : PT_MODE_EAGER;
  uint64_t lo = o->nsizes ? o->sizes[0] : o->min_bytes, hi = o->nsizes ? o->sizes[o->nsizes - 1] : o->max_bytes;
  int rc = pt_screen_ll128(b, coll, mode, cands, *ncand, lo, hi, out, err);
  if (rc || out->state != PT_SCREEN_FAIL) return rc;
  size_t n = 0;
  for (size_t i = 0; i < *ncand; i++)
    if (cands[i].proto != NCCL_PROTO_LL128) cands[n++] = cands[i];
  *ncand = n;
  return 0;
}

int pt_screen_record(const struct pt_screen *s, struct pt_profile *p) {
  p->ll128_screen = s->state == PT_SCREEN_PASS   ? PT_LL128_SCREENED
                    : s->state == PT_SCREEN_FAIL ? PT_LL128_UNUSABLE
                                                 : PT_LL128_UNSCREENED;
  if (s->state == PT_SCREEN_NONE) return 0;
  char *text = pt_screen_render(s);
  int rc = text ? pt_profile_extra_put(p, "ll128_screen", text) : PT_ENOMEM;
  free(text);
  return rc;
}

/* The LL128 choices of p for collective coll: candidates with a measured
 * time and rules (channels 0: NCCL's own count); [*lo, *hi] gets the
 * sizes where they can be chosen (the series' measured range, the rules'
 * ranges), where the screen runs, as a sweep screens inside its own. */
static size_t profile_cands(const struct pt_profile *p, int coll, struct pt_cand_spec *out, size_t max,
                            uint64_t *lo, uint64_t *hi) {
  size_t n = 0;
  *lo = UINT64_MAX, *hi = 0;
  for (int m = 0; m < PT_NMODES; m++) {
    const struct pt_series *s = p->series[coll][m];
    for (size_t k = 0; s && k < s->ncand && n < max; k++) {
      int ok = 0;
      for (size_t i = 0; i < s->nsizes && !ok; i++) ok = s->cand[k].points[i].state == PT_PT_OK;
      if (!ok || s->cand[k].proto != NCCL_PROTO_LL128) continue;
      out[n++] = (struct pt_cand_spec){s->cand[k].algo, NCCL_PROTO_LL128, s->cand[k].channels, 0};
      *lo = s->sizes[0] < *lo ? s->sizes[0] : *lo;
      *hi = s->sizes[s->nsizes - 1] > *hi ? s->sizes[s->nsizes - 1] : *hi;
    }
  }
  for (size_t i = 0; i < p->nrules && n < max; i++) {
    const struct pt_rule *r = &p->rules[i];
    if (r->coll != coll || r->proto != NCCL_PROTO_LL128) continue;
    out[n++] = (struct pt_cand_spec){r->algo, NCCL_PROTO_LL128, r->channels, 0};
    *lo = r->min_bytes < *lo ? r->min_bytes : *lo;
    *hi = r->max_bytes > *hi ? r->max_bytes : *hi;
  }
  return n;
}

int pt_screen_profile(const struct pt_backend *b, const struct pt_profile *p, struct pt_screen *out,
                      struct pt_error_rec *err) {
  struct pt_cand_spec cands[64];
  struct pt_screen one;
  memset(out, 0, sizeof *out);
  for (int c = 0; c < PT_NCOLL; c++) {
    uint64_t lo, hi;
    size_t n = profile_cands(p, c, cands, sizeof cands / sizeof cands[0], &lo, &hi);
    if (!n) continue;
    /* Graph mode where the profile measured it (the engines' decode steps). */
    int mode = p->series[c][PT_MODE_EAGER] && !p->series[c][PT_MODE_GRAPH] ? PT_MODE_EAGER : PT_MODE_GRAPH;
    int rc = pt_screen_ll128(b, c, mode, cands, n, lo, hi, &one, err);
    if (rc) return rc;
    size_t len = strlen(out->cands);
    snprintf(out->cands + len, sizeof out->cands - len, "%s%s: %s", len ? "; " : "", pt_coll_name(c), one.cands);
    out->replays = one.replays;
    out->nsizes = one.nsizes;
    memcpy(out->sizes, one.sizes, sizeof out->sizes);
    if (one.state == PT_SCREEN_FAIL) {
      out->state = PT_SCREEN_FAIL;
      snprintf(out->reason, sizeof out->reason, "%s %.280s", pt_coll_name(c), one.reason);
      return 0;
    }
    if (one.state == PT_SCREEN_PASS || !out->state) out->state = one.state;
    if (out->state == PT_SCREEN_DISABLED) memcpy(out->reason, one.reason, sizeof out->reason);
  }
  if (out->state == PT_SCREEN_PASS) out->reason[0] = 0;
  return 0;
}
