/*
 * hccl_go.h: the C API of hccl-go, modelled on nccl.h.
 *
 * Everything crosses this boundary as plain C values: handles are opaque
 * 64-bit ids (never Go pointers), buffers are caller-owned memory that must
 * stay valid until the work that uses them has completed.
 *
 * Every call returns an hcclGoResult_t. On failure, hcclGoGetLastError(comm)
 * (or hcclGoGetLastError(0) for calls without a communicator) gives a
 * message that names the problem. No call ever exits the process or lets a
 * Go panic escape: a panic becomes hcclGoInternalError with its message.
 *
 * Threading: all calls are thread-safe. Work callbacks run on a library
 * thread; they must not block for long and must not call back into
 * hcclGoWorkWait on the same work.
 *
 * Fork: a child process forked after the library was loaded may not use it;
 * every call there returns hcclGoInvalidUsage (it never hangs).
 */
#ifndef HCCL_GO_H_
#define HCCL_GO_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCCL_GO_MAJOR 0
#define HCCL_GO_MINOR 1
#define HCCL_GO_PATCH 0
#define HCCL_GO_VERSION_CODE (HCCL_GO_MAJOR * 10000 + HCCL_GO_MINOR * 100 + HCCL_GO_PATCH)

typedef enum {
  hcclGoSuccess = 0,
  hcclGoInvalidArgument = 1, /* bad pointer, count, dtype, op, rank, handle */
  hcclGoInvalidUsage = 2,    /* destroyed comm, use after fork, double free */
  hcclGoSystemError = 3,     /* socket, shared memory or OS failure */
  hcclGoRemoteError = 4,     /* a peer failed or went away */
  hcclGoTimeout = 5,         /* a blocking wait ran out of time */
  hcclGoInternalError = 6,   /* a bug in the library (e.g. a recovered panic) */
  hcclGoInProgress = 7,      /* work not finished yet (hcclGoWorkTest) */
  hcclGoAborted = 8,         /* the communicator was aborted */
  hcclGoNotSupported = 9,    /* not implemented for these ranks (e.g. a peer on another host) */
  hcclGoNumResults = 10
} hcclGoResult_t;

/* Element types. Values follow ncclDataType_t where NCCL has the type. */
typedef enum {
  hcclGoInt8 = 0,
  hcclGoUint8 = 1,
  hcclGoInt32 = 2,
  hcclGoUint32 = 3,
  hcclGoInt64 = 4,
  hcclGoUint64 = 5,
  hcclGoFloat16 = 6,
  hcclGoFloat32 = 7,
  hcclGoFloat64 = 8,
  hcclGoBfloat16 = 9,
  hcclGoBool = 10,
  hcclGoInt16 = 11,
  hcclGoUint16 = 12,
  hcclGoNumTypes = 13
} hcclGoDataType_t;

/* Reduction operators. PREMUL_SUM takes its scalar as an argument of the
 * collective (see hcclGoAllReduce); AVG divides the sum by the number of
 * ranks (integers truncate toward zero). Bitwise ops need integer or bool. */
typedef enum {
  hcclGoSum = 0,
  hcclGoProd = 1,
  hcclGoMax = 2,
  hcclGoMin = 3,
  hcclGoAvg = 4,
  hcclGoPremulSum = 5,
  hcclGoBand = 6,
  hcclGoBor = 7,
  hcclGoBxor = 8,
  hcclGoNumOps = 9
} hcclGoRedOp_t;

typedef uint64_t hcclGoComm_t;     /* 0 is never a valid communicator */
typedef uint64_t hcclGoWork_t;     /* 0 is never a valid work */
typedef uint64_t hcclGoListener_t; /* 0 is never a valid listener */
typedef uint64_t hcclGoWindow_t;   /* 0 is never a valid window */

/* Streams: ops on one stream run in order; ops on different streams may
 * overlap. Point-to-point ops never queue behind collectives. */
#define HCCL_GO_STREAM_DEFAULT 0
#define HCCL_GO_STREAM_HIGH_PRIORITY 1

