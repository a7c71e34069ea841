/*
 * capi_test: one rank of a job driven only through include/hccl_go.h.
 *
 *   capi_test RANK NRANKS RENDEZVOUS_DIR
 *
 * Ranks find each other through files in RENDEZVOUS_DIR (each writes its
 * listen address to RANK.addr), then check all_reduce (in and out of place,
 * several dtypes and ops), all_gather, a callback, and that bad input yields
 * clear error codes and messages rather than crashes. Prints "PASS rank R"
 * and exits 0 on success; prints the failed check and exits 1 otherwise.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capi_test_util.h"
#include "hccl_go.h"

static volatile int callbackStatus = -1;
static void onDone(void* userData, hcclGoWork_t work, hcclGoResult_t status, const char* msg) {
  (void)work;
  (void)msg;
  *(int*)userData = 1;
  callbackStatus = status;
}

/* Runs an op's work to completion and frees it. */
/* waitOnly waits for w to succeed; waitWork also frees it. */
static void waitOnly(hcclGoWork_t w) {
  hcclGoResult_t r = hcclGoWorkWait(w, 30000);
  if (r != hcclGoSuccess) {
    char m[1024];
    hcclGoWorkError(w, m, sizeof m);
    CHECK(0, "work failed: %s: %s", hcclGoGetErrorString(r), m);
  }
}

static void waitWork(hcclGoWork_t w) {
  waitOnly(w);
  OK(hcclGoWorkFree(w));
}

static void expectError(hcclGoResult_t got, hcclGoResult_t want, hcclGoComm_t comm, const char* needle) {
  char m[1024];
  CHECK(got == want, "want %s, got %s", hcclGoGetErrorString(want), hcclGoGetErrorString(got));
  hcclGoGetLastError(comm, m, sizeof m);
  CHECK(strstr(m, needle) != NULL, "error message \"%s\" does not mention \"%s\"", m, needle);
  printf("rank %d: rejected as expected: %s\n", rank_, m);
}

