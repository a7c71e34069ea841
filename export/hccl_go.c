// The public C entry points of include/hccl_go.h. Each one enters through
// HCCL_GO_ENTER: it refuses to run in a forked child (where the Go runtime's
// threads no longer exist and any call into Go could hang), counts the
// calling thread (maxprocs.go), and keeps its Go processor in order
// (processor.go); then it hands over to its go* implementation in capi_*.go.
#include "hccl_go.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_cgo_export.h"
#include "lane.h"

// What makes an entry point leave its fast path, one bit each, so that every
// call tests both with one load: the process is a child forked after the
// library loaded, or a counted thread has exited since Go last looked.
enum { HCCL_GO_FORKED = 1, HCCL_GO_THREAD_EXITED = 2 };
static int hccl_go_attention;

static const char hccl_go_fork_msg[] =
    "hccl_go: the library cannot be used in a process forked after it was loaded "
    "(the Go runtime does not survive fork), neither with its parent's communicators nor "
    "with new ones; start ranks as fresh processes (torchrun, or the spawn or forkserver "
    "start method)";

static void hccl_go_atfork_child(void) { __atomic_fetch_or(&hccl_go_attention, HCCL_GO_FORKED, __ATOMIC_RELAXED); }

static int hccl_go_forked(void) { return __atomic_load_n(&hccl_go_attention, __ATOMIC_RELAXED) & HCCL_GO_FORKED; }

// Calling threads (maxprocs.go): a thread is counted on its first call and
// uncounted by the destructor of hccl_go_thread_key when it exits. The
// destructor only touches C atomics: it may run after Go's own thread-exit
// destructor has released the thread's Go state (runtime.dropm), so calling
// into Go from it could bind the exiting thread to Go again. Go hears of the
// exit at the next call into the library (HCCL_GO_THREAD_EXITED).
static int hccl_go_live_threads;
static pthread_key_t hccl_go_thread_key;
static __thread int hccl_go_thread_counted;

static void hccl_go_thread_exit(void* unused) {
  (void)unused;
  __atomic_fetch_sub(&hccl_go_live_threads, 1, __ATOMIC_RELAXED);
  __atomic_fetch_or(&hccl_go_attention, HCCL_GO_THREAD_EXITED, __ATOMIC_RELEASE);
}

// hccl_go_threads_alive is the number of calling threads alive (for Go).
__attribute__((visibility("hidden"))) int hccl_go_threads_alive(void) {
  return __atomic_load_n(&hccl_go_live_threads, __ATOMIC_ACQUIRE);
}

static void hccl_go_count_thread(void) {
  hccl_go_thread_counted = 1;
  // Without the key's value the thread stays counted when it exits, as if
  // it lived on: GOMAXPROCS is then only higher than needed.
  pthread_setspecific(hccl_go_thread_key, (void*)1);
  __atomic_fetch_add(&hccl_go_live_threads, 1, __ATOMIC_RELEASE);
  goThreadEntered();
}

static void hccl_go_notice_exits(void) {
  int was = __atomic_fetch_and(&hccl_go_attention, ~HCCL_GO_THREAD_EXITED, __ATOMIC_ACQUIRE);
  if (was & HCCL_GO_THREAD_EXITED) goThreadsExited();
}

__attribute__((constructor)) static void hccl_go_init_entry(void) {
  pthread_atfork(NULL, NULL, hccl_go_atfork_child);
  // Failure (no keys left) leaves threads counted until the process ends.
  pthread_key_create(&hccl_go_thread_key, hccl_go_thread_exit);
}

// The processor refresh of processor.go: nanoseconds between refreshes of a
// calling thread's Go processor (HCCL_GO_REFRESH_MS, read when the library
// loads; 0: never), and when this thread last refreshed. 8 ms stays under
// the 10 ms after which sysmon takes a P for stuck, and spares the first
// call after a pause of 2-8 ms the refresh (see processor.go).
static long long hccl_go_refresh_ns = 8000000;
static __thread long long hccl_go_refreshed_ns;

