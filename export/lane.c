// lane.c: the C fast lane. A blocking collective on a communicator whose
// ranks share this host and whose stream is idle runs here from start to
// end without entering the Go runtime: an all_reduce or reduce that the
// arena runs in one epoch (one-shot, through the inline slots or the data
// halves) or as its reduce-scatter/all-gather pipeline; a broadcast,
// all_gather or reduce_scatter, chunk by chunk as the arena runs them; a
// barrier. The steps are pgbackend's RunNow (pgbackend/lane.go) and the
// protocols of collectives/intra (allreduce.go, rsag.go, broadcast.go,
// allgather.go, reducescatter.go, lane.go, lane_ops.go, stamp.go), on the
// words the communicator shares (lane.go registers them). Whatever is not
// the common case goes to Go: an op the lane does not take (a busy stream,
// arguments Go must judge, a dtype and op whose scaling is Go's,
// all_to_all) runs on Go's path; an op whose wait outlasts the arena's
// spin and yield budgets (1 ms by default), whose peers' stamps differ, or
// whose reduction the kernels decline is handed over where it stands to
// goLaneFinish, goLaneFinishPipeline or goLaneFinishOp, which finish it
// with Go's wait (deadline, dead peers, sleep), mismatch errors and
// failure handling.
#define _GNU_SOURCE
#include "lane.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "_cgo_export.h"
#include "kernels.h"
#include "kernels_dup.h"
#include "symm_spans.h"

// ---- the table of lanes ---------------------------------------------------

// A place for one communicator's lane, on a cache line of its own: users
// changes on every op of that communicator. A caller counts itself in
// users, then checks that the place still holds its communicator and is
// not dead; hg_lane_free sets dead, waits for users to drain, and only
// then frees the lane, so a lane is never freed under a caller.
struct hg_lane_place {
  uint64_t comm;  // 0: free
  int users;
  int dead;
  struct hg_lane* lane;
} __attribute__((aligned(64)));

#define HG_LANE_PLACES 64
static struct hg_lane_place hg_places[HG_LANE_PLACES];
static int hg_registered;  // lanes registered: none, no search
static pthread_mutex_t hg_places_mu = PTHREAD_MUTEX_INITIALIZER;

struct hg_lane* hg_lane_new(void) { return calloc(1, sizeof(struct hg_lane)); }

int hg_lane_register(struct hg_lane* lane) {
  int ok = 0;
  pthread_mutex_lock(&hg_places_mu);
  for (unsigned i = 0; i < HG_LANE_PLACES && !ok; i++) {
    struct hg_lane_place* p = &hg_places[(lane->comm + i) % HG_LANE_PLACES];
    if (__atomic_load_n(&p->comm, __ATOMIC_SEQ_CST) == 0 && __atomic_load_n(&p->users, __ATOMIC_SEQ_CST) == 0) {
      p->lane = lane;
      __atomic_store_n(&p->dead, 0, __ATOMIC_SEQ_CST);
      __atomic_store_n(&p->comm, lane->comm, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&hg_registered, 1, __ATOMIC_SEQ_CST);
      ok = 1;
    }
  }
  pthread_mutex_unlock(&hg_places_mu);
  return ok;
}

static struct hg_lane_place* hg_place_of(uint64_t comm) {
  for (unsigned i = 0; i < HG_LANE_PLACES; i++) {
    struct hg_lane_place* p = &hg_places[(comm + i) % HG_LANE_PLACES];
    if (__atomic_load_n(&p->comm, __ATOMIC_ACQUIRE) == comm) return p;
  }
  return NULL;
}

void hg_lane_stop(uint64_t comm) {
  pthread_mutex_lock(&hg_places_mu);
  struct hg_lane_place* p = hg_place_of(comm);
  if (p != NULL) __atomic_store_n(&p->dead, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&hg_places_mu);
}

void hg_lane_free(uint64_t comm) {
  pthread_mutex_lock(&hg_places_mu);
  struct hg_lane_place* p = hg_place_of(comm);
  if (p == NULL) {
    pthread_mutex_unlock(&hg_places_mu);
    return;
  }
  __atomic_store_n(&p->dead, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&p->users, __ATOMIC_SEQ_CST) != 0) usleep(20);
  struct hg_lane* lane = p->lane;
  p->lane = NULL;
  __atomic_store_n(&p->comm, 0, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&hg_registered, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&hg_places_mu);
  free(lane);
}

// hg_lane_enter returns comm's lane with the caller counted in its users,
// or NULL.
static struct hg_lane* hg_lane_enter(uint64_t comm, struct hg_lane_place** place) {
  if (comm == 0 || __atomic_load_n(&hg_registered, __ATOMIC_RELAXED) == 0) return NULL;
  struct hg_lane_place* p = hg_place_of(comm);
  if (p == NULL) return NULL;
  __atomic_add_fetch(&p->users, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->comm, __ATOMIC_SEQ_CST) != comm || __atomic_load_n(&p->dead, __ATOMIC_SEQ_CST)) {
    __atomic_sub_fetch(&p->users, 1, __ATOMIC_SEQ_CST);
    return NULL;
  }
  *place = p;
  return p->lane;
}

static void hg_lane_leave(struct hg_lane_place* p) { __atomic_sub_fetch(&p->users, 1, __ATOMIC_RELEASE); }

// ---- time, words ----------------------------------------------------------

long long hg_lane_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// A time as the flight recorder keeps it: ns since its clock's epoch, at
// least 1 (0 means none).
static int64_t hg_lane_time(const struct hg_lane* l) {
  long long t = hg_lane_now_ns() - l->clock_base;
  return t >= 1 ? t : 1;
}

