/*
 * profile --chunks LIST: a variant of every ring or tree candidate per chunk
 * size, measured only at the sizes where NCCL's device code uses the chunk
 * (include/pcie/chunk.h: above nranks x chunk per channel on a ring, above
 * one chunk on a tree), and said where on stderr.
 */
#include <stdio.h>

#include "nccl/common.h"
#include "pcie/chunk.h"
#include "pcie/sim_box.h"
#include "profile.h"

/* The channels a candidate asks for, as NCCL clamps them; 0 (NCCL's own
 * count) is the communicator's, 1 when unknown. */
static uint64_t asked_channels(const struct pt_backend_info *bi, int channels) {
  int ch = channels ? channels : bi->comm_channels;
  if (bi->comm_channels > 0 && ch > bi->comm_channels) ch = bi->comm_channels;
  return ch > 0 ? (uint64_t)ch : 1;
}

/* Where every channel of the ones asked, sharing nbytes evenly, carries more
 * than the chunk's reach, some channel surely runs the chunk as set (NCCL
 * running fewer channels only makes the parts larger). Below, the point is
 * not measured: at most a size where a chunk could still act is missed,
 * and there the plugin leaves NCCL its own chunk. */
int profile_chunk_measured(void *arg, int coll, const struct pt_cand_spec *c, uint64_t nbytes) {
  const struct pt_backend_info *bi = arg;
  if (!c->chunk) return 1;
  uint64_t reach = pt_chunk_reach(coll, c->algo, bi->nranks, c->chunk);
  return reach && nbytes / asked_channels(bi, c->channels) > reach;
}

/* The sizes of the sweep's grid, ascending; returns how many. */
static size_t grid(const struct profile_opts *o, uint64_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < o->nsizes; i++) out[n++] = o->sizes[i];
  for (uint64_t b = o->min_bytes; !o->nsizes && b && b <= o->max_bytes && n < PT_SWEEP_MAX_SIZES; b *= 2)
    out[n++] = b;
  return n;
}

/* One line per (chunk, collective, algorithm, protocol): from which grid size
 * each channel count's variant is measured. */
static void say_where(const struct profile_opts *o, const struct pt_backend_info *bi, const struct pt_cand_spec *v,
                      size_t nv) {
  uint64_t g[PT_SWEEP_MAX_SIZES];
  size_t ng = grid(o, g);
  for (int coll = 0; coll < PT_NCOLL; coll++)
    for (size_t k = 0; k < nv && (o->coll_mask & (1u << coll)); k++) {
      const struct pt_cand_spec *c = &v[k];
      int first = 1;
      for (size_t j = 0; j < k && first; j++) first = v[j].chunk != c->chunk || v[j].algo != c->algo || v[j].proto != c->proto;
      uint64_t reach = pt_chunk_reach(coll, c->algo, bi->nranks, c->chunk);
      if (!first || !reach) continue;
      fprintf(stderr, "pcie-tune profile: chunk %u B on %s %s/%s: measured only where a channel carries more than %llu B "
                      "(%s %s):", c->chunk, pt_coll_name(coll), pt_algo_name(c->algo), pt_proto_name(c->proto),
              (unsigned long long)reach, pt_chunk_where(coll, c->algo),
              c->algo == NCCL_ALGO_RING ? "recomputes the chunk in one loop" : "runs one piece");
      for (size_t j = k; j < nv; j++) {
        if (v[j].chunk != c->chunk || v[j].algo != c->algo || v[j].proto != c->proto) continue;
        size_t i = 0;
        while (i < ng && !profile_chunk_measured((void *)bi, coll, &v[j], g[i])) i++;
        char who[32];
        if (v[j].channels) snprintf(who, sizeof who, "%d channels", v[j].channels);
        else snprintf(who, sizeof who, "NCCL's %d channels", (int)asked_channels(bi, 0));
        if (i < ng) fprintf(stderr, " %s from %llu B;", who, (unsigned long long)g[i]);
        else fprintf(stderr, " %s at no size;", who);
      }
      fputc('\n', stderr);
    }
}

size_t profile_chunk_variants(const struct profile_opts *o, const struct pt_backend_info *bi,
                              struct pt_cand_spec *cands, size_t n, size_t max) {
  size_t base = n;
  for (size_t c = 0; c < o->nchunks; c++)
    for (size_t i = 0; i < base && n < max; i++) {
      /* At or above NCCL's ceiling the chunk is clamped to it: NCCL's own
       * (tuner/chunk.c), the candidate itself. */
      uint64_t ceiling = pt_chunk_ceiling(PT_ALLREDUCE, cands[i].algo, cands[i].proto, PT_NCCL_BUFFSIZE_DEFAULT);
      if (o->chunks[c] >= ceiling) continue;
      cands[n] = cands[i];
      cands[n++].chunk = o->chunks[c];
    }
  if (!o->quiet) say_where(o, bi, cands + base, n - base);
  return n;
}