__attribute__((constructor)) static void hccl_go_read_refresh(void) {
  const char* v = getenv("HCCL_GO_REFRESH_MS");
  if (v != NULL && *v != 0) {
    char* end;
    double ms = strtod(v, &end);
    if (*end == 0 && ms >= 0) hccl_go_refresh_ns = (long long)(ms * 1e6);
  }
}

static inline void hccl_go_maybe_refresh(void) {
  if (hccl_go_refresh_ns <= 0) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long long now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  if (now - hccl_go_refreshed_ns >= hccl_go_refresh_ns) {
    hccl_go_refreshed_ns = now;
    goRefreshProcessor();
  }
}

static inline int hccl_go_needs_attention(void) {
  return __builtin_expect(__atomic_load_n(&hccl_go_attention, __ATOMIC_RELAXED) != 0, 0);
}

// What every call into Go does first (lane.c too, before it hands an op
// over): tell Go of exited threads, count a thread's first call
// (maxprocs.go), refresh the thread's Go processor when due
// (processor.go). The common case tests two words (the attention bits,
// whether this thread is counted) and reads the clock.
__attribute__((visibility("hidden"))) void hccl_go_entering(void) {
  if (hccl_go_needs_attention()) hccl_go_notice_exits();
  if (!hccl_go_thread_counted) hccl_go_count_thread();
  hccl_go_maybe_refresh();
}

// Every entry point: refuse in a forked child, then hccl_go_entering.
#define HCCL_GO_ENTER()                                                           \
  do {                                                                            \
    if (hccl_go_needs_attention() && hccl_go_forked()) return hcclGoInvalidUsage; \
    hccl_go_entering();                                                           \
  } while (0)

void hcclGoInvokeCallback(hcclGoCallback_t cb, void* userData, hcclGoWork_t work, hcclGoResult_t status,
                          const char* msg) {
  cb(userData, work, status, msg);
}

hcclGoResult_t hcclGoGetVersion(int* version) {
  if (version == NULL) return hcclGoInvalidArgument;
  *version = HCCL_GO_VERSION_CODE;
  return hcclGoSuccess;
}

const char* hcclGoGetErrorString(hcclGoResult_t r) {
  switch (r) {
    case hcclGoSuccess:
      return "no error";
    case hcclGoInvalidArgument:
      return "invalid argument";
    case hcclGoInvalidUsage:
      return "invalid usage";
    case hcclGoSystemError:
      return "system error";
    case hcclGoRemoteError:
      return "remote process failed";
    case hcclGoTimeout:
      return "timed out";
    case hcclGoInternalError:
      return "internal error";
    case hcclGoInProgress:
      return "in progress";
    case hcclGoAborted:
      return "aborted";
    case hcclGoNotSupported:
      return "not supported";
    default:
      return "unknown result code";
  }
}

hcclGoResult_t hcclGoGetLastError(hcclGoComm_t comm, char* buf, size_t len) {
  if (buf == NULL || len == 0) return hcclGoInvalidArgument;
  if (hccl_go_forked()) {
    strncpy(buf, hccl_go_fork_msg, len - 1);
    buf[len - 1] = 0;
    return hcclGoSuccess;
  }
  return goGetLastError(comm, buf, len);
}

hcclGoResult_t hcclGoGetConfig(char* buf, size_t len) {
  HCCL_GO_ENTER();
  return goGetConfig(buf, len);
}

hcclGoResult_t hcclGoListen(const char* bindAddr, hcclGoListener_t* listener, char* addr, size_t addrLen) {
  HCCL_GO_ENTER();
  return goListen((char*)bindAddr, listener, addr, addrLen);
}

hcclGoResult_t hcclGoListenRank(int nranks, int rank, const char* const* hostIds, const char* storeHost,
                                const char* options, hcclGoListener_t* listener, char* addr, size_t addrLen) {
  HCCL_GO_ENTER();
  return goListenRank(nranks, rank, (char**)hostIds, (char*)storeHost, (char*)options, listener, addr, addrLen);
}

