/*
 * pcie-tune doctor's internals, shared by its files:
 *  - doctor.c         the command: options, reading, the verdict and exit status;
 *  - doctor_input.c   the input reader (regular files and stdin, bounded);
 *  - doctor_gather.c  ties each NCCL line to its process and communicator;
 *  - doctor_jobs.c    tells the runs in the input apart;
 *  - doctor_plugin.c  what the plugin did: loaded or not, profiles, refusals, trace;
 *  - doctor_comm.c    what NCCL built: channels, rings, trees, transports, and
 *                     what the user can change;
 *  - doctor_prov.c    the profile's provenance against the job.
 * Nothing outside cli/doctor*.c includes this.
 */
#ifndef PCIE_CLI_DOCTOR_H
#define PCIE_CLI_DOCTOR_H

#include <stddef.h>

#include "import/ncclog.h"
#include "pcie/hostinfo.h"

#define PT_NAME "PcieTuner"

enum { EXIT_WORKING = 0, EXIT_NOINPUT = 1, EXIT_USAGE = 2, EXIT_NOT_LOADED = 3, EXIT_IDLE = 4,
       EXIT_MISMATCH = 5, EXIT_DEGRADED = 6 };

#define DR_NENV 16
#define DR_NTHREAD 16
#define DR_NGRAPH 4
#define DR_NRING 64

struct dr_proc {
  char host[128];
  long pid;
  char version[64], tuner_env[256], loaded[512], name[128], notfound[512], openerr[512];
  char unsupported[512];
  int abi, nosym_min, internal, ours; /* ours: our plugin said something */
  char env[DR_NENV][2][64];           /* NCCL_* settings NCCL logged */
  char global_warn[768];              /* the plugin's WARN about a global NCCL_PROTO/NCCL_ALGO */
  int nenv;
  int p2p_off[8][2], np2p_off; /* GPU pairs NVML reports without P2P */
  int head, tail;              /* this process's members (struct dr_member.next) */
  struct {
    long tid;
    int mem;
  } cur[DR_NTHREAD]; /* the communicator each thread is initialising */
  int ncur;
  int job;                    /* dr_jobs: the job it belongs to */
  unsigned long first, last;  /* input order of its first and last NCCL line */
  long long mtime;            /* its newest input file's modification time (ns), 0 unknown */
};

enum dr_mstate { DR_SILENT, DR_PROFILE, DR_REFUSED };

/* What the plugin said at one communicator's init. */
struct dr_outcome {
  enum dr_mstate state;
  char path[512], name[128], hash[32], reason[640];
  const char *cls;
  int warn, intervals;
};

struct dr_graph {
  int pattern, nchannels;
  double bw_intra, bw_inter;
  char type_intra[8], type_inter[8];
};

/* One connection NCCL set up, as the sending rank logged it. */
struct dr_link {
  int peer, via; /* via: index into struct dr_doctor.via */
};

/* One rank of one communicator, in one process. */
struct dr_member {
  int proc, next;
  long tid;
  char ptr[32], commid[32];
  int rank, nranks, nnodes, cudadev;
  long long busid; /* -1: not in the log */
  int comm_line;   /* NCCL's "comm %p rank" line seen */
  struct dr_outcome out;
  int plugged;     /* out came from a plugin line */
  int coll_ch, p2p_ch, p2p_per_peer; /* -1: not in the log */
  char trees[256];
  struct dr_graph graph[DR_NGRAPH];
  int ngraph, fallback_pattern; /* fallback_pattern: -1 none */
  char *rings[DR_NRING];        /* rank 0's "Channel xx/yy : ..." rank lists */
  int ring_ch[DR_NRING];        /* their channels */
  int nrings, ring_total;
  struct dr_link *links;
  size_t nlinks;
};

/* A plugin init line, tied to its member once the whole log is read. */
struct dr_plug {
  int proc, next;
  long tid;
  char commid[32];
  int nranks, nnodes;
  struct dr_outcome out;
};

struct dr_decision {
  int proc;
  char coll[24], mode[8], choice[48], why[48];
  unsigned long long bytes;
  int ch;
  unsigned long count;
};

/* A collective NCCL enqueued (NCCL_DEBUG_SUBSYS=COLL). */
struct dr_coll {
  int proc, dtype, nranks;
  char op[16], ptr[32];
  unsigned long long count;
};

/* An engine line (not NCCL's) a finding rests on, tied to the process of
 * the nearest NCCL line of its input: the one before it, else the one
 * after it; proc -1 when its input holds no NCCL line. */
enum { DR_ENG_EXPANDABLE, DR_ENG_CUSTOM_AR };
#define DR_MAX_ENG 256
struct dr_engine_note {
  int kind, proc, file;
  char text[256];
};

