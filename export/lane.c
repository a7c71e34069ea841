// lane.c: the C fast lane. A blocking all_reduce that the arena runs in one
// epoch (one-shot, through the inline slots or the data halves), on a
// communicator whose stream is idle, runs here from start to end without
// entering the Go runtime: the same steps as pgbackend's AllReduceNow
// (pgbackend/lane.go) and the one-shot protocol of collectives/intra
// (allreduce.go, lane.go, stamp.go), on the words the communicator shares
// (lane.go registers them). Whatever is not the common case goes to Go: an
// op the lane does not take (a busy stream, arguments Go must judge, a
// dtype and op whose scaling is Go's) runs on Go's path; an op whose wait
// outlasts the arena's spin and yield budgets (1 ms by default), whose
// peers' stamps differ, or whose reduction the kernels decline is handed
// over, posted, to goLaneFinish, which finishes it with Go's wait
// (deadline, dead peers, sleep), mismatch errors and failure handling.
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

// hg_flight_record records a lane op that started at t0: done at t1, or
// running (t1 0). It returns the op's id.
static uint64_t hg_flight_record(const struct hg_lane* l, int stream, uint64_t seq, size_t n, int dt, int op,
                                 int64_t t0, int64_t t1) {
  const struct hg_flight_layout* f = &l->layout;
  hg_flight_lock(l);
  uint64_t* next = HG_WORD(l->flight, f->next);
  uint64_t id = (*next)++;
  if (l->ring != NULL) {
    unsigned char* s = l->ring + (id % l->ring_len) * f->slot_size;
    *HG_WORD(s, f->id) = id;
    *HG_WORD(s, f->seq) = seq;
    *HG_WORD(s, f->bytes) = n;
    *HG_WORD(s, f->desc) = l->desc | (uint64_t)(uint8_t)(dt + 1) << l->desc_dtype |
                           (uint64_t)(uint8_t)(op + 1) << l->desc_op |
                           (uint64_t)(uint8_t)(stream + 1) << l->desc_stream;
    *HG_WORD(s, f->state) = t1 ? l->state_done : l->state_running;
    *HG_WORD(s, f->root_peer) = UINT64_MAX;  // root -1, peer -1
    *HG_WORD(s, f->tag) = 0;
    *HG_WORD(s, f->counts) = 0;
    *HG_WORD(s, f->enqueued) = (uint64_t)t0;
    *HG_WORD(s, f->started) = (uint64_t)t0;
    *HG_WORD(s, f->ended) = (uint64_t)t1;
  }
  unsigned char* p = l->flight + f->progress + (size_t)stream * f->progress_size;
  *HG_WORD(p, f->progress_started) = seq;
  if (t1) {
    *HG_WORD(p, f->progress_ended) = seq;
    *HG_WORD(p, f->progress_since) = 0;
  } else {
    *HG_WORD(p, f->progress_since) = (uint64_t)t0;
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

// hg_lane_wait waits until every peer's inline flag of parity par reaches
// epoch e, as arena.wait does before it sleeps: per peer, it spins for the
// spin budget, notes where it runs (hg_lane_note_place), then yields the
// processor between polls until the yield budget has passed too. 0 when a
// peer did not arrive by then, or the arena closed or the communicator
// failed meanwhile: Go's wait takes over (deadline, liveness of the peer,
// sleep).
static int hg_lane_wait(const struct hg_lane* l, const struct hg_lane_stream* s, int stream, uint64_t e, int par) {
  for (int j = 0; j < l->size; j++) {
    if (j == l->index) continue;
    const uint64_t* f = s->flags[par][j];
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

static int hg_lane_run(struct hg_lane* l, const void* send, void* recv, size_t count, int dt, int op, double preMul,
                       int stream, hcclGoResult_t* result) {
  if (stream < 0 || stream >= l->nstreams || !l->streams[stream].on || !hg_lane_takes(dt, op)) return 0;
  size_t es = hg_dtype_size[dt];
  if (count > l->streams[stream].limit / es) return 0;
  size_t n = count * es;
  const struct hg_lane_stream* st = &l->streams[stream];
  if (st->sc_state != NULL && n >= st->sc_min && n <= st->sc_max &&
      __atomic_load_n(st->sc_state, __ATOMIC_ACQUIRE) != st->sc_off)
    return 0;
  if (n > 0) {
    if (send == NULL || recv == NULL) return 0;
    const char *s0 = send, *r0 = recv;
    if (s0 != r0 && s0 < r0 + n && r0 < s0 + n) return 0;  // partial overlap: Go's error
  }
  struct hg_lane_stream* s = &l->streams[stream];
  if (__atomic_load_n(l->off, __ATOMIC_ACQUIRE) || __atomic_load_n(s->closed, __ATOMIC_ACQUIRE)) return 0;

  // Take the stream and the next sequence number, as AllReduceNow does.
  uint32_t free_ = 0;
  if (!__atomic_compare_exchange_n(l->issue, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return 0;
  free_ = 0;
  if (!__atomic_compare_exchange_n(s->hold, &free_, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    __atomic_store_n(l->issue, 0, __ATOMIC_RELEASE);
    return 0;
  }
  uint64_t seq = __atomic_add_fetch(l->seq, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(l->issue, 0, __ATOMIC_RELEASE);
  int64_t t0 = hg_lane_time(l);
  __atomic_add_fetch(l->calls, 1, __ATOMIC_RELAXED);

  // The first half: publish the input and post the stamped epoch
  // (intra.StartInlineAllReduce, arena.PostStamped).
  const int me = l->index, p = l->size;
  const uint64_t e = ++*s->epoch;
  const int par = (int)(e & 1);
  if (n > 0) {
    unsigned char* mine = hg_lane_buffer(l, s, par, me, n);
    if (op == HG_PREMULSUM) {
      hg_scale(l->isa, dt, mine, send, preMul, n);
    } else {
      memcpy(mine, send, n);
    }
  }
  unsigned char stamp[24];  // intra.AllReduceStamp: allreduce, dtype, op, no root
  hg_put_le64(stamp, 1u | (uint64_t)(uint8_t)dt << 8 | (uint64_t)(uint8_t)op << 16 | (uint64_t)UINT32_MAX << 32);
  hg_put_le64(stamp + 8, seq);
  hg_put_le64(stamp + 16, n);
  memcpy(s->stamps[par][me], stamp, sizeof stamp);
  __atomic_store_n(s->flags[par][me], e, __ATOMIC_SEQ_CST);
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

  // The second half (intra.FinishInlineAllReduce): wait, check, reduce.
  if (!hg_lane_wait(l, s, stream, e, par)) goto handover;
  for (int j = 0; j < p; j++) {
    if (j != me && memcmp(s->stamps[par][j], stamp, sizeof stamp) != 0) goto handover;
  }
  if (n > 0) {
    int ok = hg_reduce(l->isa, dt, op, recv, hg_lane_buffer(l, s, par, 0, n), hg_lane_buffer(l, s, par, 1, n), n);
    for (int j = 2; j < p; j++) ok &= hg_reduce(l->isa, dt, op, recv, recv, hg_lane_buffer(l, s, par, j, n), n);
    if (op == HG_AVG) ok &= hg_divide(l->isa, dt, recv, p, n);
    if (!ok) goto handover;
  }
  hg_flight_record(l, stream, seq, n, dt, op, t0, hg_lane_time(l));
  hg_lane_release(l, stream);
  *result = hcclGoSuccess;
  return 1;

handover:;
  uint64_t id = hg_flight_record(l, stream, seq, n, dt, op, t0, 0);
  hccl_go_entering();
  *result = goLaneFinish(l->comm, stream, seq, id, e, t0, recv, count, dt, op);
  return 1;
}

int hg_lane_allreduce(const void* send, void* recv, size_t count, int dtype, int op, double preMul, uint64_t comm,
                      int stream, hcclGoResult_t* result) {
  struct hg_lane_place* place;
  struct hg_lane* l = hg_lane_enter(comm, &place);
  if (l == NULL) return 0;
  int ran = hg_lane_run(l, send, recv, count, dtype, op, preMul, stream, result);
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