/* Completion callback: status is hcclGoSuccess or the error; msg is a
 * NUL-terminated message (empty on success) valid only during the call. */
typedef void (*hcclGoCallback_t)(void* userData, hcclGoWork_t work, hcclGoResult_t status, const char* msg);

/* ---- Library ---------------------------------------------------------- */

hcclGoResult_t hcclGoGetVersion(int* version);
const char* hcclGoGetErrorString(hcclGoResult_t result);
/* Copies the last error message of comm (or of the calling context when
 * comm is 0) into buf, NUL-terminated and truncated to len bytes. */
hcclGoResult_t hcclGoGetLastError(hcclGoComm_t comm, char* buf, size_t len);

/* Writes every configuration setting the library reads, as a JSON array of
 * {"env", "default", "doc"}, into buf (hcclGoInvalidArgument if too small). */
hcclGoResult_t hcclGoGetConfig(char* buf, size_t len);

/* ---- Communicator setup ---------------------------------------------- */

/* Opens this rank's listening socket, to be opened after the ranks have
 * exchanged their host ids and before they exchange addresses. hostIds[i]
 * identifies rank i's host (may be NULL: unknown); storeHost is the host this
 * rank reaches the rendezvous store at (MASTER_ADDR; NULL or "" when
 * unknown); options is as for hcclGoCommInitRank (listen_addr,
 * socket_ifname; NULL for HCCL_GO_* variables and defaults). The address is
 * HCCL_GO_LISTEN_ADDR, else one of the interface HCCL_GO_SOCKET_IFNAME
 * selects, else loopback when every rank is on this host, else the local
 * address of the route to storeHost, else the first address of an interface
 * that is up and not loopback. The address peers should dial is written to
 * addr (NUL-terminated, at most addrLen bytes; IPv6 as "[addr]:port"). */
hcclGoResult_t hcclGoListenRank(int nranks, int rank, const char* const* hostIds, const char* storeHost,
                                const char* options, hcclGoListener_t* listener, char* addr, size_t addrLen);
/* Opens a listening socket for a communicator whose ranks all share this
 * host. bindAddr is "host:port" (port 0 for any), or NULL/"" for
 * HCCL_GO_LISTEN_ADDR / HCCL_GO_SOCKET_IFNAME, else loopback. The address
 * peers should dial is written to addr (NUL-terminated, at most addrLen
 * bytes). */
hcclGoResult_t hcclGoListen(const char* bindAddr, hcclGoListener_t* listener, char* addr, size_t addrLen);
/* Closes a listener that was not handed to hcclGoCommInitRank. */
hcclGoResult_t hcclGoListenerClose(hcclGoListener_t listener);

/* Creates a communicator of nranks ranks, this one being rank. peerAddrs[i]
 * is the address rank i published (from its hcclGoListenRank); hostIds[i]
 * identifies rank i's host (for shared memory; may be NULL). secret is the
 * job's shared secret that both ends of every connection prove in its
 * handshake (NUL-terminated, the same on every rank); NULL or empty takes
 * HCCL_GO_JOB_SECRET from the environment, and without that the call is
 * refused unless options holds auth=none (an unauthenticated communicator:
 * anyone who reaches its ports may join). options is "key=value;key=value"
 * with keys such as timeout_ms, algo, transport, compression (NULL for
 * defaults and HCCL_GO_* environment variables). The listener is consumed,
 * by a failed call as well. Every rank
 * fails at once when a rank publishes a loopback address while a rank on
 * another host publishes a network address, and within
 * HCCL_GO_UNREACHABLE_MS when a peer's address takes no connections; the
 * message names the rank and the address. */
hcclGoResult_t hcclGoCommInitRank(hcclGoComm_t* comm, int nranks, int rank, hcclGoListener_t listener,
                                  const char* const* peerAddrs, const char* const* hostIds, const char* secret,
                                  const char* options);
