/* Network device discovery: which interfaces become net devices, their
 * address, link speed and PCI path. Runs only inside init; never logs (the
 * caller reports). */
#include <ifaddrs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* NCCL's fallback when sysfs has no speed (loopback, most virtual NICs). */
#define PT_DEFAULT_SPEED_MBPS 10000

/* NCCL's syntax (src/os/linux.cc, ncclOsFindInterfaces; src/misc/utils.cc,
 * parseStringList and matchIfList): a leading '^' inverts the whole list, a
 * '=' after it asks for exact names; entries are comma separated, each
 * "prefix[:port...]" where only the part before the first ':' names the
 * interface; empty entries are skipped. A list without a single entry
 * matches every interface (NCCL: "no user list"), so "^" alone matches none. */
int pt__ifname_match(const char *spec, const char *name) {
  int exclude = 0, exact = 0, hit = 0, entries = 0;
  if (*spec == '^') {
    exclude = 1;
    spec++;
  }
  if (*spec == '=') {
    exact = 1;
    spec++;
  }
  while (*spec) {
    size_t len = strcspn(spec, ",");
    size_t plen = strcspn(spec, ",:");
    if (plen > 0) {
      entries++;
      if (exact)
        hit |= strlen(name) == plen && strncmp(name, spec, plen) == 0;
      else
        hit |= strncmp(name, spec, plen) == 0;
    }
    spec += len;
    if (*spec == ',') spec++;
  }
  if (entries == 0) hit = 1;
  return exclude ? !hit : hit;
}

static int is_default_excluded(const char *name) {
  return strncmp(name, "lo", 2) == 0 || strncmp(name, "docker", 6) == 0 || strncmp(name, "virbr", 5) == 0;
}

static int read_speed(const char *ifname) {
  char path[128], buf[32];
  int speed = PT_DEFAULT_SPEED_MBPS;
  snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
  FILE *f = fopen(path, "re");
  if (!f) return speed;
  if (fgets(buf, sizeof(buf), f)) {
    char *end;
    long v = strtol(buf, &end, 10);
    if (end != buf && v > 0 && v < INT_MAX) speed = (int)v;
  }
  fclose(f);
  return speed;
}

static void read_pci_path(struct pt_dev *d) {
  char path[128], real[PATH_MAX];
  snprintf(path, sizeof(path), "/sys/class/net/%s/device", d->name);
  d->has_pci = 0;
  if (realpath(path, real) && strlen(real) < sizeof(d->pci_path)) {
    strcpy(d->pci_path, real);
    d->has_pci = 1;
  }
}

/* Rank of an address for one interface: IPv4 first, then global IPv6, then
 * link-local IPv6 (usable thanks to the scope id); -1 = unusable or not of
 * the family asked for (AF_UNSPEC = any). */
static int addr_rank(const struct sockaddr *sa, int family) {
  if (family != AF_UNSPEC && sa->sa_family != family) return -1;
  if (sa->sa_family == AF_INET) return 0;
  if (sa->sa_family != AF_INET6) return -1;
  const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(a)) return -1; /* NCCL skips it too: ::1 duplicates 127.0.0.1 */
  return IN6_IS_ADDR_LINKLOCAL(a) ? 2 : 1;
}

static int find_dev(struct pt_dev *devs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(devs[i].name, name) == 0) return i;
  return -1;
}

/* pass 0: interfaces the default policy keeps; pass 1: the fallbacks. */
static int collect(struct ifaddrs *list, const char *spec, int family, int pass, struct pt_dev *devs, int max,
                   int *ranks) {
  int n = 0;
  for (struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
    if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) || !(ifa->ifa_flags & IFF_RUNNING)) continue;
    if (strlen(ifa->ifa_name) >= IF_NAMESIZE) continue;
    int rank = addr_rank(ifa->ifa_addr, family);
    if (rank < 0) continue;
    if (*spec) {
      if (!pt__ifname_match(spec, ifa->ifa_name)) continue;
    } else if (is_default_excluded(ifa->ifa_name) != pass) {
      continue;
    }
    int i = find_dev(devs, n, ifa->ifa_name);
    if (i < 0) {
      if (n == max) continue;
      i = n++;
      memset(&devs[i], 0, sizeof(devs[i]));
      strcpy(devs[i].name, ifa->ifa_name);
      devs[i].loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
      ranks[i] = 99;
    }
    if (rank < ranks[i]) {
      ranks[i] = rank;
      size_t len =
          ifa->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
      memcpy(&devs[i].addr, ifa->ifa_addr, len);
      devs[i].addrlen = (socklen_t)len;
    }
  }
  return n;
}

int pt__ifaces_discover(const char *spec, int family, struct pt_dev *devs, int max) {
  struct ifaddrs *list;
  int ranks[PT_NET_MAX_DEVS];
  if (max > PT_NET_MAX_DEVS) max = PT_NET_MAX_DEVS;
  if (getifaddrs(&list) != 0) return -1;
  int n = collect(list, spec, family, 0, devs, max, ranks);
  /* Loopback (and docker/virbr) only when nothing else is up, as NCCL. */
  if (n == 0 && !*spec) n = collect(list, spec, family, 1, devs, max, ranks);
  freeifaddrs(list);
  for (int i = 0; i < n; i++) {
    devs[i].speed_mbps = read_speed(devs[i].name);
    read_pci_path(&devs[i]);
  }
  return n;
}