static void hg_put_le64(unsigned char* b, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(b, &v, 8);
}

#define HG_WORD(base, off) ((uint64_t*)((base) + (off)))

#define HG_STAMP_BYTES 24  // an arena stamp: op, sequence number, bytes

// ---- arguments ------------------------------------------------------------

static const size_t hg_dtype_size[] = {
    [HG_INT8] = 1,    [HG_UINT8] = 1,   [HG_INT32] = 4,   [HG_UINT32] = 4,   [HG_INT64] = 8, [HG_UINT64] = 8,
    [HG_FLOAT16] = 2, [HG_FLOAT32] = 4, [HG_FLOAT64] = 8, [HG_BFLOAT16] = 2, [HG_BOOL] = 1,  [HG_INT16] = 2,
};

static int hg_is_float(int dt) { return dt == HG_FLOAT16 || dt == HG_FLOAT32 || dt == HG_FLOAT64 || dt == HG_BFLOAT16; }

// hg_lane_takes reports whether the lane runs dt and op: a valid pair
// (reduce.Check) whose scaling, if any, the C kernels do (Avg and
// PreMulSum of integers are Go's, as is every invalid pair's error).
static int hg_lane_takes(int dt, int op) {
  if (dt < 0 || dt > HG_INT16 || op < 0 || op > HG_BXOR) return 0;
  int bitwise = op == HG_BAND || op == HG_BOR || op == HG_BXOR;
  int scaled = op == HG_AVG || op == HG_PREMULSUM;
  if (bitwise && hg_is_float(dt)) return 0;
  if (scaled && !hg_is_float(dt)) return 0;
  return 1;
}

// ---- the flight recorder (pgbackend/flight.go) ------------------------------

