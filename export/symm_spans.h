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

// hg_symm_min_bytes is the smallest all_reduce that runs in place
// (pgbackend.SymmetricMinBytes, set by Go before it notes a span).
extern size_t hg_symm_min_bytes;

#endif