/* Makes *child, a communicator of nranks of parent's ranks, as
 * ncclCommSplit does: ranks[i] is the parent rank that becomes the child's
 * rank i, and must include the calling rank. Every listed rank calls it
 * with the same name (identifying this split; e.g. the group's name) and
 * the same ranks in the same order; the others do not call it. The child
 * uses the links of the communicator that connected them (parent, or the
 * one parent was split from) and has no connection, segment or thread of
 * its own; the ranks agree on its tag space in one round over those links.
 * Ranks that pass other ranks for the same name fail at once, each with a
 * message naming the rank that disagrees; when a listed rank does not call
 * within the connect timeout, the others fail naming it. options is as for
 * hcclGoCommInitRank (link settings, such as transport or streams_per_peer,
 * are the parent's). Destroying the communicator that owns the links fails
 * every split of it still alive: their pending and later ops fail with
 * hcclGoInvalidUsage, and they must still be destroyed. */
hcclGoResult_t hcclGoCommSplit(hcclGoComm_t parent, int nranks, const int* ranks, const char* name, const char* options,
                               hcclGoComm_t* child);
/* Fails every pending and later op of comm with hcclGoAborted at once. */
hcclGoResult_t hcclGoCommAbort(hcclGoComm_t comm);
/* Waits for pending work (up to the comm's timeout), then frees every link,
 * goroutine and segment of comm. The handle is invalid afterwards. */
hcclGoResult_t hcclGoCommDestroy(hcclGoComm_t comm);
hcclGoResult_t hcclGoCommCount(hcclGoComm_t comm, int* count);
hcclGoResult_t hcclGoCommUserRank(hcclGoComm_t comm, int* rank);
/* Writes a JSON description of comm (settings, transport per peer,
 * algorithm choices) into buf, NUL-terminated and truncated to len. */
hcclGoResult_t hcclGoCommInfo(hcclGoComm_t comm, char* buf, size_t len);

/* ---- Flight recorder (HCCL_GO_TRACE_SIZE, HCCL_GO_TRACE_DIR) -----------
 * Each communicator keeps its last ops (kind, sequence number, sizes, route,
 * queue/start/end times, state, error) and dumps them as JSON on its first
 * failure. These dump them on request. */

/* Writes comm's flight recorder as JSON to path (NULL or "": the default
 * path, see hcclGoCommTracePath), creating its directory. */
hcclGoResult_t hcclGoCommDumpTrace(hcclGoComm_t comm, const char* path);
/* Copies the default dump path of comm into buf (NUL-terminated); fails
 * with hcclGoInvalidArgument when len is too small. */
hcclGoResult_t hcclGoCommTracePath(hcclGoComm_t comm, char* buf, size_t len);

/* ---- Collectives -------------------------------------------------------
 * Each returns at once with *work set; the op runs on the given stream.
 * With work NULL the call blocks instead: it returns once the op (and any
 * op before it on its stream) has completed, with the op's status, and
 * needs no hcclGoWorkWait/hcclGoWorkFree. The op then runs on the calling
 * thread when it is next on its stream, which saves a thread hand-off: the
 * fastest way to make a small synchronous call. It waits at most the
 * communicator's timeout plus 2 s; an op still running then (one stuck
 * behind a stuck op) is ended by aborting the communicator, so the call
 * never returns while the op may still touch the caller's buffers.
 * sendbuff may equal recvbuff (in place) where the shapes allow it.
 * Counts are in elements of datatype. A buffer may be NULL only when its
 * count is 0. preMulScalar is used by hcclGoPremulSum only. */

hcclGoResult_t hcclGoAllReduce(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                               hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm, int stream,
                               hcclGoWork_t* work);
hcclGoResult_t hcclGoBroadcast(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* recvbuff is written on root only (may be NULL elsewhere). */
hcclGoResult_t hcclGoReduce(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                            hcclGoRedOp_t op, double preMulScalar, int root, hcclGoComm_t comm, int stream,
                            hcclGoWork_t* work);
/* recvbuff holds nranks*sendcount elements, rank i's block at i*sendcount. */
hcclGoResult_t hcclGoAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, hcclGoDataType_t datatype,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* sendbuff holds nranks*recvcount elements; rank i receives block i reduced. */
hcclGoResult_t hcclGoReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, hcclGoDataType_t datatype,
                                   hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm, int stream,
                                   hcclGoWork_t* work);
