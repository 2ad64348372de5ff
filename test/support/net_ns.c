/* See net_ns.h. */
#include "net_ns.h"
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NN_CLASSES 32

static int ns_fd(pid_t holder)
{
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)holder);
  return open(path, O_RDONLY | O_CLOEXEC);
}

int nn_enter(const struct nn *n, int side)
{
  int fd = ns_fd(n->holder[side]);
  if (fd < 0)
    return -1;
  int rc = setns(fd, CLONE_NEWNET);
  close(fd);
  return rc;
}

/* Runs cmd in namespace side; its standard output goes to out (len bytes,
 * NUL-terminated) when out is given, else nowhere. */
static int run_sh(const struct nn *n, int side, const char *cmd, char *out, size_t len)
{
  int p[2] = {-1, -1};
  if (out && pipe2(p, O_CLOEXEC) != 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    if (out)
      close(p[0]), close(p[1]);
    return -1;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(out ? p[1] : null, 1);
      dup2(null, 2);
    }
    if (nn_enter(n, side) != 0)
      _exit(126);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  if (out) {
    size_t got = 0;
    ssize_t k;
    close(p[1]);
    while (got + 1 < len && ((k = read(p[0], out + got, len - 1 - got)) > 0 || (k < 0 && errno == EINTR)))
      got += k > 0 ? (size_t)k : 0;
    out[got] = 0;
    close(p[0]);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int nn_sh(const struct nn *n, int side, const char *cmd)
{
  return run_sh(n, side, cmd, NULL, 0);
}

int nn_cap_flows(const struct nn *n, int link, char *ports, size_t len)
{
  const struct nn_link *l = &n->links[link];
  size_t used = 0;
  if (link < 0 || link >= n->nlinks || l->flow_cap_mbit <= 0 || l->ipv6_only) {
    snprintf(ports, len, "link %d is not a capped IPv4 link", link);
    return -1;
  }
  for (int s = 0; s < 2; s++) {
    char cmd[2048], out[2048];
    /* the previous run's exact filters and classes (1:1001 and up) go
     * first; then one class and one filter on the whole 4-tuple's ports
     * per established connection from this side's address */
    snprintf(cmd, sizeof(cmd),
             "dev=%s; tc filter del dev $dev parent 1: prio 1 2>/dev/null; "
             "for c in $(tc class show dev $dev | awk '$3 ~ /^1:1[0-9a-f][0-9a-f][0-9a-f]$/ "
             "{print $3}'); do tc class del dev $dev classid $c || exit 1; done; "
             "list=$(ss -Htn state established src %s | awk '{n = split($3, a, \":\"); "
             "m = split($4, b, \":\"); print a[n] \">\" b[m]}'); k=0; "
             "for c in $list; do k=$((k + 1)); id=$(printf '1:%%x' $((4096 + k))); "
             "echo \"class add dev $dev parent 1: classid $id htb rate %dmbit ceil %dmbit\"; "
             "echo \"filter add dev $dev parent 1: protocol ip prio 1 u32 match ip protocol 6 "
             "0xff match ip sport ${c%%>*} 0xffff match ip dport ${c#*>} 0xffff flowid $id\"; "
             "done > /dev/shm/nn-cap.$$; tc -batch /dev/shm/nn-cap.$$; rc=$?; "
             "rm -f /dev/shm/nn-cap.$$; [ $rc = 0 ] || exit 1; echo $list",
             l->name[s], l->addr[s], l->flow_cap_mbit, l->flow_cap_mbit);
    if (run_sh(n, s, cmd, out, sizeof(out)) != 0) {
      snprintf(ports, len, "tc on %s failed", l->name[s]);
      return -1;
    }
    out[strcspn(out, "\n")] = 0;
    int w = snprintf(ports + used, len - used, "%s%s: %s", s ? "; " : "", l->name[s], out);
    if (w > 0)
      used += (size_t)w < len - used ? (size_t)w : len - used - 1;
  }
  return 0;
}

/* A child that unshares its network namespace and keeps it alive until
 * its pipe closes; 0 once it is ready. */
static int start_holder(struct nn *n, int side, char *why, size_t len)
{
  int ready[2], hold[2];
  if (pipe2(ready, O_CLOEXEC) != 0)
    return -1;
  if (pipe2(hold, O_CLOEXEC) != 0) {
    close(ready[0]);
    close(ready[1]);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    char ok = unshare(CLONE_NEWNET) == 0 ? 0 : (char)errno;
    close(hold[1]);
    if (side == 1 && n->hold_fd[0] >= 0)
      close(n->hold_fd[0]); /* else holder a would wait for this one */
    (void)!write(ready[1], &ok, 1);
    char c;
    while (read(hold[0], &c, 1) != 0 && errno == EINTR)
      ;
    _exit(0);
  }
  close(ready[1]);
  close(hold[0]);
  char ok = -1;
  if (pid < 0 || read(ready[0], &ok, 1) != 1 || ok != 0) {
    snprintf(why, len, "cannot create a network namespace (unshare: %s)",
             ok > 0 ? strerror(ok) : "no answer");
    close(hold[1]);
    if (pid > 0)
      waitpid(pid, NULL, 0);
    close(ready[0]);
    return -1;
  }
  close(ready[0]);
  n->holder[side] = pid;
  n->hold_fd[side] = hold[1];
  return 0;
}

/* htb on dev's egress: one class of cap_mbit per value of the source
 * port's low five bits; everything else (ARP, ND, ICMP) unshaped. */
static int shape(const struct nn *n, int side, const char *dev, int cap_mbit)
{
  char cmd[1024];
  snprintf(cmd, sizeof(cmd),
           "set -e; tc qdisc add dev %s root handle 1: htb default 999 r2q 1000; "
           "tc class add dev %s parent 1: classid 1:999 htb rate 100gbit; "
           "k=0; while [ $k -lt %d ]; do "
           "echo \"class add dev %s parent 1: classid 1:$((k + 1)) htb rate %dmbit ceil %dmbit\"; "
           "echo \"filter add dev %s parent 1: protocol ip prio 10 u32 match ip protocol 6 0xff "
           "match ip sport $k 0x%x flowid 1:$((k + 1))\"; "
           "echo \"filter add dev %s parent 1: protocol ipv6 prio 11 u32 match ip6 protocol 6 0xff "
           "match ip6 sport $k 0x%x flowid 1:$((k + 1))\"; "
           "k=$((k + 1)); done | tc -batch -",
           dev, dev, NN_CLASSES, dev, cap_mbit, cap_mbit, dev, NN_CLASSES - 1, dev,
           NN_CLASSES - 1);
  return nn_sh(n, side, cmd);
}

static int add_link(struct nn *n, int i, char *why, size_t len)
{
  struct nn_link *l = &n->links[i];
  char cmd[512];
  for (int s = 0; s < 2; s++) {
    snprintf(l->name[s], sizeof(l->name[s]), "pt%d%c", i, "ab"[s]);
    if (l->ipv6_only)
      snprintf(l->addr[s], sizeof(l->addr[s]), "fd70:%d::%d", i, s + 1);
    else
      snprintf(l->addr[s], sizeof(l->addr[s]), "10.231.%d.%d", i, s + 1);
  }
  snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %s netns %d", l->name[0],
           l->name[1], (int)n->holder[1]);
  if (nn_sh(n, 0, cmd) != 0) {
    snprintf(why, len, "cannot create a veth pair (%s)", cmd);
    return -1;
  }
  for (int s = 0; s < 2; s++) {
    /* nodad: an IPv6 address is usable at once instead of after DAD */
    snprintf(cmd, sizeof(cmd),
             "set -e; ip link set lo up; ip addr add %s/%d dev %s %s; ip link set %s up",
             l->addr[s], l->ipv6_only ? 64 : 24, l->name[s], l->ipv6_only ? "nodad" : "",
             l->name[s]);
    if (nn_sh(n, s, cmd) != 0) {
      snprintf(why, len, "cannot configure %s (%s)", l->name[s], cmd);
      return -1;
    }
    if (l->flow_cap_mbit > 0 && shape(n, s, l->name[s], l->flow_cap_mbit) != 0) {
      snprintf(why, len, "cannot shape %s with htb and u32 (tc)", l->name[s]);
      return -1;
    }
  }
  /* The kernel raises the carrier (IFF_RUNNING, which interface discovery
   * requires) asynchronously, up to a second after both ends are up. */
  for (int s = 0; s < 2; s++) {
    snprintf(cmd, sizeof(cmd),
             "i=0; while [ $i -lt 100 ]; do ip link show %s | grep -q LOWER_UP && exit 0; "
             "sleep 0.05; i=$((i + 1)); done; exit 1", l->name[s]);
    if (nn_sh(n, s, cmd) != 0) {
      snprintf(why, len, "%s has no carrier after 5 s", l->name[s]);
      return -1;
    }
  }
  return 0;
}

int nn_create(struct nn *n, const struct nn_link *links, int nlinks, char *why, size_t len)
{
  memset(n, 0, sizeof(*n));
  n->hold_fd[0] = n->hold_fd[1] = -1;
  snprintf(why, len, "?");
  if (nlinks < 1 || nlinks > NN_MAX_LINKS) {
    snprintf(why, len, "bad link count %d", nlinks);
    return -1;
  }
  if (system("command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1") != 0) {
    snprintf(why, len, "the ip and tc tools (iproute2) are not installed");
    return -1;
  }
  n->nlinks = nlinks;
  memcpy(n->links, links, sizeof(*links) * (size_t)nlinks);
  for (int s = 0; s < 2; s++)
    if (start_holder(n, s, why, len) != 0)
      goto fail;
  for (int i = 0; i < nlinks; i++)
    if (add_link(n, i, why, len) != 0)
      goto fail;
  return 0;
fail:
  nn_destroy(n);
  return -1;
}

void nn_destroy(struct nn *n)
{
  for (int s = 0; s < 2; s++) {
    if (n->hold_fd[s] >= 0)
      close(n->hold_fd[s]);
    n->hold_fd[s] = -1;
  }
  for (int s = 0; s < 2; s++) {
    if (n->holder[s] > 0)
      while (waitpid(n->holder[s], NULL, 0) < 0 && errno == EINTR)
        ;
    n->holder[s] = 0;
  }
}
