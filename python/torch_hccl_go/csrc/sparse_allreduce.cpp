// sparse_allreduce.cpp: all_reduce (SUM) of a sparse COO tensor, run as
// gloo runs it: every rank's nonzeros go to every rank, and every rank
// adds them up itself.
//
// Three all_gathers: a header per rank (nnz, sparse and dense dims, dtype,
// shape), then the indices and the values of each rank's coalesced input,
// each padded to the largest nnz so that one all_gather of equal blocks
// carries it. Bytes received per rank: world x max nnz x (8 x sparse_dim +
// the bytes of one value row). Every rank then builds the same sum, the
// ranks' entries concatenated in rank order and coalesced, so every rank
// ends with a bitwise-identical result. The op runs to completion inside
// the call; its Work is complete when returned.
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "backend.hpp"
#include "tensors.hpp"

namespace hccl_go {

namespace {

constexpr int64_t kHeaderFixed = 4;  // nnz, sparse_dim, dense_dim, dtype; then the shape

// "[3, 4]": the shape a rank's header row describes.
std::string shapeOf(const at::TensorAccessor<int64_t, 1>& row) {
  std::ostringstream s;
  s << "[";
  for (int64_t d = 0; d < row[1] + row[2]; ++d) {
    s << (d ? ", " : "") << row[kHeaderFixed + d];
  }
  return s.str() + "]";
}

}  // namespace

c10::intrusive_ptr<c10d::Work> HcclGoBackend::sparseAllreduce(at::Tensor& t, const c10d::AllreduceOptions& opts) {
  const char* op = "all_reduce";
  // The values are a dense tensor of t's dtype and device: the usual checks.
  checkTensor(t._values(), op, "the sparse tensor's values");
  TORCH_CHECK_VALUE(opts.reduceOp == c10d::ReduceOp::SUM, "hccl_go: ", op,
                    ": sparse COO tensors are reduced with ReduceOp.SUM only (as with gloo), got ", opts.reduceOp.op_);
  reductionFor(opts.reduceOp, t.scalar_type(), op);  // refuses dtypes that are only moved
  checkUsable(op);
  {
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK_VALUE(!coalesced_, "hccl_go: ", op,
                      ": a sparse all_reduce runs to completion inside its call and cannot join a coalescing group");
  }
  using std::chrono::milliseconds;
  const auto deadline = std::chrono::steady_clock::now() + timeoutOr(opts.timeout);
  c10d::AllgatherOptions gatherOpts;
  gatherOpts.timeout = opts.timeout;
  gatherOpts.asyncOp = true;
  // Each gather waits for what is left of the op's timeout (at least 1 ms:
  // wait(0) would mean no limit).
  auto gather = [&](at::Tensor& out, at::Tensor& in) {
    auto d = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    _allgather_base(out, in, gatherOpts)->wait(std::max(d, milliseconds(1)));
  };

  const at::Tensor input = t.coalesce();
  const int64_t sparseDim = input.sparse_dim();
  const int64_t denseDim = input.dense_dim();
  const int64_t ndim = sparseDim + denseDim;
  try {
    // Headers are padded to the longest shape: agree on it first.
    at::Tensor myDims = at::full({1}, ndim, at::kLong);
    at::Tensor dims = at::empty({size_}, at::kLong);
    gather(dims, myDims);
    const int64_t maxDim = dims.max().item<int64_t>();

    at::Tensor myHeader = at::full({kHeaderFixed + maxDim}, -1, at::kLong);
    myHeader[0] = input._nnz();
    myHeader[1] = sparseDim;
    myHeader[2] = denseDim;
    myHeader[3] = static_cast<int64_t>(input.scalar_type());
    for (int64_t d = 0; d < ndim; ++d) {
      myHeader[kHeaderFixed + d] = input.size(d);
    }
    at::Tensor header = at::empty({size_, kHeaderFixed + maxDim}, at::kLong);
    gather(header, myHeader);

    // Every rank sees the same headers, so every rank refuses a mismatch
    // the same way.
    const auto h = header.accessor<int64_t, 2>();
    const auto mine = h[rank_];
    std::vector<int64_t> nnz(size_);
    for (int r = 0; r < size_; ++r) {
      TORCH_CHECK_VALUE(h[r][3] == mine[3], "hccl_go: ", op, ": rank ", rank_, " passes a sparse ", t.scalar_type(),
                        " tensor but rank ", r, " a sparse ", static_cast<at::ScalarType>(h[r][3]),
                        " tensor; all ranks must pass the same dtype");
      bool same = h[r][1] == mine[1] && h[r][2] == mine[2];
      for (int64_t d = 0; same && d < maxDim; ++d) {
        same = h[r][kHeaderFixed + d] == mine[kHeaderFixed + d];
      }
      TORCH_CHECK_VALUE(same, "hccl_go: ", op, ": rank ", rank_, " passes a sparse tensor of shape ", shapeOf(mine),
                        " (sparse_dim ", sparseDim, ", dense_dim ", denseDim, ") but rank ", r, " one of shape ",
                        shapeOf(h[r]), " (sparse_dim ", h[r][1], ", dense_dim ", h[r][2],
                        "); all ranks must pass the same shape and sparse layout");
      nnz[r] = h[r][0];
    }
    const int64_t maxNnz = *std::max_element(nnz.begin(), nnz.end());

    at::Tensor indices = at::empty({sparseDim, 0}, at::kLong);
    std::vector<int64_t> valueShape{0};
    for (int64_t d = sparseDim; d < ndim; ++d) {
      valueShape.push_back(input.size(d));
    }
    at::Tensor values = at::empty(valueShape, input.options().layout(at::kStrided));
    if (maxNnz > 0) {
      // One row per entry, so that each rank's block is contiguous.
      at::Tensor myIndices = at::zeros({maxNnz, sparseDim}, at::kLong);
      myIndices.narrow(0, 0, input._nnz()).copy_(input._indices().t());
      std::vector<int64_t> padded = valueShape;
      padded[0] = maxNnz;
      at::Tensor myValues = at::zeros(padded, values.options());
      myValues.narrow(0, 0, input._nnz()).copy_(input._values());

      at::Tensor allIndices = at::empty({size_ * maxNnz, sparseDim}, at::kLong);
      gather(allIndices, myIndices);
      padded[0] = size_ * maxNnz;
      at::Tensor allValues = at::empty(padded, values.options());
      gather(allValues, myValues);

      std::vector<at::Tensor> indexParts, valueParts;
      for (int r = 0; r < size_; ++r) {
        indexParts.push_back(allIndices.narrow(0, r * maxNnz, nnz[r]));
        valueParts.push_back(allValues.narrow(0, r * maxNnz, nnz[r]));
      }
      indices = at::cat(indexParts).t().contiguous();
      values = at::cat(valueParts);
    }
    at::Tensor sum = at::_sparse_coo_tensor_unsafe(indices, values, input.sizes(), input.options()).coalesce();
    t.copy_(sum);
  } catch (c10::Error& e) {
    e.add_context("hccl_go: in all_reduce of a sparse COO tensor (rank " + std::to_string(rank_) + ")");
    throw;
  }
  auto work = newWork(c10d::OpType::ALLREDUCE, op, {t}, opts.timeout);
  work->setOutputs({t});
  work->sealDone();
  return work;
}

}  // namespace hccl_go
