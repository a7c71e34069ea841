// collectives.cpp: the collectives of HcclGoBackend. Each one checks every
// argument first (so a bad call throws before anything is issued), then
// creates its Work and issues the library op(s) through an Issue.
#include <c10/util/Exception.h>

#include <numeric>

#include "backend.hpp"
#include "issue.hpp"
#include "tensors.hpp"

namespace hccl_go {

namespace {

// Elements of the C API per tensor element (complex: two reals).
size_t scale(const at::Tensor& t) { return t.is_complex() ? 2 : 1; }

size_t countOf(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * scale(t); }

void checkSameDtype(const at::Tensor& a, const char* aName, const at::Tensor& b, const char* bName, const char* op) {
  TORCH_CHECK_VALUE(a.scalar_type() == b.scalar_type(), "hccl_go: ", op, ": ", aName, " is a ", describe(a), " but ",
                    bName, " is a ", describe(b), "; they must have the same dtype");
}

// A tensor holding `ts` back to back: a view when they already lie so,
// else a temporary filled with their data.
at::Tensor packedInput(Issue& is, const std::vector<at::Tensor>& ts) {
  if (auto flat = flatViewOf(ts)) {
    is.work().keep(*flat);
    return *flat;
  }
  std::vector<at::Tensor> parts;
  parts.reserve(ts.size());
  for (const auto& t : ts) {
    parts.push_back(t.reshape({-1}));
  }
  at::Tensor packed = at::cat(parts);
  is.work().keep(packed);
  return packed;
}

// A tensor the op fills with `ts` back to back: a view when they already
// lie so (and do not overlap `avoid`), else a temporary copied back into
// them on success.
at::Tensor packedOutput(Issue& is, const std::vector<at::Tensor>& ts, const at::Tensor& avoid) {
  auto flat = flatViewOf(ts);
  if (flat && !(avoid.defined() && overlaps(*flat, avoid))) {
    is.work().keep(*flat);
    for (const auto& t : ts) {
      is.work().keep(t);
    }
    return *flat;
  }
  int64_t total = 0;
  for (const auto& t : ts) {
    total += t.numel();
  }
  at::Tensor packed = is.temp(total, ts[0]);
  int64_t offset = 0;
  for (const auto& t : ts) {
    is.work().keep(t);
    is.work().copyBackOnSuccess(t, packed.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  return packed;
}

// Element counts (in C elements) of a list, and whether they are all equal.
std::vector<size_t> countsOf(const std::vector<at::Tensor>& ts, bool* uniform) {
  std::vector<size_t> counts;
  counts.reserve(ts.size());
  *uniform = true;
  for (const auto& t : ts) {
    counts.push_back(countOf(t));
    *uniform = *uniform && counts.back() == counts.front();
  }
  return counts;
}

// Element counts (in C elements) of blocks of `rows` rows of t each.
std::vector<size_t> rowCounts(const at::Tensor& t, const std::vector<int64_t>& rows) {
  const int64_t total = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  const size_t perRow = total == 0 ? 0 : countOf(t) / static_cast<size_t>(total);
  std::vector<size_t> counts;
  counts.reserve(rows.size());
  for (int64_t r : rows) {
    counts.push_back(static_cast<size_t>(r) * perRow);
  }
  return counts;
}

std::vector<size_t> displacements(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) {
    displs[i] = displs[i - 1] + counts[i - 1];
  }
  return displs;
}

}  // namespace

// ---- broadcast, all_reduce, reduce --------------------------------------

c10::intrusive_ptr<c10d::Work> HcclGoBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  const char* op = "broadcast";
  at::Tensor& t = single(tensors, op, "tensor");
  checkRank(opts.rootRank, size_, op, "src");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, "hccl_go: broadcast: src_tensor must be 0, got ", opts.rootTensor);
  if (noWork(opts.asyncOp, opts.timeout) && t.is_contiguous()) {
    Buffer b = bufferOf(t);
    const int root = static_cast<int>(opts.rootRank);
    if (runNow(op, [&] { return hcclGoBroadcast(b.ptr, b.ptr, b.count, b.dtype, root, comm_, stream(), nullptr); })) {
      return {};
    }
  }
  auto work = newWork(c10d::OpType::BROADCAST, op, tensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    Buffer b = bufferOf(is.output(t, /*withData=*/opts.rootRank == rank_));
    const int root = static_cast<int>(opts.rootRank);
    is.call([&](hcclGoWork_t* h) { return hcclGoBroadcast(b.ptr, b.ptr, b.count, b.dtype, root, comm_, stream(), h); });
    work->setOutputs(tensors);
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  const char* op = "all_reduce";
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse()) {
    return sparseAllreduce(tensors[0], opts);
  }
  at::Tensor& t = single(tensors, op, "tensor");
  Reduction red = reductionFor(opts.reduceOp, t.scalar_type(), op);
  // A synchronous call that returns no Work needs none: the op runs in
  // place, right here (the library's fast lane for small ones).
  if (noWork(opts.asyncOp, opts.timeout) && t.is_contiguous() && allReduceNow(t, red, op)) {
    return {};
  }
  auto work = newWork(c10d::OpType::ALLREDUCE, op, tensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    Buffer b = bufferOf(is.output(t, /*withData=*/true));
    is.call([&](hcclGoWork_t* h) {
      return hcclGoAllReduce(b.ptr, b.ptr, b.count, b.dtype, red.op, red.preMulScalar, comm_, stream(), h);
    });
    work->setOutputs(tensors);
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                  const c10d::AllreduceCoalescedOptions& opts) {
  const char* op = "all_reduce_coalesced";
  std::vector<Reduction> reds;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string name = "tensors[" + std::to_string(i) + "]";
    checkTensor(tensors[i], op, name.c_str());
    reds.push_back(reductionFor(opts.reduceOp, tensors[i].scalar_type(), op));
  }
  auto work = newWork(c10d::OpType::ALLREDUCE_COALESCED, op, tensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    for (size_t i = 0; i < tensors.size(); ++i) {
      Buffer b = bufferOf(is.output(tensors[i], /*withData=*/true));
      const Reduction& red = reds[i];
      is.call([&](hcclGoWork_t* h) {
        return hcclGoAllReduce(b.ptr, b.ptr, b.count, b.dtype, red.op, red.preMulScalar, comm_, stream(), h);
      });
    }
    work->setOutputs(tensors);
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  const char* op = "reduce";
  at::Tensor& t = single(tensors, op, "tensor");
  checkRank(opts.rootRank, size_, op, "dst");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, "hccl_go: reduce: dst_tensor must be 0, got ", opts.rootTensor);
  Reduction red = reductionFor(opts.reduceOp, t.scalar_type(), op);
  if (noWork(opts.asyncOp, opts.timeout) && t.is_contiguous()) {
    Buffer b = bufferOf(t);
    const int root = static_cast<int>(opts.rootRank);
    void* recv = root == rank_ ? b.ptr : nullptr;
    if (runNow(op, [&] {
          return hcclGoReduce(b.ptr, recv, b.count, b.dtype, red.op, red.preMulScalar, root, comm_, stream(), nullptr);
        })) {
      return {};
    }
  }
  auto work = newWork(c10d::OpType::REDUCE, op, tensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    const int root = static_cast<int>(opts.rootRank);
    const bool isRoot = root == rank_;
    Buffer b = bufferOf(isRoot ? is.output(t, /*withData=*/true) : is.input(t));
    void* recv = isRoot ? b.ptr : nullptr;
    is.call([&](hcclGoWork_t* h) {
      return hcclGoReduce(b.ptr, recv, b.count, b.dtype, red.op, red.preMulScalar, root, comm_, stream(), h);
    });
    work->setOutputs(tensors);
  }
  return handOver(std::move(work));
}

