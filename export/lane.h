// lane.h: the C fast lane (lane.c). A blocking all_reduce or reduce that
// the shared-memory arena runs in one epoch or as its
// reduce-scatter/all-gather pipeline, and a blocking broadcast, all_gather,
// reduce_scatter or barrier, run entirely in C, on the words the
// communicator shares with it (pgbackend/lane.go: LaneView), without
// entering the Go runtime; lane.go registers a communicator's lane and
// finishes the ops the C side hands over.
#ifndef HCCL_GO_LANE_H
#define HCCL_GO_LANE_H

#include <stddef.h>
#include <stdint.h>

#include "hccl_go.h"

// The most streams and local ranks a C lane serves (beyond: RunNow in Go).
#define HG_LANE_MAX_STREAMS 4
#define HG_LANE_MAX_RANKS 16

// The lane's ops besides all_reduce (pgbackend.LaneOp).
enum { HG_OP_BROADCAST, HG_OP_ALLGATHER, HG_OP_BARRIER, HG_OP_REDUCE, HG_OP_REDUCESCATTER, HG_OPS };
// One collective stream: its hold word (streams/hold.go), the largest
// all_reduce of its lane, and its arena (transport/arena/raw.go), by parity
// and local index.
struct hg_lane_stream {
  int on;  // the stream has an arena
  size_t limit;
  // Payloads from sc_min to sc_max bytes go to Go while *sc_state (the
  // single-copy agreement, collectives/intra/singlecopy.go) is not sc_off:
  // there Go's all_reduce takes epochs of its own (NULL: never).
  int32_t* sc_state;
  int32_t sc_off;
  size_t sc_min, sc_max;
  // From pipe_min bytes on (0: never), the all_reduce pipeline with slices
  // of pipe_slot bytes (intra.LanePipeline, collectives/intra/rsag.go).
  size_t pipe_min, pipe_slot;
  // The lane runs the other ops (HG_OP_*) on this stream (pgbackend
  // LaneStream's OpsOn): reduce_scatter in chunks of scatter_slot bytes of
  // each block, broadcast and all_gather beyond an inline slot in chunks
  // of move_chunk bytes; all_gathers whose recv has scg_min to scg_max
  // bytes go to Go while *scg_state (the all_gather's single-copy
  // agreement) is not scg_off (NULL: never).
  int ops_on;
  size_t scatter_slot, move_chunk;
  int32_t* scg_state;
  int32_t scg_off;
  size_t scg_min, scg_max;
  uint32_t* hold;
  uint64_t* epoch;
  uint32_t* closed;
  int32_t* colocated;  // the arena's run of co-located waits (placement.go)
  uint64_t* posted[HG_LANE_MAX_RANKS];
  uint32_t* waiters[HG_LANE_MAX_RANKS];
  uint32_t* bells[HG_LANE_MAX_RANKS];
  uint64_t* places[HG_LANE_MAX_RANKS];  // arena place words (transport/arena/placement.go)
  uint64_t* flags[2][HG_LANE_MAX_RANKS];
  unsigned char* stamps[2][HG_LANE_MAX_RANKS];
  unsigned char* inl[2][HG_LANE_MAX_RANKS];
  unsigned char* half[2][HG_LANE_MAX_RANKS];
};

// Where the flight recorder's fields lie (pgbackend FlightLayout).
// One of the lane's other ops: whether the settings leave it to the arena,
// its flight record desc (as hg_lane's desc) and its calls counter.
struct hg_lane_kind {
  int on;
  uint64_t desc;
  int64_t* calls;
};

struct hg_flight_layout {
  size_t slot_size, id, seq, bytes, desc, state, root_peer, tag, counts, enqueued, started, ended;
  size_t lock, next, progress, progress_size, progress_started, progress_ended, progress_since;
};

// A communicator's lane: what lane.go fills in at registration.
struct hg_lane {
  uint64_t comm;  // its handle
  int index, size, nstreams;
  size_t inline_bytes;
  long long spin_ns;     // how long a wait spins before it yields
  long long yield_ns;    // how long it then yields before the op goes to Go
  long long clock_base;  // CLOCK_MONOTONIC at the flight recorder's epoch, ns
  int isa;               // instruction-set level of the reduction kernels
  uint32_t* issue;       // the issue lock
  uint32_t* off;
  uint64_t* seq;
  int64_t* calls;
  unsigned char* flight;  // hg_flight_layout's lock, next, progress
  unsigned char* ring;    // first slot, NULL when the recorder is off
  uint64_t ring_len;
  struct hg_flight_layout layout;
  uint64_t desc;  // without dtype, op and stream
  unsigned desc_dtype, desc_op, desc_stream;
  uint64_t state_running, state_done;
  struct hg_lane_kind ops[HG_OPS];
  // Ops the lane ran from start to end (not handed over): all_reduces,
  // then each other op (HG_OP_* + 1). Counted in C, read by comm_info.
  int64_t ran[HG_OPS + 1];
  struct hg_lane_stream streams[HG_LANE_MAX_STREAMS];
};

// hg_lane_register makes lane (allocated with hg_lane_new) the lane of its
// communicator; 0 when every place is taken (the caller frees it).
// hg_lane_stop keeps new ops from taking it; hg_lane_free also waits until
// no op is in it, then frees it.
struct hg_lane* hg_lane_new(void);
int hg_lane_register(struct hg_lane* lane);
void hg_lane_stop(uint64_t comm);
void hg_lane_free(uint64_t comm);

// Set a stream's shared-memory addresses of local rank j (lane.go).
void hg_lane_set_rank(struct hg_lane_stream* s, int j, uintptr_t posted, uintptr_t waiters, uintptr_t bells,
                      uintptr_t places);
void hg_lane_set_slot(struct hg_lane_stream* s, int par, int j, uintptr_t flag, uintptr_t stamp, uintptr_t inl,
                      uintptr_t half);

// hg_lane_allreduce runs a blocking all_reduce in the lane of comm when it
// may (1, its result in *result), or does nothing (0: Go's path).
int hg_lane_allreduce(const void* send, void* recv, size_t count, int dtype, int op, double preMul, uint64_t comm,
                      int stream, hcclGoResult_t* result);

// hg_lane_broadcast, hg_lane_allgather, hg_lane_barrier, hg_lane_reduce
// and hg_lane_reduce_scatter run a blocking op of theirs in the lane of
// comm when it may (1, the result in *result), or do nothing (0: Go's
// path).
int hg_lane_broadcast(const void* send, void* recv, size_t count, int dtype, int root, uint64_t comm, int stream,
                      hcclGoResult_t* result);
int hg_lane_allgather(const void* send, void* recv, size_t count, int dtype, uint64_t comm, int stream,
                      hcclGoResult_t* result);
int hg_lane_barrier(uint64_t comm, int stream, hcclGoResult_t* result);
int hg_lane_reduce(const void* send, void* recv, size_t count, int dtype, int op, double preMul, int root,
                   uint64_t comm, int stream, hcclGoResult_t* result);
int hg_lane_reduce_scatter(const void* send, void* recv, size_t count, int dtype, int op, double preMul, uint64_t comm,
                           int stream, hcclGoResult_t* result);
// hg_lane_ran is hg_lane's ran[which] of comm's lane (-1: no lane).
long long hg_lane_ran(uint64_t comm, int which);
// CLOCK_MONOTONIC in ns, for lane.go's clock calibration.
long long hg_lane_now_ns(void);

// hccl_go.c: what every entry into Go does first (threads, processor).
void hccl_go_entering(void);

#endif
