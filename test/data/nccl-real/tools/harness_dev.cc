// The nccl-real harness ported to NCCL's dev branch (2.31), where the cost
// model and the selection moved out of src/graph/tuning.cc and src/enqueue.cc
// into src/tuning/: ncclTuningCostModelInit (cost_model.cc, the per-model
// init that replaces ncclTopoTuneModel), ncclTuningSetThreadThresholds and
// ncclTuningGetChannels (tuning_general.cc), ncclTuningComputeAllTunings and
// ncclTuningCompute (tuning.cc, the plain minimum over the models' times).
// The graph part is the shared harness's (src/graph/{xml,topo,paths,search}.cc
// and the init/connect bookkeeping for one process on one node). Nothing of
// NCCL is pasted here: its functions are called, compiled from the tree.
//
// Output: the shared harness's header and table, then one "# run" line per
// size with the channels ncclTuningGetChannels gives each (algo, proto) when
// a tuner caps the count at 1, 2, ... comm->nChannels.
//
// usage: harness TOPO.xml   (env as the shared harness: HARNESS_NO_P2P, NCCL_*)
#include "core.h"
#include "comm.h"
#include "graph.h"
#include "topo.h"
#include "xml.h"
#include "nvmlwrap.h"
#include "tuning.h"
#include "cost_model.h"
#include <cfloat>
#include <cstdio>
#include <cstdlib>

