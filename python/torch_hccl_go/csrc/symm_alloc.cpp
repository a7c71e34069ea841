// symm_alloc.cpp: a CPU allocator that serves large allocations of one
// thread from symmetric memory (hcclGoMemAlloc), for
// torch_hccl_go.symm.allocating(): tensors torch allocates meanwhile (DDP's
// gradient buckets) then live in memory every rank of the group maps, and
// their collectives run in place. Each such allocation is collective: every
// rank must allocate the same sizes in the same order while it is
// installed, which holds for deterministic set-up code (a model's DDP
// wrapper) and is why only the installing thread's allocations count.
#include "symm_alloc.hpp"

#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "errors.hpp"
#include "gil.hpp"

namespace hccl_go {
namespace {

class SymmetricAllocator final : public c10::Allocator {
 public:
  SymmetricAllocator(c10::Allocator* fallback, hcclGoComm_t comm, size_t minBytes)
      : fallback_(fallback), comm_(comm), minBytes_(minBytes), owner_(std::this_thread::get_id()) {}

  c10::DataPtr allocate(size_t n) override {
    if (n < minBytes_ || std::this_thread::get_id() != owner_) {
      return fallback_->allocate(n);
    }
    void* p = nullptr;
    hcclGoResult_t r;
    {
      MaybeReleaseGil nogil;  // the peers allocate too: a collective wait
      r = hcclGoMemAlloc(comm_, n, &p);
    }
    check(r, comm_, "hccl_go: symmetric allocation of " + std::to_string(n) + " bytes (symm.allocating)");
    return {p, p, &freeSymmetric, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }  // two kinds of memory

  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  c10::Allocator* fallback() const { return fallback_; }

 private:
  static void freeSymmetric(void* p) { (void)hcclGoMemFree(p); }

  c10::Allocator* fallback_;
  hcclGoComm_t comm_;
  size_t minBytes_;
  std::thread::id owner_;
};

// The installed allocators, innermost last. They are never freed: a tensor
// allocated through one may outlive its context and still holds its
// deleter, which is static; the allocator objects are tiny.
std::mutex symmMu;
std::vector<SymmetricAllocator*> symmStack;

}  // namespace

void pushSymmetricAllocator(uint64_t comm, size_t minBytes) {
  std::lock_guard<std::mutex> lock(symmMu);
  auto* a = new SymmetricAllocator(c10::GetCPUAllocator(), comm, minBytes);
  c10::SetCPUAllocator(a, 0);
  if (c10::GetCPUAllocator() != a) {
    delete a;
    throw std::runtime_error(
        "hccl_go: symm.allocating: another CPU allocator with a higher priority is installed; "
        "symmetric allocation needs torch's CPU allocator slot");
  }
  symmStack.push_back(a);
}

void popSymmetricAllocator() {
  std::lock_guard<std::mutex> lock(symmMu);
  if (symmStack.empty()) {
    throw std::runtime_error("hccl_go: symm.allocating: no symmetric allocator is installed");
  }
  c10::SetCPUAllocator(symmStack.back()->fallback(), 0);
  symmStack.pop_back();
}

}  // namespace hccl_go