int main(int argc, char** argv) {
  CHECK(argc == 4, "usage: capi_test RANK NRANKS DIR");
  int rank = atoi(argv[1]), nranks = atoi(argv[2]);
  rank_ = rank;

  int version = 0;
  OK(hcclGoGetVersion(&version));
  CHECK(version == HCCL_GO_VERSION_CODE, "version %d", version);

  hcclGoListener_t l;
  char addr[256];
  OK(hcclGoListen(NULL, &l, addr, sizeof addr));
  char* addrs[64];
  rendezvous(argv[3], rank, nranks, addr, addrs);

  /* How this run authenticates (CAPI_TEST_AUTH, set by tests/go/capi): an explicit secret (default), the
   * launcher's HCCL_GO_JOB_SECRET with a NULL secret ("env"), or none at all ("none"). */
  const char* auth = getenv("CAPI_TEST_AUTH");
  const char* secret = "capi-test-secret";
  const char* initOptions = "timeout_ms=30000";
  if (auth != NULL && strcmp(auth, "env") == 0) {
    secret = NULL;
  } else if (auth != NULL && strcmp(auth, "none") == 0) {
    secret = NULL;
    initOptions = "timeout_ms=30000;auth=none";
  }
  hcclGoComm_t comm;
  OK(hcclGoCommInitRank(&comm, nranks, rank, l, (const char* const*)addrs, NULL, secret, initOptions));
  int n = -1, r = -1;
  OK(hcclGoCommCount(comm, &n));
  OK(hcclGoCommUserRank(comm, &r));
  CHECK(n == nranks && r == rank, "count %d rank %d", n, r);

  /* all_reduce float32 SUM, out of place, over sizes around the world size. */
  size_t sizes[] = {0, 1, 7, 1000, (1 << 20) + 3};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t count = sizes[s];
    float* in = malloc((count + 1) * sizeof(float));
    float* out = malloc((count + 1) * sizeof(float));
    for (size_t i = 0; i < count; i++) in[i] = (float)(rank + 1) * (float)(i % 97);
    hcclGoWork_t w;
    OK(hcclGoAllReduce(in, out, count, hcclGoFloat32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, &w));
    waitWork(w);
    float factor = nranks * (nranks + 1) / 2.0f;
    for (size_t i = 0; i < count; i++)
      CHECK(out[i] == factor * (float)(i % 97), "allreduce count %zu [%zu] = %g", count, i, out[i]);
    free(in);
    free(out);
  }

  /* In place: int64 MAX and int32 BXOR, with a completion callback. */
  {
    int64_t v[5];
    for (int i = 0; i < 5; i++) v[i] = rank * 10 + i;
    hcclGoWork_t w;
    OK(hcclGoAllReduce(v, v, 5, hcclGoInt64, hcclGoMax, 0, comm, HCCL_GO_STREAM_DEFAULT, &w));
    int fired = 0;
    OK(hcclGoWorkSetCallback(w, onDone, &fired));
    waitWork(w);
    for (int tries = 0; !fired && tries < 1000; tries++) usleep(1000);
    CHECK(fired && callbackStatus == hcclGoSuccess, "callback fired=%d status=%d", fired, callbackStatus);
    for (int i = 0; i < 5; i++) CHECK(v[i] == (nranks - 1) * 10 + i, "max[%d] = %lld", i, (long long)v[i]);

    int32_t x = 1 << rank;
    OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoBxor, 0, comm, HCCL_GO_STREAM_DEFAULT, &w));
    waitWork(w);
    CHECK(x == (1 << nranks) - 1, "bxor = %d", x);

    /* Started (followed by a callback, not a wait): it completes by itself. */
    fired = 0;
    x = 1;
    OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, &w));
    OK(hcclGoWorkSetCallback(w, onDone, &fired));
    OK(hcclGoWorkStart(w));
    for (int tries = 0; !fired && tries < 10000; tries++) usleep(1000);
    CHECK(fired && callbackStatus == hcclGoSuccess && x == nranks, "started op: fired=%d x=%d", fired, x);
    OK(hcclGoWorkStart(w)); /* harmless once done */
    OK(hcclGoWorkFree(w));
  }

  /* A split of every rank in reverse order: child rank = nranks-1-rank, its
   * ops apart from the parent's; a member list that is not this rank's own
   * fails at once. */
  {
    int ranks[64];
    for (int i = 0; i < nranks; i++) ranks[i] = nranks - 1 - i;
    hcclGoComm_t child;
    OK(hcclGoCommSplit(comm, nranks, ranks, "reversed", "timeout_ms=30000", &child));
    int cr = -1;
    OK(hcclGoCommUserRank(child, &cr));
    CHECK(cr == nranks - 1 - rank, "split rank %d", cr);
    int32_t x = cr;
    OK(hcclGoBroadcast(&x, &x, 1, hcclGoInt32, 0, child, HCCL_GO_STREAM_DEFAULT, NULL));
    CHECK(x == 0, "broadcast from split rank 0 = %d", x);
    x = rank + 1;
    OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoSum, 0, child, HCCL_GO_STREAM_DEFAULT, NULL));
    CHECK(x == nranks * (nranks + 1) / 2, "split allreduce = %d", x);
    OK(hcclGoCommDestroy(child));
    int other = (rank + 1) % nranks;
    hcclGoComm_t bad = 0;
    if (nranks > 1) {
      expectError(hcclGoCommSplit(comm, 1, &other, "bad", NULL, &bad), hcclGoInvalidArgument, comm,
                  "include this rank");
    }
  }

  /* Blocking: with a NULL work pointer the call returns once the op has
   * completed, also when it queues behind an op issued with a handle. */
  {
    int32_t x = rank + 1;
    OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, NULL));
    CHECK(x == nranks * (nranks + 1) / 2, "blocking allreduce = %d", x);
    int32_t y = 1;
    hcclGoWork_t w;
    OK(hcclGoAllReduce(&y, &y, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, &w));
    x = 2;
    OK(hcclGoAllReduce(&x, &x, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, NULL));
    CHECK(x == 2 * nranks, "blocking allreduce behind another = %d", x);
    waitWork(w);
    CHECK(y == nranks, "the op before the blocking one = %d", y);
    double d[3] = {rank == 0 ? 1.5 : 0, rank == 0 ? -2 : 0, rank == 0 ? 7 : 0};
    OK(hcclGoBroadcast(d, d, 3, hcclGoFloat64, 0, comm, HCCL_GO_STREAM_DEFAULT, NULL));
    CHECK(d[0] == 1.5 && d[1] == -2 && d[2] == 7, "blocking broadcast %g %g %g", d[0], d[1], d[2]);
  }

  /* Driven: run here when next on the stream (completes before returning,
   * callback on this thread), else started on a library thread. */
  {
    int fired = 0;
    int32_t a = 1, b = 2;
    hcclGoWork_t wa, wb;
    OK(hcclGoAllReduce(&a, &a, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, &wa));
    OK(hcclGoAllReduce(&b, &b, 1, hcclGoInt32, hcclGoSum, 0, comm, HCCL_GO_STREAM_DEFAULT, &wb));
    OK(hcclGoWorkSetCallback(wb, onDone, &fired));
    /* wb queues behind wa: it cannot run here, so it is started instead. */
    hcclGoResult_t r = hcclGoWorkDrive(wb);
    CHECK(r == hcclGoInProgress || (r == hcclGoSuccess && fired), "drive behind another op: %d", (int)r);
    /* Next on its stream: runs here, unless a library thread took it first
     * (its grace ran out on a slow machine). */
    r = hcclGoWorkDrive(wa);
    CHECK(r == hcclGoSuccess || r == hcclGoInProgress, "drive: %d", (int)r);
    if (r == hcclGoInProgress) waitOnly(wa); /* freed below, as on the fast path */
    CHECK(a == nranks, "driven op: a=%d", a);
    for (int tries = 0; !fired && tries < 10000; tries++) usleep(1000);
    CHECK(fired && callbackStatus == hcclGoSuccess && b == 2 * nranks, "started op: fired=%d b=%d", fired, b);
    OK(hcclGoWorkDrive(wb)); /* harmless once done */
    OK(hcclGoWorkFree(wa));
    OK(hcclGoWorkFree(wb));
    expectError(hcclGoWorkDrive(123456789), hcclGoInvalidUsage, 0, "work");
  }

  /* all_gather of 3 doubles per rank. */
  {
    double mine[3] = {rank, rank + 0.5, -rank};
    double* all = calloc(3 * nranks, sizeof(double));
    hcclGoWork_t w;
    OK(hcclGoAllGather(mine, all, 3, hcclGoFloat64, comm, HCCL_GO_STREAM_DEFAULT, &w));
    waitWork(w);
    for (int i = 0; i < nranks; i++)
      CHECK(all[3 * i] == i && all[3 * i + 1] == i + 0.5 && all[3 * i + 2] == -i, "allgather block %d", i);
    free(all);
  }

  /* Bad input: clear codes and messages, no crash, and the comm still works. */
  {
    hcclGoWork_t w;
    float f[4] = {0};
    expectError(hcclGoAllReduce(NULL, f, 4, hcclGoFloat32, hcclGoSum, 0, comm, 0, &w), hcclGoInvalidArgument, comm,
                "NULL");
    expectError(hcclGoAllReduce(f, f, 4, (hcclGoDataType_t)99, hcclGoSum, 0, comm, 0, &w), hcclGoInvalidArgument, comm,
                "dtype");
    expectError(hcclGoAllReduce(f, f, 4, hcclGoFloat32, (hcclGoRedOp_t)42, 0, comm, 0, &w), hcclGoInvalidArgument, comm,
                "op");
    expectError(hcclGoAllReduce(f, f, 4, hcclGoFloat32, hcclGoBxor, 0, comm, 0, &w), hcclGoInvalidArgument, comm,
                "bxor");
    expectError(hcclGoBroadcast(f, f, 4, hcclGoFloat32, nranks + 3, comm, 0, &w), hcclGoInvalidArgument, comm, "root");
    expectError(hcclGoSend(f, 4, hcclGoFloat32, -1, 0, comm, &w), hcclGoInvalidArgument, comm, "peer");
    /* A blocking call (NULL work) refuses bad input the same way. */
    expectError(hcclGoAllReduce(f, f, 4, (hcclGoDataType_t)99, hcclGoSum, 0, comm, 0, NULL), hcclGoInvalidArgument,
                comm, "dtype");
    expectError(hcclGoWorkWait(123456789, 10), hcclGoInvalidUsage, 0, "work");
    expectError(hcclGoWorkStart(123456789), hcclGoInvalidUsage, 0, "work");
    hcclGoComm_t bad;
    hcclGoListener_t l2;
    char a2[256];
    /* Each refused init consumes its listener, as a successful one does. */
    OK(hcclGoListen(NULL, &l2, a2, sizeof a2));
    expectError(hcclGoCommInitRank(&bad, nranks, nranks + 1, l2, (const char* const*)addrs, NULL, "s", NULL),
                hcclGoInvalidArgument, 0, "rank");
    expectError(hcclGoListenerClose(l2), hcclGoInvalidUsage, 0, "listener");
    /* Without a secret from anywhere (the communicator is idle: nothing else reads the environment now). */
    char* envSecret = getenv("HCCL_GO_JOB_SECRET") ? strdup(getenv("HCCL_GO_JOB_SECRET")) : NULL;
    unsetenv("HCCL_GO_JOB_SECRET");
    OK(hcclGoListen(NULL, &l2, a2, sizeof a2));
    expectError(hcclGoCommInitRank(&bad, nranks, rank, l2, (const char* const*)addrs, NULL, "", NULL),
                hcclGoInvalidArgument, 0, "auth=none");
    OK(hcclGoListen(NULL, &l2, a2, sizeof a2));
    expectError(hcclGoCommInitRank(&bad, nranks, rank, l2, (const char* const*)addrs, NULL, NULL, NULL),
                hcclGoInvalidArgument, 0, "HCCL_GO_JOB_SECRET");
    OK(hcclGoListen(NULL, &l2, a2, sizeof a2));
    expectError(hcclGoCommInitRank(&bad, nranks, rank, l2, (const char* const*)addrs, NULL, "s", "auth=none"),
                hcclGoInvalidArgument, 0, "one or the other");
    OK(hcclGoListen(NULL, &l2, a2, sizeof a2));
    expectError(hcclGoCommInitRank(&bad, nranks, rank, l2, (const char* const*)addrs, NULL, NULL, "auth=maybe"),
                hcclGoInvalidArgument, 0, "auth");
    if (envSecret != NULL) {
      setenv("HCCL_GO_JOB_SECRET", envSecret, 1);
      free(envSecret);
    }
    /* hcclGoListenRank: ranks that share a host listen on loopback; a bad setting is refused. */
    const char* oneHost[64];
    for (int i = 0; i < nranks; i++) oneHost[i] = "one-host";
    OK(hcclGoListenRank(nranks, rank, oneHost, "127.0.0.1", NULL, &l2, a2, sizeof a2));
    CHECK(strncmp(a2, "127.0.0.1:", 10) == 0, "hcclGoListenRank on one host: %s", a2);
    OK(hcclGoListenerClose(l2));
    expectError(hcclGoListenRank(nranks, rank, oneHost, NULL, "listen_addr=nowhere", &l2, a2, sizeof a2),
                hcclGoInvalidArgument, 0, "listen_addr");

    float one = 1;
    OK(hcclGoAllReduce(&one, &one, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, &w));
    waitWork(w);
    CHECK(one == nranks, "allreduce after errors = %g", one);
  }

  hcclGoWork_t w;
  OK(hcclGoBarrier(comm, 0, &w));
  waitWork(w);
  OK(hcclGoCommDestroy(comm));
  {
    float f = 0;
    expectError(hcclGoAllReduce(&f, &f, 1, hcclGoFloat32, hcclGoSum, 0, comm, 0, &w), hcclGoInvalidUsage, comm,
                "does not exist");
    expectError(hcclGoCommDestroy(comm), hcclGoInvalidUsage, comm, "does not exist");
  }
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  printf("PASS rank %d\n", rank);
  return 0;
}
