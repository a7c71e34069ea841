/*
 * capi_lane_test: the fast lane through the C API (a blocking all_reduce,
 * NULL work pointer, that fits the arena's inline slots runs in C without
 * entering Go when its stream is idle).
 *
 *   capi_lane_test RANK NRANKS RENDEZVOUS_DIR MODE
 *
 * MODE "results": every dtype and reduce op at sizes 0, 1, odd, a full
 * inline slot, a data half and either side of the lane's limit, in and out
 * of place, gives bitwise the result of the queued
 * path (the same op issued with a work handle) and the same bytes on every
 * rank; simple sums are checked against their known values; ranks that
 * call different ops fail alike and the communicator stays usable; an op
 * issued with a handle before a blocking one is not overtaken; the flight
 * recorder and the stats count every op. Ranks may run with different
 * HCCL_GO_FAST_LANE settings: lane and queued path then meet.
 * MODE "dead-peer": rank 1 leaves without a word while rank 0 waits in a
 * blocking all_reduce, which must fail naming rank 1.
 * MODE "abort": rank 0 aborts its communicator from another thread while
 * it waits in a blocking all_reduce, which must return.
 * Prints "PASS rank R" and exits 0 on success.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capi_test_util.h"
#include "hccl_go.h"

static const size_t dtypeSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 2}; /* hcclGoInt8 .. hcclGoInt16 */
enum { NDTYPES = 12, NOPS = 9 };

static int isFloat(int dt) {
  return dt == hcclGoFloat16 || dt == hcclGoFloat32 || dt == hcclGoFloat64 || dt == hcclGoBfloat16;
}

/* Whether the library accepts (dt, op) (reduce.Check). */
static int validPair(int dt, int op) {
  int bitwise = op == hcclGoBand || op == hcclGoBor || op == hcclGoBxor;
  if (bitwise && isFloat(dt)) return 0;
  if (dt == hcclGoBool && (op == hcclGoAvg || op == hcclGoPremulSum)) return 0;
  return 1;
}

static uint64_t rngState;
static uint64_t rng(void) {
  rngState ^= rngState << 13;
  rngState ^= rngState >> 7;
  rngState ^= rngState << 17;
  return rngState;
}

/* Rank r's input: finite floats of moderate magnitude (products of a few
 * ranks stay finite), any integer bits, bools 0..2. */
static void fillInput(void* buf, int dt, size_t count, int r, int op) {
  rngState = 0x9E3779B97F4A7C15ull ^ ((uint64_t)r << 32) ^ ((uint64_t)dt << 16) ^ ((uint64_t)op << 8) ^ count;
  unsigned char* b = buf;
  for (size_t i = 0; i < count; i++) {
    uint64_t x = rng();
    double v = ((double)(x >> 11) / (double)(1ull << 53)) * 2 - 1;
    if (op == hcclGoProd) v = 1 + v / 8;
    switch (dt) {
      case hcclGoFloat32: {
        float f = (float)v;
        memcpy(b + 4 * i, &f, 4);
        break;
      }
      case hcclGoFloat64:
        memcpy(b + 8 * i, &v, 8);
        break;
      case hcclGoFloat16: { /* sign, exponent 12..17 (2^-3..2^2), mantissa */
        uint16_t h = (uint16_t)((x & 0x8000) | ((12 + (x >> 20) % 6) << 10) | ((x >> 32) & 0x3FF));
        memcpy(b + 2 * i, &h, 2);
        break;
      }
      case hcclGoBfloat16: { /* sign, exponent 124..129, mantissa */
        uint16_t h = (uint16_t)((x & 0x8000) | ((124 + (x >> 20) % 6) << 7) | ((x >> 32) & 0x7F));
        memcpy(b + 2 * i, &h, 2);
        break;
      }
      case hcclGoBool:
        b[i] = (unsigned char)(x % 3);
        break;
      default:
        memcpy(b + dtypeSize[dt] * i, &x, dtypeSize[dt]);
    }
  }
}

