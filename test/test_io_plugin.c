/* The plugin's file handling as NCCL sees it (dlopen of the built .so through
 * the simulated host): a profile that is a FIFO, a device, a directory, a
 * huge sparse file or uses @include is refused at once with one WARN and the
 * communicator stays passive; the process is never ended or blocked, not
 * even another communicator's finalize; a profile rewritten in place is
 * reloaded whatever its mtime says (docs/profile-format.md, "Selection" and
 * "Files the tools read and write"). */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl/common.h"
#include "pcie/host.h"
#include "support/pt_test.h"

static const char *profile_text(const char *name) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "version = 1;\nname = \"%s\";\nmatch = { nranks = 8; };\n"
           "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; "
           "date = \"2026-11-30\"; mode = \"graph\"; };\n"
           "allreduce = { graph = { sizes = [ 1024L, 1048576L ]; candidates = (\n"
           "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); } "
           "); }; };\n",
           name);
  return buf;
}

static char *dir;
static struct ph_plugin pl;

static void setup(void) {
  char err[512];
  dir = pt_test_tmpdir();
  unsetenv("PCIE_TUNER_PROFILE");
  unsetenv("PCIE_TUNER_TRACE");
  ph_log_clear();
  ck_assert_msg(ph_plugin_open(&pl, pt_test_so(), 0, err, sizeof err) == 0, "%s", err);
}

static void teardown(void) {
  ph_plugin_close(&pl);
  pt_test_rmtree(dir);
  free(dir);
}

static char *path_in(const char *name) {
  char *p = NULL;
  ck_assert(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

/* Inits an 8-rank communicator with PCIE_TUNER_PROFILE=spec and expects it,
 * within a second, to be passive after exactly one WARN (subsystem
 * NCCL_ALL, so the default NCCL_DEBUG_SUBSYS shows it) containing needle. */
static void expect_refused(const char *spec, const char *needle) {
  struct ph_comm c;
  struct ph_choice ch;
  struct ph_log_entry e;
  float t[7][3], before[7][3];
  setenv("PCIE_TUNER_PROFILE", spec, 1);
  double t0 = pt_test_now_s();
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  double took = pt_test_now_s() - t0;
  ck_assert_msg(took < 1.0, "init took %.2f s", took);
  ck_assert_uint_eq(ph_log_count(), 1);
  ck_assert_int_eq(ph_log_get(0, &e), 0);
  ck_assert_int_eq(e.level, NCCL_LOG_WARN);
  ck_assert_uint_eq(e.flags, (unsigned long)NCCL_ALL);
  ck_assert_msg(strstr(e.msg, needle), "'%s' not in: %s", needle, e.msg);
  pt_test_nccl_table(t, ncclFuncAllReduce, 4096, 8, 0);
  memcpy(before, t, sizeof t);
  ph_decide(&c, ncclFuncAllReduce, 4096, 1, t, &ch);
  ck_assert_int_eq(ch.nchannels, 0);
  ck_assert_int_eq(memcmp(before, t, sizeof t), 0);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
}

START_TEST(include_of_a_directory_is_refused_not_fatal) {
  /* libconfig 1.5 exits the process (flex's fatal error) on this. */
  char *sub = path_in("inc"), *text = NULL;
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  ck_assert(asprintf(&text, "version = 1;\n  @include \"%s\"\nname = \"p\";\n", sub) > 0);
  char *p = pt_test_write(dir, "inc.cfg", text);
  char *needle = NULL;
  ck_assert(asprintf(&needle, "%s:2: @include is not allowed", p) > 0);
  expect_refused(p, needle);
  free(needle);
  free(p);
  free(text);
  free(sub);
}
END_TEST

START_TEST(relative_include_is_refused) {
  /* Resolved per working directory: two ranks could read different files
   * under one logged hash. Even a harmless one is refused. */
  free(pt_test_write(dir, "part.cfg", "name = \"p\";\n"));
  char *text = NULL;
  const char *full = profile_text("p");
  const char *name_line = strstr(full, "name = ");
  const char *after = strchr(name_line, '\n') + 1;
  ck_assert(asprintf(&text, "%.*s@include \"part.cfg\"\n%s", (int)(name_line - full), full,
                     after) > 0);
  char *p = pt_test_write(dir, "rel.cfg", text);
  ck_assert_int_eq(chdir(dir), 0);
  expect_refused(p, "rel.cfg:2: @include is not allowed");
  free(p);
  free(text);
}
END_TEST

START_TEST(fifo_named_as_profile_returns_at_once) {
  char *p = path_in("pipe.cfg");
  ck_assert_int_eq(mkfifo(p, 0644), 0);
  expect_refused(p, "pipe.cfg: is a FIFO, not a regular file");
  free(p);
}
END_TEST

START_TEST(fifo_in_a_profile_directory_returns_at_once) {
  char *p = path_in("pipe.cfg");
  free(pt_test_write(dir, "good.cfg", profile_text("good")));
  ck_assert_int_eq(mkfifo(p, 0644), 0);
  expect_refused(dir, "pipe.cfg: is a FIFO, not a regular file");
  free(p);
}
END_TEST

START_TEST(device_directory_and_sparse_file_are_refused) {
  expect_refused("/dev/zero", "/dev/zero: is a character device, not a regular file");
  ph_log_clear();
  /* A directory named like a profile, inside a profile directory. */
  char *sub = path_in("sub.cfg");
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  expect_refused(dir, "sub.cfg: is a directory, not a regular file");
  ck_assert_int_eq(rmdir(sub), 0);
  ph_log_clear();
  /* 1 GB, sparse: refused by its size before a byte is read. */
  char *big = path_in("big.cfg");
  int fd = open(big, O_WRONLY | O_CREAT | O_EXCL, 0644);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)1 << 30), 0);
  close(fd);
  expect_refused(big, "big.cfg: is 1073741824 bytes, larger than the");
  free(big);
  free(sub);
}
END_TEST