/* Per-rank counts: sendbuff holds sum(recvcounts) elements, rank i's block
 * starts at sum(recvcounts[0..i)). recvcounts has nranks entries. */
hcclGoResult_t hcclGoReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                    hcclGoDataType_t datatype, hcclGoRedOp_t op, double preMulScalar, hcclGoComm_t comm,
                                    int stream, hcclGoWork_t* work);
/* Per-rank counts: rank i contributes recvcounts[i] elements, placed at
 * sum(recvcounts[0..i)) in recvbuff. */
hcclGoResult_t hcclGoAllGatherV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                hcclGoDataType_t datatype, hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* Element counts and displacements (in elements) per peer, nranks entries each. */
hcclGoResult_t hcclGoAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls, void* recvbuff,
                               const size_t* recvcounts, const size_t* rdispls, hcclGoDataType_t datatype,
                               hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* Equal blocks of count elements to and from every rank. */
hcclGoResult_t hcclGoAllToAll(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype,
                              hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* recvbuff (nranks*count elements) is used on root only. */
hcclGoResult_t hcclGoGather(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                            hcclGoComm_t comm, int stream, hcclGoWork_t* work);
/* sendbuff (nranks*count elements) is used on root only. */
hcclGoResult_t hcclGoScatter(const void* sendbuff, void* recvbuff, size_t count, hcclGoDataType_t datatype, int root,
                             hcclGoComm_t comm, int stream, hcclGoWork_t* work);
hcclGoResult_t hcclGoBarrier(hcclGoComm_t comm, int stream, hcclGoWork_t* work);

/* ---- Point to point ----------------------------------------------------
 * Matched by (peer, tag) in order. Sends to one peer run in order, receives
 * from one peer run in order, and neither waits behind collectives or the
 * other direction, so any interleaving of isend/irecv is deadlock-free.
 * work NULL blocks, as for collectives (a blocking send may wait for its
 * receiver). */

hcclGoResult_t hcclGoSend(const void* sendbuff, size_t count, hcclGoDataType_t datatype, int peer, uint32_t tag,
                          hcclGoComm_t comm, hcclGoWork_t* work);
hcclGoResult_t hcclGoRecv(void* recvbuff, size_t count, hcclGoDataType_t datatype, int peer, uint32_t tag,
                          hcclGoComm_t comm, hcclGoWork_t* work);
/* Receives under tag from whichever rank sends first (MPI_ANY_SOURCE) and
 * writes that rank to *source before the work completes: *source must stay
 * valid until then. Receives from any rank run in order among themselves; a
 * receive naming its peer may take a message an earlier hcclGoRecvAny could
 * also have taken. */
hcclGoResult_t hcclGoRecvAny(void* recvbuff, size_t count, hcclGoDataType_t datatype, uint32_t tag, int* source,
                             hcclGoComm_t comm, hcclGoWork_t* work);

/* ---- Compression and traffic counters ----------------------------------
 * Wire compression of float32 all_reduce is a communicator option
 * (compression=none|fp16|bf16 in hcclGoCommInitRank's options, or
 * HCCL_GO_COMPRESSION); it needs no call. */

/* Sums every rank's sparse contribution into a dense result on every rank.
 * This rank contributes nnz pairs (indices[j], values[j]) with indices in
 * [0, denseCount) (repeats add up) and values of datatype hcclGoFloat32,
 * hcclGoFloat64, hcclGoInt32 or hcclGoInt64. denseOut (denseCount elements,
 * the same count on every rank) is overwritten with the sum. The ranks
 * all-gather their lists (indices travel as 4 bytes when denseCount <= 2^31)
 * and add them in rank order, unless the lists together outweigh the dense
 * buffer (nnz_total * (index + value bytes) > denseCount * value bytes):
 * then each rank adds its own pairs into denseOut and the dense buffers are
 * all-reduced. All ranks end bitwise identical. indices and values may be
 * NULL when nnz is 0. */
hcclGoResult_t hcclGoSparseAllReduce(const int64_t* indices, const void* values, size_t nnz, hcclGoDataType_t datatype,
                                     void* denseOut, size_t denseCount, hcclGoComm_t comm, int stream,
                                     hcclGoWork_t* work);

/* Writes comm's traffic counters into buf as NUL-terminated JSON:
 *   {"rank", "size", "compression", "bytes_sent", "bytes_recv",
 *    "ops": {kind: {"calls", "bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv",
 *                   "arena_ns", "inter_ns"}}, "placement_moves"}
 * with kind "allreduce", "sparse_allreduce", "broadcast", ..., "p2p": payload
 * bytes of messages between distinct ranks since the communicator was
 * created. The single-host shared-memory arena path sends no messages and
 * counts none; across hosts, the hierarchical algorithms count their
 * inter-host messages only (their intra-host phases work in the arena).
 * arena_ns and inter_ns (present once non-zero) are the time the
 * hierarchical all_reduce, all_gather and reduce_scatter across hosts spent
 * in their arena phases (on the calling thread) and in their inter-host
 * exchange; a large all_reduce or all_gather runs in rounds that overlap
 * the two. placement_moves counts how often this rank moved its thread off
 * a CPU where a rank of its host was waiting (transport/arena/placement.go).
 * Fails with hcclGoInvalidArgument (buf then holds a truncated
 * prefix) when len is too small. */
hcclGoResult_t hcclGoCommStats(hcclGoComm_t comm, char* buf, size_t len);

/* ---- Symmetric memory ---------------------------------------------------
 * Memory that every rank of a communicator allocates with the same size and
 * that the ranks of one host map, each other's included: a rank loads from
 * and stores to a peer's region directly (hcclGoWindowPeerPtr), copies into
 * and out of it (hcclGoPut, hcclGoGet), and synchronises with it through
 * counters in shared memory (hcclGoSignal, hcclGoWaitSignal,
 * hcclGoWindowBarrier). Every rank's region is a segment of its own in
 * /dev/shm, unlinked as soon as every rank of its host has mapped it, so
 * nothing is left there after exit or a crash. Only ranks of one host share
 * memory: hcclGoWindowPeerPtr naming a rank on another host fails with
 * hcclGoNotSupported and a message naming it and its host, while hcclGoPut,
 * hcclGoGet, hcclGoSignal, hcclGoWaitSignal and hcclGoWindowBarrier reach
 * ranks of other hosts over the communicator's links (a server thread of
 * the target carries them out; its application takes no part). Collectives
 * on buffers of an allocation, on the communicator that made it, read the
 * peers' memory in place (all_reduce and broadcast from 256 KiB, all_gather
 * from 1 MiB of output, reduce_scatter from 1 MiB of input) when every rank
 * is on this host. Allocations and windows
 * outlive their communicator: the mapping is released when hcclGoMemFree
 * and hcclGoWindowDestroy of every window on it have been called. Errors
 * of these calls are read with hcclGoGetLastError(0). */

/* Allocates size bytes (zero-filled, page aligned) on every rank of comm,
 * collectively: every rank calls it with the same size (else every rank
 * fails with hcclGoInvalidArgument naming the ranks that differ). Returns
 * once every rank of this host has mapped this rank's region; *ptr is its
 * address. Bounded by the communicator's timeout. */
hcclGoResult_t hcclGoMemAlloc(hcclGoComm_t comm, size_t size, void** ptr);
/* Gives up this rank's reference on the memory at ptr (the address
 * hcclGoMemAlloc returned; NULL is a no-op): the mapping goes once no
 * window uses it. A second call fails with hcclGoInvalidUsage. Local: needs
 * no call on the other ranks, whose mappings stay valid. */
hcclGoResult_t hcclGoMemFree(void* ptr);
/* Makes *win, a handle for one-sided operations on the memory at ptr (the
 * address hcclGoMemAlloc returned on comm). Local and cheap: the ranks
 * already mapped each other in hcclGoMemAlloc. */
hcclGoResult_t hcclGoWindowCreate(hcclGoComm_t comm, void* ptr, hcclGoWindow_t* win);
/* Releases the handle; waits for the window's calls in progress. */
hcclGoResult_t hcclGoWindowDestroy(hcclGoWindow_t win);
/* Writes the address of peer's region, as mapped in this process, to *ptr
 * and its size in bytes to *size (may be NULL); loads and stores there go
 * straight to peer's memory. Valid until the window and the allocation are
 * released. peer may be this rank. */
hcclGoResult_t hcclGoWindowPeerPtr(hcclGoWindow_t win, int peer, void** ptr, size_t* size);
/* Copies count elements of datatype from src into peer's region, starting
 * offset elements (of datatype) into it. [offset, offset+count) must lie in
 * the region: otherwise hcclGoInvalidArgument and nothing is written. The
 * copy is done when the call returns; peer learns of it through
 * hcclGoSignal. */
hcclGoResult_t hcclGoPut(const void* src, size_t count, hcclGoDataType_t datatype, int peer, size_t offset,
                         hcclGoWindow_t win);
/* Copies count elements of datatype from peer's region, starting offset
 * elements into it, to dst; bounds as for hcclGoPut. */
hcclGoResult_t hcclGoGet(void* dst, size_t count, hcclGoDataType_t datatype, int peer, size_t offset,
                         hcclGoWindow_t win);
/* Adds one to this rank's signal counter at peer: every store this rank
 * made before the call (to any region) is visible to peer once its
 * hcclGoWaitSignal for it returns. Never blocks on this host; to a rank of
 * another host it returns once the signal is sent. */
hcclGoResult_t hcclGoSignal(hcclGoWindow_t win, int peer);
/* Waits for one signal from peer and consumes it: n signals match n waits,
 * and a signal sent before the wait began counts. timeoutMs <= 0 is the
 * communicator's timeout. Fails with hcclGoRemoteError naming peer within
 * a few milliseconds once peer has died or released its window, and with
 * hcclGoTimeout when the time runs out while peer lives. */
hcclGoResult_t hcclGoWaitSignal(hcclGoWindow_t win, int peer, int64_t timeoutMs);
/* Returns once every rank of the window has entered it; stores made before
 * it are visible to every rank after it. Every rank must be on this host.
 * timeoutMs and failures as for hcclGoWaitSignal. */
hcclGoResult_t hcclGoWindowBarrier(hcclGoWindow_t win, int64_t timeoutMs);

/* ---- Topology simulator ----------------------------------------------- */

/* Predicts every algorithm of one collective with the topology cost model,
 * on a synthetic cluster or a topology file, without a communicator.
 * argsJson is an object of `hccl-go-topo simulate` flags (names with - or
 * _), values as strings in the flags' units or numbers, e.g.
 *   {"hosts": 1024, "ranks_per_host": 8, "size": "1GiB",
 *    "inter_bw": "200Gbit", "intra_bw": "100GB"}
 * (also op, inter_lat, intra_lat, reduce_bw, copy_bw, chunk, topo_file,
 * hier, compression, codec_bw).
 * Writes the result to out as JSON (NUL-terminated): op, bytes, ranks,
 * topology, algos [{algo, time_s, algbw_bytes_per_s, busbw_bytes_per_s}],
 * chosen, table (the text the command prints), elapsed_s. Fails with
 * hcclGoInvalidArgument for bad arguments or when len is too small (the
 * last error then says how many bytes are needed). */
hcclGoResult_t hcclGoTopoSimulate(const char* argsJson, char* out, size_t len);
/* The scale model: what one rank costs at init (time, TCP sockets, file
 * descriptors, private, /dev/shm and kernel memory) on a cluster, as the
 * library connects today. argsJson is an object of `hccl-go-topo scale`
 * flags, e.g. {"hosts": 2048, "ranks_per_host": 8} (also
 * streams_per_peer, streams, shm_collectives, lazy_links, inter_lat,
 * intra_lat, store_rate, store_rtt, fd_limit, somaxconn, conn_cpu,
 * conn_bytes). Writes the result to out as JSON (NUL-terminated): ranks,
 * lazy_links, links, sockets, fds, the memory figures in bytes,
 * init_seconds, init_terms [{name, seconds}], fanout (lazy links: per
 * kind of algorithm, its peers, sockets, fds, private_bytes,
 * first_use_seconds), init_dominant, memory_dominant, warnings, table.
 * Fails as hcclGoTopoSimulate does. */
hcclGoResult_t hcclGoTopoScale(const char* argsJson, char* out, size_t len);

/* ---- Work ------------------------------------------------------------- */

/* Blocks until work completes or timeoutMs passes (timeoutMs < 0: the
 * comm's timeout). Returns the op's status, or hcclGoTimeout (the work keeps
 * running; it is not cancelled). */
hcclGoResult_t hcclGoWorkWait(hcclGoWork_t work, int64_t timeoutMs);
/* hcclGoSuccess or the op's error when done; hcclGoInProgress otherwise. */
hcclGoResult_t hcclGoWorkTest(hcclGoWork_t work);
/* Copies the work's error message (empty if none) into buf. */
hcclGoResult_t hcclGoWorkError(hcclGoWork_t work, char* buf, size_t len);
/* Calls cb exactly once when work completes (at once, on the calling thread,
 * if it already has). At most one callback per work. cb runs before the next
 * op of the same stream starts (completions stay in stream order), so it
 * must not wait for later ops of that stream; hand such work to a thread. */
hcclGoResult_t hcclGoWorkSetCallback(hcclGoWork_t work, hcclGoCallback_t cb, void* userData);
/* Releases the handle. The op itself still runs to completion, and a
 * registered callback still fires. */
hcclGoResult_t hcclGoWorkFree(hcclGoWork_t work);
/* Says that nobody will wait on work soon (it is followed through a
 * callback, or waited on much later): the op starts on a library thread as
 * soon as its stream reaches it. Without this call an op that is next on its
 * stream first waits a few microseconds for a hcclGoWorkWait, which then
 * runs it on the caller's thread (the fast path of synchronous calls). */
hcclGoResult_t hcclGoWorkStart(hcclGoWork_t work);
/* Runs the op on the calling thread if it is next on its stream (returns
 * its status once it has completed; its callback has fired on this thread),
 * else starts it as hcclGoWorkStart does and returns hcclGoInProgress at
 * once; a completed op just returns its status. For a thread lent to follow
 * ops through their callbacks, which must not block behind earlier ops. */
hcclGoResult_t hcclGoWorkDrive(hcclGoWork_t work);

/* ---- Streams and events ------------------------------------------------
 * A communicator has HCCL_GO_STREAMS collective streams (default 2; stream
 * 0 is HCCL_GO_STREAM_DEFAULT, 1 HCCL_GO_STREAM_HIGH_PRIORITY). Ops of one
 * stream start in order; ops of different streams run concurrently. Events
 * order work across streams without blocking the caller, as CUDA's
 * cudaEventRecord / cudaStreamWaitEvent. Events and markers are ordinary
 * works: wait, test, set a callback and free them like any other. A stream
 * index outside [0, n) fails with hcclGoInvalidArgument. Like collectives,
 * events take room on their stream's queue (HCCL_GO_STREAM_DEPTH) and may
 * block while it is full, for at most the comm's timeout. */

/* Writes the number of collective streams of comm to *n. */
hcclGoResult_t hcclGoCommNumStreams(hcclGoComm_t comm, int* n);
/* Records an event on stream: *event completes (with hcclGoSuccess) once
 * every op issued on that stream before it has completed; the ops report
 * their own errors. It runs no communication and needs no matching call on
 * the other ranks. */
hcclGoResult_t hcclGoEventRecord(hcclGoComm_t comm, int stream, hcclGoWork_t* event);
/* Makes the ops issued on stream after this call start only once work has
 * completed, successfully or not. work may be an event, a collective of
 * any stream, a point-to-point op, or a work of another communicator of
 * this process. *marker completes with work's status once it has. The call
 * returns at once (unless the stream's queue is full, see above). */
hcclGoResult_t hcclGoStreamWaitWork(hcclGoComm_t comm, int stream, hcclGoWork_t work, hcclGoWork_t* marker);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_GO_H_ */