static const char* algoName(int a) { return a == 0 ? "tree" : a == 1 ? "ring" : "other"; }
static const char* protoName(int p) { return p == 0 ? "ll" : p == 1 ? "ll128" : p == 2 ? "simple" : "?"; }
static const char* pathName(int t) {
  static const char* n[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS", "NET", "DIS"};
  return t >= 0 && t < 12 ? n[t] : "?";
}

// As the shared harness: the cell arithmetic of scheduleCollTasksToPlan
// (enqueue.cc; unchanged on dev) for a plan that holds this one task.
static int scheduledChannels(struct ncclComm* comm, size_t nBytes, int proto, int nMaxChannels) {
  const size_t MinTrafficPerChannel = 32 << 10;
  size_t trafficBytes = nBytes * 2;
  if (proto == NCCL_PROTO_LL) trafficBytes *= 4;
  size_t planTraffic = std::max(MinTrafficPerChannel, trafficBytes);
  int nCh = std::min(nMaxChannels, comm->nChannels);
  size_t trafficPerChannel = divUp(planTraffic / nCh, 16) * 16;
  int trafficPerByte = 2 * (proto == NCCL_PROTO_LL ? 4 : 1);
  size_t cellSize = divUp(divUp(MinTrafficPerChannel, (size_t)trafficPerByte), 16) * 16;
  size_t cells = divUp(nBytes, cellSize);
  size_t trafficPerCell = cellSize * trafficPerByte;
  size_t cellsPerChannel = std::min(cells, divUp(trafficPerChannel, trafficPerCell));
  size_t cellsLo = (1 == comm->nChannels) ? cells : std::min(cells, divUp(trafficPerChannel, trafficPerCell));
  int nMid = (cells - cellsLo) / cellsPerChannel;
  size_t cellsHi = (cells - cellsLo) % cellsPerChannel;
  int n = (cellsLo != 0 ? 1 : 0) + nMid + (cellsHi != 0 ? 1 : 0);
  if (comm->nChannels < n) n = comm->nChannels;
  return n;
}

// The input ncclGetAlgoInfo (enqueue.cc) builds for an all-reduce of nBytes
// with ungrouped, unregistered buffers.
static void allReduceInput(struct ncclComm* comm, size_t nBytes, struct ncclTuningInput_t* in) {
  memset(in, 0, sizeof *in);
  in->comm = comm;
  in->tuningMask = NCCL_TUNING_MASK_GENERAL_KERNELS;
  in->func = ncclFuncAllReduce;
  in->redOp = ncclSum;
  in->devRedOp = ncclDevSum;
  in->datatype = ncclFloat32;
  in->nBytes = nBytes;
  in->numPipeOps = 1;
  in->count = nBytes / 4 ? nBytes / 4 : 1;
  in->regBuff = 0;
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s TOPO.xml\n", argv[0]); return 2; }
  int noP2p = getenv("HARNESS_NO_P2P") && atoi(getenv("HARNESS_NO_P2P"));
  if (getenv("HARNESS_INFO")) { ncclDebugLevel = NCCL_LOG_INFO; ncclDebugMask = ~0ULL; }
  for (int i = 0; i < ncclNvmlMaxDevices; i++)
    for (int j = 0; j < ncclNvmlMaxDevices; j++)
      ncclNvmlDevicePairs[i][j].p2pStatusRead = ncclNvmlDevicePairs[i][j].p2pStatusWrite =
        noP2p ? NVML_P2P_STATUS_NOT_SUPPORTED : NVML_P2P_STATUS_OK;

  struct ncclXml* xml;
  NCCLCHECK(xmlAlloc(&xml, NCCL_TOPO_XML_MAX_NODES));
  NCCLCHECK(ncclTopoGetXmlFromFile(argv[1], xml, 1));
  struct ncclTopoSystem* system;
  NCCLCHECK(ncclTopoGetSystemFromXml(xml, &system, 0x1));
  NCCLCHECK(ncclTopoComputePaths(system, NULL));
  system->inter = 0;
  NCCLCHECK(ncclTopoComputePaths(system, NULL));
  NCCLCHECK(ncclTopoSearchInit(system));
  int ngpus = system->nodes[GPU].count;

  struct ncclComm* comm = (struct ncclComm*)calloc(1, sizeof(struct ncclComm));
  // init.cc: the graphs now live in comm->graphs[algo] (cost models read them there)
  struct ncclTopoGraph *ringGraph = &comm->graphs[NCCL_ALGO_RING], *treeGraph = &comm->graphs[NCCL_ALGO_TREE];
  ringGraph->id = 0; ringGraph->pattern = NCCL_TOPO_PATTERN_RING;
  ringGraph->minChannels = 1; ringGraph->maxChannels = MAXCHANNELS / 2;
  NCCLCHECK(ncclTopoCompute(system, ringGraph));
  treeGraph->id = 1; treeGraph->pattern = NCCL_TOPO_PATTERN_BALANCED_TREE;
  treeGraph->minChannels = ringGraph->nChannels; treeGraph->maxChannels = ringGraph->nChannels;
  NCCLCHECK(ncclTopoCompute(system, treeGraph));

  int ccMin, ccMax;
  NCCLCHECK(ncclTopoGetCompCap(system, &ccMin, &ccMax));
  int arch, vendor, model;
  NCCLCHECK(ncclTopoCpuType(system, &arch, &vendor, &model));
  comm->topo = system;
  comm->nRanks = ngpus; comm->nNodes = 1; comm->rank = 0;
  comm->localRanks = comm->maxLocalRanks = comm->minLocalRanks = ngpus;
  comm->cpuArch = arch; comm->cpuVendor = vendor;
  comm->minCompCap = ccMin; comm->maxCompCap = ccMax;
  comm->maxTreePattern = treeGraph->pattern;
  comm->config.collnetEnable = 0; comm->nvlsSupport = 0; comm->nvlsChannels = 0;
  int nch = std::min(treeGraph->nChannels, ringGraph->nChannels);
  ringGraph->nChannels = treeGraph->nChannels = nch;
  comm->nChannels = std::min(MAXCHANNELS, nch * 2);
  // ncclTuningInit (tuning.cc) without the tuner plugin load
  NCCLCHECK(ncclTuningCostModelInit(comm));
  NCCLCHECK(ncclTuningSetThreadThresholds(comm));
  struct ncclTuningContext_t* tc = &comm->tuningContext;

  const char* base = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
  printf("# topo %s ngpus %d sm %d-%d cpu arch %d vendor %d P2P %s P2P_LEVEL=%s\n", base, ngpus, ccMin, ccMax,
         arch, vendor, noP2p ? "not-supported" : "ok", getenv("NCCL_P2P_LEVEL") ? getenv("NCCL_P2P_LEVEL") : "(default)");
  printf("# ring graph: nChannels %d bwIntra %.2f typeIntra %s sameChannels %d\n", ringGraph->nChannels,
         ringGraph->bwIntra, pathName(ringGraph->typeIntra), ringGraph->sameChannels);
  printf("# tree graph: nChannels %d bwIntra %.2f typeIntra %s pattern %d\n", treeGraph->nChannels, treeGraph->bwIntra,
         pathName(treeGraph->typeIntra), treeGraph->pattern);
  printf("# comm->nChannels %d  maxThreads ring ll/ll128/simple %d/%d/%d tree %d/%d/%d\n", comm->nChannels,
         tc->maxThreads[1][0], tc->maxThreads[1][1], tc->maxThreads[1][2], tc->maxThreads[0][0],
         tc->maxThreads[0][1], tc->maxThreads[0][2]);
  for (int a = 0; a < 2; a++)
    printf("# allreduce %s lat/bw  ll %.1f/%.3f  ll128 %.1f/%.3f  simple %.1f/%.3f\n", algoName(a),
           tc->generalLatencies[ncclFuncAllReduce][a][0], tc->generalBandwidths[ncclFuncAllReduce][a][0],
           tc->generalLatencies[ncclFuncAllReduce][a][1], tc->generalBandwidths[ncclFuncAllReduce][a][1],
           tc->generalLatencies[ncclFuncAllReduce][a][2], tc->generalBandwidths[ncclFuncAllReduce][a][2]);
  printf("# threadThresholds tree ll/ll128/simple %ld/%ld/%ld ring %ld/%ld/%ld\n", (long)tc->threadThresholds[0][0],
         (long)tc->threadThresholds[0][1], (long)tc->threadThresholds[0][2], (long)tc->threadThresholds[1][0],
         (long)tc->threadThresholds[1][1], (long)tc->threadThresholds[1][2]);
  printf("%-10s %-6s %-6s %4s %5s %4s %10s  %10s %10s %10s %10s\n", "bytes", "algo", "proto", "nch", "warps", "sch",
         "cost_us", "tree_ll", "tree_simple", "ring_ll", "ring_simple");
  char runs[64][1024];
  int nsz = 0;
  for (size_t n = 8; n <= ((size_t)256 << 20); n *= 2, nsz++) {
    struct ncclTuningInput_t in;
    allReduceInput(comm, n, &in);
    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) table[a][p] = NCCL_TUNING_IGNORE;
    struct ncclTuningResultList_t all = {nullptr};
    NCCLCHECK(ncclTuningComputeAllTunings(&in, &all));
    for (struct ncclTuningResultListNode* x = all.head; x; x = x->next)
      if (x->result.algo >= 0 && x->result.proto >= 0) table[x->result.algo][x->result.proto] = x->result.timeUs;
    ncclTuningResultListFree(&all);
    struct ncclTuningResult_t best = NCCL_TUNING_RESULT_INIT;
    best.maxChannels = 0; // as ncclGetAlgoInfo
    NCCLCHECK(ncclTuningCompute(&in, &best));
    int sch = scheduledChannels(comm, n, best.proto, best.maxChannels);
    printf("%-10zu %-6s %-6s %4d %5d %4d %10.2f  %10.2f %10.2f %10.2f %10.2f\n", n, algoName(best.algo),
           protoName(best.proto), best.maxChannels, best.nWarps, sch, best.timeUs, table[0][0], table[0][2],
           table[1][0], table[1][2]);
    // A tuner's nMaxChannels reaches ncclTuningGetChannels as result->maxChannels (tuning.cc)
    int off = snprintf(runs[nsz], sizeof runs[nsz], "# run %zu", n);
    for (int a = 0; a < 2; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
        off += snprintf(runs[nsz] + off, sizeof runs[nsz] - off, " %s_%s=", algoName(a), protoName(p));
        for (int cap = 1; cap <= comm->nChannels; cap++) {
          struct ncclTuningResult_t r = NCCL_TUNING_RESULT_INIT;
          r.algo = a; r.proto = p; r.maxChannels = cap;
          NCCLCHECK(ncclTuningGetChannels(&in, &r));
          off += snprintf(runs[nsz] + off, sizeof runs[nsz] - off, "%s%d", cap > 1 ? "," : "", r.nChannels);
        }
      }
  }
  printf("# run: channels ncclTuningGetChannels gives under a tuner cap of 1..comm->nChannels\n");
  for (int i = 0; i < nsz; i++) printf("%s\n", runs[i]);
  return 0;
}
