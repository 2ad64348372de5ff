/* See net_wire.h: raw-socket helpers for foreign-peer tests. */
#include "net_wire.h"
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int nw_dial(const struct nw_handle *h)
{
  socklen_t len = h->addr.sa.sa_family == AF_INET ? sizeof(h->addr.in4) : sizeof(h->addr.in6);
  int fd = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, &h->addr.sa, len) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

int nw_send_hello(int fd, const struct nw_handle *h, uint32_t version, uint16_t index,
                  uint64_t conn_id)
{
  struct nw_hello m = {.magic = NW_MAGIC,
                       .version = version,
                       .index = index,
                       .nstreams = h->nstreams,
                       .nonce = h->nonce,
                       .conn_id = conn_id};
  return send(fd, &m, sizeof(m), MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

int nw_read_ack(int fd)
{
  struct nw_ack a;
  if (recv(fd, &a, sizeof(a), MSG_WAITALL) != (ssize_t)sizeof(a) || a.magic != NW_MAGIC)
    return -1;
  return (int)a.status;
}

int nw_hello(int fd, const struct nw_handle *h, uint32_t version, uint16_t index,
             uint64_t conn_id)
{
  if (nw_send_hello(fd, h, version, index, conn_id) != 0)
    return -1;
  return nw_read_ack(fd);
}

int nw_join(const struct nw_handle *h, int *fds, uint64_t conn_id)
{
  for (int i = 0; i < h->nstreams; i++)
    if ((fds[i] = nw_dial(h)) < 0 || nw_send_hello(fds[i], h, NW_VERSION, (uint16_t)i, conn_id))
      return -1;
  for (int i = 0; i < h->nstreams; i++)
    if (nw_read_ack(fds[i]) != 0)
      return -1;
  return 0;
}

