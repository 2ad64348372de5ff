/* The plugin's wire protocol as docs/net.md documents it, for tests that
 * play a hostile or foreign peer with raw sockets. Kept apart from the
 * plugin's own definitions on purpose: a silent change of the protocol
 * must break these tests. */
#ifndef PCIE_TEST_NET_WIRE_H
#define PCIE_TEST_NET_WIRE_H
#include <netinet/in.h>
#include <stdint.h>

#define NW_MAGIC 0x7063696574637031ULL
#define NW_VERSION 1U
#define NW_CHUNK_MAGIC 0x6b6e6863U
/* a chunk of a message below NW_PAD_PAYLOAD bytes whose payload is
 * followed by NW_PAD_PAYLOAD - len bytes of padding */
#define NW_CHUNK_MAGIC_PAD 0x706e6863U
#define NW_PAD_PAYLOAD 240
#define NW_HANDLE_ADAPT 1U
#define NW_HANDLE_PAD 2U /* the receiver drops the padding of NW_CHUNK_MAGIC_PAD */

struct nw_handle {
  uint64_t magic;
  uint32_t version;
  uint16_t nstreams;
  uint16_t flags; /* NW_HANDLE_* */
  uint64_t nonce;
  union {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
  } addr;
  uint64_t connect_state;
};

struct nw_hello {
  uint64_t magic;
  uint32_t version;
  uint16_t index;
  uint16_t nstreams;
  uint64_t nonce;
  uint64_t conn_id;
};

struct nw_ack {
  uint64_t magic;
  uint32_t version;
  uint32_t status; /* 0 ok, 1 version, 2 nonce, 3 protocol */
};

struct nw_chunk {
  uint32_t magic;
  uint32_t seq;
  int32_t tag;
  uint32_t len;
  uint64_t offset;
  uint64_t total;
};

/* Blocking TCP connection to the handle's address; -1 on failure. */
int nw_dial(const struct nw_handle *h);
/* nw_send_hello then nw_read_ack. */
int nw_hello(int fd, const struct nw_handle *h, uint32_t version, uint16_t index,
             uint64_t conn_id);
int nw_send_hello(int fd, const struct nw_handle *h, uint32_t version, uint16_t index,
                  uint64_t conn_id);
/* The ack's status, -1 if the listener closed without one. */
int nw_read_ack(int fd);
/* Joins the listener of the handle as a connector: every stream dialled,
 * hello sent, ack read; 0 on success. */
int nw_join(const struct nw_handle *h, int *fds, uint64_t conn_id);
#endif
