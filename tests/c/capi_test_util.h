/*
 * capi_test_util.h: what the C API tests share: CHECK and OK (fail the rank
 * with the library's message), and a rendezvous through files (each rank
 * writes its listen address to DIR/RANK.addr and reads everyone's).
 * Include once, in a test's only source file; it sets rank_ for messages.
 */
#ifndef HCCL_GO_CAPI_TEST_UTIL_H
#define HCCL_GO_CAPI_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hccl_go.h"

static int rank_ = -1;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "FAIL rank %d line %d: ", rank_, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
      exit(1);                                                    \
    }                                                             \
  } while (0)

#define OK(call)                                                     \
  do {                                                               \
    hcclGoResult_t r_ = (call);                                      \
    if (r_ != hcclGoSuccess) {                                       \
      char m_[1024];                                                 \
      hcclGoGetLastError(0, m_, sizeof m_);                          \
      CHECK(0, "%s -> %s: %s", #call, hcclGoGetErrorString(r_), m_); \
    }                                                                \
  } while (0)

static void rendezvous(const char* dir, int rank, int nranks, const char* myAddr, char** addrs) {
  char path[512], tmp[512];
  snprintf(tmp, sizeof tmp, "%s/%d.tmp", dir, rank);
  snprintf(path, sizeof path, "%s/%d.addr", dir, rank);
  FILE* f = fopen(tmp, "w");
  CHECK(f != NULL, "cannot write %s", tmp);
  fputs(myAddr, f);
  fclose(f);
  CHECK(rename(tmp, path) == 0, "rename %s", path);
  for (int i = 0; i < nranks; i++) {
    snprintf(path, sizeof path, "%s/%d.addr", dir, i);
    addrs[i] = calloc(1, 256);
    for (int tries = 0;; tries++) {
      f = fopen(path, "r");
      if (f != NULL) break;
      CHECK(tries < 3000, "rank %d never published its address", i);
      usleep(10000);
    }
    CHECK(fgets(addrs[i], 256, f) != NULL, "empty address file %s", path);
    fclose(f);
  }
}

#endif