struct dr_doctor {
  struct dr_proc *procs;
  size_t nproc;
  struct dr_member *mem;
  size_t nmem;
  struct dr_plug *plugs;
  size_t nplug;
  struct dr_decision *dec;
  size_t ndec;
  struct dr_coll *colls;
  size_t ncoll, colls_dropped;
  char *via[64]; /* the distinct transports ("P2P/CUMEM", "SHM/direct/direct") */
  int nvia;
  int *proc_hash; /* open addressing over host:pid, index + 1 */
  size_t hash_cap;
  char bare_version[64];
  unsigned long nccl_lines;
  long long mtime;       /* the input being read: its modification time (ns), 0 unknown */
  const char *label;     /* "job 2: " before an error when the input holds several jobs */
  struct dr_engine_note *eng; /* the engine's lines that findings rest on */
  size_t neng;
  int file;      /* the input being read: its index */
  int last_proc; /* the process of this input's last NCCL line; -1 none yet */
  int last_job;  /* dr_jobs: the most recent job (for notes in no job's file) */
  int oom, too_many;
};

/* doctor_jobs.c: the runs in the input. Processes that share a communicator
 * (commId) are one job; a process without a commId joins the job whose lines
 * it is interleaved with, else the job of all such processes. Jobs are
 * numbered oldest first: by their files' modification times where they came
 * from different files, else by their place in the input. A job is
 * superseded when a later one ran on one of its GPUs (host and busId; the
 * host where the log names no busId) after its last line: it is reported,
 * and left out of the exit status. */
struct dr_job {
  size_t nproc;
  unsigned long first, last;
  long long mtime_lo, mtime_hi;
  int superseded_by; /* job index, -1 current */
};
struct dr_jobs {
  struct dr_job *job;
  size_t n;
};
int dr_jobs(struct dr_doctor *d, struct dr_jobs *j); /* 0, -1 out of memory */
void dr_jobs_free(struct dr_jobs *j);

/* doctor_input.c: calls fn on every line of path ('-': stdin), without its
 * end; 0, or -1 after printing why the input was refused. */
int dr_read(const char *path, void (*fn)(void *arg, const char *line), void *arg);

/* doctor_gather.c */
void dr_take(struct dr_doctor *d, const struct nl_line *l);
void dr_tie(struct dr_doctor *d); /* ties the plugin's lines, after the last line */
void dr_free(struct dr_doctor *d);

/* Communicators: the members of each, by commId (without one, by nRanks and
 * nNodes), sorted by rank: communicator k is order[start[k] .. start[k+1]);
 * only job's (-1: every job's).
 * Returns the number of communicators, -1 out of memory. */
struct dr_comms {
  size_t *order, *start, n;
};
int dr_comms(const struct dr_doctor *d, int job, struct dr_comms *c);
void dr_comms_free(struct dr_comms *c);
/* Distinct ranks among a communicator's members (never above nRanks). */
int dr_ranks_seen(const struct dr_doctor *d, const struct dr_comms *c, size_t k);
/* "gpu-a:41203 cudaDev 3 busId 0000:41:00.0" */
void dr_where(const struct dr_doctor *d, const struct dr_member *m, char *buf, size_t len);
void dr_busid(long long id, char *buf, size_t len);

/* doctor_plugin.c: the processes and the plugin's library (returns how many
 * processes loaded it); one communicator's plugin outcome per rank (returns
 * 1 when its ranks disagree, -1 out of memory; counts it in *tuned when every
 * rank uses the same profile); the refusals and traced decisions. */
size_t dr_plugin_header(const struct dr_doctor *d, int job, size_t *nproc, int quiet);
int dr_plugin_comm(const struct dr_doctor *d, const struct dr_comms *c, size_t k, int quiet, int *tuned);
void dr_plugin_footer(const struct dr_doctor *d, int job);
int dr_loaded_ours(const struct dr_proc *p);

/* doctor_comm.c: what NCCL built for communicator k and what to change;
 * returns 1 when it is degraded, 0 when not, -1 out of memory. */
int dr_comm_report(const struct dr_doctor *d, const struct dr_comms *c, size_t k, int quiet);

/* doctor_prov.c: compares the profile a communicator uses with the job. */
void dr_prov_report(const struct dr_doctor *d, const struct dr_comms *c, size_t k);

/* A finding: what doctor concluded, from what, its effect on NCCL, the
 * public report it rests on and what to do (docs/cli.md lists them all). */
enum dr_sev { DR_INFO, DR_WARN, DR_DEGRADES /* degrades P2P or risks a hang: --strict exits 6 */ };
struct dr_finding {
  enum dr_sev sev;
  char id[32];      /* stable name, "acs-redirect" */
  char about[96];   /* "GPU 0000:41:00.0", "GPUs 0000:41:00.0 and 0000:61:00.0" */
  char what[256], evidence[640], effect[512], source[256], fix[512];
};
struct dr_findings {
  struct dr_finding *f;
  size_t n;
  int oom;
};
/* Adds a finding; the strings are printf formats of one argument list each
 * would need, so callers fill the struct and pass it. */
void dr_add_finding(struct dr_findings *fs, const struct dr_finding *f);
void dr_print_finding(const struct dr_finding *f);
const char *dr_sev_name(enum dr_sev s);