struct init_arg {
  struct ph_comm c;
  atomic_int done;
};

static void *init_thread(void *arg) {
  struct init_arg *a = arg;
  ph_comm_init(&a->c, &pl, 8, 1, 2);
  atomic_store(&a->done, 1);
  return NULL;
}

START_TEST(finalize_never_waits_behind_an_init_reading_a_fifo) {
  /* Before: init opened the FIFO with the registry lock held and blocked
   * until a writer came; an unrelated communicator's finalize then blocked
   * too, and with it the job's teardown. */
  struct ph_comm other;
  struct init_arg a;
  pthread_t th;
  char *good = pt_test_write(dir, "good.cfg", profile_text("good"));
  char *fifo = path_in("pipe.cfg");
  ck_assert_int_eq(mkfifo(fifo, 0644), 0);
  setenv("PCIE_TUNER_PROFILE", good, 1);
  ck_assert_int_eq(ph_comm_init(&other, &pl, 8, 1, 1), 0);
  setenv("PCIE_TUNER_PROFILE", fifo, 1);
  memset(&a, 0, sizeof a);
  atomic_init(&a.done, 0);
  double t0 = pt_test_now_s();
  ck_assert_int_eq(pthread_create(&th, NULL, init_thread, &a), 0);
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  ck_assert_int_eq(ph_comm_finalize(&other), 0);
  double took = pt_test_now_s() - t0;
  ck_assert_msg(took < 1.0, "finalize of the other communicator took %.2f s", took);
  while (!atomic_load(&a.done) && pt_test_now_s() - t0 < 1.0) nanosleep(&pause, NULL);
  ck_assert_msg(atomic_load(&a.done), "init on a FIFO still blocked after a second");
  pthread_join(th, NULL);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "is a FIFO"), 1);
  ck_assert_int_eq(ph_comm_finalize(&a.c), 0);
  free(good);
  free(fifo);
}
END_TEST

/* Rewrites path in place (same inode, as `cp -p` onto it does) and restores
 * its mtime (as `cp -p` and `rsync -t` do). */
