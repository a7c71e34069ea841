// Reduction into two destinations (kernels_dup.c), called from Go through
// cgo (dup_cgo.go). Same conventions as kernels.h.
#ifndef HCCL_GO_REDUCE_KERNELS_DUP_H
#define HCCL_GO_REDUCE_KERNELS_DUP_H

#include <stddef.h>

// dst = a op b, divided by divisor when divisor > 1 (for Avg: the
// finished sum over divisor ranks; floating-point dtypes only, 0 for the
// others before anything is written), and dup = the same values. dst and
// dup may each be a or b, as blocks are read before they are written; dst
// and dup must differ. Returns 1 when handled, 0 when not (as hg_reduce).
int hg_reduce_dup_div(int isa, int dt, int op, void* dst, void* dup, const void* a, const void* b,
                      size_t nbytes, long divisor);

#endif
