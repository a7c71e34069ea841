#include "symm_spans.h"

#include <pthread.h>

// Spans are written under a lock (rare: allocation and free) and read
// without one by every lane all_reduce: a place's base is published last
// and cleared first, so a reader never pairs a base with a stale length.
// count bounds the places a reader scans (0: none, the common case).
static uintptr_t hg_symm_base[HG_SYMM_MAX_SPANS];
static size_t hg_symm_len[HG_SYMM_MAX_SPANS];
static int hg_symm_count;
static pthread_mutex_t hg_symm_mu = PTHREAD_MUTEX_INITIALIZER;
size_t hg_symm_min_bytes, hg_symm_block_min_bytes;

int hg_symm_add(uintptr_t base, size_t n) {
  int ok = 0;
  pthread_mutex_lock(&hg_symm_mu);
  for (int i = 0; i < HG_SYMM_MAX_SPANS; i++) {
    if (__atomic_load_n(&hg_symm_base[i], __ATOMIC_RELAXED) == 0) {
      __atomic_store_n(&hg_symm_len[i], n, __ATOMIC_RELAXED);
      __atomic_store_n(&hg_symm_base[i], base, __ATOMIC_RELEASE);
      if (i >= hg_symm_count) __atomic_store_n(&hg_symm_count, i + 1, __ATOMIC_RELEASE);
      ok = 1;
      break;
    }
  }
  pthread_mutex_unlock(&hg_symm_mu);
  return ok;
}

void hg_symm_remove(uintptr_t base) {
  pthread_mutex_lock(&hg_symm_mu);
  for (int i = 0; i < hg_symm_count; i++) {
    if (__atomic_load_n(&hg_symm_base[i], __ATOMIC_RELAXED) == base) {
      __atomic_store_n(&hg_symm_base[i], 0, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&hg_symm_mu);
}

int hg_symm_holds(const void* p) {
  const uintptr_t a = (uintptr_t)p;
  const int n = __atomic_load_n(&hg_symm_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) {
    const uintptr_t base = __atomic_load_n(&hg_symm_base[i], __ATOMIC_ACQUIRE);
    if (base != 0 && a >= base && a - base < __atomic_load_n(&hg_symm_len[i], __ATOMIC_RELAXED)) return 1;
  }
  return 0;
}