static void rewrite_keep_mtime(const char *path, const char *text) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  FILE *f = fopen(path, "r+");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  ck_assert_int_eq(fclose(f), 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, times, 0), 0);
  struct stat after;
  ck_assert_int_eq(stat(path, &after), 0);
  ck_assert_int_eq(after.st_ino, st.st_ino);
  ck_assert_int_eq(after.st_size, st.st_size);
  ck_assert_int_eq(after.st_mtim.tv_sec, st.st_mtim.tv_sec);
  ck_assert_int_eq(after.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
}

START_TEST(profile_rewritten_with_mtime_restored_is_reloaded) {
  struct ph_comm old, fresh;
  char *p = pt_test_write(dir, "box.cfg", profile_text("v1"));
  setenv("PCIE_TUNER_PROFILE", p, 1);
  ck_assert_int_eq(ph_comm_init(&old, &pl, 8, 1, 1), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'v1'"), 1);
  rewrite_keep_mtime(p, profile_text("v2"));
  ck_assert_int_eq(ph_comm_init(&fresh, &pl, 8, 1, 2), 0);
  ck_assert_msg(ph_log_find(NCCL_LOG_INFO, "name 'v2'") == 1,
                "the rewritten profile was not reloaded while another communicator held the old one");
  /* The same bytes again share the new entry. */
  struct ph_comm third;
  ck_assert_int_eq(ph_comm_init(&third, &pl, 8, 1, 3), 0);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'v2'"), 2);
  ck_assert_int_eq(ph_comm_finalize(&third), 0);
  ck_assert_int_eq(ph_comm_finalize(&fresh), 0);
  ck_assert_int_eq(ph_comm_finalize(&old), 0);
  free(p);
}
END_TEST

/* A profile whose provenance.extra holds what fill(f, n) writes (through a
 * memory stream, so it can be large); malloc'ed. */
static char *with_extra(void (*fill)(FILE *, long), long n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  fputs("version = 1;\nname = \"hostile\";\nmatch = { nranks = 8; };\n"
        "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; "
        "date = \"2026-11-30\"; mode = \"graph\";\n extra = { ",
        f);
  fill(f, n);
  fputs(" }; };\nallreduce = { graph = { sizes = [ 1024L, 1048576L ]; candidates = (\n"
        "  { algo = \"ring\"; proto = \"ll\"; channels = 4; latency = ( 10.0, 100.0 ); } ); }; };\n",
        f);
  fclose(f);
  return text;
}

static void tiny_groups(FILE *f, long n) {
  fputs("g = (", f);
  for (long i = 0; i < n; i++) fputs(i ? ",{}" : "{}", f);
  fputs(");", f);
}

static void numbers(FILE *f, long n) {
  fputs("v = [", f);
  for (long i = 0; i < n; i++) fputs(i ? ",1" : "1", f);
  fputs("];", f);
}

static void nested(FILE *f, long n) {
  for (long i = 0; i < n; i++) fputs("a = {", f);
  for (long i = 0; i < n; i++) fputs("};", f);
}

static void long_string(FILE *f, long n) {
  fputs("s = \"", f);
  for (long i = 0; i < n; i++) fputc('x', f);
  fputs("\";", f);
}

/* Issue 30 §1: one group of n members with names of 248 bytes that share
 * all but their last 8 (libconfig checks each against every earlier one). */
static void long_names(FILE *f, long n) {
  fputs("m = { ", f);
  for (long i = 0; i < n; i++) fprintf(f, "a%0239d%08lx = 1; ", 0, i);
  fputs("};", f);
}

/* An invalid file: numbers without end, then a syntax error at the bottom. */
static void numbers_then_junk(FILE *f, long n) {
  numbers(f, n);
  fputs(" = = ;", f);
}

/* Init with spec; the communicator must be passive after one WARN with
 * needle. No timing: the bounds are asserted through the reason. */
static void refused_with(const char *path, const char *needle) {
  struct ph_comm c;
  struct ph_choice ch;
  float t[7][3];
  if (getenv("PT_TEST_ECHO")) ph_log_echo(1);
  ph_log_clear();
  setenv("PCIE_TUNER_PROFILE", path, 1);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_uint_eq(ph_log_count(), 1);
  ck_assert_msg(ph_log_find(NCCL_LOG_WARN, needle) == 1, "no WARN with '%s'", needle);
  pt_test_nccl_table(t, ncclFuncAllReduce, 4096, 8, 0);
  ph_decide(&c, ncclFuncAllReduce, 4096, 1, t, &ch);
  ck_assert_int_eq(ch.nchannels, 0);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
}

/* Issue 17 §4: whatever the file, init is bounded in work, not only in
 * bytes. A valid profile under the 16 MiB limit with 10^6 tiny groups in
 * provenance.extra cost seconds and hundreds of MB per init; an invalid
 * 14 MB one more. Each is refused by the pre-scan before libconfig parses
 * (bench/profile_init measures the time and memory). */
START_TEST(hostile_profiles_are_refused_before_parsing) {
  static const struct {
    void (*fill)(FILE *, long);
    long n;
    const char *why;
  } cases[] = {
      {tiny_groups, 1000000, "settings and values, more than the 65536 a profile may have"},
      {numbers_then_junk, 7000000, "settings and values, more than the 65536"},
      {nested, 40, "nest 42 deep here, more than the 32"},
      {long_string, 100000, "a string of 100001 bytes starts here"},
      /* Issue 30 §1: 1.6 s per init before; refused by its name-check work. */
      {long_names, 2000, ":5: the group that opens here has 2000 members: checking their names"},
      /* One past each bound, the boundary itself loads (below). */
      {nested, 31, "nest 33 deep here, more than the 32"},
      {long_names, 175, "has 175 members: checking their names for duplicates"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *text = with_extra(cases[i].fill, cases[i].n);
    ck_assert_uint_lt(strlen(text), 16u << 20);
    char *p = pt_test_write(dir, "hostile.cfg", text);
    refused_with(p, cases[i].why);
    free(p);
    free(text);
  }
}
END_TEST

static void loads(const char *text) {
  struct ph_comm c;
  if (getenv("PT_TEST_ECHO")) ph_log_echo(1);
  char *p = pt_test_write(dir, "large.cfg", text);
  ph_log_clear();
  setenv("PCIE_TUNER_PROFILE", p, 1);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'hostile'"), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, NULL), 0);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  free(p);
}

/* Within the bounds, a large profile still loads: 60000 values in extra;
 * nesting at exactly the limit (provenance, extra and 30 more: 32); a
 * group of long names just inside the name-check bound. */
START_TEST(large_profile_within_the_bounds_loads) {
  static const struct {
    void (*fill)(FILE *, long);
    long n;
  } cases[] = {{numbers, 60000}, {nested, 30}, {long_names, 174}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *text = with_extra(cases[i].fill, cases[i].n);
    loads(text);
    free(text);
  }
}
END_TEST

/* The size limit at its boundary: a profile of exactly 16 MiB (padded with
 * a comment) is read and used; one byte more is refused by its size. */
START_TEST(size_limit_boundary) {
  char *base = with_extra(numbers, 10);
  size_t limit = (size_t)16 << 20, n = strlen(base);
  char *text = malloc(limit + 2);
  ck_assert_ptr_nonnull(text);
  memcpy(text, base, n);
  text[n] = '#';
  memset(text + n + 1, 'x', limit - n - 2);
  text[limit - 1] = '\n';
  text[limit] = '\0';
  loads(text);
  text[limit - 1] = 'x';
  text[limit] = '\n';
  text[limit + 1] = '\0';
  char *p = pt_test_write(dir, "big.cfg", text);
  refused_with(p, "is 16777217 bytes, larger than the 16777216-byte limit");
  free(p);
  free(text);
  free(base);
}
END_TEST

/* A refused content is parsed once per process: the next communicator gets
 * the same refusal without a parse (its WARN says so); other bytes under
 * the same name are read afresh. */
START_TEST(refusal_is_remembered_by_content) {
  static const char bad[] =
      "version = 1;\nname = \"bad\";\n"
      "provenance = { tool = \"t\"; backend = \"sim\"; nccl_version = \"2.28.9\"; "
      "date = \"2026-11-30\"; mode = \"graph\"; };\n"
      "allreduce = { graph = { sizes = [ 1024L, 1048576L ]; candidates = (\n"
      "  { algo = \"ring\"; proto = \"ll\"; channels = 99; latency = ( 10.0, 100.0 ); } ); }; };\n";
  char *p = pt_test_write(dir, "bad.cfg", bad);
  refused_with(p, "channels must be in 0..64");
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "refused earlier"), 0);
  refused_with(p, "channels must be in 0..64, not 99 (same content refused earlier in this process)");
  /* The same bytes under another name: the refusal names that file. */
  char *q = pt_test_write(dir, "copy.cfg", bad);
  refused_with(q, "copy.cfg:");
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "refused earlier in this process"), 1);
  /* Fixed in place: parsed again, and used. */
  free(pt_test_write(dir, "bad.cfg", profile_text("fixed")));
  struct ph_comm c;
  setenv("PCIE_TUNER_PROFILE", p, 1);
  ph_log_clear();
  ck_assert_int_eq(ph_comm_init(&c, &pl, 8, 1, 1), ncclSuccess);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_INFO, "name 'fixed'"), 1);
  ck_assert_int_eq(ph_comm_finalize(&c), ncclSuccess);
  free(p);
  free(q);
}
END_TEST