// ---- all_gather -----------------------------------------------------------

void HcclGoBackend::checkAllgatherBase(const at::Tensor& output, const at::Tensor& input, const char* op) const {
  checkTensor(output, op, "output");
  checkTensor(input, op, "input");
  checkSameDtype(output, "output", input, "input", op);
  TORCH_CHECK_VALUE(output.numel() == input.numel() * size_, "hccl_go: ", op, ": output is a ", describe(output),
                    " but must hold world_size (", size_, ") x input.numel() (", input.numel(),
                    ") = ", input.numel() * size_, " elements");
}

void HcclGoBackend::issueAllgatherBase(Issue& is, const at::Tensor& output, const at::Tensor& input) {
  at::Tensor in = is.input(input);
  at::Tensor out = is.output(output, /*withData=*/false);
  // In place (FSDP) is input == output's block of this rank; any other
  // overlap gets a private copy of the input.
  if (!disjointOrOwnBlock(in, out, rank_)) {
    in = is.input(in.clone());
  }
  Buffer bi = bufferOf(in);
  Buffer bo = bufferOf(out);
  is.call([&](hcclGoWork_t* h) { return hcclGoAllGather(bi.ptr, bo.ptr, bi.count, bi.dtype, comm_, stream(), h); });
}

void HcclGoBackend::checkAllgatherList(const std::vector<at::Tensor>& outputs, const at::Tensor& input,
                                       const char* op) const {
  checkTensor(input, op, "input");
  TORCH_CHECK_VALUE(static_cast<int>(outputs.size()) == size_, "hccl_go: ", op, ": expected world_size (", size_,
                    ") output tensors, got ", outputs.size());
  checkTensorList(outputs, op, "output", /*sameSize=*/false);
  checkSameDtype(outputs[0], "output[0]", input, "input", op);
  TORCH_CHECK_VALUE(outputs[rank_].numel() == input.numel(), "hccl_go: ", op, ": output[", rank_, "] is a ",
                    describe(outputs[rank_]), " but this rank's input is a ", describe(input),
                    "; they must have the same number of elements");
}

