/*
 * capi_symm_test: symmetric memory through include/hccl_go.h.
 *
 *   capi_symm_test RANK NRANKS RENDEZVOUS_DIR
 *
 * Allocates symmetric memory, writes the next rank's region through its
 * peer pointer, puts into it with an element offset and signals it, checks
 * what arrived from the previous rank, reads it back with hcclGoGet, and
 * checks the errors of bad ranks, bounds, handles and double frees (nothing
 * written), and that the memory outlives the communicator. Prints
 * "PASS rank R" and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_test_util.h"
#include "hccl_go.h"

enum { N = 1024 }; /* int32 elements per rank */

static void expectError(hcclGoResult_t got, hcclGoResult_t want, const char* needle) {
  char m[1024];
  CHECK(got == want, "want %s, got %s", hcclGoGetErrorString(want), hcclGoGetErrorString(got));
  hcclGoGetLastError(0, m, sizeof m);
  CHECK(strstr(m, needle) != NULL, "error message \"%s\" does not mention \"%s\"", m, needle);
  printf("rank %d: rejected as expected: %s\n", rank_, m);
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: capi_symm_test RANK NRANKS DIR");
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  rank_ = rank;
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

  hcclGoListener_t l;
  char addr[256];
  OK(hcclGoListen(NULL, &l, addr, sizeof addr));
  char* addrs[64];
  rendezvous(argv[3], rank, nranks, addr, addrs);
  hcclGoComm_t comm;
  OK(hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, NULL, "capi-symm-secret",
                        "timeout_ms=30000"));

  int32_t* mine = NULL;
  OK(hcclGoMemAlloc(comm, N * sizeof(int32_t), (void**)&mine));
  CHECK(mine != NULL && ((uintptr_t)mine & 4095) == 0, "allocation %p not page aligned", (void*)mine);
  for (int i = 0; i < N; i++) CHECK(mine[i] == 0, "not zero-filled at %d", i);
  hcclGoWindow_t win;
  OK(hcclGoWindowCreate(comm, mine, &win));
  OK(hcclGoWindowBarrier(win, -1)); /* every rank checked its zeros before anyone writes */

  /* Stores through the peer pointer. */
  int32_t* peer = NULL;
  size_t size = 0;
  OK(hcclGoWindowPeerPtr(win, next, (void**)&peer, &size));
  CHECK(size == N * sizeof(int32_t), "peer region of %zu bytes", size);
  peer[0] = 1000 + rank;
  OK(hcclGoWindowBarrier(win, -1));
  CHECK(mine[0] == 1000 + prev, "mine[0] = %d, want %d", mine[0], 1000 + prev);

  /* Put with an element offset, then signal. */
  int32_t block[16];
  for (int i = 0; i < 16; i++) block[i] = rank * 100 + i;
  OK(hcclGoPut(block, 16, hcclGoInt32, next, 8, win));
  OK(hcclGoSignal(win, next));
  OK(hcclGoWaitSignal(win, prev, 10000));
  for (int i = 0; i < 16; i++) CHECK(mine[8 + i] == prev * 100 + i, "mine[%d] = %d", 8 + i, mine[8 + i]);
  OK(hcclGoWindowBarrier(win, -1));
  int32_t back[16];
  OK(hcclGoGet(back, 16, hcclGoInt32, next, 8, win));
  for (int i = 0; i < 16; i++) CHECK(back[i] == rank * 100 + i, "back[%d] = %d", i, back[i]);
  OK(hcclGoWindowBarrier(win, -1));

  /* Bad input: clear errors, nothing written. */
  int32_t snapshot[N];
  memcpy(snapshot, peer, sizeof snapshot);
  expectError(hcclGoPut(block, 16, hcclGoInt32, next, N - 8, win), hcclGoInvalidArgument, "outside the region");
  expectError(hcclGoPut(block, 2, hcclGoInt64, next, N / 2 - 1, win), hcclGoInvalidArgument, "outside the region");
  expectError(hcclGoGet(back, 1, hcclGoInt32, next, N, win), hcclGoInvalidArgument, "outside the region");
  expectError(hcclGoPut(block, 1, hcclGoInt32, nranks, 0, win), hcclGoInvalidArgument, "out of range");
  expectError(hcclGoPut(NULL, 1, hcclGoInt32, next, 0, win), hcclGoInvalidArgument, "NULL");
  expectError(hcclGoPut(block, 1, (hcclGoDataType_t)99, next, 0, win), hcclGoInvalidArgument, "dtype");
  expectError(hcclGoSignal(win, -1), hcclGoInvalidArgument, "out of range");
  expectError(hcclGoWaitSignal(win, prev, 50), hcclGoTimeout, "timed out");
  expectError(hcclGoWindowPeerPtr(win, next, NULL, NULL), hcclGoInvalidArgument, "NULL");
  expectError(hcclGoWindowCreate(comm, mine + 1, &win), hcclGoInvalidArgument, "not the address");
  expectError(hcclGoMemFree(block), hcclGoInvalidUsage, "not memory from hcclGoMemAlloc");
  expectError(hcclGoSignal(win + 1000, next), hcclGoInvalidUsage, "does not exist");
  CHECK(memcmp(snapshot, peer, sizeof snapshot) == 0, "a refused call wrote the peer's region");
  CHECK(hcclGoMemFree(NULL) == hcclGoSuccess, "hcclGoMemFree(NULL)");
  OK(hcclGoWindowBarrier(win, -1));

  /* The memory outlives the communicator; the window keeps it after hcclGoMemFree. */
  OK(hcclGoCommDestroy(comm));
  OK(hcclGoMemFree(mine));
  expectError(hcclGoMemFree(mine), hcclGoInvalidUsage, "freed already");
  OK(hcclGoPut(block, 1, hcclGoInt32, next, 0, win));
  mine[1] = 7; /* still mapped */
  OK(hcclGoWindowDestroy(win));
  expectError(hcclGoWindowDestroy(win), hcclGoInvalidUsage, "does not exist");
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  printf("PASS rank %d\n", rank);
  return 0;
}
