/*
 * Internals of the device double (test/double/README.md): a test-only
 * stand-in for the CUDA runtime and NCCL that the GPU backend loads with
 * dlopen. It runs on host memory and host threads, computes every
 * all-reduce exactly, and takes time from a simulated box (sim/): a
 * virtual clock per stream and per host thread, which events report.
 *
 * Execution model: work runs when it is issued (eager) or launched (graph);
 * a collective returns once every rank has arrived, so the launching
 * thread waits for its peers. That is the worst case of NCCL's documented
 * warning that cudaGraphLaunch can block while a peer's kernel spins
 * (NVIDIA/nccl#787, #613): one thread that replays several GPUs' graphs
 * deadlocks here, as it can on a real box.
 */
#ifndef PT_DOUBLE_DBL_H
#define PT_DOUBLE_DBL_H

#include <stddef.h>
#include <stdint.h>

#include "measure/gpu_abi.h"
#include "pcie/sim_box.h"

#define DBL_API __attribute__((visibility("default")))
#define DBL_MAX_DEV 64

/* One captured or pending all-reduce. */
struct dbl_op {
  int kind; /* DBL_OP_ALLREDUCE or DBL_OP_MEMSET */
  struct pt_nccl_comm_s *comm;
  const float *send;
  float *recv;
  size_t count;
  int algo, proto, channels; /* decided when issued or captured */
  void *dst;                 /* memset, copy */
  const void *src;           /* copy */
  int value;
  size_t bytes;
};
enum { DBL_OP_ALLREDUCE = 1, DBL_OP_MEMSET = 2, DBL_OP_COPY = 3, DBL_OP_SPIN = 4 /* bytes: ns to spin */ };

struct pt_cu_stream_s {
  int dev;
  double vtime; /* us: when the stream's last work completes */
  int after_coll; /* its last work was an all-reduce (back to back: the overlap model) */
  struct pt_cu_graph_s *capturing;
};
struct pt_cu_event_s {
  double t;
  int recorded;
};
struct pt_cu_graph_s {
  size_t n, cap;
  struct dbl_op *ops;
};
struct pt_cu_exec_s {
  size_t n;
  struct dbl_op *ops;
  int uploaded;
};

/* ---- process-wide configuration (dbl_env.c) ---- */
struct dbl_env {
  struct pt_box box;
  int ndev;
  int driver, runtime; /* versions reported, e.g. 13000 */
  int comm_channels;   /* NCCL's count after NCCL_MIN/MAX_NCHANNELS */
  double graph_launch_us, enqueue_us, upload_us;
  /* Host-cost model: host time per MiB copied to the host (the copy and
   * the host's work on it), times 1 + host_skew * device, so ranks finish
   * their host work at different times, as on a real box. */
  double host_us_per_mib, host_skew;
  double log_us;   /* host time of one log line written */
  double init_s;   /* wall-clock seconds ncclCommInitRank takes */
  int log_tuning;  /* NCCL_DEBUG_SUBSYS has TUNING (or ALL): a line per collective */
  /* Overlap of back-to-back collectives (README, "Overlap"): the fraction
   * of an all-reduce's time hidden when it is queued right behind another
   * one on its stream, per protocol (NCCL_PROTO_*); 0 by default. */
  double overlap[3];
};
/* Loads PTDOUBLE_* once; NULL (and a line on stderr) when unusable. */
const struct dbl_env *dbl_env(void);

/* Faults (PTDOUBLE_FAULTS, see README): what an op of this candidate does. */
enum { DBL_F_NONE, DBL_F_HANG, DBL_F_CRASH, DBL_F_CORRUPT, DBL_F_SLOW, DBL_F_TEAR };
/* Host time of the host's work on n bytes copied to the host by device dev. */
double dbl_host_cost_us(int dev, size_t n);
/* Returns the fault for (algo, proto, channels) at nbytes on this op's
 * execution number `exec` (1-based, per candidate and size, per process);
 * *slow_s gets the delay of a slow fault. */
int dbl_fault(int algo, int proto, int channels, size_t nbytes, unsigned exec, double *slow_s);
/* Environment faults (PTDOUBLE_FAIL): "init", "malloc@BYTES", "memcpy@BYTES". */
int dbl_fail(const char *what, size_t bytes);

/* NCCL-like log lines to NCCL_DEBUG_FILE (or stderr) when NCCL_DEBUG=INFO. */
void dbl_info(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dbl_warn(int dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether INFO lines are written (NCCL_DEBUG=INFO). */
int dbl_logging(void);

/* ---- per host thread (dbl_cuda.c) ---- */
int dbl_cur_dev(void);
double *dbl_hclk(void); /* the calling thread's virtual host clock, us */

/* Runs the legacy stream's pending device-to-device copies of device dev
 * (-1: every device), as a synchronising call does. */
void dbl_legacy_flush(int dev);

/* Work issued on a stream: captured while it captures, else run now. */
int dbl_issue(struct pt_cu_stream_s *s, const struct dbl_op *op, int mode);

/* ---- NCCL side (dbl_nccl.c) ---- */
/* Runs one captured/issued op on stream st in mode (PT_MODE_*), submitted
 * at host time submit_us. Returns a cudaError_t-like code. */
int dbl_run_op(struct pt_cu_stream_s *st, const struct dbl_op *op, int mode, double submit_us);

/* ---- ranks meeting in shared memory (dbl_comm.c) ---- */
struct dbl_shm;
/* Joins (rank 0 creates) the segment named by the unique id. NULL on
 * failure or when the peers do not arrive within timeout_s. */
struct dbl_shm *dbl_shm_join(const pt_nccl_uid *id, int nranks, int rank, double timeout_s);
void dbl_shm_leave(struct dbl_shm *s);
/* Each rank's CUDA device and host hash, exchanged as NCCL's bootstrap
 * AllGather does (a barrier): returns how many distinct hosts the ranks are
 * on (NCCL's nNodes) and sets *dup to another rank on the same host and
 * device, or -1. NCCL refuses such a communicator (src/init.cc,
 * initTransportsRank: "Duplicate GPU detected"). */
int dbl_shm_peers(struct dbl_shm *s, int dev, unsigned long long host, int *dup);
/* The all-reduce proper: sums every rank's send into recv (exact, rank
 * order), and agrees on the arrival time: returns max over ranks of
 * arrive_us. */
double dbl_shm_allreduce(struct dbl_shm *s, const float *send, float *recv, size_t count,
                         double arrive_us);

#endif