hcclGoResult_t hcclGoListenerClose(hcclGoListener_t listener) {
  HCCL_GO_ENTER();
  return goListenerClose(listener);
}

hcclGoResult_t hcclGoCommInitRank(hcclGoComm_t* comm, int nranks, int rank, hcclGoListener_t listener,
                                  const char* const* peerAddrs, const char* const* hostIds, const char* secret,
                                  const char* options) {
  HCCL_GO_ENTER();
  return goCommInitRank(comm, nranks, rank, listener, (char**)peerAddrs, (char**)hostIds, (char*)secret,
                        (char*)options);
}

hcclGoResult_t hcclGoCommSplit(hcclGoComm_t parent, int nranks, const int* ranks, const char* name, const char* options,
                               hcclGoComm_t* child) {
  HCCL_GO_ENTER();
  return goCommSplit(parent, nranks, (int*)ranks, (char*)name, (char*)options, child);
}

hcclGoResult_t hcclGoCommAbort(hcclGoComm_t comm) {
  HCCL_GO_ENTER();
  return goCommAbort(comm);
}

hcclGoResult_t hcclGoCommDestroy(hcclGoComm_t comm) {
  HCCL_GO_ENTER();
  return goCommDestroy(comm);
}

hcclGoResult_t hcclGoCommCount(hcclGoComm_t comm, int* count) {
  HCCL_GO_ENTER();
  return goCommCount(comm, count);
}

hcclGoResult_t hcclGoCommUserRank(hcclGoComm_t comm, int* rank) {
  HCCL_GO_ENTER();
  return goCommUserRank(comm, rank);
}

hcclGoResult_t hcclGoCommInfo(hcclGoComm_t comm, char* buf, size_t len) {
  HCCL_GO_ENTER();
  return goCommInfo(comm, buf, len);
}

hcclGoResult_t hcclGoCommDumpTrace(hcclGoComm_t comm, const char* path) {
  HCCL_GO_ENTER();
  return goCommDumpTrace(comm, (char*)path);
}

hcclGoResult_t hcclGoCommTracePath(hcclGoComm_t comm, char* buf, size_t len) {
  HCCL_GO_ENTER();
  return goCommTracePath(comm, buf, len);
}

// A blocking all_reduce first tries the C fast lane (lane.c), which runs it
// without entering Go when the communicator's stream is idle.
hcclGoResult_t hcclGoAllReduce(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                               hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm, int stream,
                               hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() &&
      hg_lane_allreduce(sendbuff, recvbuff, count, datatype, op, preMulScalar, comm, stream, &r)) {
    return r;
  }
  HCCL_GO_ENTER();
  return goAllReduce((void*)sendbuff, recvbuff, count, datatype, op, preMulScalar, comm, stream, work);
}

// A blocking broadcast, reduce, all_gather, reduce_scatter or barrier first
// tries the C fast lane too (lane.c), which runs the one-epoch cases.
hcclGoResult_t hcclGoBroadcast(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() &&
      hg_lane_broadcast(sendbuff, recvbuff, count, datatype, root, comm, stream, &r)) {
    return r;
  }
  HCCL_GO_ENTER();
  return goBroadcast((void*)sendbuff, recvbuff, count, datatype, root, comm, stream, work);
}

hcclGoResult_t hcclGoReduce(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                            hcclGoRedOp_t op, double preMulScalar, int root, hcclGoComm_t comm, int stream,
                            hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() &&
      hg_lane_reduce(sendbuff, recvbuff, count, datatype, op, preMulScalar, root, comm, stream, &r)) {
    return r;
  }
  HCCL_GO_ENTER();
  return goReduce((void*)sendbuff, recvbuff, count, datatype, op, preMulScalar, root, comm, stream, work);
}

hcclGoResult_t hcclGoAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, hcclGoDataType_t datatype,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() &&
      hg_lane_allgather(sendbuff, recvbuff, sendcount, datatype, comm, stream, &r)) {
    return r;
  }
  HCCL_GO_ENTER();
  return goAllGather((void*)sendbuff, recvbuff, sendcount, datatype, comm, stream, work);
}