void HcclGoBackend::issueAllgatherList(Issue& is, const std::vector<at::Tensor>& outputs, const at::Tensor& input) {
  at::Tensor in = is.input(input);
  at::Tensor out = packedOutput(is, outputs, at::Tensor());
  bool uniform = false;
  const auto& counts = is.work().keepCounts(countsOf(outputs, &uniform));
  const size_t ownOffset = displacements(counts)[rank_] * in.element_size() / scale(in);
  const auto* ownBlock = static_cast<const char*>(out.data_ptr()) + ownOffset;
  if (overlaps(in, out) && static_cast<const char*>(in.data_ptr()) != ownBlock) {
    in = is.input(in.clone());
  }
  Buffer bi = bufferOf(in);
  Buffer bo = bufferOf(out);
  if (uniform) {
    is.call([&](hcclGoWork_t* h) { return hcclGoAllGather(bi.ptr, bo.ptr, bi.count, bi.dtype, comm_, stream(), h); });
  } else {
    is.call(
        [&](hcclGoWork_t* h) { return hcclGoAllGatherV(bi.ptr, bo.ptr, counts.data(), bi.dtype, comm_, stream(), h); });
  }
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                        std::vector<at::Tensor>& inputTensors,
                                                        const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather";
  at::Tensor& input = single(inputTensors, op, "input");
  TORCH_CHECK_VALUE(outputTensors.size() == 1, "hccl_go: all_gather: expected one output list, got ",
                    outputTensors.size());
  checkAllgatherList(outputTensors[0], input, op);
  auto work = newWork(c10d::OpType::ALLGATHER, op, inputTensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    issueAllgatherList(is, outputTensors[0], input);
    work->setOutputs(outputTensors[0]);
  }
  return handOver(std::move(work));
}

