/*
 * capi_streams_test: streams and events through include/hccl_go.h.
 *
 *   capi_streams_test RANK NRANKS RENDEZVOUS_DIR
 *
 * Checks hcclGoCommNumStreams (against HCCL_GO_STREAMS when set), that ops of
 * one stream complete in order, that an op of stream 1 completes while an
 * op of stream 0 is held back, that an op of stream 1 made to wait on an
 * event of stream 0 starts only after it (its input is the stream 0 op's
 * output), and that bad stream indices and handles give clear errors.
 * Prints "PASS rank R" and exits 0 on success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capi_test_util.h"
#include "hccl_go.h"

static void waitWork(hcclGoWork_t w, const char* what) {
  hcclGoResult_t r = hcclGoWorkWait(w, 30000);
  if (r != hcclGoSuccess) {
    char m[1024];
    hcclGoWorkError(w, m, sizeof m);
    CHECK(0, "%s failed: %s: %s", what, hcclGoGetErrorString(r), m);
  }
}

static void expectError(hcclGoResult_t got, hcclGoResult_t want, hcclGoComm_t comm, const char* needle) {
  char m[1024];
  CHECK(got == want, "want %s, got %s", hcclGoGetErrorString(want), hcclGoGetErrorString(got));
  hcclGoGetLastError(comm, m, sizeof m);
  CHECK(strstr(m, needle) != NULL, "error message \"%s\" does not mention \"%s\"", m, needle);
  printf("rank %d: rejected as expected: %s\n", rank_, m);
}

/* In-order check: the callback of op i finds every earlier op of its stream
 * already complete. */
#define NORDER 12
static hcclGoWork_t orderWorks[NORDER];
static volatile int orderFired[NORDER];
static volatile int orderViolation = -1;

static void onOrdered(void* userData, hcclGoWork_t work, hcclGoResult_t status, const char* msg) {
  (void)work;
  (void)msg;
  int i = (int)(intptr_t)userData;
  for (int j = 0; j < i; j++)
    if (hcclGoWorkTest(orderWorks[j]) != hcclGoSuccess) orderViolation = i * 100 + j;
  if (status != hcclGoSuccess) orderViolation = i * 100 + 99;
  orderFired[i] = 1;
}

static void testInOrder(hcclGoComm_t comm, int stream, int nranks) {
  /* Large and small ops mixed, so a small one would finish first if it could. */
  size_t counts[NORDER];
  float* bufs[NORDER];
  for (int i = 0; i < NORDER; i++) {
    counts[i] = (i % 3 == 0) ? (1 << 20) + i : (size_t)(i + 1);
    bufs[i] = malloc(counts[i] * sizeof(float));
    for (size_t k = 0; k < counts[i]; k++) bufs[i][k] = (float)(i + k % 5);
  }
  memset((void*)orderFired, 0, sizeof orderFired);
  orderViolation = -1;
  for (int i = 0; i < NORDER; i++) {
    OK(hcclGoAllReduce(bufs[i], bufs[i], counts[i], hcclGoFloat32, hcclGoSum, 0, comm, stream, &orderWorks[i]));
    OK(hcclGoWorkSetCallback(orderWorks[i], onOrdered, (void*)(intptr_t)i));
  }
  for (int i = 0; i < NORDER; i++) waitWork(orderWorks[i], "in-order all_reduce");
  for (int tries = 0; tries < 2000; tries++) {
    int all = 1;
    for (int i = 0; i < NORDER; i++) all &= orderFired[i];
    if (all) break;
    usleep(1000);
  }
  for (int i = 0; i < NORDER; i++) CHECK(orderFired[i], "callback %d never fired", i);
  CHECK(orderViolation < 0, "stream %d: op %d completed before op %d", stream, orderViolation / 100,
        orderViolation % 100);
  for (int i = 0; i < NORDER; i++) {
    for (size_t k = 0; k < counts[i]; k++)
      CHECK(bufs[i][k] == (float)nranks * (float)(i + k % 5), "op %d [%zu] = %g", i, k, bufs[i][k]);
    OK(hcclGoWorkFree(orderWorks[i]));
    free(bufs[i]);
  }
  printf("rank %d: %d ops on stream %d completed in order\n", rank_, NORDER, stream);
}

/* B's callback: A (the stream 0 op B waits for) must be complete. */
static hcclGoWork_t opA;
static volatile int bSawA = -1;
static void onB(void* userData, hcclGoWork_t work, hcclGoResult_t status, const char* msg) {
  (void)userData;
  (void)work;
  (void)msg;
  bSawA = (status == hcclGoSuccess && hcclGoWorkTest(opA) == hcclGoSuccess);
}