START_TEST(explicit_profile_not_fitting_is_one_warn) {
  struct ph_comm c;
  char *p = pt_test_write(dir, "eight.cfg", profile_text("eight"));
  setenv("PCIE_TUNER_PROFILE", p, 1);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 4, 1, 1), 0);
  ck_assert_uint_eq(ph_log_count(), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "eight.cfg does not match nRanks=4 nNodes=1 (its match: nranks = 8)"), 1);
  ck_assert_int_eq(ph_comm_finalize(&c), 0);
  /* A named directory with nothing fitting: the same. */
  ph_log_clear();
  setenv("PCIE_TUNER_PROFILE", dir, 1);
  ck_assert_int_eq(ph_comm_init(&c, &pl, 4, 1, 1), 0);
  ck_assert_uint_eq(ph_log_count(), 1);
  ck_assert_uint_eq(ph_log_find(NCCL_LOG_WARN, "no profile matches nRanks=4 nNodes=1"), 1);
  ck_assert_int_eq(ph_comm_finalize(&c), 0);
  free(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("io_plugin");
  TCase *tc = tcase_create("files");
  tcase_add_checked_fixture(tc, setup, teardown);
  /* A regression blocks forever: the timeout turns it into a failure. */
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, include_of_a_directory_is_refused_not_fatal);
  tcase_add_test(tc, relative_include_is_refused);
  tcase_add_test(tc, fifo_named_as_profile_returns_at_once);
  tcase_add_test(tc, fifo_in_a_profile_directory_returns_at_once);
  tcase_add_test(tc, device_directory_and_sparse_file_are_refused);
  tcase_add_test(tc, finalize_never_waits_behind_an_init_reading_a_fifo);
  tcase_add_test(tc, profile_rewritten_with_mtime_restored_is_reloaded);
  tcase_add_test(tc, explicit_profile_not_fitting_is_one_warn);
  tcase_add_test(tc, hostile_profiles_are_refused_before_parsing);
  tcase_add_test(tc, large_profile_within_the_bounds_loads);
  tcase_add_test(tc, size_limit_boundary);
  tcase_add_test(tc, refusal_is_remembered_by_content);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  pt_test_accept_foreign(); /* its profiles record no box (or a simulated one) */
  return pt_test_main(suite());
}
