/* The shared bodies of the tuner ABI shims (see shim.h). */
#include "shim.h"

#include "core_internal.h"
#include "pcie/core.h"
#include "table_hot.h"

ncclResult_t pt_shim_init_v2(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                             void **context) {
  pt_core_init((struct pt_ctx **)context, 0, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

/* The constants are left exactly as NCCL made them: the profile overrides
 * decisions, not NCCL's model of everything else. */
ncclResult_t pt_shim_init_v5(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                             ncclTunerConstants_v5_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

/* The decision every getCollInfo makes, inline: the default path (an
 * active context, no trace, nothing forced) is one table lookup and apply
 * with no call in between (docs/performance.md, "Tuner hot path"); the
 * rest goes through pt_core_decide. regBuff cannot change a decision
 * (struct pt_table): it only names the mode in the trace. */
static inline __attribute__((always_inline)) void coll_info(void *context, ncclFunc_t coll,
                                                            size_t nbytes, int pipe, float *cost,
                                                            int na, int np, int reg, int *nch) {
  const struct pt_ctx *ctx = context;
  if (__builtin_expect(ctx && ctx->table && !ctx->trace && !pt__control_active(), 1)) {
    size_t i;
    pt_hot_decide(ctx->table, (int)coll, nbytes, cost, na, np, pipe, nch, &i);
    return;
  }
  pt_core_decide(ctx, (int)coll, nbytes, reg, pipe, cost, na, np, nch, NULL);
}

/* collCostTable is a contiguous float[numAlgo][numProto] cast to float**. */
ncclResult_t pt_shim_get_coll_info_v3(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int *nChannels) {
  coll_info(context, collType, nBytes, numPipeOps, (float *)collCostTable, numAlgo, numProto, 0,
            nChannels);
  return ncclSuccess;
}

ncclResult_t pt_shim_get_coll_info_v4(void *context, ncclFunc_t collType, size_t nBytes,
                                      int numPipeOps, float **collCostTable, int numAlgo,
                                      int numProto, int regBuff, int *nChannels) {
  coll_info(context, collType, nBytes, numPipeOps, (float *)collCostTable, numAlgo, numProto,
            regBuff, nChannels);
  return ncclSuccess;
}

ncclResult_t pt_shim_get_chunk_size(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                                    int proto, int nChannels, size_t *chunkSize) {
  pt_core_chunk(context, (int)collType, nBytes, algo, proto, nChannels, chunkSize);
  return ncclSuccess;
}

/* v7's constants are larger (5 compute capabilities), but like v5/v6 they
 * are left exactly as NCCL made them, so the core never sees them. */
ncclResult_t pt_shim_init_v7(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                             ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t *nvlDomainInfo,
                             ncclTunerConstants_v7_t *constants) {
  (void)nvlDomainInfo;
  (void)constants;
  pt_core_init((struct pt_ctx **)ctx, commId, nRanks, nNodes, logFunction);
  return ncclSuccess;
}

ncclResult_t pt_shim_finalize(void *context) {
  pt_core_finalize(context);
  return ncclSuccess;
}