/* Rank 0 holds stream 0 back (it waits for a message rank 1 sends late).
 * Every rank then issues, in one order: A on stream 0 (x -> y), C on
 * stream 1, an event E of stream 0, a wait of stream 1 for E, and B on
 * stream 1 (y -> z). C completes while A is held; B completes after A and
 * reads A's output. */
static void testEventWait(hcclGoComm_t comm, int rank, int nranks) {
  enum { N = 4096 };
  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  float* z = malloc(N * sizeof(float));
  float c = (float)(rank + 1);
  for (int k = 0; k < N; k++) {
    x[k] = (float)(rank + k % 7);
    y[k] = -1e9f; /* B reads this if it starts too early */
  }
  int32_t token = 0;
  hcclGoWork_t recv = 0, hold = 0, opC, event, marker, opB;
  if (rank == 0) {
    OK(hcclGoRecv(&token, 1, hcclGoInt32, 1, 7, comm, &recv));
    OK(hcclGoStreamWaitWork(comm, HCCL_GO_STREAM_DEFAULT, recv, &hold));
  }
  OK(hcclGoAllReduce(x, y, N, hcclGoFloat32, hcclGoSum, 0, comm, 0, &opA));
  OK(hcclGoAllReduce(&c, &c, 1, hcclGoFloat32, hcclGoSum, 0, comm, 1, &opC));
  OK(hcclGoEventRecord(comm, 0, &event));
  OK(hcclGoStreamWaitWork(comm, 1, event, &marker));
  OK(hcclGoAllReduce(y, z, N, hcclGoFloat32, hcclGoSum, 0, comm, 1, &opB));
  OK(hcclGoWorkSetCallback(opB, onB, NULL));

  waitWork(opC, "C on stream 1");
  CHECK(c == (float)(nranks * (nranks + 1) / 2), "C = %g", c);
  if (rank == 0) {
    usleep(50000);
    CHECK(hcclGoWorkTest(opA) == hcclGoInProgress, "A finished while stream 0 was held");
    CHECK(hcclGoWorkTest(event) == hcclGoInProgress, "event done before A");
    CHECK(hcclGoWorkTest(marker) == hcclGoInProgress, "marker done before the event");
    CHECK(hcclGoWorkTest(opB) == hcclGoInProgress, "B finished before A");
    printf("rank 0: C on stream 1 completed while A on stream 0 was held; B waits\n");
  }
  if (rank == 1) {
    usleep(100000);
    int32_t go = 42;
    hcclGoWork_t send;
    OK(hcclGoSend(&go, 1, hcclGoInt32, 0, 7, comm, &send));
    waitWork(send, "send");
    OK(hcclGoWorkFree(send));
  }
  waitWork(opB, "B on stream 1");
  waitWork(marker, "marker");
  waitWork(event, "event");
  waitWork(opA, "A on stream 0");
  for (int tries = 0; bSawA < 0 && tries < 2000; tries++) usleep(1000);
  CHECK(bSawA == 1, "B completed before A (%d)", bSawA);
  float sumx0 = 0; /* sum over ranks of x[k] for k % 7 == 0 */
  for (int r = 0; r < nranks; r++) sumx0 += (float)r;
  for (int k = 0; k < N; k++) {
    float yk = sumx0 + (float)nranks * (float)(k % 7);
    CHECK(y[k] == yk, "y[%d] = %g, want %g", k, y[k], yk);
    CHECK(z[k] == (float)nranks * yk, "z[%d] = %g, want %g: B did not read A's output", k, z[k], (float)nranks * yk);
  }
  if (rank == 0) {
    waitWork(recv, "recv");
    waitWork(hold, "hold");
    CHECK(token == 42, "token %d", token);
    OK(hcclGoWorkFree(recv));
    OK(hcclGoWorkFree(hold));
  }
  OK(hcclGoWorkFree(opA));
  OK(hcclGoWorkFree(opB));
  OK(hcclGoWorkFree(opC));
  OK(hcclGoWorkFree(event));
  OK(hcclGoWorkFree(marker));
  free(x);
  free(y);
  free(z);
}

/* Every other rank sends rank 0 one message under one tag; rank 0 receives them
 * from any source, the first blocking, the rest through work handles, and gets
 * each sender once with its own value. */
