/* The worker protocol (measure/proto.h) over a real socketpair: every message
 * round-trips, and every malformed input is refused with a reason instead
 * of being half-read or waited on; plus the worker's command line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "measure/proto.h"
#include "support/pt_test.h"

static int sv[2];
static unsigned char buf[PT_PROTO_MAX_PAYLOAD];
static char why[300];

static void setup(void) { ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0); }
static void teardown(void) {
  close(sv[0]);
  close(sv[1]);
}

static int read_frame(struct pt_frame *f, int timeout_ms) {
  why[0] = 0;
  return pt_proto_read(sv[1], pt_proto_now_ms() + timeout_ms, buf, sizeof buf, f, why, sizeof why);
}

/* Sends raw bytes and expects a protocol error naming what is wrong. */
static void expect_bad(const void *bytes, size_t n, int close_after, const char *needle) {
  struct pt_frame f;
  ck_assert_int_eq(write(sv[0], bytes, n), (ssize_t)n);
  if (close_after) shutdown(sv[0], SHUT_WR);
  int rc = read_frame(&f, 2000);
  ck_assert_msg(rc == PT_PROTO_BAD, "rc %d for '%s'", rc, needle);
  ck_assert_msg(strstr(why, needle), "'%s' lacks '%s'", why, needle);
}

static size_t header(unsigned char *out, uint32_t magic, uint32_t type, uint32_t len) {
  memcpy(out, &magic, 4);
  memcpy(out + 4, &type, 4);
  memcpy(out + 8, &len, 4);
  return 12;
}

START_TEST(messages_round_trip) {
  struct pt_frame f;
  unsigned char p[4096];
  struct pt_backend_info bi = {.name = "sim", .target = "gen5-8x-p2p",
                               .nccl_version = "2.30 (simulated)", .nranks = 8, .nnodes = 1,
                               .max_channels = 4, .comm_channels = 4},
                         bo;
  /* The box travels too (provenance.box of an isolated sweep). */
  bi.box.ngpus = 2;
  bi.box.host_gpus = 1;
  snprintf(bi.box.gpu[0].bus_id, sizeof bi.box.gpu[0].bus_id, "0000:17:00.0");
  snprintf(bi.box.gpu[1].bus_id, sizeof bi.box.gpu[1].bus_id, "0000:65:00.0");
  bi.box.gpu[1].link_gen = 5;
  snprintf(bi.box.driver, sizeof bi.box.driver, "550.54.15");
  size_t n = pt_proto_enc_hello(p, sizeof p, &bi, "gpu = { a = 1; };\n");
  ck_assert_int_eq(pt_proto_write(sv[0], PT_MSG_HELLO, p, (uint32_t)n), 0);
  ck_assert_int_eq(read_frame(&f, 1000), 0);
  char *prov = NULL;
  ck_assert_int_eq(pt_proto_dec_hello(&f, &bo, &prov, why, sizeof why), 0);
  ck_assert_int_eq(memcmp(&bi, &bo, sizeof bi), 0);
  ck_assert_str_eq(prov, "gpu = { a = 1; };\n");
  free(prov);

  struct pt_measure_req rq = {4, 1, 1ull << 33, 0, 1, 2, 16, 3, 7, 1, 131072}, ro;
  n = pt_proto_enc_req(p, sizeof p, &rq);
  ck_assert_int_eq(pt_proto_write(sv[0], PT_MSG_REQ, p, (uint32_t)n), 0);
  ck_assert_int_eq(read_frame(&f, 1000), 0);
  ck_assert_int_eq(pt_proto_dec_req(&f, &ro, why, sizeof why), 0);
  ck_assert_int_eq(memcmp(&rq, &ro, sizeof rq), 0);

  struct pt_measure_res rs = {PT_PT_OK, "fine"}, rso;
  double s[3] = {1.5, 2.25, 1e-3}, so[PT_SWEEP_MAX_REPS];
  unsigned ns;
  n = pt_proto_enc_res(p, sizeof p, &rs, s, 3);
  ck_assert_int_eq(pt_proto_write(sv[0], PT_MSG_RES, p, (uint32_t)n), 0);
  ck_assert_int_eq(read_frame(&f, 1000), 0);
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, PT_SWEEP_MAX_REPS, &ns, why, sizeof why), 0);
  ck_assert_uint_eq(ns, 3);
  ck_assert_int_eq(memcmp(s, so, sizeof s), 0);
  ck_assert_str_eq(rso.detail, "fine");

  int code;
  char msg[512];
  n = pt_proto_enc_fail(p, sizeof p, PT_EIO, "no CUDA device: none");
  ck_assert_int_eq(pt_proto_write(sv[0], PT_MSG_FAIL, p, (uint32_t)n), 0);
  ck_assert_int_eq(read_frame(&f, 1000), 0);
  ck_assert_int_eq(pt_proto_dec_fail(&f, &code, msg, sizeof msg, why, sizeof why), 0);
  ck_assert_int_eq(code, PT_EIO);
  ck_assert_str_eq(msg, "no CUDA device: none");

  /* A clean close between frames is EOF, not an error. */
  shutdown(sv[0], SHUT_WR);
  ck_assert_int_eq(read_frame(&f, 1000), PT_PROTO_EOF);
}
END_TEST

