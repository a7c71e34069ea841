/*
 * scale_rank: one rank of a scale run through the C API alone (no torch).
 *
 *   scale_rank RANK NRANKS RANKS_PER_HOST DIR
 *
 * scripts/scale.sh starts NRANKS of these on this machine. Ranks meet through
 * files in DIR; rank r says it is on host r / RANKS_PER_HOST, so ranks of one
 * "host" share memory and hosts talk over TCP (loopback). Each rank:
 *   1. publishes its listening address and reads every other rank's;
 *   2. creates the communicator (timed);
 *   3. runs every collective at several counts (1, 7, 1031, and 0 where an
 *      empty op is allowed), plus a send/recv ring, a barrier and a split
 *      into two halves, checking each result against the value it must have
 *      (integer-valued float32 data, so every sum is exact);
 *   4. times a small all_reduce;
 *   5. writes one JSON object to DIR/rank-RANK.json: timestamps, failed
 *      checks, and its sockets, threads and memory before and after.
 * It exits 0 when every call succeeded (failed checks are in the JSON), 1 when
 * a call failed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hccl_go.h"

static int rank, nranks;
static char failures[8192];
static int nchecks, nfailed;

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char* what, hcclGoResult_t r, hcclGoComm_t comm) {
  char m[2048];
  hcclGoGetLastError(comm, m, sizeof m);
  fprintf(stderr, "scale_rank %d: %s: %s: %s\n", rank, what, hcclGoGetErrorString(r), m);
  exit(1);
}

static void check(hcclGoResult_t r, const char* what, hcclGoComm_t comm) {
  if (r != hcclGoSuccess) die(what, r, comm);
}

/* A rank's resources from /proc/self. */
typedef struct {
  long sockets, fds, threads;
  long rss_kb, anon_kb, shmem_kb, pss_kb;
} usage_t;

static long status_field(const char* path, const char* key) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

static usage_t usage(void) {
  usage_t u = {0};
  DIR* d = opendir("/proc/self/fd");
  struct dirent* e;
  char path[320], target[256];
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    u.fds++;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      if (strncmp(target, "socket:", 7) == 0) u.sockets++;
    }
  }
  if (d) closedir(d);
  u.fds--; /* the directory stream's own descriptor */
  u.threads = status_field("/proc/self/status", "Threads");
  u.rss_kb = status_field("/proc/self/status", "VmRSS");
  u.anon_kb = status_field("/proc/self/status", "RssAnon");
  u.shmem_kb = status_field("/proc/self/status", "RssShmem");
  u.pss_kb = status_field("/proc/self/smaps_rollup", "Pss");
  return u;
}

static void usage_json(FILE* f, const char* name, usage_t u) {
  fprintf(f,
          "\"%s\": {\"sockets\": %ld, \"fds\": %ld, \"threads\": %ld, \"rss_kb\": %ld, \"anon_kb\": %ld, "
          "\"shmem_kb\": %ld, \"pss_kb\": %ld}",
          name, u.sockets, u.fds, u.threads, u.rss_kb, u.anon_kb, u.shmem_kb, u.pss_kb);
}

/* The value rank r contributes at element i: small integers, so sums over
 * thousands of ranks stay exact in float32. */
static float val(int r, size_t i) { return (float)((r * 7 + (int)(i % 1000) * 3) % 11 + 1); }

static void expect(const char* op, size_t count, size_t i, float got, float want) {
  nchecks++;
  if (got == want) return;
  if (nfailed++ < 8) {
    size_t n = strlen(failures);
    snprintf(failures + n, sizeof failures - n, "%s%s count %zu element %zu: %g, want %g", n ? "; " : "", op, count, i,
             got, want);
  }
}

/* Waits for work, failing the rank on an error. */
static void finish(hcclGoWork_t w, const char* what, hcclGoComm_t comm) {
  hcclGoResult_t r = hcclGoWorkWait(w, -1);
  if (r != hcclGoSuccess) {
    char m[2048];
    hcclGoWorkError(w, m, sizeof m);
    fprintf(stderr, "scale_rank %d: %s: %s\n", rank, what, m);
    exit(1);
  }
  hcclGoWorkFree(w);
}

static void fill(float* b, size_t n, int r, size_t offset) {
  for (size_t i = 0; i < n; i++) b[i] = val(r, offset + i);
}

