/* pcie-tune doctor, run as a user runs it, over NCCL debug logs written in
 * NCCL's own formats (test/data/ncclog/README.md says where each comes
 * from), and over the log lines `simulate` prints for the real plugin. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/pt_test.h"

struct result {
  int rc;
  char *out, *err;
};

/* Runs "pcie-tune doctor ARGS" in test/data/ncclog. */
static struct result doctor(const char *args) {
  struct result r;
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "cd '%s/test/data/ncclog' && '%s' doctor %s", pt_test_srcdir(),
                     pt_test_cli(), args) > 0);
  r.rc = pt_test_run(cmd, &r.out, &r.err);
  free(cmd);
  return r;
}

static void has(const char *text, const char *needle) {
  if (!strstr(text, needle)) ck_abort_msg("missing '%s' in:\n%s", needle, text);
}

static void done(struct result *r) {
  free(r->out);
  free(r->err);
}

START_TEST(one_file_per_rank_working) {
  struct result r = doctor("v2.30-8rank/nccl.gpu-a.*");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL 2.30.7+cuda13.0, 8 processes on 1 host");
  has(r.out, "tuner plugin loaded: /opt/pcie-tuner/lib/libnccl-tuner-pcie.so (PcieTuner, ABI v6) "
             "in 8 of 8 processes");
  has(r.out, "communicator 7d3c19a2e4b05f61: nRanks 8 nNodes 1, 8 ranks in the log");
  has(r.out, "ranks 0-7: profile 'gen5-8x' hash 9f2c4e1a07b3d865");
  has(r.out, "verdict: WORKING");
  ck_assert_str_eq(r.err, "");
  done(&r);
}
END_TEST