static uint64_t fnv(const void* p, size_t n) {
  const unsigned char* b = p;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void waitWork(hcclGoWork_t w) {
  hcclGoResult_t r = hcclGoWorkWait(w, 60000);
  if (r != hcclGoSuccess) {
    char m[1024];
    hcclGoWorkError(w, m, sizeof m);
    CHECK(0, "work failed: %s: %s", hcclGoGetErrorString(r), m);
  }
  OK(hcclGoWorkFree(w));
}

/* Every rank must hold the same h (an all_gather: counted in gathers). */
static long gathers;
static void sameOnEveryRank(hcclGoComm_t comm, int nranks, uint64_t h, const char* what) {
  gathers++;
  uint64_t all[64];
  hcclGoWork_t w;
  OK(hcclGoAllGather(&h, all, 1, hcclGoUint64, comm, HCCL_GO_STREAM_DEFAULT, &w));
  waitWork(w);
  for (int i = 0; i < nranks; i++) CHECK(all[i] == h, "%s: rank %d's result differs from rank %d's", what, i, rank_);
}

static hcclGoComm_t connect(int rank, int nranks, const char* dir, const char* options) {
  hcclGoListener_t l;
  char addr[256];
  OK(hcclGoListen(NULL, &l, addr, sizeof addr));
  char* addrs[64];
  rendezvous(dir, rank, nranks, addr, addrs);
  const char* hosts[64];
  for (int i = 0; i < nranks; i++) hosts[i] = "lane-test-host";
  hcclGoComm_t comm;
  OK(hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, hosts, "lane-test", options));
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  return comm;
}

static int laneExpected(void) {
  const char* v = getenv("HCCL_GO_FAST_LANE");
  return v == NULL || strcmp(v, "0") != 0;
}

static void checkInfo(hcclGoComm_t comm) {
  char info[4096];
  OK(hcclGoCommInfo(comm, info, sizeof info));
  const char* want = laneExpected() ? "\"fast_lane\":\"c\"" : "\"fast_lane\":\"off\"";
  CHECK(strstr(info, want) != NULL, "comm info %s lacks %s", info, want);
}

static void results(int rank, int nranks, hcclGoComm_t comm) {
  checkInfo(comm);
  long allreduces = 0;
  /* Sizes in an inline slot, in a data half, and either side of the lane's
   * limit at the default settings (one-shot's 256 KiB; from 256 KiB on only
   * once the ranks agreed against single-copy, which the first such op does
   * in Go). */
  enum { SLOT = 4096, LIMIT = 256 << 10 };
  unsigned char *in = malloc(LIMIT + 64), *lane = malloc(LIMIT + 64), *queued = malloc(LIMIT + 64);
  for (int dt = 0; dt < NDTYPES; dt++) {
    for (int op = 0; op < NOPS; op++) {
      if (!validPair(dt, op)) continue;
      size_t counts[] = {0,
                         1,
                         7,
                         33,
                         SLOT / dtypeSize[dt],
                         3 * SLOT / dtypeSize[dt] + 1,
                         LIMIT / dtypeSize[dt],
                         LIMIT / dtypeSize[dt] + 1};
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t count = counts[c], n = count * dtypeSize[dt];
        int inPlace = c % 2 == 1;
        fillInput(in, dt, count, rank, op);
        memcpy(lane, in, n);
        hcclGoResult_t r = hcclGoAllReduce(lane, inPlace ? lane : queued, count, dt, op, 0.375, comm, 0, NULL);
        CHECK(r == hcclGoSuccess, "dtype %d op %d count %zu: %s", dt, op, count, hcclGoGetErrorString(r));
        if (!inPlace) memcpy(lane, queued, n);
        hcclGoWork_t w;
        memcpy(queued, in, n);
        OK(hcclGoAllReduce(queued, queued, count, dt, op, 0.375, comm, 0, &w));
        waitWork(w);
        allreduces += 2;
        CHECK(memcmp(lane, queued, n) == 0, "dtype %d op %d count %zu: blocking and queued results differ", dt, op,
              count);
        sameOnEveryRank(comm, nranks, fnv(lane, n), "blocking result");
      }
    }
  }
  /* Known values. */
  float f[3] = {rank + 1, -(float)rank, 0.5f};
  OK(hcclGoAllReduce(f, f, 3, hcclGoFloat32, hcclGoSum, 0, comm, HCCL_GO_STREAM_HIGH_PRIORITY, NULL));
  allreduces++;
  CHECK(f[0] == nranks * (nranks + 1) / 2.0f && f[1] == -nranks * (nranks - 1) / 2.0f && f[2] == 0.5f * nranks,
        "float32 sum %g %g %g", f[0], f[1], f[2]);
  int32_t x = 1 << rank;
  OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoBor, 0, comm, 0, NULL));
  allreduces++;
  CHECK(x == (1 << nranks) - 1, "int32 bor %d", x);

  /* Ranks that call different ops fail alike; the communicator goes on. */
  float m[4] = {0};
  hcclGoResult_t r = hcclGoAllReduce(m, m, rank == 0 ? 2 : 4, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL);
  allreduces++;
  CHECK(r == hcclGoInvalidUsage, "mismatch: %s", hcclGoGetErrorString(r));
  char msg[2048];
  hcclGoGetLastError(comm, msg, sizeof msg);
  CHECK(strstr(msg, "ranks called different collectives") != NULL, "mismatch message: %s", msg);
  x = 1;
  OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoSum, 0, comm, 0, NULL));
  allreduces++;
  CHECK(x == nranks, "after a mismatch: %d", x);

  /* A blocking op does not overtake one queued before it. */
  int32_t a = 1, b = 10;
  hcclGoWork_t w;
  OK(hcclGoAllReduce(&a, &a, 1, hcclGoInt32, hcclGoSum, 0, comm, 0, &w));
  OK(hcclGoAllReduce(&b, &b, 1, hcclGoInt32, hcclGoMax, 0, comm, 0, NULL));
  waitWork(w);
  allreduces += 2;
  CHECK(a == nranks && b == 10, "queued then blocking: a=%d b=%d", a, b);

  /* The flight recorder and the stats saw every op (the all_gathers of
   * sameOnEveryRank are collectives too). */
  char path[512];
  snprintf(path, sizeof path, "%s/trace-rank%d.json", getenv("HCCL_GO_TEST_TMP"), rank);
  OK(hcclGoCommDumpTrace(comm, path));
  FILE* t = fopen(path, "r");
  CHECK(t != NULL, "no trace at %s", path);
  static char trace[1 << 22];
  size_t tn = fread(trace, 1, sizeof trace - 1, t);
  trace[tn] = 0;
  fclose(t);
  char want[128];
  snprintf(want, sizeof want, "\"issued_seq\":%ld", allreduces + gathers);
  CHECK(strstr(trace, want) != NULL, "trace lacks %s", want);
  snprintf(want, sizeof want, "\"last_ended_seq\":%ld", allreduces + gathers);
  CHECK(strstr(trace, want) != NULL, "trace lacks %s", want);
  char stats[8192];
  OK(hcclGoCommStats(comm, stats, sizeof stats));
  snprintf(want, sizeof want, "\"allreduce\":{\"calls\":%ld,", allreduces);
  CHECK(strstr(stats, want) != NULL, "stats %s lack %s", stats, want);
  free(in);
  free(lane);
  free(queued);
}