/* Every collective on comm (rank me of n) at one count. */
static void collectives(hcclGoComm_t comm, int me, int n, size_t count, const char* prefix) {
  size_t big = count * (size_t)n;
  float* a = calloc(big + 1, sizeof(float));
  float* b = calloc(big + 1, sizeof(float));
  char op[64];

  /* all_reduce: sum and max. */
  fill(a, count, me, 0);
  check(hcclGoAllReduce(a, b, count, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "all_reduce", comm);
  snprintf(op, sizeof op, "%sall_reduce sum", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += val(r, i);
    expect(op, count, i, b[i], want);
  }
  check(hcclGoAllReduce(a, b, count, hcclGoFloat32, hcclGoMax, 0, comm, 0, NULL), "all_reduce max", comm);
  snprintf(op, sizeof op, "%sall_reduce max", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want = val(r, i) > want ? val(r, i) : want;
    expect(op, count, i, b[i], want);
  }

  /* broadcast from the last rank, in place. */
  fill(a, count, me, 0);
  check(hcclGoBroadcast(a, a, count, hcclGoFloat32, n - 1, comm, 0, NULL), "broadcast", comm);
  snprintf(op, sizeof op, "%sbroadcast", prefix);
  for (size_t i = 0; i < count; i++) expect(op, count, i, a[i], val(n - 1, i));

  /* reduce to rank 0. */
  fill(a, count, me, 0);
  check(hcclGoReduce(a, b, count, hcclGoFloat32, hcclGoSum, 0, 0, comm, 0, NULL), "reduce", comm);
  snprintf(op, sizeof op, "%sreduce", prefix);
  if (me == 0) {
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int r = 0; r < n; r++) want += val(r, i);
      expect(op, count, i, b[i], want);
    }
  }

  /* all_gather: rank r's block is val(r, ...). */
  fill(a, count, me, 0);
  check(hcclGoAllGather(a, b, count, hcclGoFloat32, comm, 0, NULL), "all_gather", comm);
  snprintf(op, sizeof op, "%sall_gather", prefix);
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, i));

  /* reduce_scatter: block j of every rank's input is val(rank, j*count + i). */
  fill(a, big, me, 0);
  check(hcclGoReduceScatter(a, b, count, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "reduce_scatter", comm);
  snprintf(op, sizeof op, "%sreduce_scatter", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += val(r, me * count + i);
    expect(op, count, i, b[i], want);
  }

  /* all_to_all: rank r sends block j = val(r, j*count + i) to rank j. */
  fill(a, big, me, 0);
  check(hcclGoAllToAll(a, b, count, hcclGoFloat32, comm, 0, NULL), "all_to_all", comm);
  snprintf(op, sizeof op, "%sall_to_all", prefix);
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, me * count + i));

  /* gather to rank 1 % n, scatter from rank 0. */
  int groot = 1 % n;
  fill(a, count, me, 0);
  check(hcclGoGather(a, b, count, hcclGoFloat32, groot, comm, 0, NULL), "gather", comm);
  snprintf(op, sizeof op, "%sgather", prefix);
  if (me == groot)
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, i));
  fill(a, big, me, 0);
  check(hcclGoScatter(a, b, count, hcclGoFloat32, 0, comm, 0, NULL), "scatter", comm);
  snprintf(op, sizeof op, "%sscatter", prefix);
  for (size_t i = 0; i < count; i++) expect(op, count, i, b[i], val(0, me * count + i));

  /* A ring of send/recv: each rank sends its block to the next. */
  if (n > 1) {
    hcclGoWork_t ws, wr;
    fill(a, count, me, 0);
    check(hcclGoRecv(b, count, hcclGoFloat32, (me + n - 1) % n, 7, comm, &wr), "recv", comm);
    check(hcclGoSend(a, count, hcclGoFloat32, (me + 1) % n, 7, comm, &ws), "send", comm);
    finish(ws, "send", comm);
    finish(wr, "recv", comm);
    snprintf(op, sizeof op, "%ssend/recv ring", prefix);
    for (size_t i = 0; i < count; i++) expect(op, count, i, b[i], val((me + n - 1) % n, i));
  }
  free(a);
  free(b);
}