START_TEST(interleaved_stdout_with_trace) {
  struct result r = doctor("vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "(PcieTuner, ABI v5) in 2 of 2 processes");
  has(r.out, "ranks 0-1: profile 'rtx4090-2x' hash 3b91d0c2aa7e5410");
  has(r.out, "allreduce      graph        65536  ring/ll 2 ch                  2  rank 1");
  has(r.out, "allgather      eager            8  NCCL's own                    2  no usable candidate");
  has(r.out, "2 of 6 traced calls left to NCCL");
  done(&r);
  /* The same log on stdin, as a launch script pipes it. */
  r = doctor("- < vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "2 of 6 traced calls left to NCCL");
  done(&r);
  r = doctor("-q vllm-ray-tp2-v2.28-trace.log");
  ck_assert_int_eq(r.rc, 0);
  ck_assert_str_eq(r.out, "verdict: WORKING\n");
  done(&r);
}
END_TEST

START_TEST(old_nccl_abi_is_inferred) {
  struct result r = doctor("loaded-v2.24.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL_TUNER_PLUGIN=/usr/local/lib/libnccl-tuner-pcie.so (PcieTuner, ABI v4)");
  done(&r);
}
END_TEST

START_TEST(not_loaded_says_why) {
  struct result r = doctor("not-found-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "not found: NCCL tried pcie libnccl-tuner-pcie.so");
  has(r.out, "absolute path");
  has(r.out, "verdict: NOT LOADED");
  done(&r);
  r = doctor("wrong-abi-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "found no tuner ABI it supports (wrong ABI: this NCCL tries up to v6");
  done(&r);
  r = doctor("wrong-abi-v2.24.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "exports no tuner ABI this NCCL knows (wrong ABI)");
  done(&r);
  r = doctor("dlopen-error-v2.30.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "the library failed to load: /opt/pt/libnccl-tuner-pcie.so: libconfig.so.11: cannot open");
  done(&r);
}
END_TEST

START_TEST(refusals_leave_it_idle) {
  struct result r = doctor("no-profile-fits-v2.30.log");
  ck_assert_int_eq(r.rc, 4);
  has(r.out, "[not fitting] no profile in /etc/pcie-tuner");
  done(&r);
  r = doctor("no-profile-fits-v2.30.log ambiguous-v2.30.log");
  ck_assert_int_eq(r.rc, 4);
  has(r.out, "[not fitting] no profile in /etc/pcie-tuner matches nRanks=4 nNodes=1");
  has(r.out, "[ambiguous] profiles /etc/pt/a.cfg and /etc/pt/b.cfg both match");
  has(r.out, "verdict: LOADED BUT IDLE");
  done(&r);
  /* Each refusal whose reason does not say what to do gets it, once per
   * kind: a profile for the job's communicators, the sweep to finish. */
  r = doctor("no-profile-fits-v2.30.log");
  has(r.out, "  what to do (not fitting): give the job a profile for its communicators (measure with as "
             "many GPUs as the job uses, or import nccl-tests logs of that rank count)");
  has(r.out, "`pcie-tune check DIR --nranks N --nnodes M` says why each profile there does not fit");
  done(&r);
  r = doctor("reworded-v2.30.log");
  has(r.out, "  what to do (partial): finish the sweep: pcie-tune profile --resume --out FILE\n");
  ck_assert_ptr_null(strstr(strstr(r.out, "what to do (partial)") + 1, "what to do (partial)"));
  done(&r);
}
END_TEST

START_TEST(ranks_that_differ_are_an_error) {
  struct result r = doctor("ranks-differ-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "rank 0: profile 'p' hash 0d6e1f2a3b4c5d6e");
  has(r.out, "rank 1: left to NCCL, invalid (WARN): /home/u/p.cfg:7: unknown proto 'll64'");
  has(r.err, "ERROR: the ranks of communicator 44aa0c9b1e2d3f50 (nRanks 2) disagree");
  done(&r);
  /* A Ray worker that did not get the variable. */
  r = doctor("ray-worker-without-env-v2.28.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "tuner plugin NOT loaded in 1 of 2 processes");
  has(r.out, "node7:61877: NCCL_TUNER_PLUGIN is not set in this process");
  has(r.out, "rank 1: plugin not loaded in this process");
  has(r.err, "ERROR");
  done(&r);
  /* Wordings the plugin may grow into: an init line with more fields, a
   * WARN without "leaving"; NCCL's 0x-commId matches the plugin's padded one. */
  r = doctor("reworded-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "communicator c1: nRanks 2 nNodes 1, 2 ranks in the log");
  has(r.out, "rank 0: profile 'a' hash 00000000000000aa (/p/a.cfg, 7 intervals)");
  has(r.out, "rank 1: left to NCCL, partial (WARN): /p/a.cfg: sweep is partial");
  done(&r);
}
END_TEST

START_TEST(bad_input_and_usage) {
  struct result r = doctor("README.md");
  ck_assert_int_eq(r.rc, 1);
  has(r.err, "no NCCL log lines");
  has(r.err, "NCCL_DEBUG=INFO");
  done(&r);
  r = doctor("/nonexistent/log");
  ck_assert_int_eq(r.rc, 1);
  has(r.err, "/nonexistent/log: No such file or directory");
  done(&r);
  r = doctor("");
  ck_assert_int_eq(r.rc, 2);
  has(r.err, "no log given");
  done(&r);
  r = doctor("--frob x.log");
  ck_assert_int_eq(r.rc, 2);
  has(r.err, "unknown option '--frob'");
  has(r.err, "(see 'pcie-tune doctor --help')");
  done(&r);
  r = doctor("--help");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "Exit status: 0 working");
  done(&r);
}
END_TEST

/* The real plugin's lines, as `simulate` prints them with NCCL_DEBUG=INFO
 * (the example profile records no box: forced onto the simulated one). */
START_TEST(reads_what_simulate_prints) {
  char *dir = pt_test_tmpdir(), *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && NCCL_DEBUG=INFO PCIE_TUNER_TRACE=1 PCIE_TUNER_ACCEPT_FOREIGN=1 "
                     "PCIE_TUNER_SO='%s' '%s' simulate "
                     "'%s/profiles/example-8x-pcie.cfg' --box gen5-8x-p2p --tokens 1,64 > sim.log && "
                     "'%s' doctor sim.log",
                     dir, pt_test_so(), pt_test_cli(), pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  has(out, "(PcieTuner, ABI v6) in 1 of 1 processes");
  has(out, "rank 0: profile 'example-8x-pcie' hash ");
  has(out, "allreduce      graph        14336  ");
  has(out, "verdict: WORKING");
  free(cmd);
  free(out);
  free(err);
  /* An 8-rank profile on a 4-rank box: simulate says so, doctor calls it idle. */
  ck_assert(asprintf(&cmd,
                     "cd '%s' && NCCL_DEBUG=INFO PCIE_TUNER_SO='%s' '%s' simulate "
                     "'%s/profiles/example-8x-pcie.cfg' --box gen4-4x-shm --tokens 1 > sim4.log; "
                     "'%s' doctor sim4.log",
                     dir, pt_test_so(), pt_test_cli(), pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 4);
  has(err, "pcie-tune simulate: warning: the plugin tunes nothing on this 4-rank box");
  has(out, "[not fitting] profile ");
  free(cmd);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST


/* Issue 19 §1: an 8-process vLLM job whose capture put each PcieTuner line
 * before NCCL's comm lines. Today's doctor counted 16 ranks for nRanks 8 and
 * called a working job a mismatch (exit 5). */
START_TEST(plugin_line_before_nccl_lines) {
  struct result r = doctor("vllm-tp8-v2.28-plugin-first.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL 2.28.9+cuda12.9, 8 processes on 1 host");
  has(r.out, "communicator 1c5e2f9a8d3b7046: nRanks 8 nNodes 1, 8 ranks in the log");
  has(r.out, "ranks 0-7: profile 'gen5-8x' hash 9f2c4e1a07b3d865");
  ck_assert_ptr_null(strstr(r.out, "no word from the plugin"));
  has(r.out, "verdict: WORKING\n");
  ck_assert_str_eq(r.err, "");
  done(&r);
  /* The same job as NCCL_DEBUG_FILE=nccl.%h.%p writes it (no engine
   * prefix), and piped in. */
  char *dir = pt_test_tmpdir(), *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && for p in 41200 41201 41202 41203 41204 41205 41206 41207; do "
                     "grep \"gpu-a:$p:\" '%s/test/data/ncclog/vllm-tp8-v2.28-plugin-first.log' | "
                     "sed 's/^(VllmWorker[^)]*) //' > nccl.gpu-a.$p; done && '%s' doctor nccl.gpu-a.*",
                     dir, pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  has(out, "8 ranks in the log");
  has(out, "ranks 0-7: profile 'gen5-8x' hash 9f2c4e1a07b3d865");
  has(out, "via P2P/CUMEM: 15 pairs (P2P write)");
  free(cmd);
  free(out);
  free(err);
  /* Only the plugin's lines (NCCL_DEBUG_SUBSYS=TUNING): tied by commId,
   * eight ranks whose numbers the log does not give. */
  ck_assert(asprintf(&cmd,
                     "cd '%s' && grep -v 'comm 0x' '%s/test/data/ncclog/vllm-tp8-v2.28-plugin-first.log' "
                     "| '%s' doctor -",
                     dir, pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  has(out, "nRanks 8 nNodes 1, 8 ranks in the log");
  has(out, "ranks ? (8 without NCCL's comm lines: NCCL_DEBUG_SUBSYS needs INIT): profile 'gen5-8x'");
  free(cmd);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
  r = doctor("- < vllm-tp8-v2.28-plugin-first.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "8 ranks in the log");
  done(&r);
  /* The same lines twice (a file given twice, a log appended to): a rank
   * counts once, and never more than nRanks. */
  r = doctor("- < vllm-tp8-v2.28-plugin-first.log vllm-tp8-v2.28-plugin-first.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "nRanks 8 nNodes 1, 8 ranks in the log");
  has(r.out, "ranks 0-7: profile 'gen5-8x'");
  done(&r);
}
END_TEST

/* Two communicators per process (a TP group of 2 and the world of 4),
 * their lines interleaved across four processes, the plugin's lines moved
 * ahead of NCCL's by the engine's capture: the refusal WARN carries its
 * commId (tuner/core.c) and lands on the world communicator, not on the
 * first one its thread printed; a WARN that the profile still decides is
 * no refusal. Lines without a commId (older plugins) keep the thread and
 * order heuristic (ranks_that_differ_are_an_error, reworded-v2.30.log). */
START_TEST(refusals_tied_by_commid) {
  struct result r = doctor("two-comms-interleaved-v2.30.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "communicator a1: nRanks 2 nNodes 1, 2 ranks in the log\n"
             "  ranks 0-1: profile 'tp2' hash 5e5e5e5e5e5e5e5e (/p/tp2.cfg, 9 intervals)");
  has(r.out, "communicator a2: nRanks 2 nNodes 1, 2 ranks in the log\n"
             "  ranks 0-1: profile 'tp2' hash 5e5e5e5e5e5e5e5e");
  has(r.out, "communicator b2: nRanks 4 nNodes 1, 4 ranks in the log\n"
             "  ranks 0-3: left to NCCL, not fitting (WARN): profile /p/tp2.cfg does not match "
             "nRanks=4 nNodes=1 (its match: nranks = 2)\n");
  has(r.out, "gpu-b:9103 rank 2 nRanks 4: [not fitting]");
  has(r.out, "verdict: WORKING");
  ck_assert_ptr_null(strstr(r.out, "(commId"));
  ck_assert_str_eq(r.err, "");
  done(&r);
}
END_TEST

/* torchrun's "[rankN]:" prefix; a mismatch names the rank that differs,
 * with its host, pid and GPU; a Ray prefix on some lines. */
START_TEST(mismatch_names_the_rank) {
  struct result r = doctor("ray-rank-differs-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  has(r.out, "ranks 0-1,3: profile 'l40s-4x' hash c0ffee0000000001");
  has(r.out, "rank 2: profile 'l40s-4x-old' hash badc0de000000002");
  has(r.err, "rank 2 (gpu-c:7702 cudaDev 2 busId 0000:41:00.0) differs: profile 'l40s-4x-old'");
  ck_assert_ptr_null(strstr(r.out, "ranks ?"));
  done(&r);
  r = doctor("torchrun-dual-socket-v2.30.log");
  has(r.out, "communicator 7a0e44d1c2b39f18: nRanks 4 nNodes 1, 4 ranks in the log");
  has(r.out, "ranks 0-3: profile 'dual-4x'");
  done(&r);
}
END_TEST

/* "Could not find:" with an absolute path: the file is missing where the
 * process runs; repeating "give the absolute path" would be wrong. */
START_TEST(absolute_path_not_found) {
  struct result r = doctor("not-found-abs-v2.28.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "ctr-5f2a:18211: /opt/pcie-tuner/lib/libnccl-tuner-pcie.so does not exist as this "
             "process sees the filesystem");
  has(r.out, "a container without that mount, or on another host");
  ck_assert_ptr_null(strstr(r.out, "absolute path"));
  done(&r);
}
END_TEST

/* §2: what NCCL built, per communicator, and --strict. */
START_TEST(communicator_diagnosis) {
  struct result r = doctor("vllm-tp8-v2.28-plugin-first.log");
  has(r.out, "channels: 4 coll, 4 p2p, 2 p2p per peer");
  has(r.out, "rings (rank 0): 00: 0 1 2 3 4 5 6 7; 01: 0 1 2 3 4 5 6 7;");
  has(r.out, "trees (rank 0: [channel] down/down/down->rank->up): [0] 1/-1/-1->0->-1");
  has(r.out, "graph search, ring (pattern 4): 4 channels, bw 24.0/24.0 GB/s, paths PXB/PIX");
  has(r.out, "via P2P/CUMEM: 15 pairs (P2P write): 0->1 1->0 1->2");
  ck_assert_ptr_null(strstr(r.out, "DEGRADED"));
  done(&r);
  r = doctor("--strict vllm-tp8-v2.28-plugin-first.log");
  ck_assert_int_eq(r.rc, 0);
  done(&r);
  /* Dual socket: SHM across the sockets, 2 channels over SYS. */
  r = doctor("torchrun-dual-socket-v2.30.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "NCCL 2.30.7+cuda13.0 (printed by the processes of 4 of 4 ranks)");
  has(r.out, "via SHM/direct: 2 pairs: 1->2 3->0");
  has(r.out, "via P2P/CUMEM: 2 pairs (P2P write): 0->1 2->3");
  has(r.out, "DEGRADED: 2 pairs of GPUs in one host talk through shared host memory (SHM)");
  has(r.out, "beyond NCCL's default P2P level PXB (src/graph/paths.cc, ncclTopoCheckP2p");
  has(r.out, "change: NCCL_P2P_LEVEL=SYS");
  has(r.out, "30.3 GB/s bus bandwidth with SHM between the nodes, 39.3 GB/s with NCCL_P2P_LEVEL=SYS");
  has(r.out, "DEGRADED: the ring search settled on 2 channels over SYS paths");
  has(r.out, "change: NCCL_MIN_NCHANNELS=4");
  has(r.out, "48.16 us with the search's 2 channels (SYS/SYS), 26.20 us with 4 channels");
  has(r.out, "verdict: WORKING; 1 communicator DEGRADED by what NCCL built");
  done(&r);
  r = doctor("--strict torchrun-dual-socket-v2.30.log");
  ck_assert_int_eq(r.rc, 6);
  done(&r);
  r = doctor("-q --strict torchrun-dual-socket-v2.30.log");
  ck_assert_int_eq(r.rc, 6);
  ck_assert_str_eq(r.out, "verdict: WORKING; 1 communicator DEGRADED by what NCCL built (see above)\n");
  done(&r);
  /* nccl-tests -g 4: four ranks in one process, one thread each; NVML says
   * P2P is off between two GPUs; the search fell back; no plugin. */
  r = doctor("nccltests-g4-fallback-v2.24.log");
  ck_assert_int_eq(r.rc, 3);
  has(r.out, "nRanks 4 nNodes 1, 4 ranks in the log");
  has(r.out, "channels: 1 coll, 2 p2p, 2 p2p per peer");
  has(r.out, "rings (rank 0): 00: 0 1 2 3\n");
  has(r.out, "via P2P/IPC: 3 pairs (P2P write): 0->1 2->3 3->0");
  has(r.out, "via SHM/direct/direct: 1 pair: 1->2");
  has(r.out, "why: NVML reports P2P disabled between GPUs 1 and 2");
  has(r.out, "ACS on a PCIe switch or root port, or the IOMMU");
  has(r.out, "DEGRADED: the topology search found no path for the ring pattern and fell back");
  has(r.out, "note: P2P through legacy CUDA IPC, not cuMem");
  done(&r);
  r = doctor("--strict nccltests-g4-fallback-v2.24.log");
  ck_assert_int_eq(r.rc, 6);
  done(&r);
  /* Two containers on one host without a shared /dev/shm: NET; the v2
   * plugin line has no commId and still lands on its rank. */
  r = doctor("containers-net-v2.21.log");
  ck_assert_int_eq(r.rc, 0);
  has(r.out, "ranks 0-1: profile 'a' hash 00000000000000aa");
  has(r.out, "rings (rank 0): 00: 0 1; 01: 0 1");
  has(r.out, "via NET/Socket/0: 2 pairs: 0->1 1->0");
  has(r.out, "DEGRADED: 2 pairs of ranks on one host connect through the network (NET)");
  has(r.out, "docker --ipc=host");
  done(&r);
  /* A mismatch stays 5 under --strict. */
  r = doctor("--strict ray-rank-differs-v2.30.log");
  ck_assert_int_eq(r.rc, 5);
  done(&r);
}
END_TEST

/* The effects doctor quotes are the published tables' own figures. */
START_TEST(quoted_effects_match_the_tables) {
  static const char *const quotes[][3] = {
      {"rtxpro6000-4x8x-nccl-vs-pcieoneshot-voipmonitor-asus-broadcom.txt", "default = 30.3 GB/s",
       "NCCL_P2P_LEVEL=SYS = 39.3 GB/s"},
      {"rtxpro6000-8x-graphXML-vs-default-voipmonitor-turin.txt", "| 32 KB | 48.16 us | 26.20 us |",
       "graph search gives 2 channels, SYS/SYS"},
  };
  for (size_t i = 0; i < sizeof quotes / sizeof quotes[0]; i++) {
    char *cmd = NULL, *out, *err;
    ck_assert(asprintf(&cmd, "cat '%s/test/data/real/%s'", pt_test_srcdir(), quotes[i][0]) > 0);
    ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
    has(out, quotes[i][1]);
    has(out, quotes[i][2]);
    free(cmd);
    free(out);
    free(err);
  }
  struct result r = doctor("torchrun-dual-socket-v2.30.log");
  for (size_t i = 0; i < sizeof quotes / sizeof quotes[0]; i++) has(r.out, quotes[i][0]);
  done(&r);
}
END_TEST

/* §5: a FIFO or a device is refused at once; stdin is bounded. */
START_TEST(inputs_that_are_not_logs) {
  char *dir = pt_test_tmpdir(), *out, *err;
  char *fifo = NULL;
  ck_assert(asprintf(&fifo, "%s/fifo", dir) > 0);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  /* The guard ends a doctor that blocks on the FIFO with status 124. */
  int rc = pt_test_cli_run(dir, 20, &out, &err, "doctor fifo");
  ck_assert_int_eq(rc, 1);
  has(err, "fifo: is a FIFO, not a regular file; name a log file, or pipe the output in");
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 20, &out, &err, "doctor /dev/zero");
  ck_assert_int_eq(rc, 1);
  has(err, "/dev/zero: is a character device, not a regular file");
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 20, &out, &err, "doctor - < /dev/zero");
  ck_assert_int_eq(rc, 1);
  has(err, "<stdin>: line 1 holds a NUL byte: this is binary data, not a log");
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 20, &out, &err, "doctor - < /dev/urandom");
  ck_assert_int_eq(rc, 1);
  has(err, "holds a NUL byte: this is binary data, not a log");
  free(out);
  free(err);
  /* No NUL and no newline: the line bound ends it. */
  char *cmd = NULL;
  ck_assert(asprintf(&cmd, "head -c 3000000 /dev/zero | tr '\\0' a > '%s/long'", dir) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  free(cmd);
  free(out);
  free(err);
  rc = pt_test_cli_run(dir, 20, &out, &err, "doctor - < long");
  ck_assert_int_eq(rc, 1);
  has(err, "<stdin>: line 1 is longer than 1048575 bytes");
  free(out);
  free(err);
  free(fifo);
  pt_test_rmtree(dir);
  free(dir);
}
END_TEST

/* The profile's provenance against the job: NCCL version and bus ids. */
static void prov_case(const char *prov, int want_rc, const char *needle) {
  char *dir = pt_test_tmpdir(), *cmd = NULL, *out, *err;
  ck_assert(asprintf(&cmd,
                     "cd '%s' && cp '%s/profiles/example-8x-pcie.cfg' p.cfg && "
                     "sed -i -e '/^  nccl_version = /d' -e 's|^provenance = {|provenance = {\\n%s|' "
                     "p.cfg && sed 's|/etc/pcie-tuner/gen5-8x.cfg|%s/p.cfg|' "
                     "'%s/test/data/ncclog/vllm-tp8-v2.28-plugin-first.log' > job.log && '%s' doctor "
                     "job.log",
                     dir, pt_test_srcdir(), prov, dir, pt_test_srcdir(), pt_test_cli()) > 0);
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), want_rc);
  has(out, needle);
  free(cmd);
  free(out);
  free(err);
  pt_test_rmtree(dir);
  free(dir);
}

#define BOX(b0) \
  "  box = { gpus = ( { bus_id = \\\"" b0 "\\\"; }, { bus_id = \\\"0000:2a:00.0\\\"; }, " \
  "{ bus_id = \\\"0000:3d:00.0\\\"; }, { bus_id = \\\"0000:63:00.0\\\"; }, { bus_id = " \
  "\\\"0000:99:00.0\\\"; }, { bus_id = \\\"0000:ab:00.0\\\"; }, { bus_id = \\\"0000:bd:00.0\\\"; }, " \
  "{ bus_id = \\\"0000:e3:00.0\\\"; } ); };"

START_TEST(provenance_against_the_job) {
  prov_case("  nccl_version = \\\"2.28.9\\\";\\n" BOX("0000:17:00.0"), 0,
            "NCCL 2.28.9 as measured; the 8 GPUs of this communicator are on the measured box");
  prov_case("  nccl_version = \\\"2.27.5\\\";\\n" BOX("0000:18:00.0"), 0,
            "measured on NCCL 2.27.5, this job runs 2.28.9: the profile's timings may not hold");
  prov_case("  nccl_version = \\\"2.28.9\\\";\\n" BOX("0000:18:00.0"), 0,
            "1 of this communicator's 8 GPUs are not on the measured box: 0000:17:00.0 (the "
            "profile lists 0000:18:00.0 0000:2a:00.0");
  /* Issue 26 §2: bus ids as nccl-tests gave them name the job's GPUs at
   * their precision. */
  prov_case("  nccl_version = \\\"2.28.9\\\";\\n" BOX("0x17"), 0,
            "NCCL 2.28.9 as measured; the 8 GPUs of this communicator are on the measured box");
  prov_case("  nccl_version = \\\"2.28.9\\\";\\n" BOX("0000:17:00"), 0,
            "NCCL 2.28.9 as measured; the 8 GPUs of this communicator are on the measured box");
  prov_case("  nccl_version = \\\"2.28.9\\\";\\n" BOX("0x18"), 0,
            "1 of this communicator's 8 GPUs are not on the measured box: 0000:17:00.0");
  /* A profile from before the box key: compared on what it has. */
  prov_case("  nccl_version = \\\"2.28.9\\\";", 0, "NCCL 2.28.9 as measured; no box recorded");
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_doctor");
  TCase *tc = tcase_create("doctor");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, one_file_per_rank_working);
  tcase_add_test(tc, interleaved_stdout_with_trace);
  tcase_add_test(tc, old_nccl_abi_is_inferred);
  tcase_add_test(tc, not_loaded_says_why);
  tcase_add_test(tc, refusals_leave_it_idle);
  tcase_add_test(tc, ranks_that_differ_are_an_error);
  tcase_add_test(tc, bad_input_and_usage);
  tcase_add_test(tc, reads_what_simulate_prints);
  tcase_add_test(tc, plugin_line_before_nccl_lines);
  tcase_add_test(tc, mismatch_names_the_rank);
  tcase_add_test(tc, refusals_tied_by_commid);
  tcase_add_test(tc, absolute_path_not_found);
  tcase_add_test(tc, communicator_diagnosis);
  tcase_add_test(tc, quoted_effects_match_the_tables);
  tcase_add_test(tc, inputs_that_are_not_logs);
  tcase_add_test(tc, provenance_against_the_job);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