hcclGoResult_t hcclGoReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, hcclGoDataType_t datatype,
                                   hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm, int stream,
                                   hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() &&
      hg_lane_reduce_scatter(sendbuff, recvbuff, recvcount, datatype, op, preMulScalar, comm, stream, &r)) {
    return r;
  }
  HCCL_GO_ENTER();
  return goReduceScatter((void*)sendbuff, recvbuff, recvcount, datatype, op, preMulScalar, comm, stream, work);
}

hcclGoResult_t hcclGoReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                    hcclGoDataType_t datatype, hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm,
                                    int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goReduceScatterV((void*)sendbuff, recvbuff, (size_t*)recvcounts, datatype, op, preMulScalar, comm, stream,
                          work);
}

hcclGoResult_t hcclGoAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                hcclGoDataType_t datatype, hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goAllGatherV((void*)sendbuff, recvbuff, (size_t*)recvcounts, datatype, comm, stream, work);
}

hcclGoResult_t hcclGoAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls, void* recvbuff,
                               const size_t* recvcounts, const size_t* rdispls, hcclGoDataType_t datatype,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goAllToAllV((void*)sendbuff, (size_t*)sendcounts, (size_t*)sdispls, recvbuff, (size_t*)recvcounts,
                     (size_t*)rdispls, datatype, comm, stream, work);
}

hcclGoResult_t hcclGoAllToAll(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                              hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goAllToAll((void*)sendbuff, recvbuff, count, datatype, comm, stream, work);
}

hcclGoResult_t hcclGoGather(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                            hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goGather((void*)sendbuff, recvbuff, count, datatype, root, comm, stream, work);
}

hcclGoResult_t hcclGoScatter(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                             hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goScatter((void*)sendbuff, recvbuff, count, datatype, root, comm, stream, work);
}

hcclGoResult_t hcclGoBarrier(hcclGoComm_t comm, int stream, hcclGoWork_t* work) {
  hcclGoResult_t r;
  if (work == NULL && !hccl_go_forked() && hg_lane_barrier(comm, stream, &r)) return r;
  HCCL_GO_ENTER();
  return goBarrier(comm, stream, work);
}

hcclGoResult_t hcclGoSend(const void* sendbuff, size_t count, hcclGoDataType_t datatype, int peer, uint32_t tag,
                          hcclGoComm_t comm, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goSend((void*)sendbuff, count, datatype, peer, tag, comm, work);
}

hcclGoResult_t hcclGoRecv(void* recvbuff, size_t count, hcclGoDataType_t datatype, int peer, uint32_t tag,
                          hcclGoComm_t comm, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goRecv(recvbuff, count, datatype, peer, tag, comm, work);
}

hcclGoResult_t hcclGoRecvAny(void* recvbuff, size_t count, hcclGoDataType_t datatype, uint32_t tag, int* source,
                             hcclGoComm_t comm, hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goRecvAny(recvbuff, count, datatype, tag, source, comm, work);
}

hcclGoResult_t hcclGoWorkWait(hcclGoWork_t work, int64_t timeoutMs) {
  HCCL_GO_ENTER();
  return goWorkWait(work, timeoutMs);
}

hcclGoResult_t hcclGoWorkTest(hcclGoWork_t work) {
  HCCL_GO_ENTER();
  return goWorkTest(work);
}

hcclGoResult_t hcclGoWorkError(hcclGoWork_t work, char* buf, size_t len) {
  HCCL_GO_ENTER();
  return goWorkError(work, buf, len);
}

hcclGoResult_t hcclGoWorkSetCallback(hcclGoWork_t work, hcclGoCallback_t cb, void* userData) {
  HCCL_GO_ENTER();
  return goWorkSetCallback(work, cb, userData);
}

hcclGoResult_t hcclGoWorkFree(hcclGoWork_t work) {
  HCCL_GO_ENTER();
  return goWorkFree(work);
}

hcclGoResult_t hcclGoWorkStart(hcclGoWork_t work) {
  HCCL_GO_ENTER();
  return goWorkStart(work);
}