static void deadPeer(int rank, hcclGoComm_t comm) {
  float x = 1;
  OK(hcclGoAllReduce(&x, &x, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL));
  if (rank == 1) {
    usleep(300000);
    printf("PASS rank %d (leaving without a word)\n", rank);
    fflush(stdout);
    _exit(0);
  }
  hcclGoResult_t r = hcclGoAllReduce(&x, &x, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL);
  char msg[2048];
  hcclGoGetLastError(comm, msg, sizeof msg);
  printf("rank %d: the blocking op failed as expected: %s: %s\n", rank, hcclGoGetErrorString(r), msg);
  CHECK(r == hcclGoRemoteError, "want a remote error, got %s: %s", hcclGoGetErrorString(r), msg);
  CHECK(strstr(msg, "allreduce seq 2") != NULL && strstr(msg, "rank 1") != NULL, "message: %s", msg);
}

static hcclGoComm_t abortComm;
static void* abortLater(void* unused) {
  (void)unused;
  usleep(300000);
  hcclGoCommAbort(abortComm);
  return NULL;
}

static void abortWhileWaiting(int rank, hcclGoComm_t comm) {
  float x = 1;
  OK(hcclGoAllReduce(&x, &x, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL));
  if (rank == 1) {
    usleep(1500000); /* past rank 0's abort: its op is never joined */
    return;
  }
  abortComm = comm;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, abortLater, NULL) == 0, "pthread_create");
  hcclGoResult_t r = hcclGoAllReduce(&x, &x, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL);
  pthread_join(th, NULL);
  char msg[2048];
  hcclGoGetLastError(comm, msg, sizeof msg);
  printf("rank %d: the blocking op ended: %s: %s\n", rank, hcclGoGetErrorString(r), msg);
  CHECK(r == hcclGoAborted, "want aborted, got %s: %s", hcclGoGetErrorString(r), msg);
}

int main(int argc, char** argv) {
  CHECK(argc == 5, "usage: capi_lane_test RANK NRANKS DIR MODE");
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  rank_ = rank;
  const char* mode = argv[4];
  hcclGoComm_t comm = connect(rank, nranks, argv[3], "timeout_ms=60000");
  if (strcmp(mode, "results") == 0) {
    results(rank, nranks, comm);
  } else if (strcmp(mode, "dead-peer") == 0) {
    deadPeer(rank, comm);
  } else if (strcmp(mode, "abort") == 0) {
    abortWhileWaiting(rank, comm);
  } else {
    CHECK(0, "unknown mode %s", mode);
  }
  hcclGoResult_t r = hcclGoCommDestroy(comm);
  CHECK(strcmp(mode, "results") != 0 || r == hcclGoSuccess, "destroy: %s", hcclGoGetErrorString(r));
  printf("PASS rank %d\n", rank);
  return 0;
}