// outputTensorLists is indexed by rank, then by input (torch's and gloo's layout):
// outputTensorLists[r][i] receives rank r's inputTensors[i].
c10::intrusive_ptr<c10d::Work> HcclGoBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
    const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_coalesced";
  TORCH_CHECK_VALUE(static_cast<int>(outputTensorLists.size()) == size_, "hccl_go: ", op,
                    ": expected one output list per rank (world_size ", size_, "), got ", outputTensorLists.size());
  for (size_t r = 0; r < outputTensorLists.size(); ++r) {
    TORCH_CHECK_VALUE(outputTensorLists[r].size() == inputTensors.size(), "hccl_go: ", op, ": output list ", r,
                      " holds ", outputTensorLists[r].size(), " tensors but there are ", inputTensors.size(),
                      " inputs");
  }
  // perInput[i] is input i's all_gather output list: one tensor per rank.
  std::vector<std::vector<at::Tensor>> perInput(inputTensors.size());
  for (size_t i = 0; i < inputTensors.size(); ++i) {
    perInput[i].reserve(outputTensorLists.size());
    for (auto& list : outputTensorLists) {
      perInput[i].push_back(list[i]);
    }
    checkAllgatherList(perInput[i], inputTensors[i], op);
  }
  auto work = newWork(c10d::OpType::ALLGATHER_COALESCED, op, inputTensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    for (size_t i = 0; i < inputTensors.size(); ++i) {
      issueAllgatherList(is, perInput[i], inputTensors[i]);
    }
    std::vector<at::Tensor> outputs;
    for (auto& list : outputTensorLists) {
      outputs.insert(outputs.end(), list.begin(), list.end());
    }
    work->setOutputs(std::move(outputs));
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::_allgather_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                              const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_into_tensor";
  checkAllgatherBase(outputBuffer, inputBuffer, op);
  if (noWork(opts.asyncOp, opts.timeout) && inputBuffer.is_contiguous() && outputBuffer.is_contiguous() &&
      disjointOrOwnBlock(inputBuffer, outputBuffer, rank_)) {
    Buffer bi = bufferOf(inputBuffer);
    Buffer bo = bufferOf(outputBuffer);
    if (runNow(op, [&] { return hcclGoAllGather(bi.ptr, bo.ptr, bi.count, bi.dtype, comm_, stream(), nullptr); })) {
      return {};
    }
  }
  auto work = newWork(c10d::OpType::_ALLGATHER_BASE, op, {inputBuffer}, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    issueAllgatherBase(is, outputBuffer, inputBuffer);
    work->setOutputs({outputBuffer});
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                              std::vector<at::Tensor>& inputs,
                                                                              const c10d::AllgatherOptions& opts) {
  const char* op = "all_gather_into_tensor_coalesced";
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "hccl_go: ", op, ": ", inputs.size(), " inputs but ",
                    outputs.size(), " outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkAllgatherBase(outputs[i], inputs[i], op);
  }
  auto work = newWork(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, op, inputs, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    for (size_t i = 0; i < inputs.size(); ++i) {
      issueAllgatherBase(is, outputs[i], inputs[i]);
    }
    work->setOutputs(outputs);
  }
  return handOver(std::move(work));
}

// ---- reduce_scatter -----------------------------------------------------

void HcclGoBackend::checkReduceScatterBase(const at::Tensor& output, const at::Tensor& input, const char* op) const {
  checkTensor(output, op, "output");
  checkTensor(input, op, "input");
  checkSameDtype(output, "output", input, "input", op);
  TORCH_CHECK_VALUE(input.numel() == output.numel() * size_, "hccl_go: ", op, ": input is a ", describe(input),
                    " but must hold world_size (", size_, ") x output.numel() (", output.numel(),
                    ") = ", output.numel() * size_, " elements");
}