hcclGoResult_t hcclGoWorkDrive(hcclGoWork_t work) {
  HCCL_GO_ENTER();
  return goWorkDrive(work);
}

hcclGoResult_t hcclGoSparseAllReduce(const int64_t* indices, const void* values, size_t nnz, hcclGoDataType_t datatype,
                                     void* denseOut, size_t denseCount, hcclGoComm_t comm, int stream,
                                     hcclGoWork_t* work) {
  HCCL_GO_ENTER();
  return goSparseAllReduce((int64_t*)indices, (void*)values, nnz, datatype, denseOut, denseCount, comm, stream, work);
}

hcclGoResult_t hcclGoCommStats(hcclGoComm_t comm, char* buf, size_t len) {
  HCCL_GO_ENTER();
  return goCommStats(comm, buf, len);
}

hcclGoResult_t hcclGoTopoSimulate(const char* argsJson, char* out, size_t len) {
  HCCL_GO_ENTER();
  return goTopoSimulate((char*)argsJson, out, len);
}

hcclGoResult_t hcclGoTopoScale(const char* argsJson, char* out, size_t len) {
  HCCL_GO_ENTER();
  return goTopoScale((char*)argsJson, out, len);
}

hcclGoResult_t hcclGoCommNumStreams(hcclGoComm_t comm, int* n) {
  HCCL_GO_ENTER();
  return goCommNumStreams(comm, n);
}

hcclGoResult_t hcclGoEventRecord(hcclGoComm_t comm, int stream, hcclGoWork_t* event) {
  HCCL_GO_ENTER();
  return goEventRecord(comm, stream, event);
}

hcclGoResult_t hcclGoStreamWaitWork(hcclGoComm_t comm, int stream, hcclGoWork_t work, hcclGoWork_t* marker) {
  HCCL_GO_ENTER();
  return goStreamWaitWork(comm, stream, work, marker);
}

hcclGoResult_t hcclGoMemAlloc(hcclGoComm_t comm, size_t size, void** ptr) {
  HCCL_GO_ENTER();
  return goMemAlloc(comm, size, ptr);
}

hcclGoResult_t hcclGoMemFree(void* ptr) {
  HCCL_GO_ENTER();
  return goMemFree(ptr);
}

hcclGoResult_t hcclGoWindowCreate(hcclGoComm_t comm, void* ptr, hcclGoWindow_t* win) {
  HCCL_GO_ENTER();
  return goWindowCreate(comm, ptr, win);
}

hcclGoResult_t hcclGoWindowDestroy(hcclGoWindow_t win) {
  HCCL_GO_ENTER();
  return goWindowDestroy(win);
}

hcclGoResult_t hcclGoWindowPeerPtr(hcclGoWindow_t win, int peer, void** ptr, size_t* size) {
  HCCL_GO_ENTER();
  return goWindowPeerPtr(win, peer, ptr, size);
}

hcclGoResult_t hcclGoPut(const void* src, size_t count, hcclGoDataType_t datatype, int peer, size_t offset,
                         hcclGoWindow_t win) {
  HCCL_GO_ENTER();
  return goPut((void*)src, count, datatype, peer, offset, win);
}

hcclGoResult_t hcclGoGet(void* dst, size_t count, hcclGoDataType_t datatype, int peer, size_t offset,
                         hcclGoWindow_t win) {
  HCCL_GO_ENTER();
  return goGet(dst, count, datatype, peer, offset, win);
}

hcclGoResult_t hcclGoSignal(hcclGoWindow_t win, int peer) {
  HCCL_GO_ENTER();
  return goSignal(win, peer);
}

hcclGoResult_t hcclGoWaitSignal(hcclGoWindow_t win, int peer, int64_t timeoutMs) {
  HCCL_GO_ENTER();
  return goWaitSignal(win, peer, timeoutMs);
}

hcclGoResult_t hcclGoWindowBarrier(hcclGoWindow_t win, int64_t timeoutMs) {
  HCCL_GO_ENTER();
  return goWindowBarrier(win, timeoutMs);
}
