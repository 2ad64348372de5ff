/* Contexts, configuration and the device table: what init and finalize
 * own. The environment is read here only, when the first context of a
 * library load (or of a reload after the last finalize) is created; the
 * result is frozen until every context and comm is gone. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

/* Streams a connection opens when no setting names a count: one per
 * 10 Gb/s of link, at least eight (as many sockets as NCCL's transport
 * tuned by hand, NCCL_SOCKET_NTHREADS=4 x NCCL_NSOCKS_PERTHREAD=2: with four,
 * bench/net's capped link moved 0.52x of that at 64 MiB, four 1 Gbit/s
 * flows against eight), at most sixteen. Networks that cap each TCP flow (per-flow shaping,
 * ECMP pinning a flow to one path) are invisible from the host, and there
 * four streams move four times what one does; elsewhere extra streams cost
 * (bench/net ring mode on a plain veth pair, 2 cores, no helpers: four
 * streams moved 0.71-0.96x of NCCL's one socket). So these are opened, but the sender uses one until a
 * flow shows a cap (adapt.c). Loopback never crosses a network that
 * could cap a flow: one stream, as NCCL's transport. */
#define PT_STREAMS_PER_MBPS 10000
#define PT_AUTO_STREAMS_MIN 8
#define PT_AUTO_STREAMS_MAX 16
/* Helper threads pay where a core is free to run them. With two cores and
 * both directions busy, each process's proxy thread already keeps one
 * busy: helpers only add context switches (bench/net ring mode, 2 cores,
 * veth: 4 streams with helpers 0.71-1.01x of the same without; on the
 * capped link 0.95-1.02x). Below this many cores the proxy thread moves every byte,
 * as NCCL's transport does by default. */
#define PT_HELPERS_MIN_CPUS 3
#define PT_DEFAULT_THREADS_MAX 4
/* NCCL's ring all-reduce over a network posts 1 MiB per isend (Simple,
 * 2 steps of NCCL_BUFFSIZE / NCCL_STEPS): one chunk per message on one
 * stream. With 512 KiB chunks and stream.c's other changes the ring mode
 * of bench/net on veth still fell into its slow pattern in most runs (per
 * run medians 1.88 against 2.39 GB/s with 1 MiB; docs/performance.md). */
#define PT_DEFAULT_CHUNK (1024 * 1024)
#define PT_DEFAULT_CONNECT_TIMEOUT_MS 30000

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_live; /* contexts not yet released, the legacy one included */
static struct pt_cfg g_cfg;
static struct pt_dev g_devs[PT_NET_MAX_DEVS];
static atomic_int g_ndevs;
static struct pt_net_ctx g_legacy;
static atomic_int g_legacy_live;

const struct pt_cfg *pt__cfg(void) { return &g_cfg; }

const struct pt_dev *pt__dev(int dev) {
  if (dev < 0 || dev >= atomic_load(&g_ndevs)) return NULL;
  return &g_devs[dev];
}