/* doctor_defects.c: the known defects of NCCL version ("2.26.2+cuda12.8"). */
void dr_defects(const char *version, struct dr_findings *fs);
/* doctor_findings.c: what the logs show about settings that undo the
 * plugin or known defects, for job (-1: all); engine lines (not NCCL's)
 * are the whole input's. */
void dr_log_findings(const struct dr_doctor *d, int job, struct dr_findings *fs);
void dr_engine_line(struct dr_doctor *d, const char *line);
/* Ties the input's engine lines seen before its first NCCL line to pi. */
void dr_engine_tie(struct dr_doctor *d, int pi);

/* doctor_workload.c: what each communicator ran, from NCCL's COLL lines, as
 * workload items (STEP COLLECTIVE BYTES COUNT); doctor --workload-out. */
struct dr_wl_item {
  char comm[32], step[64], coll[16];
  unsigned long long bytes;
  unsigned long count;
};
struct dr_workload {
  struct dr_wl_item *items;
  size_t n;
};
int dr_workload_build(const struct dr_doctor *d, struct dr_workload *w); /* -1 out of memory */
/* Writes w to path atomically (refuses an existing file without force);
 * 0, or 1 after printing why. */
int dr_workload_write(const struct dr_doctor *d, const struct dr_workload *w, const char *path,
                      int force);

/* Prints each step's count and sizes with its time by NCCL's default and by
 * the profile's choice, from the profile at path; 0, or 1 after saying why. */
int dr_workload_profile(const struct dr_workload *w, const char *path);

/* doctor_json.c: doctor --json, one document (docs/cli.md, "doctor --json",
 * schema "pcie-tune-doctor/1"), gathered while doctor judges. */
struct dr_comm_out {
  char id[32], profile[128], hash[32];
  int nranks, nnodes, seen, disagree, degraded, tuned;
};
struct dr_job_out {
  int rc, superseded_by;
  size_t nproc, loaded;
  char version[64];
  struct dr_comm_out *comms;
  size_t ncomm;
  struct dr_findings fs;
};
struct dr_host;
struct dr_json {
  struct dr_job_out *jobs;
  size_t njobs;
  int logs_rc, worst_job; /* -1: no logs given */
  const struct dr_host *host;
  struct dr_findings host_fs;
  struct dr_workload workload; /* the job's collectives (COLL lines); n 0: none */
  int host_rc, rc; /* host_rc -1: no --host */
  int oom;
};
struct dr_job_out *dr_json_job(struct dr_json *js);
void dr_json_comm(struct dr_json *js, const struct dr_comm_out *c);
void dr_json_print(const struct dr_json *js);
void dr_json_free(struct dr_json *js);

/* doctor_host.c / doctor_hostreport.c: doctor --host. */
#define DR_MAX_BRIDGES 96
struct dr_hgpu {
  char cur_speed[32], max_speed[32], port_speed[32]; /* sysfs text, "" absent */
  int cur_width, max_width, port_width;             /* 0 absent */
  char group[16], group_type[16];                   /* IOMMU group, its type; "" absent */
  unsigned long long bar1;                          /* bytes, 0 unknown */
};
struct dr_bridge {
  char bdf[16];
  int acs;          /* -1 config past 256 bytes unreadable, 0 no ACS capability, 1 read */
  unsigned acs_ctl; /* the ACS control register when acs == 1 */
};
struct dr_host {
  char root[512]; /* "" is "/" */
  struct pt_box_fp fp;
  struct dr_hgpu gpu[PT_FP_MAX_GPUS];
  struct dr_bridge br[DR_MAX_BRIDGES];
  int nbr;
  int iommu;          /* entries under /sys/class/iommu; -1 unknown */
  char iommu_names[128];
  char cmdline[1024]; /* "" unknown */
  int amd;            /* /proc/cpuinfo says AuthenticAMD */
};
/* Reads the host under root (NULL: PCIE_TUNER_SYSFS_ROOT, else "/") with
 * the plugin's reader (tuner/hostinfo.c); 0, or -1 with a message. */
int dr_host_read(struct dr_host *h, const char *root, char *err, size_t errlen);
const struct dr_bridge *dr_host_bridge(const struct dr_host *h, const char *bdf);
/* NCCL's path type between GPUs a and b ("PIX", "PXB", "PHB", "SYS") as
 * src/graph/xml.cc and paths.cc build it from sysfs; *other_rc: 1 when the
 * GPUs hang under different root complexes (nvidia-smi's NODE or SYS). */
const char *dr_host_path(const struct dr_host *h, int a, int b, int *other_rc);
/* Findings about the host; returns how many degrade P2P or risk a hang. */
int dr_host_report(const struct dr_host *h, struct dr_findings *fs, int quiet);

/* Copies as much of src as fits; log fields may be longer than our slots. */
void dr_set(char *dst, size_t len, const char *src);
#define SET(dst, src) dr_set((dst), sizeof(dst), (src))

#endif
