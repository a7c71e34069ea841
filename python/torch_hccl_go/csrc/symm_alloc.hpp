// symm_alloc.hpp: torch's CPU allocator over symmetric memory (symm_alloc.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hccl_go {

// pushSymmetricAllocator installs an allocator that serves the calling
// thread's allocations of minBytes or more from symmetric memory of comm;
// popSymmetricAllocator restores the one it replaced.
void pushSymmetricAllocator(uint64_t comm, size_t minBytes);
void popSymmetricAllocator();

}  // namespace hccl_go