/* Unset -> def; anything but a whole number in [lo, hi] is rejected. */
static int env_long(ncclDebugLogger_t log, const char *name, long lo, long hi, long def, long *out) {
  const char *s = getenv(name);
  *out = def;
  if (!s) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) {
    PT_WARN(log, "bad %s='%s': expected an integer in [%ld, %ld]", name, s, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

static int load_cfg(ncclDebugLogger_t log, struct pt_cfg *cfg) {
  long nstreams, nthreads, chunk, timeout, latency;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  long def_threads = ncpu < PT_HELPERS_MIN_CPUS    ? 0
                     : ncpu > PT_DEFAULT_THREADS_MAX ? PT_DEFAULT_THREADS_MAX
                                                     : ncpu;
  const char *ifname = getenv("PCIE_NET_IFNAME"), *var = "PCIE_NET_IFNAME";
  const char *family = getenv("NCCL_SOCKET_FAMILY");

  memset(cfg, 0, sizeof(*cfg));
  /* The project's variable first; then NCCL's, which NCCL itself ignores
   * when it is shorter than two characters (src/misc/socket.cc,
   * ncclFindInterfaces). */
  if (!ifname) {
    ifname = getenv("NCCL_SOCKET_IFNAME");
    var = "NCCL_SOCKET_IFNAME";
    if (ifname && strlen(ifname) < 2) ifname = NULL;
  }
  if (ifname && strlen(ifname) >= sizeof(cfg->ifname)) {
    PT_WARN(log, "bad %s: longer than %zu characters", var, sizeof(cfg->ifname) - 1);
    return -1;
  }
  if (ifname) strcpy(cfg->ifname, ifname);
  cfg->ifname_var = ifname ? var : NULL;
  /* NCCL_SOCKET_FAMILY restricts the address of every interface, whichever
   * variable chose them. NCCL ignores other values; a transport that then
   * silently mixes families is worse than a clear refusal. */
  cfg->family = AF_UNSPEC;
  if (family && strcmp(family, "AF_INET") == 0)
    cfg->family = AF_INET;
  else if (family && strcmp(family, "AF_INET6") == 0)
    cfg->family = AF_INET6;
  else if (family) {
    PT_WARN(log, "bad NCCL_SOCKET_FAMILY='%s': expected AF_INET or AF_INET6", family);
    return -1;
  }
  long nccl_nt, nccl_ns;
  if (env_long(log, "PCIE_NET_NSTREAMS", 1, PT_MAX_STREAMS, 0, &nstreams) ||
      env_long(log, "NCCL_SOCKET_NTHREADS", 0, 16, -1, &nccl_nt) ||
      env_long(log, "NCCL_NSOCKS_PERTHREAD", 0, 64, -1, &nccl_ns) ||
      env_long(log, "PCIE_NET_NTHREADS", 0, PT_MAX_THREADS, def_threads, &nthreads) ||
      env_long(log, "PCIE_NET_CHUNKSIZE", PT_MIN_CHUNK, 64L << 20, PT_DEFAULT_CHUNK, &chunk) ||
      env_long(log, "PCIE_NET_CONNECT_TIMEOUT_MS", 1, 3600L * 1000, PT_DEFAULT_CONNECT_TIMEOUT_MS,
               &timeout) ||
      env_long(log, "PCIE_NET_LATENCY_US", 0, 1000000, 0, &latency))
    return -1;
  /* A job tuned for NCCL's socket transport gets as many streams as that
   * transport would open sockets (threads x sockets per thread, the unset
   * one at NCCL's generic default: 1 socket per thread, and 1 thread when
   * only the sockets are given), capped at PT_MAX_STREAMS. */
  if (!nstreams && (nccl_nt >= 0 || nccl_ns >= 0)) {
    long n = (nccl_nt >= 0 ? nccl_nt : 1) * (nccl_ns >= 0 ? nccl_ns : 1);
    nstreams = n < 1 ? 1 : n > PT_MAX_STREAMS ? PT_MAX_STREAMS : n;
    cfg->nstreams_var = "NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD";
  } else if (nstreams) {
    cfg->nstreams_var = "PCIE_NET_NSTREAMS";
  }
  cfg->nstreams = (int)nstreams;
  cfg->nthreads = (int)nthreads;
  cfg->max_chunk = (size_t)chunk;
  cfg->connect_timeout_ms = (int)timeout;
  cfg->latency_us = (float)latency;
  return 0;
}

/* NCCL's socket transport knows two cloud NICs by their PCI vendor and
 * opens that many sockets there, because those networks cap each flow
 * (src/transport/net_socket.cc, ncclNetSocketGetNsockNthread): AWS ENA
 * (0x1d0f) 2 threads x 8 sockets, GCP gVNIC (0x1ae0) 4 threads x 1
 * socket. 0 for any other NIC. */
static int cloud_streams(const char *ifname) {
  char path[IF_NAMESIZE + 48], vendor[8] = "";
  snprintf(path, sizeof(path), "/sys/class/net/%.*s/device/vendor", IF_NAMESIZE, ifname);
  FILE *f = fopen(path, "re");
  if (!f) return 0;
  int got = fgets(vendor, sizeof(vendor), f) != NULL;
  fclose(f);
  if (got && strncmp(vendor, "0x1d0f", 6) == 0) return 16;
  if (got && strncmp(vendor, "0x1ae0", 6) == 0) return 4;
  return 0;
}

/* The stream count from the NIC; sets d->adapt where the sender should
 * start narrow (a count of ours, not NCCL's cloud default). */
static int auto_streams(struct pt_dev *d) {
  int cloud = cloud_streams(d->name);
  if (cloud) return cloud;
  if (d->loopback) return 1;
  d->adapt = 1;
  int n = (d->speed_mbps + PT_STREAMS_PER_MBPS - 1) / PT_STREAMS_PER_MBPS;
  return n < PT_AUTO_STREAMS_MIN ? PT_AUTO_STREAMS_MIN : n > PT_AUTO_STREAMS_MAX ? PT_AUTO_STREAMS_MAX : n;
}

/* Called with g_mu held when nothing is alive. */
static ncclResult_t load_state(ncclDebugLogger_t log) {
  if (load_cfg(log, &g_cfg) != 0) return ncclInvalidUsage;
  int n = pt__ifaces_discover(g_cfg.ifname, g_cfg.family, g_devs, PT_NET_MAX_DEVS);
  if (n < 0) {
    PT_WARN(log, "getifaddrs failed: %s", strerror(errno));
    return ncclSystemError;
  }
  if (n == 0) {
    const char *fam = g_cfg.family == AF_INET    ? ", NCCL_SOCKET_FAMILY=AF_INET"
                      : g_cfg.family == AF_INET6 ? ", NCCL_SOCKET_FAMILY=AF_INET6"
                                                 : "";
    if (g_cfg.ifname_var)
      PT_WARN(log, "no usable network interface (%s='%s'%s)", g_cfg.ifname_var, g_cfg.ifname, fam);
    else
      PT_WARN(log, "no usable network interface (PCIE_NET_IFNAME and NCCL_SOCKET_IFNAME unset%s)", fam);
    return ncclSystemError;
  }
  for (int i = 0; i < n; i++) {
    g_devs[i].nstreams = g_cfg.nstreams ? g_cfg.nstreams : auto_streams(&g_devs[i]);
    char addr[80];
    pt__addr_str(&g_devs[i].addr, addr, sizeof(addr));
    PT_INFO(log, "device %d: %s %s, %d Mb/s, %d streams (%s), %d helper threads", i, g_devs[i].name, addr,
            g_devs[i].speed_mbps, g_devs[i].nstreams,
            g_cfg.nstreams_var  ? g_cfg.nstreams_var
            : g_devs[i].adapt ? "from the NIC; one used until a flow shows a cap"
                              : "from the NIC",
            g_cfg.nthreads);
  }
  atomic_store(&g_ndevs, n);
  return ncclSuccess;
}

static ncclResult_t ensure_state(ncclDebugLogger_t log) {
  ncclResult_t res = ncclSuccess;
  if (g_live == 0) res = load_state(log);
  if (res == ncclSuccess) g_live++;
  return res;
}

ncclResult_t pt_net_init(struct pt_net_ctx **ctx, uint64_t comm_id, int traffic_class,
                         ncclDebugLogger_t log) {
  if (!ctx) return ncclInternalError;
  *ctx = NULL;
  struct pt_net_ctx *c = calloc(1, sizeof(*c));
  if (!c) {
    PT_WARN(log, "out of memory creating a context");
    return ncclSystemError;
  }
  pthread_mutex_lock(&g_mu);
  ncclResult_t res = ensure_state(log);
  pthread_mutex_unlock(&g_mu);
  if (res != ncclSuccess) {
    free(c);
    return res;
  }
  c->magic = PT_MAGIC_CTX;
  pthread_mutex_init(&c->connects_mu, NULL);
  atomic_init(&c->refs, 1);
  c->comm_id = comm_id;
  c->traffic_class = traffic_class;
  c->log = log;
  *ctx = c;
  return ncclSuccess;
}

ncclResult_t pt_net_legacy_init(ncclDebugLogger_t log, struct pt_net_ctx **ctx) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&g_mu);
  if (!atomic_load(&g_legacy_live)) {
    res = ensure_state(log);
    if (res == ncclSuccess) {
      g_legacy.magic = PT_MAGIC_CTX;
      pthread_mutex_init(&g_legacy.connects_mu, NULL);
      g_legacy.connects = NULL;
      atomic_init(&g_legacy.refs, 1);
      g_legacy.legacy = 1;
      g_legacy.traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
      g_legacy.log = log;
      atomic_store(&g_legacy_live, 1);
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (ctx) *ctx = res == ncclSuccess ? &g_legacy : NULL;
  return res;
}

struct pt_net_ctx *pt_net_legacy_ctx(void) {
  return atomic_load(&g_legacy_live) ? &g_legacy : NULL;
}

void pt__ctx_ref(struct pt_net_ctx *ctx) { atomic_fetch_add(&ctx->refs, 1); }

void pt__ctx_unref(struct pt_net_ctx *ctx) {
  if (atomic_fetch_sub(&ctx->refs, 1) != 1) return;
  /* Only non-legacy contexts reach zero: the legacy one keeps its own ref
   * for the whole library load, as NCCL never finalizes v8..v10. */
  pthread_mutex_lock(&g_mu);
  g_live--;
  if (g_live == 0) atomic_store(&g_ndevs, 0);
  pthread_mutex_unlock(&g_mu);
  ctx->magic = 0;
  pthread_mutex_destroy(&ctx->connects_mu);
  free(ctx);
}

ncclResult_t pt_net_finalize(struct pt_net_ctx *ctx) {
  if (!ctx || ctx->magic != PT_MAGIC_CTX || ctx->legacy) return ncclInternalError;
  /* NCCL finalizes after closing every comm; a connect it never finished
   * would otherwise keep its sockets after the library is unloaded. */
  pt__connects_abandon(ctx);
  pt__ctx_unref(ctx);
  return ncclSuccess;
}

ncclResult_t pt_net_devices(int *ndev) {
  if (!ndev) return ncclInternalError;
  *ndev = atomic_load(&g_ndevs);
  return ncclSuccess;
}

ncclResult_t pt_net_get_props(int dev, struct pt_net_props *props) {
  const struct pt_dev *d = pt__dev(dev);
  if (!d || !props) return ncclInternalError;
  props->name = d->name;
  props->pci_path = d->has_pci ? d->pci_path : NULL;
  props->guid = (uint64_t)dev;
  props->speed_mbps = d->speed_mbps;
  props->latency_us = g_cfg.latency_us;
  /* Comms cost fds, not threads: the same ceiling as NCCL's Socket. */
  props->max_comms = 65536;
  /* No grouped receives for NCCL. Its rule for them (IB: an isend whose
   * tag already has a request in the receiver's current group answers
   * NULL, so each tag may run a step ahead) needs the sender to see the
   * receiver's posted group, i.e. a receiver-to-sender message per receive
   * that this transport does not have: it matches by posting order, which
   * fails when one tag runs ahead. NCCL 2.30 groups receives only for PXN
   * shared comms (GPUDirect), never for a host-memory transport, so 1 (as
   * NCCL's own socket transport) loses nothing. The engine still takes up
   * to PT_NET_MAX_RECVS buffers per irecv, in posting order. */
  props->max_recvs = 1;
  props->max_p2p_bytes = PT_NET_MAX_BYTES;
  props->max_coll_bytes = PT_NET_MAX_BYTES;
  return ncclSuccess;
}
