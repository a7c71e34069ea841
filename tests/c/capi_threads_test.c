/*
 * capi_threads_test: the automatic GOMAXPROCS policy (export/maxprocs.go)
 * as calling threads come and go, through include/hccl_go.h.
 *
 *   capi_threads_test RANK NRANKS RENDEZVOUS_DIR   (run as one rank)
 *
 * With only the main thread calling in, GOMAXPROCS stays at its floor (the
 * value after the communicator's init); with 40 more threads alive that have
 * called in, it is the cap; once they have exited, it comes back down to the
 * floor (after the policy's shrink window). Needs HCCL_GO_MAXPROCS unset.
 * Prints "PASS rank 0" and exits 0 on success.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capi_test_util.h"
#include "hccl_go.h"

#define THREADS 40
#define AUTO_MAXPROCS_CAP 32 /* maxAutoMaxProcs in export/maxprocs.go */
#define SHRINK_DEADLINE_S 30 /* a few of the policy's 1 s shrink windows, with room for a slow machine */

static hcclGoComm_t comm;
static pthread_barrier_t allCalledIn, released;

static int gomaxprocs(void) {
  char info[4096];
  OK(hcclGoCommInfo(comm, info, sizeof info));
  const char* at = strstr(info, "\"gomaxprocs\":");
  CHECK(at != NULL, "no gomaxprocs in %s", info);
  return atoi(at + strlen("\"gomaxprocs\":"));
}

static void allReduceOnce(void) {
  float x = 1;
  hcclGoWork_t w;
  OK(hcclGoAllReduce(&x, &x, 1, hcclGoFloat32, hcclGoSum, 1.0, comm, 0, &w));
  OK(hcclGoWorkWait(w, 30000));
  OK(hcclGoWorkFree(w));
  CHECK(x == 1, "all_reduce of one rank = %g", x);
}

/* Calls in, then stays alive until the main thread has looked. */
static void* caller(void* unused) {
  (void)unused;
  allReduceOnce();
  pthread_barrier_wait(&allCalledIn);
  pthread_barrier_wait(&released);
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: capi_threads_test RANK NRANKS DIR");
  rank_ = atoi(argv[1]);
  CHECK(rank_ == 0 && atoi(argv[2]) == 1, "runs as a job of one rank");
  CHECK(getenv("HCCL_GO_MAXPROCS") == NULL, "needs HCCL_GO_MAXPROCS unset (the automatic policy)");

  hcclGoListener_t l;
  char addr[256];
  OK(hcclGoListen(NULL, &l, addr, sizeof addr));
  char* addrs[1];
  rendezvous(argv[3], 0, 1, addr, addrs);
  OK(hcclGoCommInitRank(&comm, 1, 0, l, (const char* const*)addrs, NULL, "capi-test-secret", "timeout_ms=30000"));

  /* From below: one calling thread, however many calls, keeps the floor. */
  int floor = gomaxprocs();
  CHECK(floor >= 2 && floor <= AUTO_MAXPROCS_CAP, "floor %d", floor);
  for (int i = 0; i < 100; i++) allReduceOnce();
  CHECK(gomaxprocs() == floor, "after 100 calls from one thread: %d, floor %d", gomaxprocs(), floor);
  printf("floor %d\n", floor);

  /* From above: 41 calling threads alive want more than the cap. */
  pthread_t threads[THREADS];
  CHECK(pthread_barrier_init(&allCalledIn, NULL, THREADS + 1) == 0, "barrier");
  CHECK(pthread_barrier_init(&released, NULL, THREADS + 1) == 0, "barrier");
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&threads[i], NULL, caller, NULL) == 0, "pthread_create");
  pthread_barrier_wait(&allCalledIn);
  int many = gomaxprocs();
  pthread_barrier_wait(&released);
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  CHECK(many == AUTO_MAXPROCS_CAP, "with %d threads alive: %d, want the cap %d", THREADS + 1, many, AUTO_MAXPROCS_CAP);
  printf("with %d threads alive: %d\n", THREADS + 1, many);

  /* They have exited (pthread_join returns after their key destructors ran):
   * back to the floor once the policy's shrink windows have passed. */
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int after;
  for (;;) {
    after = gomaxprocs();
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (after == floor) break;
    CHECK(now.tv_sec - start.tv_sec < SHRINK_DEADLINE_S, "%d s after the threads exited: %d, floor %d",
          SHRINK_DEADLINE_S, after, floor);
    usleep(50000);
  }
  printf("after they exited: %d (%ld s)\n", after, (long)(now.tv_sec - start.tv_sec));

  OK(hcclGoCommDestroy(comm));
  free(addrs[0]);
  printf("PASS rank 0\n");
  return 0;
}