START_TEST(framing_errors_are_named) {
  unsigned char raw[64];
  expect_bad("NCCL INFO log text\n", 19, 0, "bad frame magic");
  teardown(), setup();
  size_t n = header(raw, PT_PROTO_MAGIC, 9, 0);
  expect_bad(raw, n, 0, "unknown frame type 9");
  teardown(), setup();
  n = header(raw, PT_PROTO_MAGIC, PT_MSG_RES, PT_PROTO_MAX_PAYLOAD + 1);
  expect_bad(raw, n, 0, "exceeds");
  teardown(), setup();
  expect_bad("PTW1\x03", 5, 1, "inside a frame header");
  teardown(), setup();
  n = header(raw, PT_PROTO_MAGIC, PT_MSG_RES, 40);
  memset(raw + n, 0, 10);
  expect_bad(raw, n + 10, 1, "inside a frame (10 of 40");
}
END_TEST

START_TEST(a_silent_peer_times_out) {
  struct pt_frame f;
  int64_t t0 = pt_proto_now_ms();
  ck_assert_int_eq(read_frame(&f, 150), PT_PROTO_TIMEOUT);
  int64_t took = pt_proto_now_ms() - t0;
  ck_assert(took >= 140 && took < 1000);
  /* Half a header, then silence: still a timeout, at the same deadline. */
  ck_assert_int_eq(write(sv[0], "PTW1", 4), 4);
  ck_assert_int_eq(read_frame(&f, 150), PT_PROTO_TIMEOUT);
}
END_TEST

static struct pt_frame frame(uint32_t type, unsigned char *p, size_t n) {
  struct pt_frame f = {type, (uint32_t)n, p};
  return f;
}

START_TEST(payload_errors_are_named) {
  unsigned char p[4096];
  struct pt_measure_req rq = {4, 1, 4096, 0, 1, 2, 4, 0, 5, 0, 0}, ro;
  struct pt_measure_res rs = {PT_PT_OK, "ok"}, rso;
  struct pt_backend_info bi = {.name = "sim", .target = "box", .nccl_version = "2.30",
                               .nranks = 8, .nnodes = 1, .max_channels = 4, .comm_channels = 4},
                         bo;
  double s[PT_SWEEP_MAX_REPS] = {1, 2, 3}, so[PT_SWEEP_MAX_REPS];
  unsigned ns;
  char *prov;
  int code;
  char msg[512];
  /* Truncated and trailing bytes. */
  size_t n = pt_proto_enc_req(p, sizeof p, &rq);
  struct pt_frame f = frame(PT_MSG_REQ, p, n - 1);
  ck_assert_int_eq(pt_proto_dec_req(&f, &ro, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "truncated"));
  f = frame(PT_MSG_REQ, p, n + 1);
  ck_assert_int_eq(pt_proto_dec_req(&f, &ro, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "1 trailing bytes"));
  /* Out-of-range requests. */
  rq.reps = 0;
  n = pt_proto_enc_req(p, sizeof p, &rq);
  f = frame(PT_MSG_REQ, p, n);
  ck_assert_int_eq(pt_proto_dec_req(&f, &ro, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "out of range"));
  /* The wrong message for the slot. */
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, 8, &ns, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "expected RES"));
  /* Results: too many samples, a sample that is no latency, a bad state. */
  n = pt_proto_enc_res(p, sizeof p, &rs, s, 3);
  f = frame(PT_MSG_RES, p, n);
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, 2, &ns, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "3 samples, at most 2"));
  s[1] = -1;
  n = pt_proto_enc_res(p, sizeof p, &rs, s, 3);
  f = frame(PT_MSG_RES, p, n);
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, 8, &ns, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "sample 1 is not a latency"));
  rs.state = 42;
  n = pt_proto_enc_res(p, sizeof p, &rs, s, 0);
  f = frame(PT_MSG_RES, p, n);
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, 8, &ns, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "unknown point state 42"));
  /* An unterminated string field is refused, not truncated. */
  rs.state = PT_PT_WRONG;
  n = pt_proto_enc_res(p, sizeof p, &rs, s, 0);
  memset(p + 4, 'x', sizeof rs.detail);
  f = frame(PT_MSG_RES, p, n);
  ck_assert_int_eq(pt_proto_dec_res(&f, &rso, so, 8, &ns, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "unterminated"));
  /* HELLO: another protocol version; nonsense info. */
  n = pt_proto_enc_hello(p, sizeof p, &bi, "");
  uint32_t v = PT_PROTO_VERSION + 1;
  char expect[64];
  snprintf(expect, sizeof expect, "protocol version %u, expected %u", v, PT_PROTO_VERSION);
  memcpy(p, &v, 4);
  f = frame(PT_MSG_HELLO, p, n);
  ck_assert_int_eq(pt_proto_dec_hello(&f, &bo, &prov, why, sizeof why), PT_PROTO_BAD);
  ck_assert_msg(strstr(why, expect), "%s", why);
  ck_assert_ptr_null(prov);
  bi.nranks = 0;
  n = pt_proto_enc_hello(p, sizeof p, &bi, "");
  f = frame(PT_MSG_HELLO, p, n);
  ck_assert_int_eq(pt_proto_dec_hello(&f, &bo, &prov, why, sizeof why), PT_PROTO_BAD);
  ck_assert_ptr_nonnull(strstr(why, "nonsense"));
  /* A FAIL must carry an error code. */
  n = pt_proto_enc_fail(p, sizeof p, 0, "fine");
  f = frame(PT_MSG_FAIL, p, n);
  ck_assert_int_eq(pt_proto_dec_fail(&f, &code, msg, sizeof msg, why, sizeof why), PT_PROTO_BAD);
  /* Encoders refuse what does not fit. */
  ck_assert_uint_eq(pt_proto_enc_res(p, 8, &rs, s, 0), 0);
}
END_TEST

