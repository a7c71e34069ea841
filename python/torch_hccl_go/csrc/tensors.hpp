// tensors.hpp: what the backend accepts and how a tensor becomes the
// (pointer, count, datatype) triple of the C API.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <vector>

#include "hccl_go.h"

namespace hccl_go {

// One contiguous buffer as the C API sees it. Complex tensors appear as
// their real counterpart with twice the count.
struct Buffer {
  void* ptr = nullptr;
  size_t count = 0;
  hcclGoDataType_t dtype = hcclGoFloat32;
};

// A reduction as the C API sees it.
struct Reduction {
  hcclGoRedOp_t op = hcclGoSum;
  double preMulScalar = 1.0;
};

// "cpu float32 tensor of shape [2, 3] (contiguous)": for error messages.
std::string describe(const at::Tensor& t);

// The C datatype of a scalar type (complex: its real type), if supported.
std::optional<hcclGoDataType_t> goDtype(at::ScalarType type);

// The buffer of a contiguous, checked tensor.
Buffer bufferOf(const at::Tensor& t);

// Checks that t is a dense, defined CPU tensor of a supported dtype;
// `op` and `name` name the call and the argument in the message.
void checkTensor(const at::Tensor& t, const char* op, const char* name);

// Checks every tensor of a list, and that all share t0's dtype (and, if
// sameSize, its number of elements).
void checkTensorList(const std::vector<at::Tensor>& ts, const char* op, const char* name, bool sameSize);

// Checks that `tensors` holds exactly one tensor (the multi-tensor-per-rank
// form of the old API is not supported) and returns it.
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* op, const char* name);

// Maps a ReduceOp for tensors of dtype `type`; refuses ops that make no
// sense for the dtype (BXOR on float, MIN on complex, ...).
Reduction reductionFor(const c10d::ReduceOp& op, at::ScalarType type, const char* opName);

// Checks 0 <= rank < size for a root/src/dst argument.
void checkRank(int64_t rank, int size, const char* op, const char* name);

// If the tensors lie back to back in one storage, contiguous and of one
// dtype, a 1-D view over all of them (so a collective can use them in
// place); otherwise nullopt.
std::optional<at::Tensor> flatViewOf(const std::vector<at::Tensor>& ts);

// True if the memory of a and b overlaps.
bool overlaps(const at::Tensor& a, const at::Tensor& b);

// True if block and whole share no memory, or block is exactly rank's
// block of whole (the in-place layout of all_gather_into_tensor's input and
// reduce_scatter_tensor's output).
bool disjointOrOwnBlock(const at::Tensor& block, const at::Tensor& whole, int64_t rank);

}  // namespace hccl_go