static void testRecvAny(hcclGoComm_t comm, int rank, int nranks) {
  enum { TAG = 9 };
  if (rank != 0) {
    int32_t v = rank * 100;
    OK(hcclGoSend(&v, 1, hcclGoInt32, 0, TAG, comm, NULL));
    return;
  }
  int32_t got[64];
  int src[64];
  hcclGoWork_t w[64];
  for (int i = 0; i < nranks - 1; i++) {
    src[i] = -1;
    OK(hcclGoRecvAny(&got[i], 1, hcclGoInt32, TAG, &src[i], comm, i == 0 ? NULL : &w[i]));
  }
  for (int i = 1; i < nranks - 1; i++) {
    waitWork(w[i], "recv from any rank");
    OK(hcclGoWorkFree(w[i]));
  }
  int seen[64] = {0};
  for (int i = 0; i < nranks - 1; i++) {
    CHECK(src[i] >= 1 && src[i] < nranks, "recv from any rank: source %d", src[i]);
    CHECK(got[i] == src[i] * 100, "recv from any rank: %d from rank %d", got[i], src[i]);
    seen[src[i]]++;
  }
  for (int r = 1; r < nranks; r++) CHECK(seen[r] == 1, "rank %d's message received %d times", r, seen[r]);
  int32_t x;
  expectError(hcclGoRecvAny(&x, 1, hcclGoInt32, TAG, NULL, comm, NULL), hcclGoInvalidArgument, comm, "source is NULL");
  printf("rank 0: received from any source the messages of %d ranks\n", nranks - 1);
}

static void testBadInput(hcclGoComm_t comm, int nstreams) {
  hcclGoWork_t e, m;
  OK(hcclGoEventRecord(comm, 0, &e));
  waitWork(e, "event on an idle stream");
  expectError(hcclGoEventRecord(comm, nstreams, &m), hcclGoInvalidArgument, comm, "out of range");
  expectError(hcclGoEventRecord(comm, -1, &m), hcclGoInvalidArgument, comm, "stream -1");
  expectError(hcclGoStreamWaitWork(comm, 99, e, &m), hcclGoInvalidArgument, comm, "stream 99");
  expectError(hcclGoStreamWaitWork(comm, -2, e, &m), hcclGoInvalidArgument, comm, "stream -2");
  expectError(hcclGoEventRecord(comm, 0, NULL), hcclGoInvalidArgument, comm, "event is NULL");
  expectError(hcclGoStreamWaitWork(comm, 1, e, NULL), hcclGoInvalidArgument, comm, "marker is NULL");
  expectError(hcclGoStreamWaitWork(comm, 1, 987654321, &m), hcclGoInvalidUsage, comm, "does not exist");
  expectError(hcclGoCommNumStreams(comm, NULL), hcclGoInvalidArgument, comm, "NULL");
  expectError(hcclGoCommNumStreams(0, &nstreams), hcclGoInvalidUsage, 0, "does not exist");
  float f = 1;
  expectError(hcclGoAllReduce(&f, &f, 1, hcclGoFloat32, hcclGoSum, 0, comm, nstreams, &m), hcclGoInvalidArgument, comm,
              "out of range");
  /* A wait on an already complete work does not hold the stream. */
  OK(hcclGoStreamWaitWork(comm, 1, e, &m));
  waitWork(m, "marker of a complete work");
  OK(hcclGoWorkFree(m));
  OK(hcclGoWorkFree(e));
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: capi_streams_test RANK NRANKS DIR");
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  rank_ = rank;

  hcclGoListener_t l;
  char addr[256];
  OK(hcclGoListen(NULL, &l, addr, sizeof addr));
  char* addrs[64];
  rendezvous(argv[3], rank, nranks, addr, addrs);
  hcclGoComm_t comm;
  OK(hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, NULL, "capi-streams-secret",
                        "timeout_ms=30000"));

  int nstreams = -1;
  OK(hcclGoCommNumStreams(comm, &nstreams));
  const char* want = getenv("HCCL_GO_STREAMS");
  CHECK(nstreams == (want != NULL ? atoi(want) : 2), "%d streams, HCCL_GO_STREAMS=%s", nstreams,
        want != NULL ? want : "(unset)");
  printf("rank %d: %d streams\n", rank, nstreams);

  for (int s = 0; s < nstreams; s++) testInOrder(comm, s, nranks);
  testEventWait(comm, rank, nranks);
  testRecvAny(comm, rank, nranks);
  testBadInput(comm, nstreams);

  hcclGoWork_t w;
  OK(hcclGoBarrier(comm, 0, &w));
  waitWork(w, "barrier");
  OK(hcclGoWorkFree(w));
  OK(hcclGoCommDestroy(comm));
  expectError(hcclGoCommNumStreams(comm, &nstreams), hcclGoInvalidUsage, comm, "does not exist");
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  printf("PASS rank %d\n", rank);
  return 0;
}
