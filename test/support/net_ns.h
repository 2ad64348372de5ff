/* Two network namespaces joined by veth pairs, made for one test or bench
 * run: every byte the net plugin moves over them stays inside. Each
 * namespace is held by a child process that exits when the creator closes
 * its pipe (nn_destroy) or exits, so the namespaces, their links and their
 * qdiscs vanish with them even after a crash. Needs root, unshare and the
 * ip and tc tools; nn_create says why when any is missing, so that the
 * caller can skip with that message. Shared by test_net_netns and
 * bench/net. */
#ifndef PCIE_TEST_NET_NS_H
#define PCIE_TEST_NET_NS_H
#include <stddef.h>
#include <sys/types.h>

#define NN_MAX_LINKS 4

struct nn_link {
  /* set by the caller */
  int ipv6_only;     /* only IPv6 addresses (fd70:<i>::1 and ::2), no IPv4 */
  int flow_cap_mbit; /* 0 = unshaped; else each TCP flow is capped at this rate */
  /* filled by nn_create: interface names (side a, side b) and addresses */
  char name[2][16];
  char addr[2][64];
};

struct nn {
  pid_t holder[2];
  int hold_fd[2];
  int nlinks;
  struct nn_link links[NN_MAX_LINKS];
};

/* Creates namespaces a (0) and b (1) and link i as veth pair
 * "pt<i>a" (in a) / "pt<i>b" (in b), addresses 10.231.<i>.1/.2 or
 * fd70:<i>::1/::2. A capped link shapes the egress of both ends with htb:
 * 32 classes of flow_cap_mbit, picked by u32 on the low five bits of the
 * TCP source port, unmatched traffic unshaped. Approximate: connect()
 * takes even ephemeral ports only, so 16 classes are used and two flows
 * can share one; a bench that must cap each flow exactly calls
 * nn_cap_flows once its connections exist. Returns 0, or -1 with the reason in why. */
int nn_create(struct nn *n, const struct nn_link *links, int nlinks, char *why, size_t len);
/* Moves the calling process (a fresh child, before it opens anything of
 * the network) into namespace side; 0 on success. */
int nn_enter(const struct nn *n, int side);
/* Runs a shell command inside namespace side, output discarded; returns
 * its exit status (-1 when it could not run). */
int nn_sh(const struct nn *n, int side, const char *cmd);
/* Caps each established TCP connection of capped IPv4 link `link`
 * exactly: one htb class of flow_cap_mbit per connection, chosen by a u32
 * filter on its whole source and destination ports (ahead of the
 * low-five-bits classes, which let two flows share a class: connect()
 * hands out even ports only, so 16 of the 32 classes were used). Replaces
 * the previous call's classes. ports receives "dev: sport>dport ..." of
 * both sides. 0, or -1 with the reason in ports. */
int nn_cap_flows(const struct nn *n, int link, char *ports, size_t len);
void nn_destroy(struct nn *n);
#endif
