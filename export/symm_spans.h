// Symmetric allocations seen from C: the fast lane (lane.c) declines an
// all_reduce on memory of a symmetric allocation, which Go runs in place
// (pgbackend/symmetric.go). Go notes each allocation while it is
// registered (capi_symm.go).
#ifndef HCCL_GO_SYMM_SPANS_H
#define HCCL_GO_SYMM_SPANS_H

#include <stddef.h>
#include <stdint.h>

// HG_SYMM_MAX_SPANS is the most symmetric allocations live at once.
#define HG_SYMM_MAX_SPANS 1024

// hg_symm_add notes [base, base+n); 0 when every place is taken.
// hg_symm_remove forgets the span at base.
int hg_symm_add(uintptr_t base, size_t n);
void hg_symm_remove(uintptr_t base);

// hg_symm_holds says whether p lies in a noted span.
int hg_symm_holds(const void* p);

// The smallest ops that run in place: all_gathers (their output) and
// reduce_scatters (their input) from hg_symm_block_min_bytes, others from
// hg_symm_min_bytes (pgbackend.SymmetricBlockMinBytes and SymmetricMinBytes,
// set by Go before it notes a span).
extern size_t hg_symm_min_bytes, hg_symm_block_min_bytes;

// hg_symm_declines says whether the lane leaves an op on buf, of n bytes,
// to Go, which runs it in place when n is at least min.
static inline int hg_symm_declines(const void* buf, size_t n, size_t min) {
  return n > 0 && n >= min && hg_symm_holds(buf);
}

#endif
