// direct.cpp: torch_hccl_go.all_reduce(tensor, op, group), an in-place,
// synchronous all_reduce for latency-bound callers (tensor-parallel
// inference) that skips c10d's dispatch: no options object, no dispatcher
// hop through ProcessGroup::allreduce, no Work. It resolves the group's
// hccl_go backend and calls the library's blocking all_reduce, whose small
// ops take the fast lane (export/lane.c). Every dtype and reduce op of
// dist.all_reduce, on any group whose CPU backend is hccl_go.
//
// Two entries reach the same function: the custom op hccl_go::all_reduce_
// (TORCH_LIBRARY, so torch.compile can put it in a graph; the group by
// name, the reduce op as its RedOpType number and PREMUL_SUM's factor),
// and, in eager mode, _C.all_reduce_ (pybind: the group and the ReduceOp as
// they are), which saves the dispatcher's argument handling.
#include <torch/library.h>

#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "backend.hpp"
#include "tensors.hpp"

namespace hccl_go {
namespace {

constexpr const char* kDirectOp = "torch_hccl_go.all_reduce";

// The hccl_go backend serving CPU tensors in pg; throws a ValueError that
// names the backend it has instead.
HcclGoBackend& hcclGoBackendOf(c10d::ProcessGroup& pg) {
  TORCH_CHECK_VALUE(pg.hasBackends(), kDirectOp, ": the group has no backend");
  c10::intrusive_ptr<c10d::Backend> b;
  try {
    b = pg.getBackend(c10::DeviceType::CPU);
  } catch (const c10::Error&) {
    TORCH_CHECK_VALUE(false, kDirectOp, ": group \"", pg.getGroupName(), "\" has no backend for CPU tensors");
  }
  auto* hb = dynamic_cast<HcclGoBackend*>(b.get());
  // TORCH_DISTRIBUTED_DEBUG=DETAIL wraps backends in a checker of its own.
  TORCH_CHECK_VALUE(hb != nullptr || b->getBackendName() != "hccl_go", kDirectOp, ": group \"", pg.getGroupName(),
                    "\" has its hccl_go backend wrapped (TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective "
                    "through dist.all_reduce): use dist.all_reduce");
  TORCH_CHECK_VALUE(hb != nullptr, kDirectOp, ": group \"", pg.getGroupName(), "\" serves CPU tensors with ",
                    b->getBackendName(), ", not hccl_go");
  return *hb;  // pg keeps it alive
}

void allReduceDirect(const at::Tensor& t, const c10d::ReduceOp& op, c10d::ProcessGroup& pg) {
  TORCH_CHECK_VALUE(t.defined(), kDirectOp, ": the tensor is undefined");
  TORCH_CHECK_VALUE(t.device().is_cpu(), kDirectOp, ": the tensor is on ", t.device(), "; hccl_go reduces CPU tensors");
  TORCH_CHECK_VALUE(t.is_contiguous(), kDirectOp, ": the tensor (", describe(t),
                    ") is not contiguous; reduce a contiguous copy and copy it back");
  checkTensor(t, kDirectOp, "tensor");
  HcclGoBackend& b = hcclGoBackendOf(pg);
  Reduction red = reductionFor(op, t.scalar_type(), kDirectOp);
  TORCH_CHECK(b.allReduceNow(t, red, "all_reduce"), kDirectOp,
              ": not inside a coalescing group (its ops complete together at its end)");
}

// The custom op's kernel: the reduce op by number (and PREMUL_SUM's
// factor), the group by name.
void allReduceOp(at::Tensor& t, int64_t reduceOp, double preMulFactor, c10::string_view groupName) {
  TORCH_CHECK_VALUE(reduceOp >= 0 && reduceOp < c10d::ReduceOp::UNUSED, kDirectOp, ": unknown reduce op ", reduceOp);
  auto type = static_cast<c10d::ReduceOp::RedOpType>(reduceOp);
  c10d::ReduceOp op = type == c10d::ReduceOp::PREMUL_SUM ? c10d::makePreMulSum(preMulFactor) : c10d::ReduceOp(type);
  auto pg = c10d::resolve_process_group(std::string(groupName));
  allReduceDirect(t, op, *pg);
}

// Fake tensors (torch.compile's tracing) have nothing to reduce.
void allReduceMeta(at::Tensor&, int64_t, double, c10::string_view) {}

}  // namespace

// The eager entry: op a RedOpType or a ReduceOp (PREMUL_SUM with its factor).
void allReduceDirectPy(const at::Tensor& t, const c10d::ReduceOp& op, c10d::ProcessGroup& pg) {
  allReduceDirect(t, op, pg);
}

}  // namespace hccl_go

TORCH_LIBRARY(hccl_go, m) {
  m.def("all_reduce_(Tensor(a!) tensor, int reduce_op, float premul_factor, str group_name) -> ()");
}

// Every device reaches the kernel, which refuses all but CPU tensors with a
// clear error (rather than the dispatcher's "could not run ... with
// arguments from the ... backend").
TORCH_LIBRARY_IMPL(hccl_go, CompositeExplicitAutograd, m) { m.impl("all_reduce_", &hccl_go::allReduceOp); }

TORCH_LIBRARY_IMPL(hccl_go, Meta, m) { m.impl("all_reduce_", &hccl_go::allReduceMeta); }