void HcclGoBackend::issueReduceScatterBase(Issue& is, const at::Tensor& output, const at::Tensor& input,
                                           const Reduction& red) {
  at::Tensor in = is.input(input);
  at::Tensor out = is.output(output, /*withData=*/false);
  // In place is output == input's block of this rank; any other overlap
  // gets a private output.
  if (!disjointOrOwnBlock(out, in, rank_)) {
    at::Tensor tmp = is.temp(out.numel(), out);
    is.work().copyBackOnSuccess(output, tmp.view(output.sizes()));
    out = tmp;
  }
  Buffer bi = bufferOf(in);
  Buffer bo = bufferOf(out);
  is.call([&](hcclGoWork_t* h) {
    return hcclGoReduceScatter(bi.ptr, bo.ptr, bo.count, bo.dtype, red.op, red.preMulScalar, comm_, stream(), h);
  });
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::reduce_scatter(std::vector<at::Tensor>& outputTensors,
                                                             std::vector<std::vector<at::Tensor>>& inputTensors,
                                                             const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter";
  at::Tensor& output = single(outputTensors, op, "output");
  TORCH_CHECK_VALUE(inputTensors.size() == 1, "hccl_go: reduce_scatter: expected one input list, got ",
                    inputTensors.size());
  auto& inputs = inputTensors[0];
  TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == size_, "hccl_go: ", op, ": expected world_size (", size_,
                    ") input tensors, got ", inputs.size());
  checkTensorList(inputs, op, "input", /*sameSize=*/false);
  checkSameDtype(output, "output", inputs[0], "input[0]", op);
  TORCH_CHECK_VALUE(inputs[rank_].numel() == output.numel(), "hccl_go: ", op, ": input[", rank_, "] is a ",
                    describe(inputs[rank_]), " but the output is a ", describe(output),
                    "; they must have the same number of elements");
  Reduction red = reductionFor(opts.reduceOp, output.scalar_type(), op);
  auto work = newWork(c10d::OpType::REDUCE_SCATTER, op, inputs, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    at::Tensor in = packedInput(is, inputs);
    at::Tensor out = is.output(output, /*withData=*/false);
    if (overlaps(in, out)) {
      in = is.input(in.clone());
    }
    bool uniform = false;
    const auto& counts = work->keepCounts(countsOf(inputs, &uniform));
    Buffer bi = bufferOf(in);
    Buffer bo = bufferOf(out);
    if (uniform) {
      is.call([&](hcclGoWork_t* h) {
        return hcclGoReduceScatter(bi.ptr, bo.ptr, bo.count, bo.dtype, red.op, red.preMulScalar, comm_, stream(), h);
      });
    } else {
      is.call([&](hcclGoWork_t* h) {
        return hcclGoReduceScatterV(bi.ptr, bo.ptr, counts.data(), bo.dtype, red.op, red.preMulScalar, comm_, stream(),
                                    h);
      });
    }
    work->setOutputs(outputTensors);
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::_reduce_scatter_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                                   const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor";
  checkReduceScatterBase(outputBuffer, inputBuffer, op);
  Reduction red = reductionFor(opts.reduceOp, outputBuffer.scalar_type(), op);
  if (noWork(opts.asyncOp, opts.timeout) && inputBuffer.is_contiguous() && outputBuffer.is_contiguous() &&
      disjointOrOwnBlock(outputBuffer, inputBuffer, rank_)) {
    Buffer bi = bufferOf(inputBuffer);
    Buffer bo = bufferOf(outputBuffer);
    if (runNow(op, [&] {
          return hcclGoReduceScatter(bi.ptr, bo.ptr, bo.count, bo.dtype, red.op, red.preMulScalar, comm_, stream(),
                                     nullptr);
        })) {
      return {};
    }
  }
  auto work = newWork(c10d::OpType::_REDUCE_SCATTER_BASE, op, {inputBuffer}, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    issueReduceScatterBase(is, outputBuffer, inputBuffer, red);
    work->setOutputs({outputBuffer});
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                              std::vector<at::Tensor>& inputs,
                                                                              const c10d::ReduceScatterOptions& opts) {
  const char* op = "reduce_scatter_tensor_coalesced";
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "hccl_go: ", op, ": ", inputs.size(), " inputs but ",
                    outputs.size(), " outputs");
  std::vector<Reduction> reds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkReduceScatterBase(outputs[i], inputs[i], op);
    reds.push_back(reductionFor(opts.reduceOp, outputs[i].scalar_type(), op));
  }
  auto work = newWork(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, op, inputs, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    for (size_t i = 0; i < inputs.size(); ++i) {
      issueReduceScatterBase(is, outputs[i], inputs[i], reds[i]);
    }
    work->setOutputs(outputs);
  }
  return handOver(std::move(work));
}

