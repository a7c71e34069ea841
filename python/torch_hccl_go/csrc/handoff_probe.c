// The machine's cross-CPU pace, for python -m torch_hccl_go.bench (bench/handoff.py).
//
// Two processes hand a counter back and forth through one shared cache line:
// side 0 writes the odd values, side 1 answers with the next even one. The time
// per round trip is what a value costs to travel from one CPU to another and
// back, the step every shared-memory collective waits on. On a VM it is not a
// constant: the host may run the two vCPUs on cores that share a cache or on
// cores that do not, and move them between the two for seconds at a time.
//
// Plain C with no Python API: loaded with ctypes, by the torch bench and by the
// MPI peer's program alike (which must not load torch or the Go runtime).

#include <stdint.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// Waits until *word reaches v; 0, or -1 once deadline (CLOCK_MONOTONIC ns) passed.
static int wait_for(const int64_t* word, int64_t v, int64_t deadline) {
  for (;;) {
    for (int i = 0; i < 256; i++) {
      if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == v) return 0;
    }
    if (now_ns() > deadline) return -1;
  }
}

// Runs rounds round trips starting from *word == base (both sides pass the same
// base and rounds) and returns the nanoseconds per round trip of all but the
// first tenth, which absorb the other side's late start; -1 when the other
// side did not answer within timeout_ns.
int64_t hccl_go_handoff(int64_t* word, int side, int64_t base, int64_t rounds, int64_t timeout_ns) {
  if (rounds < 10 || (side != 0 && side != 1)) return -1;
  const int64_t untimed = rounds / 10;
  const int64_t deadline = now_ns() + timeout_ns;
  int64_t start = 0;
  for (int64_t i = 0; i < rounds; i++) {
    if (i == untimed) start = now_ns();
    const int64_t ask = base + 2 * i + 1, answer = ask + 1;
    if (side == 0) {
      __atomic_store_n(word, ask, __ATOMIC_RELEASE);
      if (wait_for(word, answer, deadline) != 0) return -1;
    } else {
      if (wait_for(word, ask, deadline) != 0) return -1;
      __atomic_store_n(word, answer, __ATOMIC_RELEASE);
    }
  }
  return (now_ns() - start) / (rounds - untimed);
}