static void expect_cli(int want, const char *args, const char *needle) {
  char cmd[1024], *out = NULL, *err = NULL;
  snprintf(cmd, sizeof cmd, "%s worker %s </dev/null", pt_test_cli(), args);
  int rc = pt_test_run(cmd, &out, &err);
  ck_assert_msg(rc == want, "'%s': exit %d, want %d; stderr %s", args, rc, want, err);
  ck_assert_msg(strstr(err, needle), "'%s': stderr '%s' lacks '%s'", args, err, needle);
  /* Even a usage error reaches the parent as a frame, and stdout holds
   * nothing but frames. */
  ck_assert_msg(!strncmp(out, "PTW1", 4), "'%s': stdout does not start with a frame", args);
  free(out);
  free(err);
}

START_TEST(command_line_errors) {
  expect_cli(2, "--bogus 1", "unknown option '--bogus'");
  expect_cli(2, "--box gen5-8x-p2p", "missing --backend");
  expect_cli(2, "--backend sim", "missing --box");
  expect_cli(2, "--backend nccl", "missing --gpus");
  expect_cli(2, "--backend tpu --box x", "unknown backend 'tpu'");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject melt:ring/ll/2", "unknown fault 'melt'");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject crash:ring/ll", "bad fault");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject crash:ring/ll/2@x", "bad fault");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject crash:ring/ll/2@-1", "bad fault");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject crash:ring/ll/2@99999999999999999999", "bad fault");
  /* Longer than the parser's 128-byte buffer: refused, not cut to "@000...0". */
  expect_cli(2, "--backend sim --box gen5-8x-p2p --inject crash:ring/ll/2@"
                "000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
                "000000000000000000000000000000000000000000000001",
             "bad fault");
  expect_cli(2, "--backend sim --box gen5-8x-p2p --seed", "needs a value");
  expect_cli(2, "--backend nccl --gpus 0 --ops 0", "bad --ops");
  expect_cli(1, "--backend sim --box no-such-box", "no-such-box");
  char *out = NULL, *err = NULL, cmd[512];
  snprintf(cmd, sizeof cmd, "%s worker --help", pt_test_cli());
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "usage: pcie-tune worker"));
  free(out);
  free(err);
}
END_TEST

START_TEST(a_healthy_worker_says_hello_and_leaves_at_eof) {
  char cmd[1024], *out = NULL, *err = NULL;
  snprintf(cmd, sizeof cmd, "%s worker --backend sim --box gen5-8x-p2p </dev/null", pt_test_cli());
  ck_assert_int_eq(pt_test_run(cmd, &out, &err), 0);
  ck_assert(!strncmp(out, "PTW1", 4));
  uint32_t type;
  memcpy(&type, out + 4, 4);
  ck_assert_uint_eq(type, PT_MSG_HELLO);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("worker");
  TCase *tc = tcase_create("core");
  /* Sixteen worker starts: seconds under ASan on a loaded machine. */
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, messages_round_trip);
  tcase_add_test(tc, framing_errors_are_named);
  tcase_add_test(tc, a_silent_peer_times_out);
  tcase_add_test(tc, payload_errors_are_named);
  tcase_add_test(tc, command_line_errors);
  tcase_add_test(tc, a_healthy_worker_says_hello_and_leaves_at_eof);
  suite_add_tcase(s, tc);
  return pt_test_main(s);
}