// ---- all_to_all -----------------------------------------------------------

c10::intrusive_ptr<c10d::Work> HcclGoBackend::alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                                            std::vector<int64_t>& outputSplitSizes,
                                                            std::vector<int64_t>& inputSplitSizes,
                                                            const c10d::AllToAllOptions& opts) {
  const char* op = "all_to_all_single";
  checkTensor(outputBuffer, op, "output");
  checkTensor(inputBuffer, op, "input");
  checkSameDtype(outputBuffer, "output", inputBuffer, "input", op);
  // Splits count rows (slices along dim 0); none means equal blocks.
  auto rowsPerPeer = [&](const at::Tensor& t, std::vector<int64_t>& splits, const char* name) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    if (splits.empty()) {
      TORCH_CHECK_VALUE(rows % size_ == 0, "hccl_go: ", op, ": ", name, " is a ", describe(t), "; without ", name,
                        "_split_sizes its first dimension must divide by world_size (", size_, ")");
      return std::vector<int64_t>(size_, rows / size_);
    }
    TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == size_, "hccl_go: ", op, ": ", name, "_split_sizes has ",
                      splits.size(), " entries; expected world_size (", size_, ")");
    int64_t sum = 0;
    for (int64_t s : splits) {
      TORCH_CHECK_VALUE(s >= 0, "hccl_go: ", op, ": negative entry in ", name, "_split_sizes");
      sum += s;
    }
    TORCH_CHECK_VALUE(sum == rows, "hccl_go: ", op, ": ", name, "_split_sizes sum to ", sum, " but ", name, " is a ",
                      describe(t), " with ", rows, " rows");
    return splits;
  };
  std::vector<int64_t> outRows = rowsPerPeer(outputBuffer, outputSplitSizes, "output");
  std::vector<int64_t> inRows = rowsPerPeer(inputBuffer, inputSplitSizes, "input");
  const bool equal = inputSplitSizes.empty() && outputSplitSizes.empty();
  // Issues the exchange of bi into bo on work handle h (NULL: blocking).
  auto exchange = [&](const Buffer& bi, const Buffer& bo, const std::vector<size_t>& sendCounts,
                      const std::vector<size_t>& sendDispls, const std::vector<size_t>& recvCounts,
                      const std::vector<size_t>& recvDispls, hcclGoWork_t* h) {
    if (equal) {
      return hcclGoAllToAll(bi.ptr, bo.ptr, bi.count / size_, bi.dtype, comm_, stream(), h);
    }
    return hcclGoAllToAllV(bi.ptr, sendCounts.data(), sendDispls.data(), bo.ptr, recvCounts.data(), recvDispls.data(),
                           bi.dtype, comm_, stream(), h);
  };
  if (noWork(opts.asyncOp, opts.timeout) && inputBuffer.is_contiguous() && outputBuffer.is_contiguous() &&
      !overlaps(inputBuffer, outputBuffer)) {
    Buffer bi = bufferOf(inputBuffer);
    Buffer bo = bufferOf(outputBuffer);
    std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
    if (!equal) {
      sendCounts = rowCounts(inputBuffer, inRows);
      sendDispls = displacements(sendCounts);
      recvCounts = rowCounts(outputBuffer, outRows);
      recvDispls = displacements(recvCounts);
    }
    if (runNow(op, [&] { return exchange(bi, bo, sendCounts, sendDispls, recvCounts, recvDispls, nullptr); })) {
      return {};
    }
  }
  auto work = newWork(c10d::OpType::ALLTOALL_BASE, op, {inputBuffer}, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    at::Tensor in = is.input(inputBuffer);
    at::Tensor out = is.output(outputBuffer, /*withData=*/false);
    if (overlaps(in, out)) {
      in = is.input(in.clone());
    }
    Buffer bi = bufferOf(in);
    Buffer bo = bufferOf(out);
    static const std::vector<size_t> none;
    const auto& sendCounts = equal ? none : work->keepCounts(rowCounts(in, inRows));
    const auto& sendDispls = equal ? none : work->keepCounts(displacements(sendCounts));
    const auto& recvCounts = equal ? none : work->keepCounts(rowCounts(out, outRows));
    const auto& recvDispls = equal ? none : work->keepCounts(displacements(recvCounts));
    is.call([&](hcclGoWork_t* h) { return exchange(bi, bo, sendCounts, sendDispls, recvCounts, recvDispls, h); });
    work->setOutputs({outputBuffer});
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::alltoall(std::vector<at::Tensor>& outputTensors,
                                                       std::vector<at::Tensor>& inputTensors,
                                                       const c10d::AllToAllOptions& opts) {
  const char* op = "all_to_all";
  TORCH_CHECK_VALUE(static_cast<int>(inputTensors.size()) == size_ && static_cast<int>(outputTensors.size()) == size_,
                    "hccl_go: ", op, ": expected world_size (", size_, ") input and output tensors, got ",
                    inputTensors.size(), " and ", outputTensors.size());
  checkTensorList(inputTensors, op, "input", /*sameSize=*/false);
  checkTensorList(outputTensors, op, "output", /*sameSize=*/false);
  checkSameDtype(outputTensors[0], "output[0]", inputTensors[0], "input[0]", op);
  if (noWork(opts.asyncOp, opts.timeout)) {
    // Lists that already lie back to back run at once, on their memory.
    auto in = flatViewOf(inputTensors);
    auto out = flatViewOf(outputTensors);
    if (in && out && !overlaps(*in, *out)) {
      bool uniform = false;
      const auto sendCounts = countsOf(inputTensors, &uniform);
      const auto sendDispls = displacements(sendCounts);
      const auto recvCounts = countsOf(outputTensors, &uniform);
      const auto recvDispls = displacements(recvCounts);
      Buffer bi = bufferOf(*in);
      Buffer bo = bufferOf(*out);
      if (runNow(op, [&] {
            return hcclGoAllToAllV(bi.ptr, sendCounts.data(), sendDispls.data(), bo.ptr, recvCounts.data(),
                                   recvDispls.data(), bi.dtype, comm_, stream(), nullptr);
          })) {
        return {};
      }
    }
  }
  auto work = newWork(c10d::OpType::ALLTOALL, op, inputTensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    at::Tensor in = packedInput(is, inputTensors);
    at::Tensor out = packedOutput(is, outputTensors, in);
    bool uniform = false;
    const auto& sendCounts = work->keepCounts(countsOf(inputTensors, &uniform));
    const auto& sendDispls = work->keepCounts(displacements(sendCounts));
    const auto& recvCounts = work->keepCounts(countsOf(outputTensors, &uniform));
    const auto& recvDispls = work->keepCounts(displacements(recvCounts));
    Buffer bi = bufferOf(in);
    Buffer bo = bufferOf(out);
    is.call([&](hcclGoWork_t* h) {
      return hcclGoAllToAllV(bi.ptr, sendCounts.data(), sendDispls.data(), bo.ptr, recvCounts.data(), recvDispls.data(),
                             bi.dtype, comm_, stream(), h);
    });
    work->setOutputs(outputTensors);
  }
  return handOver(std::move(work));
}

// ---- gather, scatter, barrier ----------------------------------------------

c10::intrusive_ptr<c10d::Work> HcclGoBackend::gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                                     std::vector<at::Tensor>& inputTensors,
                                                     const c10d::GatherOptions& opts) {
  const char* op = "gather";
  at::Tensor& input = single(inputTensors, op, "input");
  checkRank(opts.rootRank, size_, op, "dst");
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = root == rank_;
  if (isRoot) {
    TORCH_CHECK_VALUE(outputTensors.size() == 1 && static_cast<int>(outputTensors[0].size()) == size_, "hccl_go: ", op,
                      ": the destination rank needs a gather_list of world_size (", size_, ") tensors");
    checkTensorList(outputTensors[0], op, "gather_list", /*sameSize=*/true);
    checkSameDtype(outputTensors[0][0], "gather_list[0]", input, "input", op);
    TORCH_CHECK_VALUE(outputTensors[0][0].numel() == input.numel(), "hccl_go: ", op, ": gather_list[0] is a ",
                      describe(outputTensors[0][0]), " but the input is a ", describe(input),
                      "; they must have the same number of elements");
  } else {
    TORCH_CHECK_VALUE(outputTensors.empty() || (outputTensors.size() == 1 && outputTensors[0].empty()), "hccl_go: ", op,
                      ": only the destination rank (", root, ") may pass a gather_list");
  }
  auto work = newWork(c10d::OpType::GATHER, op, inputTensors, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    at::Tensor in = is.input(input);
    void* recv = nullptr;
    if (isRoot) {
      at::Tensor out = packedOutput(is, outputTensors[0], in);
      recv = out.numel() == 0 ? nullptr : out.data_ptr();
      work->setOutputs(outputTensors[0]);
    }
    Buffer bi = bufferOf(in);
    is.call([&](hcclGoWork_t* h) { return hcclGoGather(bi.ptr, recv, bi.count, bi.dtype, root, comm_, stream(), h); });
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::scatter(std::vector<at::Tensor>& outputTensors,
                                                      std::vector<std::vector<at::Tensor>>& inputTensors,
                                                      const c10d::ScatterOptions& opts) {
  const char* op = "scatter";
  at::Tensor& output = single(outputTensors, op, "output");
  checkRank(opts.rootRank, size_, op, "src");
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = root == rank_;
  if (isRoot) {
    TORCH_CHECK_VALUE(inputTensors.size() == 1 && static_cast<int>(inputTensors[0].size()) == size_, "hccl_go: ", op,
                      ": the source rank needs a scatter_list of world_size (", size_, ") tensors");
    checkTensorList(inputTensors[0], op, "scatter_list", /*sameSize=*/true);
    checkSameDtype(inputTensors[0][0], "scatter_list[0]", output, "output", op);
    TORCH_CHECK_VALUE(inputTensors[0][0].numel() == output.numel(), "hccl_go: ", op, ": scatter_list[0] is a ",
                      describe(inputTensors[0][0]), " but the output is a ", describe(output),
                      "; they must have the same number of elements");
  } else {
    TORCH_CHECK_VALUE(inputTensors.empty() || (inputTensors.size() == 1 && inputTensors[0].empty()), "hccl_go: ", op,
                      ": only the source rank (", root, ") may pass a scatter_list");
  }
  auto work = newWork(c10d::OpType::SCATTER, op, isRoot ? inputTensors[0] : std::vector<at::Tensor>{}, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    at::Tensor out = is.output(output, /*withData=*/false);
    const void* send = nullptr;
    if (isRoot) {
      at::Tensor in = packedInput(is, inputTensors[0]);
      if (overlaps(in, out)) {
        in = is.input(in.clone());
      }
      send = in.numel() == 0 ? nullptr : in.data_ptr();
    }
    Buffer bo = bufferOf(out);
    is.call([&](hcclGoWork_t* h) { return hcclGoScatter(send, bo.ptr, bo.count, bo.dtype, root, comm_, stream(), h); });
    work->setOutputs(outputTensors);
  }
  return handOver(std::move(work));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::barrier(const c10d::BarrierOptions& opts) {
  if (noWork(opts.asyncOp, opts.timeout) &&
      runNow("barrier", [&] { return hcclGoBarrier(comm_, stream(), nullptr); })) {
    return {};
  }
  auto work = newWork(c10d::OpType::BARRIER, "barrier", {}, opts.timeout);
  {
    Issue is(*this, work, blocking(opts.asyncOp, opts.timeout));
    is.call([&](hcclGoWork_t* h) { return hcclGoBarrier(comm_, stream(), h); });
  }
  return handOver(std::move(work));
}

}  // namespace hccl_go
