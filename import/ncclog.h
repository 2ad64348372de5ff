/*
 * A reader of NCCL debug logs (NCCL_DEBUG=INFO): splits one line of text into
 * NCCL's prefix ("host:pid:tid [dev] NCCL INFO msg", or "... [dev] file:line
 * NCCL WARN msg"; src/debug.cc, ncclDebugLog) and recognises the messages
 * that tell whether a tuner plugin was loaded, what this project's plugin
 * said, and what NCCL built for a communicator (channels, rings, trees,
 * transports, the topology search). The messages come from one table in ncclog.c, matched on their
 * stable beginnings, so a changed wording is a one-line edit there.
 *
 * It reads a line at a time and keeps no state: no files, no printing.
 * cli/doctor.c draws the conclusions.
 */
#ifndef PCIE_IMPORT_NCCLOG_H
#define PCIE_IMPORT_NCCLOG_H

#define NL_MAX_FIELDS 8
#define NL_FIELD_LEN 512

enum nl_level { NL_INFO, NL_WARN, NL_BARE /* "NCCL version" printed without prefix */ };

enum nl_kind {
  NL_OTHER,          /* an NCCL line none of the patterns knows */
  NL_VERSION,        /* f0 version "2.30.7", f1 suffix "+cuda12.9" */
  NL_TUNER_ENV,      /* f0 the value of NCCL_TUNER_PLUGIN */
  NL_TUNER_USING_V,  /* NCCL >= 2.28: f0 plugin name, f1 ABI version */
  NL_TUNER_USING,    /* NCCL 2.21-2.27: f0 plugin name (ABI from NL_TUNER_NOSYM) */
  NL_TUNER_NOSYM,    /* f0 the ABI version whose symbol the library lacks */
  NL_TUNER_LOADED,   /* f0 the library path NCCL loaded */
  NL_TUNER_UNSUPPORTED, /* f0 the library: opened, but exports no ABI NCCL knows */
  NL_TUNER_NOTFOUND, /* f0 the names NCCL tried */
  NL_TUNER_INTERNAL, /* NCCL <= 2.27 fell back to its own tuning */
  NL_TUNER_MSG,      /* f0 any other TUNER/Plugin message (a dlopen error) */
  NL_COMM,           /* f0 comm pointer, f1 rank, f2 nRanks, f3 nNodes */
  NL_COMM_INIT,      /* "Init START" / "Init COMPLETE": f0 comm pointer, f1 rank, f2 nranks,
                      * f3 commId (hex, "" for a split), f4 cudaDev, f5 busId (hex), f6
                      * "START" or "COMPLETE" */
  NL_CHANNELS,       /* f0 coll channels, f1 collnet, f2 nvls, f3 p2p channels, f4 p2p
                      * channels per peer; once per rank */
  NL_RING,           /* rank 0's rings: f0 channel, f1 rings, f2 the ranks in ring order */
  NL_TREES,          /* f0 " [c] d0/d1/d2->rank->up" per channel, this rank's trees */
  NL_TRANSPORT,      /* f0 channel, f1 rank, f2 its nvmlDev, f3 peer, f4 peer's nvmlDev,
                      * f5 "send"/"receive" (NET only) or "", f6 the transport ("P2P/CUMEM/read",
                      * "SHM/direct/direct", "NET/Socket/0", "P2P/indirect/2[2]") */
  NL_GRAPH,          /* a searched graph: f0 pattern, f1 nChannels, f2 bwIntra, f3 bwInter,
                      * f4 typeIntra, f5 typeInter */
  NL_GRAPH_FALLBACK, /* the search found nothing: f0 pattern (one channel in rank order) */
  NL_P2P_DISABLED,   /* NVML says P2P is off: f0, f1 the two GPUs (NVML indices) */
  NL_ENV,            /* f0 NCCL_X, f1 its value ("NCCL_X set by environment to Y") */
  NL_COLL,           /* an enqueued collective (NCCL_DEBUG_SUBSYS=COLL): f0 its name
                      * ("AllReduce"), f1 opCount (hex), f2 count, f3 datatype, f4 comm
                      * pointer, f5 nranks, f6 stream */
  NL_PT_PROFILE,     /* f0 path, f1 name, f2 hash, f3 intervals, f4 nRanks, f5 nNodes */
  NL_PT_REFUSE,      /* f0 the reason the plugin left the communicator to NCCL ("...; leaving ...") */
  NL_PT_TRACE,       /* f0 collective, f1 bytes, f2 mode, f3 choice or "", f4 channels, f5 why */
  NL_PT_MSG,         /* f0 any other line of this project's plugin */
};

struct nl_line {
  enum nl_level level;
  char host[128];
  long pid, tid;
  int dev;
  const char *msg; /* points into the caller's line */
  enum nl_kind kind;
  int nfield;
  char field[NL_MAX_FIELDS][NL_FIELD_LEN];
  char commid[32]; /* NL_PT_PROFILE: the commId the plugin printed, "" if none */
};

/* The reader's patterns, compiled once; 0, or -1 when one does not compile
 * (a bug in the table, reported by the test suite). */
int nl_init(void);
void nl_release(void);

/* Parses one line (without its newline). Returns 1 and fills *out when the
 * line is NCCL's, 0 when it is other program output. */
int nl_parse(const char *line, struct nl_line *out);

/* What a refusal was, from its reason: "invalid", "partial", "ambiguous",
 * "not fitting", "unreadable" or "other". */
const char *nl_refusal_class(const char *reason, enum nl_level level);

#endif
