/*
 * capi_bench: all_reduce through the C API alone (no torch), nccl-tests style.
 *
 *   capi_bench RANK NRANKS RENDEZVOUS_DIR [MIN_BYTES MAX_BYTES FACTOR]
 *
 * Ranks meet through files in RENDEZVOUS_DIR (scripts/capi_bench.sh starts
 * them). For each size: warm-up, then batches of iterations timed between
 * barriers; rank 0 prints the median time per op, algbw and busbw
 * (busbw = algbw * 2(n-1)/n, as nccl-tests defines it for all_reduce), for
 * three ways to call: "handle" (a work handle, hcclGoWorkWait,
 * hcclGoWorkFree), "blocking, queued" (a NULL work pointer: the call
 * returns when the op has completed; on a communicator made with
 * fast_lane=0, so the op is queued like any other) and "blocking" (the
 * same on a default communicator: ops that fit the arena's inline slots
 * take the fast lane). Their batches alternate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hccl_go.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char* what, hcclGoResult_t r) {
  char m[1024];
  hcclGoGetLastError(0, m, sizeof m);
  fprintf(stderr, "%s: %s: %s\n", what, hcclGoGetErrorString(r), m);
  exit(1);
}

static void run(hcclGoResult_t (*issue)(void*, void*, size_t, hcclGoComm_t, hcclGoWork_t*), void* buf, size_t count,
                hcclGoComm_t comm, int blocking) {
  if (blocking) {
    hcclGoResult_t r = issue(buf, buf, count, comm, NULL);
    if (r != hcclGoSuccess) die("blocking call", r);
    return;
  }
  hcclGoWork_t w;
  hcclGoResult_t r = issue(buf, buf, count, comm, &w);
  if (r != hcclGoSuccess) die("issue", r);
  r = hcclGoWorkWait(w, -1);
  if (r != hcclGoSuccess) die("wait", r);
  hcclGoWorkFree(w);
}

static hcclGoResult_t allreduce(void* s, void* d, size_t n, hcclGoComm_t c, hcclGoWork_t* w) {
  return hcclGoAllReduce(s, d, n, hcclGoFloat32, hcclGoSum, 0, c, HCCL_GO_STREAM_DEFAULT, w);
}

static void barrier(hcclGoComm_t comm) {
  hcclGoWork_t w;
  if (hcclGoBarrier(comm, 0, &w) != hcclGoSuccess || hcclGoWorkWait(w, -1) != hcclGoSuccess) die("barrier", 1);
  hcclGoWorkFree(w);
}

static int cmpd(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* connect joins the job's communicator number `which`, made with options
 * (NULL: the defaults), meeting the other ranks through files in dir. */
static hcclGoComm_t connect(int rank, int nranks, const char* dir, int which, const char* options) {
  hcclGoListener_t l;
  char addr[256], path[512], tmp[512];
  if (hcclGoListen(NULL, &l, addr, sizeof addr) != hcclGoSuccess) die("listen", 1);
  snprintf(tmp, sizeof tmp, "%s/%d-%d.tmp", dir, which, rank);
  snprintf(path, sizeof path, "%s/%d-%d.addr", dir, which, rank);
  FILE* f = fopen(tmp, "w");
  fputs(addr, f);
  fclose(f);
  rename(tmp, path);
  char* addrs[64];
  char* hosts[64];
  for (int i = 0; i < nranks; i++) {
    addrs[i] = calloc(1, 256);
    hosts[i] = "bench-host";  // one host: shared memory
    snprintf(path, sizeof path, "%s/%d-%d.addr", dir, which, i);
    while ((f = fopen(path, "r")) == NULL) usleep(10000);
    if (fgets(addrs[i], 256, f) == NULL) die("rendezvous", 1);
    fclose(f);
  }
  hcclGoComm_t comm;
  hcclGoResult_t r = hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, (const char* const*)hosts,
                                        "bench", options);
  if (r != hcclGoSuccess) die("init", r);
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  return comm;
}

enum { HANDLE, QUEUED, LANE, MODES };

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: capi_bench RANK NRANKS DIR [MIN MAX FACTOR]\n");
    return 2;
  }
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  size_t minB = argc > 4 ? strtoull(argv[4], 0, 10) : 8, maxB = argc > 5 ? strtoull(argv[5], 0, 10) : 512u << 20;
  int factor = argc > 6 ? atoi(argv[6]) : 4;

  hcclGoComm_t comm = connect(rank, nranks, argv[3], 0, NULL);
  hcclGoComm_t queued = connect(rank, nranks, argv[3], 1, "fast_lane=0");
  hcclGoComm_t on[MODES] = {comm, queued, comm};
  if (rank == 0) {
    char info[2048];
    hcclGoCommInfo(comm, info, sizeof info);
    printf("# %s\n", info);
    printf("# %12s %12s %8s %24s %24s %24s\n", "", "", "", "handle + wait", "blocking, queued", "blocking");
    printf("# %12s %12s %8s", "size(B)", "count", "type");
    for (int m = 0; m < MODES; m++) printf(" %10s %6s %6s", "time(us)", "algbw", "busbw");
    printf("\n");
  }
  void* buf = malloc(maxB);
  memset(buf, 0, maxB);
  for (size_t bytes = minB; bytes <= maxB; bytes *= factor) {
    size_t count = bytes / 4;
    // Iterations per batch: about 20 ms of work, at least 1.
    double t0 = now();
    for (int i = 0; i < 3; i++) run(allreduce, buf, count, comm, i % 2);
    double est = (now() - t0) / 3;
    int iters = est > 0 ? (int)(0.02 / est) : 1000;
    if (iters < 1) iters = 1;
    if (iters > 20000) iters = 20000;
    // Every rank must run the same number: take rank 0's via a broadcast.
    int32_t it32 = iters;
    hcclGoWork_t w;
    if (hcclGoBroadcast(&it32, &it32, 1, hcclGoInt32, 0, comm, 0, &w) != hcclGoSuccess ||
        hcclGoWorkWait(w, -1) != hcclGoSuccess)
      die("broadcast", 1);
    hcclGoWorkFree(w);
    iters = it32;
    double times[MODES][7];
    for (int b = 0; b < 7; b++) {
      for (int k = 0; k < MODES; k++) {
        int mode = (b + k) % MODES;  // each mode goes first in turn
        barrier(on[mode]);
        for (int i = 0; i < 3; i++) run(allreduce, buf, count, on[mode], mode != HANDLE);  // back from the other comm
        t0 = now();
        for (int i = 0; i < iters; i++) run(allreduce, buf, count, on[mode], mode != HANDLE);
        times[mode][b] = (now() - t0) / iters;
      }
    }
    if (rank == 0) printf("  %12zu %12zu %8s", bytes, count, "float32");
    for (int mode = 0; mode < MODES; mode++) {
      qsort(times[mode], 7, sizeof times[mode][0], cmpd);
      double t = times[mode][3];
      double algbw = bytes / t / 1e9, busbw = algbw * 2.0 * (nranks - 1) / nranks;
      if (rank == 0) printf(" %10.2f %6.2f %6.2f", t * 1e6, algbw, busbw);
    }
    if (rank == 0) printf("\n");
    fflush(stdout);
  }
  hcclGoCommDestroy(queued);
  hcclGoCommDestroy(comm);
  return 0;
}