static void hg_flight_lock(const struct hg_lane* l) {
  uint32_t* w = (uint32_t*)(l->flight + l->layout.lock);
  for (int i = 0;; i++) {
    uint32_t free_ = 0;
    if (__atomic_compare_exchange_n(w, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    if (i >= 64) sched_yield();
  }
}

static void hg_flight_unlock(const struct hg_lane* l) {
  __atomic_store_n((uint32_t*)(l->flight + l->layout.lock), 0, __ATOMIC_RELEASE);
}

// A lane op as the flight recorder and the hand-overs see it.
struct hg_lane_op {
  uint64_t desc;  // its flight record desc without dtype, op and stream
  int stream;
  uint64_t seq;
  size_t n;    // bytes, as its record counts them
  int dt, op;  // -1 for the data movers
  int root;    // -1: none
  int64_t t0;  // when it started
  int which;   // its counter in hg_lane's ran (0: all_reduce)
};

// hg_flight_record records lane op o: done at t1, or running (t1 0). It
// returns the record's id.
static uint64_t hg_flight_record(const struct hg_lane* l, const struct hg_lane_op* o, int64_t t1) {
  const struct hg_flight_layout* f = &l->layout;
  hg_flight_lock(l);
  uint64_t* next = HG_WORD(l->flight, f->next);
  uint64_t id = (*next)++;
  if (l->ring != NULL) {
    unsigned char* s = l->ring + (id % l->ring_len) * f->slot_size;
    *HG_WORD(s, f->id) = id;
    *HG_WORD(s, f->seq) = o->seq;
    *HG_WORD(s, f->bytes) = o->n;
    *HG_WORD(s, f->desc) = o->desc | (uint64_t)(uint8_t)(o->dt + 1) << l->desc_dtype |
                           (uint64_t)(uint8_t)(o->op + 1) << l->desc_op |
                           (uint64_t)(uint8_t)(o->stream + 1) << l->desc_stream;
    *HG_WORD(s, f->state) = t1 ? l->state_done : l->state_running;
    *HG_WORD(s, f->root_peer) = (uint64_t)(uint32_t)o->root | (uint64_t)UINT32_MAX << 32;  // peer -1
    *HG_WORD(s, f->tag) = 0;
    *HG_WORD(s, f->counts) = 0;
    *HG_WORD(s, f->enqueued) = (uint64_t)o->t0;
    *HG_WORD(s, f->started) = (uint64_t)o->t0;
    *HG_WORD(s, f->ended) = (uint64_t)t1;
  }
  unsigned char* p = l->flight + f->progress + (size_t)o->stream * f->progress_size;
  *HG_WORD(p, f->progress_started) = o->seq;
  if (t1) {
    *HG_WORD(p, f->progress_ended) = o->seq;
    *HG_WORD(p, f->progress_since) = 0;
  } else {
    *HG_WORD(p, f->progress_since) = (uint64_t)o->t0;
  }
  hg_flight_unlock(l);
  return id;
}

// ---- the protocol -----------------------------------------------------------

// hg_lane_note_place runs when a wait for local rank j at epoch e stops
// spinning, as arena.notePlace does: it writes this rank's CPU into its
// place word and, when j's place word shows j waiting on the same CPU
// just now, lets Go count it and perhaps move this thread (goLanePlace);
// j seen lately on another CPU ends the run of co-located waits.
static void hg_lane_note_place(const struct hg_lane* l, const struct hg_lane_stream* s, int stream, int j, uint64_t e) {
  int cpu = sched_getcpu();
  if (cpu < 0) return;
  const uint64_t mask = (1ull << 48) - 1;
  __atomic_store_n(s->places[l->index], (uint64_t)(cpu + 1) << 48 | (e & mask), __ATOMIC_RELAXED);
  uint64_t w = __atomic_load_n(s->places[j], __ATOMIC_RELAXED);
  if (w == 0 || (w & mask) + 1 < (e & mask)) return;  // j has not waited lately
  if ((int)(w >> 48) - 1 != cpu) {
    __atomic_store_n(s->colocated, 0, __ATOMIC_RELAXED);
    return;
  }
  hccl_go_entering();
  goLanePlace(l->comm, stream, j, e);
}

// hg_lane_wait waits until every peer's word (words[j]: the inline flags
// of the epoch's parity for an op's first epoch, the posted words after
// it) reaches epoch e, as arena.wait does before it sleeps: per peer, it
// spins for the spin budget, notes where it runs (hg_lane_note_place),
// then yields the processor between polls until the yield budget has
// passed too. 0 when a peer did not arrive by then, or the arena closed or
// the communicator failed meanwhile: Go's wait takes over (deadline,
// liveness of the peer, sleep).
static int hg_lane_wait(const struct hg_lane* l, const struct hg_lane_stream* s, int stream, uint64_t e,
                        uint64_t* const* words) {
  for (int j = 0; j < l->size; j++) {
    if (j == l->index) continue;
    const uint64_t* f = words[j];
    long long start = 0;
    int spinning = 1;
    while (__atomic_load_n(f, __ATOMIC_ACQUIRE) < e) {
      for (int k = 0; k < 64; k++) {
        if (__atomic_load_n(f, __ATOMIC_ACQUIRE) >= e) goto arrived;
      }
      long long now = hg_lane_now_ns();
      if (start == 0) start = now;
      if (now - start >= l->spin_ns + l->yield_ns) return 0;
      if (__atomic_load_n(s->closed, __ATOMIC_RELAXED) || __atomic_load_n(l->off, __ATOMIC_RELAXED)) return 0;
      if (now - start >= l->spin_ns) {
        if (spinning) {
          spinning = 0;
          hg_lane_note_place(l, s, stream, j, e);
        }
        sched_yield();
      }
    }
  arrived:;
  }
  return 1;
}

// hg_lane_post posts epoch e of this rank, as arena.Post does, and with
// stamp (not NULL: the op's first epoch) as arena.PostStamped: the stamp,
// then the inline flag of e's parity, then the posted word; sleepers on
// this rank's bell are woken.
static void hg_lane_post(const struct hg_lane* l, struct hg_lane_stream* s, uint64_t e, const unsigned char* stamp) {
  const int me = l->index, par = (int)(e & 1);
  if (stamp != NULL) {
    memcpy(s->stamps[par][me], stamp, HG_STAMP_BYTES);
    __atomic_store_n(s->flags[par][me], e, __ATOMIC_SEQ_CST);
  }
  __atomic_store_n(s->posted[me], e, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(s->waiters[me], __ATOMIC_SEQ_CST) != 0) {
    // As arena.Post: note this CPU for the sleepers woken here (placement.go's
    // place word: CPU+1 in the top 16 bits, the epoch's low 48 bits).
    int cpu = sched_getcpu();
    if (cpu >= 0) {
      __atomic_store_n(s->places[me], (uint64_t)(cpu + 1) << 48 | (e & ((1ull << 48) - 1)), __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(s->bells[me], 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, s->bells[me], FUTEX_WAKE, INT_MAX, NULL, NULL, 0);  // not private: peers sleep there
  }
}

// hg_lane_stamps_agree reports whether every peer posted epoch e (seen
// already) with this rank's stamp; Go's wait names the difference.
static int hg_lane_stamps_agree(const struct hg_lane* l, const struct hg_lane_stream* s, uint64_t e,
                                const unsigned char* stamp) {
  const int par = (int)(e & 1);
  for (int j = 0; j < l->size; j++) {
    if (j != l->index && memcmp(s->stamps[par][j], stamp, HG_STAMP_BYTES) != 0) return 0;
  }
  return 1;
}

// The collectives as stamps number them (intra's opKind).
enum {
  HG_KIND_ALLREDUCE = 1,
  HG_KIND_REDUCE = 2,
  HG_KIND_BROADCAST = 3,
  HG_KIND_ALLGATHER = 4,
  HG_KIND_REDUCESCATTER = 5,
  HG_KIND_BARRIER = 7
};

// hg_lane_stamp writes intra's opStamp.encode() of an op of kind: kind,
// dtype, reduce op (0 for the data movers), root (a local index, -1:
// none); sequence number; bytes (an all_gather's: each rank's block).
static void hg_lane_stamp(unsigned char* stamp, int kind, uint64_t seq, size_t n, int dt, int op, int root) {
  hg_put_le64(stamp, (uint64_t)(uint8_t)kind | (uint64_t)(uint8_t)dt << 8 | (uint64_t)(uint8_t)op << 16 |
                         (uint64_t)(uint32_t)root << 32);
  hg_put_le64(stamp + 8, seq);
  hg_put_le64(stamp + 16, n);
}

// hg_lane_buffer is local rank j's buffer of epoch parity par for an
// n-byte op: the inline slot, or the data half (intra.laneBuffer).
static unsigned char* hg_lane_buffer(const struct hg_lane* l, const struct hg_lane_stream* s, int par, int j,
                                     size_t n) {
  return n <= l->inline_bytes ? s->inl[par][j] : s->half[par][j];
}

// hg_lane_release lets go of the stream and, when ops were queued on it
// meanwhile, has Go's scheduler start them (streams/hold.go).
static void hg_lane_release(const struct hg_lane* l, int stream) {
  uint32_t old = __atomic_fetch_and(l->streams[stream].hold, ~1u, __ATOMIC_SEQ_CST);
  if (old & 2u) {
    hccl_go_entering();
    goLaneKick(l->comm, stream);
  }
}

// hg_lane_done ends lane op o, which succeeded: its flight record, the
// stream let go, the result; it returns 1 (the op ran).
static int hg_lane_done(struct hg_lane* l, const struct hg_lane_op* o, hcclGoResult_t* result) {
  hg_flight_record(l, o, hg_lane_time(l));
  __atomic_add_fetch(&l->ran[o->which], 1, __ATOMIC_RELAXED);
  hg_lane_release(l, o->stream);
  *result = hcclGoSuccess;
  return 1;
}

// hg_lane_hand_over records lane op o as running and readies the thread
// for Go, which finishes it; it returns the op's flight record id.
static uint64_t hg_lane_hand_over(struct hg_lane* l, const struct hg_lane_op* o) {
  uint64_t id = hg_flight_record(l, o, 0);
  hccl_go_entering();
  return id;
}

// hg_lane_slice is intra's windows.slice: the byte offset and length of
// slice j of window k, the vector (elems elements of es bytes) being cut
// into windows of p slices of at most per elements, the last window
// shared as evenly as possible (the first slices one element more).
static void hg_lane_slice(size_t elems, size_t es, int p, size_t per, size_t k, int j, size_t* off, size_t* len) {
  size_t win = (size_t)p * per, start = k * win;
  size_t size = elems - start < win ? elems - start : win;
  size_t base = size / (size_t)p, extra = size % (size_t)p, uj = (size_t)j;
  size_t lo = start + uj * base + (uj < extra ? uj : extra);
  *off = lo * es;
  *len = (base + (uj < extra ? 1 : 0)) * es;
}

// hg_lane_publish writes src into dst, scaled by preMul for PreMulSum
// (intra's publish).
static void hg_lane_publish(const struct hg_lane* l, int dt, int op, double preMul, void* dst, const void* src,
                            size_t n) {
  if (op == HG_PREMULSUM) {
    hg_scale(l->isa, dt, dst, src, preMul, n);
  } else {
    memcpy(dst, src, n);
  }
}

// hg_lane_pipeline runs the reduce-scatter/all-gather pipeline of
// collectives/intra/rsag.go for an all_reduce (o->root -1) or a reduce to
// o->root, round for round, epoch for epoch, with the same reduction order
// (intra's reduceIntoDup; reduceInto off a reduce's root), so that ranks
// here meet ranks on Go's path. A reduce's non-roots write only the result
// slots and copy nothing out. Round k of `rounds` (window k of p slices of at most
// pipe_slot bytes), epoch e: publish the slices of window k that peers
// reduce into this rank's half of e, post e (stamped in round 0), wait for
// every peer to post e, reduce this rank's slice of window k in rank order
// into recv and into the result slot of this rank's half of e+1, copy the
// peers' results of window k-1 from their halves of e into recv; a last
// round copies the results of the last window. A wait that outlasts the
// spin, a stamp that differs or a kernel that declines hands the op over
// to Go in the round it is in (goLaneFinishPipeline).
static int hg_lane_pipeline(struct hg_lane* l, struct hg_lane_stream* s, const struct hg_lane_op* o,
                            const unsigned char* stamp, const void* send, void* recv, size_t count, int dt, int op,
                            double preMul, hcclGoResult_t* result) {
  const int me = l->index, p = l->size, stream = o->stream;
  const size_t es = hg_dtype_size[dt], slot = s->pipe_slot, per = slot / es, res = (size_t)p * slot;
  const size_t rounds = (count + (size_t)p * per - 1) / ((size_t)p * per);
  const int own_shared = op == HG_PREMULSUM;  // PreMulSum reduces scaled inputs: the own one is published too
  const long divisor = op == HG_AVG ? p : 1;
  const int wants = o->root < 0 || o->root == me;  // the result goes into recv here (rsag's wants)
  const unsigned char* in = send;
  unsigned char* out = recv;
  uint64_t e = 0;
  size_t k = 0;
  int waited = 0;
  for (; k <= rounds; k++) {
    e = ++*s->epoch;
    const int par = (int)(e & 1);
    waited = 0;
    if (k < rounds) {
      unsigned char* h = s->half[par][me];
      for (int j = 0; j < p; j++) {
        if (j == me && !own_shared) continue;
        size_t off, m;
        hg_lane_slice(count, es, p, per, k, j, &off, &m);
        hg_lane_publish(l, dt, op, preMul, h + (size_t)j * slot, in + off, m);
      }
    }
    hg_lane_post(l, s, e, k == 0 ? stamp : NULL);
    if (!hg_lane_wait(l, s, stream, e, k == 0 ? s->flags[par] : s->posted)) goto handover;
    if (k == 0 && !hg_lane_stamps_agree(l, s, e, stamp)) goto handover;
    waited = 1;
    if (k < rounds) {
      size_t off, m;
      hg_lane_slice(count, es, p, per, k, me, &off, &m);
      unsigned char* dup = s->half[par ^ 1][me] + res;  // the result slot of this rank's half of e+1
#define HG_IN(j) ((j) == me && !own_shared ? in + off : s->half[par][j] + (size_t)me * slot)
      int ok;
      if (!wants) {  // a reduce's non-root: the result slot only (reduceInto, finishAvg)
        ok = hg_reduce(l->isa, dt, op, dup, HG_IN(0), HG_IN(1), m);
        for (int j = 2; ok && j < p; j++) ok = hg_reduce(l->isa, dt, op, dup, dup, HG_IN(j), m);
        if (ok && op == HG_AVG) ok = hg_divide(l->isa, dt, dup, p, m);
      } else if (p == 2) {
        ok = hg_reduce_dup_div(l->isa, dt, op, out + off, dup, HG_IN(0), HG_IN(1), m, divisor);
      } else {
        ok = hg_reduce(l->isa, dt, op, dup, HG_IN(0), HG_IN(1), m);
        for (int j = 2; ok && j < p - 1; j++) ok = hg_reduce(l->isa, dt, op, dup, dup, HG_IN(j), m);
        ok = ok && hg_reduce_dup_div(l->isa, dt, op, out + off, dup, dup, HG_IN(p - 1), m, divisor);
      }
#undef HG_IN
      // Kernels decline a pair on its first block, before writing recv.
      if (!ok) goto handover;
    }
    if (k > 0 && wants) {
      for (int j = 0; j < p; j++) {
        if (j == me) continue;
        size_t off, m;
        hg_lane_slice(count, es, p, per, k - 1, j, &off, &m);
        memcpy(out + off, s->half[par][j] + res, m);
      }
    }
  }
  return hg_lane_done(l, o, result);

handover:;
  uint64_t id = hg_lane_hand_over(l, o);
  *result = goLaneFinishPipeline(l->comm, stream, o->seq, id, e, (int)k, waited, o->t0, (void*)send, recv, count, dt,
                                 op, preMul, o->root);
  return 1;
}

// hg_lane_usable reports whether an op may take stream's lane now: the
// stream has an arena and the communicator has not failed, nor the arena
// closed.
static int hg_lane_usable(const struct hg_lane* l, int stream) {
  if (stream < 0 || stream >= l->nstreams || !l->streams[stream].on) return 0;
  return !__atomic_load_n(l->off, __ATOMIC_ACQUIRE) && !__atomic_load_n(l->streams[stream].closed, __ATOMIC_ACQUIRE);
}

// hg_lane_begin takes the stream and the next sequence number for op o, as
// RunNow does, and counts a call in calls; 0 when the stream is busy or an
// op is being queued (the op then goes to Go).
static int hg_lane_begin(struct hg_lane* l, struct hg_lane_op* o, int64_t* calls) {
  struct hg_lane_stream* s = &l->streams[o->stream];
  uint32_t free_ = 0;
  if (!__atomic_compare_exchange_n(l->issue, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return 0;
  free_ = 0;
  if (!__atomic_compare_exchange_n(s->hold, &free_, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    __atomic_store_n(l->issue, 0, __ATOMIC_RELEASE);
    return 0;
  }
  o->seq = __atomic_add_fetch(l->seq, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(l->issue, 0, __ATOMIC_RELEASE);
  o->t0 = hg_lane_time(l);
  __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
  return 1;
}

// hg_overlaps reports whether [a, a+n) and [b, b+m) share a byte.
static int hg_overlaps(const void* a, size_t n, const void* b, size_t m) {
  const char *x = a, *y = b;
  return n > 0 && m > 0 && x < y + m && y < x + n;
}

// hg_lane_reduce_all reduces the p buffers of epoch parity par (n bytes
// each, the inline slots or the data halves) into recv in rank order, and
// divides for Avg (intra's reduceInto and finishAvg); 0 when a kernel
// declines, on its first block, before writing recv.
static int hg_lane_reduce_all(const struct hg_lane* l, const struct hg_lane_stream* s, int par, int dt, int op,
                              void* recv, size_t n) {
  int ok = hg_reduce(l->isa, dt, op, recv, hg_lane_buffer(l, s, par, 0, n), hg_lane_buffer(l, s, par, 1, n), n);
  for (int j = 2; ok && j < l->size; j++)
    ok = hg_reduce(l->isa, dt, op, recv, recv, hg_lane_buffer(l, s, par, j, n), n);
  if (ok && op == HG_AVG) ok = hg_divide(l->isa, dt, recv, l->size, n);
  return ok;
}

// hg_lane_run runs an all_reduce (root -1) or a reduce to root: one-shot
// in one epoch (intra's StartInlineAllReduce and FinishLaneAllReduce or
// FinishLaneReduce), or the pipeline. The stream's limits were
// checked by the caller.
static int hg_lane_run(struct hg_lane* l, const void* send, void* recv, size_t count, int dt, int op, double preMul,
                       int root, int stream, int pipeline, hcclGoResult_t* result) {
  struct hg_lane_stream* s = &l->streams[stream];
  const size_t n = count * hg_dtype_size[dt];
  const int me = l->index, reducing = root < 0 ? HG_KIND_ALLREDUCE : HG_KIND_REDUCE;
  struct hg_lane_op o = {.desc = l->desc, .stream = stream, .n = n, .dt = dt, .op = op, .root = root};
  int64_t* calls = l->calls;
  if (root >= 0) {
    o.desc = l->ops[HG_OP_REDUCE].desc;
    o.which = HG_OP_REDUCE + 1;
    calls = l->ops[HG_OP_REDUCE].calls;
  }
  if (!hg_lane_begin(l, &o, calls)) return 0;
  unsigned char stamp[HG_STAMP_BYTES];
  hg_lane_stamp(stamp, reducing, o.seq, n, dt, op, root);
  if (pipeline) return hg_lane_pipeline(l, s, &o, stamp, send, recv, count, dt, op, preMul, result);

  // The first half: publish the input and post the stamped epoch
  // (intra.StartInlineAllReduce, arena.PostStamped).
  const uint64_t e = ++*s->epoch;
  const int par = (int)(e & 1);
  if (n > 0) hg_lane_publish(l, dt, op, preMul, hg_lane_buffer(l, s, par, me, n), send, n);
  hg_lane_post(l, s, e, stamp);

  // The second half (intra's FinishLaneAllReduce, FinishLaneReduce): wait,
  // check, reduce on the ranks that want the result.
  if (!hg_lane_wait(l, s, stream, e, s->flags[par]) || !hg_lane_stamps_agree(l, s, e, stamp)) goto handover;
  if (n > 0 && (root < 0 || root == me) && !hg_lane_reduce_all(l, s, par, dt, op, recv, n)) goto handover;
  return hg_lane_done(l, &o, result);

handover:;
  uint64_t id = hg_lane_hand_over(l, &o);
  if (root >= 0) {
    *result =
        goLaneFinishOp(l->comm, stream, HG_OP_REDUCE, o.seq, id, e, o.t0, NULL, recv, n, dt, op, preMul, root, 0, 0);
  } else {
    *result = goLaneFinish(l->comm, stream, o.seq, id, e, o.t0, recv, count, dt, op);
  }
  return 1;
}

// hg_lane_move runs a data mover (HG_OP_BROADCAST, HG_OP_ALLGATHER,
// HG_OP_BARRIER) as collectives/intra's broadcast.go, allgather.go and
// barrier.go do (lane_ops.go): one epoch through the inline slots for a
// payload (a broadcast's, each rank's all_gather block of m bytes) that
// fits one, else chunk by chunk (move_chunk bytes) through the data halves.
// Per chunk: publish this rank's part (a broadcast root's, every rank's
// all_gather block) in its buffer of the epoch, post it (stamped in the
// first epoch), copy the rank's own data into recv, wait for every peer,
// check their stamps (first epoch), copy their chunks out. A wait that
// outlasts the spin or a stamp that differs hands the op over to Go at the
// chunk it is in (goLaneFinishOp).
static int hg_lane_move(struct hg_lane* l, int kind, const void* send, void* recv, size_t m, int root, int stream,
                        hcclGoResult_t* result) {
  const int me = l->index, p = l->size;
  struct hg_lane_stream* s = &l->streams[stream];
  const int kinds[] = {
      [HG_OP_BROADCAST] = HG_KIND_BROADCAST, [HG_OP_ALLGATHER] = HG_KIND_ALLGATHER, [HG_OP_BARRIER] = HG_KIND_BARRIER};
  const size_t out = kind == HG_OP_ALLGATHER ? (size_t)p * m : m;  // bytes of recv
  struct hg_lane_op o = {
      .desc = l->ops[kind].desc, .stream = stream, .n = out, .dt = -1, .op = -1, .root = root, .which = kind + 1};
  if (!hg_lane_begin(l, &o, l->ops[kind].calls)) return 0;
  unsigned char stamp[HG_STAMP_BYTES];
  hg_lane_stamp(stamp, kinds[kind], o.seq, m, 0, 0, root);

  const unsigned char* in = send;
  unsigned char* to = recv;
  const size_t chunk = m <= l->inline_bytes ? m : s->move_chunk;
  const int publishes = m > 0 && (kind == HG_OP_ALLGATHER || me == root);
  unsigned char* own = kind == HG_OP_ALLGATHER && m > 0 ? to + (size_t)me * m : to;
  uint64_t e = 0;
  size_t off = 0;
  do {  // once for an empty call or a barrier: they meet their peers all the same
    const size_t c = m - off < chunk ? m - off : chunk;
    const int first = off == 0;
    e = ++*s->epoch;
    const int par = (int)(e & 1);
    if (publishes) memcpy(hg_lane_buffer(l, s, par, me, m), in + off, c);
    hg_lane_post(l, s, e, first ? stamp : NULL);
    if (publishes && own != in) memcpy(own + off, in + off, c);
    if (!hg_lane_wait(l, s, stream, e, first ? s->flags[par] : s->posted)) goto handover;
    if (first && !hg_lane_stamps_agree(l, s, e, stamp)) goto handover;
    if (c > 0 && kind == HG_OP_BROADCAST && me != root) memcpy(to + off, hg_lane_buffer(l, s, par, root, m), c);
    if (c > 0 && kind == HG_OP_ALLGATHER) {
      for (int j = 0; j < p; j++) {
        if (j != me) memcpy(to + (size_t)j * m + off, hg_lane_buffer(l, s, par, j, m), c);
      }
    }
    off += c;
  } while (off < m);
  return hg_lane_done(l, &o, result);

handover:;
  uint64_t id = hg_lane_hand_over(l, &o);
  *result = goLaneFinishOp(l->comm, stream, kind, o.seq, id, e, o.t0, (void*)send, recv, out, -1, -1, 0, root,
                           (long long)off, 0);
  return 1;
}

// hg_lane_scatter runs a reduce_scatter of m bytes per rank as
// collectives/intra/reducescatter.go does, chunk by chunk (scatter_slot
// bytes of each block per epoch): publish chunk k of every block j (for
// PreMulSum scaled) in slot j of this rank's half, for every peer j and for
// itself where scatter shares the own block (intra's scatterOwnShared),
// post (stamped in the first epoch), wait, check the stamps (first epoch),
// reduce chunk k of slot me of every rank's half (the own block from send
// unless shared) in rank order into recv. A wait that outlasts the spin, a
// stamp that differs or a kernel that declines hands the op over to Go at
// the chunk it is in (intra.FinishLaneReduceScatter).
static int hg_lane_scatter(struct hg_lane* l, const void* send, void* recv, size_t count, int dt, int op, double preMul,
                           int stream, hcclGoResult_t* result) {
  const int me = l->index, p = l->size;
  struct hg_lane_stream* s = &l->streams[stream];
  const size_t m = count * hg_dtype_size[dt], slot = s->scatter_slot;
  struct hg_lane_op o = {.desc = l->ops[HG_OP_REDUCESCATTER].desc,
                         .stream = stream,
                         .n = (size_t)p * m,
                         .dt = dt,
                         .op = op,
                         .root = -1,
                         .which = HG_OP_REDUCESCATTER + 1};
  if (!hg_lane_begin(l, &o, l->ops[HG_OP_REDUCESCATTER].calls)) return 0;
  unsigned char stamp[HG_STAMP_BYTES];
  hg_lane_stamp(stamp, HG_KIND_REDUCESCATTER, o.seq, m, dt, op, -1);

  const unsigned char* in = send;
  unsigned char* out = recv;
  const unsigned char* own = in + (size_t)me * m;
  const int shared = op == HG_PREMULSUM || (me >= 2 && own == out);
  uint64_t e = 0;
  size_t off = 0;
  int waited = 0;
  do {  // once for an empty call: it meets its peers all the same
    const size_t c = m - off < slot ? m - off : slot;
    const int first = off == 0;
    e = ++*s->epoch;
    const int par = (int)(e & 1);
    waited = 0;
    for (int j = 0; c > 0 && j < p; j++) {
      if (j != me || shared)
        hg_lane_publish(l, dt, op, preMul, s->half[par][me] + (size_t)j * slot, in + (size_t)j * m + off, c);
    }
    hg_lane_post(l, s, e, first ? stamp : NULL);
    if (!hg_lane_wait(l, s, stream, e, first ? s->flags[par] : s->posted)) goto handover;
    if (first && !hg_lane_stamps_agree(l, s, e, stamp)) goto handover;
    waited = 1;
    if (c > 0) {
#define HG_IN(j) ((j) == me && !shared ? own + off : s->half[par][j] + (size_t)me * slot)
      int ok = hg_reduce(l->isa, dt, op, out + off, HG_IN(0), HG_IN(1), c);
      for (int j = 2; ok && j < p; j++) ok = hg_reduce(l->isa, dt, op, out + off, out + off, HG_IN(j), c);
#undef HG_IN
      if (ok && op == HG_AVG) ok = hg_divide(l->isa, dt, out + off, p, c);
      if (!ok) goto handover;  // kernels decline on their first block, before writing
    }
    off += c;
  } while (off < m);
  return hg_lane_done(l, &o, result);

handover:;
  uint64_t id = hg_lane_hand_over(l, &o);
  *result = goLaneFinishOp(l->comm, stream, HG_OP_REDUCESCATTER, o.seq, id, e, o.t0, (void*)send, recv, m, dt, op,
                           preMul, -1, (long long)off, waited);
  return 1;
}

// hg_lane_op_takes reports whether the lane runs op kind with a payload of
// m bytes (an all_gather's block) on stream: the settings leave it to the
// arena, the stream runs the other ops, and an all_gather is outside the
// single-copy range until the ranks agreed against it.
static int hg_lane_op_takes(const struct hg_lane* l, int kind, size_t m, int stream) {
  if (!hg_lane_usable(l, stream) || !l->ops[kind].on || !l->streams[stream].ops_on) return 0;
  const struct hg_lane_stream* s = &l->streams[stream];
  if (kind != HG_OP_ALLGATHER || s->scg_state == NULL) return 1;
  size_t out = (size_t)l->size * m;
  return out < s->scg_min || out > s->scg_max || __atomic_load_n(s->scg_state, __ATOMIC_ACQUIRE) == s->scg_off;
}

// hg_rooted_args reports whether the buffers of a rooted op of n bytes
// are the lane's to take: root in range, every rank's buffer `all` (a
// reduce's send, a broadcast's recv) given, and root's other buffer
// (`at_root`) given and either the same as `all` or apart from it. Go
// judges the rest (its errors name the problem).
static int hg_rooted_args(const struct hg_lane* l, int root, size_t n, const void* all, const void* at_root) {
  if (root < 0 || root >= l->size) return 0;
  if (n == 0) return 1;
  if (all == NULL) return 0;
  return root != l->index || (at_root != NULL && (at_root == all || !hg_overlaps(all, n, at_root, n)));
}

// hg_lane_bytes is count elements of dtype in bytes, times `times`; 0 when
// the dtype is not one (Go's error) or the product overflows.
static int hg_lane_bytes(size_t count, int dtype, size_t times, size_t* n) {
  if (dtype < 0 || dtype > HG_INT16) return 0;
  size_t es = hg_dtype_size[dtype];
  if (count > SIZE_MAX / es / times) return 0;
  *n = count * es;
  return 1;
}

int hg_lane_allreduce(const void* send, void* recv, size_t count, int dtype, int op, double preMul, uint64_t comm,
                      int stream, hcclGoResult_t* result) {
  size_t n;
  if (!hg_lane_takes(dtype, op) || !hg_lane_bytes(count, dtype, 1, &n)) return 0;
  if (n > 0 && (send == NULL || recv == NULL)) return 0;
  if (send != recv && hg_overlaps(send, n, recv, n)) return 0;  // partial overlap: Go's error
  if (hg_symm_declines(send, n, hg_symm_min_bytes) || hg_symm_declines(recv, n, hg_symm_min_bytes)) return 0;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  if (hg_lane_usable(l, stream)) {
    const struct hg_lane_stream* s = &l->streams[stream];
    const int pipeline = n > s->limit;  // else one-shot, one epoch
    int takes = !pipeline || (s->pipe_min > 0 && n >= s->pipe_min);
    // The single-copy range goes to Go until the ranks agreed against it.
    if (s->sc_state != NULL && n >= s->sc_min && n <= s->sc_max &&
        __atomic_load_n(s->sc_state, __ATOMIC_ACQUIRE) != s->sc_off)
      takes = 0;
    if (takes) ran = hg_lane_run(l, send, recv, count, dtype, op, preMul, -1, stream, pipeline, result);
  }
  hg_lane_leave(place);
  return ran;
}

int hg_lane_reduce(const void* send, void* recv, size_t count, int dtype, int op, double preMul, int root,
                   uint64_t comm, int stream, hcclGoResult_t* result) {
  size_t n;
  if (!hg_lane_takes(dtype, op) || !hg_lane_bytes(count, dtype, 1, &n)) return 0;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  if (hg_rooted_args(l, root, n, send, recv) && hg_lane_op_takes(l, HG_OP_REDUCE, n, stream)) {
    // As all_reduce: one-shot in one epoch, or the pipeline (no single-copy).
    const struct hg_lane_stream* s = &l->streams[stream];
    const int pipeline = n > s->limit;
    if (!pipeline || (s->pipe_min > 0 && n >= s->pipe_min)) {
      ran = hg_lane_run(l, send, recv, count, dtype, op, preMul, root, stream, pipeline, result);
    }
  }
  hg_lane_leave(place);
  return ran;
}

int hg_lane_reduce_scatter(const void* send, void* recv, size_t count, int dtype, int op, double preMul, uint64_t comm,
                           int stream, hcclGoResult_t* result) {
  size_t m;
  if (!hg_lane_takes(dtype, op) || !hg_lane_bytes(count, dtype, HG_LANE_MAX_RANKS, &m)) return 0;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  // Go judges missing buffers and a recv that overlaps send other than as
  // this rank's own block.
  const size_t total = (size_t)l->size * m;
  int valid = m == 0 || (send != NULL && recv != NULL &&
                         ((const unsigned char*)recv == (const unsigned char*)send + (size_t)l->index * m ||
                          !hg_overlaps(send, total, recv, m)));
  if (valid && !hg_symm_declines(send, total, hg_symm_block_min_bytes) &&
      hg_lane_op_takes(l, HG_OP_REDUCESCATTER, m, stream)) {
    ran = hg_lane_scatter(l, send, recv, count, dtype, op, preMul, stream, result);
  }
  hg_lane_leave(place);
  return ran;
}

long long hg_lane_ran(uint64_t comm, int which) {
  if (which < 0 || which > HG_OPS) return -1;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return -1;
  long long n = __atomic_load_n(&l->ran[which], __ATOMIC_RELAXED);
  hg_lane_leave(place);
  return n;
}

int hg_lane_broadcast(const void* send, void* recv, size_t count, int dtype, int root, uint64_t comm, int stream,
                      hcclGoResult_t* result) {
  size_t n;
  if (!hg_lane_bytes(count, dtype, 1, &n)) return 0;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  if (hg_rooted_args(l, root, n, recv, send) && !hg_symm_declines(recv, n, hg_symm_min_bytes) &&
      hg_lane_op_takes(l, HG_OP_BROADCAST, n, stream)) {
    ran = hg_lane_move(l, HG_OP_BROADCAST, send, recv, n, root, stream, result);
  }
  hg_lane_leave(place);
  return ran;
}

int hg_lane_allgather(const void* send, void* recv, size_t count, int dtype, uint64_t comm, int stream,
                      hcclGoResult_t* result) {
  size_t m;
  if (!hg_lane_bytes(count, dtype, HG_LANE_MAX_RANKS, &m)) return 0;
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  // Go judges missing buffers and a send that overlaps recv other than as
  // this rank's own block.
  int valid = m == 0 || (send != NULL && recv != NULL &&
                         ((const unsigned char*)send == (const unsigned char*)recv + (size_t)l->index * m ||
                          !hg_overlaps(send, m, recv, (size_t)l->size * m)));
  if (valid && !hg_symm_declines(recv, (size_t)l->size * m, hg_symm_block_min_bytes) &&
      hg_lane_op_takes(l, HG_OP_ALLGATHER, m, stream)) {
    ran = hg_lane_move(l, HG_OP_ALLGATHER, send, recv, m, -1, stream, result);
  }
  hg_lane_leave(place);
  return ran;
}

int hg_lane_barrier(uint64_t comm, int stream, hcclGoResult_t* result) {
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = 0;
  if (hg_lane_op_takes(l, HG_OP_BARRIER, 0, stream)) {
    ran = hg_lane_move(l, HG_OP_BARRIER, NULL, NULL, 0, -1, stream, result);
  }
  hg_lane_leave(place);
  return ran;
}

void hg_lane_set_rank(struct hg_lane_stream* s, int j, uintptr_t posted, uintptr_t waiters, uintptr_t bells,
                      uintptr_t places) {
  s->posted[j] = (uint64_t*)posted;
  s->waiters[j] = (uint32_t*)waiters;
  s->bells[j] = (uint32_t*)bells;
  s->places[j] = (uint64_t*)places;
}

void hg_lane_set_slot(struct hg_lane_stream* s, int par, int j, uintptr_t flag, uintptr_t stamp, uintptr_t inl,
                      uintptr_t half) {
  s->flags[par][j] = (uint64_t*)flag;
  s->stamps[par][j] = (unsigned char*)stamp;
  s->inl[par][j] = (unsigned char*)inl;
  s->half[par][j] = (unsigned char*)half;
}