static double median(double* v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: scale_rank RANK NRANKS RANKS_PER_HOST DIR\n");
    return 2;
  }
  double t_start = wall();
  rank = atoi(argv[1]);
  nranks = atoi(argv[2]);
  int per_host = atoi(argv[3]);
  const char* dir = argv[4];
  usage_t before = usage();

  /* Host ids, then the listener, then the addresses. */
  char** hosts = calloc(nranks, sizeof(char*));
  char** addrs = calloc(nranks, sizeof(char*));
  for (int i = 0; i < nranks; i++) {
    hosts[i] = calloc(1, 32);
    snprintf(hosts[i], 32, "scale-host-%d", i / per_host);
    addrs[i] = calloc(1, 256);
  }
  hcclGoListener_t l;
  char addr[256], path[512], tmp[512];
  /* Emulated hosts are all this machine: loopback. */
  check(hcclGoListenRank(nranks, rank, (const char* const*)hosts, "127.0.0.1", "listen_addr=127.0.0.1:0", &l, addr,
                         sizeof addr),
        "listen", 0);
  snprintf(tmp, sizeof tmp, "%s/addr-%d.tmp", dir, rank);
  snprintf(path, sizeof path, "%s/addr-%d", dir, rank);
  FILE* f = fopen(tmp, "w");
  fputs(addr, f);
  fclose(f);
  rename(tmp, path);
  for (int i = 0; i < nranks; i++) {
    snprintf(path, sizeof path, "%s/addr-%d", dir, i);
    while ((f = fopen(path, "r")) == NULL) usleep(20000);
    if (fgets(addrs[i], 256, f) == NULL) die("rendezvous", 1, 0);
    fclose(f);
  }
  double t_addrs = wall();
  hcclGoComm_t comm;
  check(hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, (const char* const*)hosts, "scale",
                           "timeout_ms=300000"),
        "init", 0);
  double t_init = wall();
  usage_t after_init = usage();

  /* Every collective, including empty ones where they are allowed. */
  const size_t counts[] = {0, 1, 7, 1031};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) collectives(comm, rank, nranks, counts[k], "");
  check(hcclGoBarrier(comm, 0, NULL), "barrier", comm);
  double t_checked = wall();

  /* A split into halves (even and odd ranks), its first op checked. */
  int half = rank % 2, nhalf = (nranks + 1 - half) / 2;
  int* members = calloc(nhalf, sizeof(int));
  for (int i = 0; i < nhalf; i++) members[i] = half + 2 * i;
  hcclGoComm_t child;
  double t_split0 = wall();
  check(hcclGoCommSplit(comm, nhalf, members, half ? "odd" : "even", NULL, &child), "split", comm);
  collectives(child, rank / 2, nhalf, 7, "split ");
  double t_split = wall() - t_split0;
  usage_t after_split = usage();
  check(hcclGoCommDestroy(child), "destroy split", comm);

  /* A small all_reduce, timed: median of 9 batches of 10. */
  float x[2] = {1, 2};
  double batches[9];
  for (int i = 0; i < 5; i++) check(hcclGoAllReduce(x, x, 2, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "warm", comm);
  for (int b = 0; b < 9; b++) {
    check(hcclGoBarrier(comm, 0, NULL), "barrier", comm);
    double t0 = wall();
    for (int i = 0; i < 10; i++)
      check(hcclGoAllReduce(x, x, 2, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "timed all_reduce", comm);
    batches[b] = (wall() - t0) / 10;
  }
  usage_t end = usage();

  snprintf(tmp, sizeof tmp, "%s/rank-%d.tmp", dir, rank);
  snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank);
  f = fopen(tmp, "w");
  fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"ranks_per_host\": %d, ", rank, nranks, per_host);
  fprintf(f, "\"t_start\": %.6f, \"t_addrs\": %.6f, \"t_init\": %.6f, \"t_checked\": %.6f, ", t_start, t_addrs, t_init,
          t_checked);
  fprintf(f, "\"split_s\": %.6f, \"small_all_reduce_us\": %.2f, ", t_split, median(batches, 9) * 1e6);
  fprintf(f, "\"checks\": %d, \"failed\": %d, \"failures\": \"", nchecks, nfailed);
  for (const char* c = failures; *c; c++) fputc(*c == '"' ? '\'' : *c, f);
  fprintf(f, "\", ");
  usage_json(f, "before", before);
  fprintf(f, ", ");
  usage_json(f, "after_init", after_init);
  fprintf(f, ", ");
  usage_json(f, "after_split", after_split);
  fprintf(f, ", ");
  usage_json(f, "end", end);
  fprintf(f, "}\n");
  fclose(f);
  rename(tmp, path);
  /* Destroy waits for every rank's last op: no rank leaves while a peer
   * still needs its links. */
  check(hcclGoCommDestroy(comm), "destroy", comm);
  return 0;
}
