/* Small socket helpers shared by listen, connect and the comms: address
 * printing, per-socket options, nonces. No state. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/random.h>
#include "internal.h"

void pt__addr_str(const union pt_addr *a, char *buf, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a->in4.sin_addr, host, sizeof(host));
    port = ntohs(a->in4.sin_port);
  } else if (a->sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a->in6.sin6_addr, host, sizeof(host));
    port = ntohs(a->in6.sin6_port);
  }
  snprintf(buf, len, a->sa.sa_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, port);
}

socklen_t pt__addr_len(const union pt_addr *a) {
  if (a->sa.sa_family == AF_INET) return sizeof(struct sockaddr_in);
  if (a->sa.sa_family == AF_INET6) return sizeof(struct sockaddr_in6);
  return 0;
}

/* TCP_NODELAY: chunk headers and small messages must leave at once (NCCL's
 * socket transport sets it for the same reason). The traffic class maps to
 * the TOS byte; a kernel refusing it is not worth failing a connection. */
int pt__sock_tune(int fd, int traffic_class, int family) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) return -1;
  if (traffic_class >= 0) {
    int tos = traffic_class;
    if (family == AF_INET6)
      (void)setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
    else
      (void)setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
  }
  return 0;
}

int pt__random64(uint64_t *out) {
  size_t got = 0;
  while (got < sizeof(*out)) {
    ssize_t n = getrandom((char *)out + got, sizeof(*out) - got, 0);
    if (n < 0 && errno != EINTR) return -1;
    if (n > 0) got += (size_t)n;
  }
  return 0;
}
