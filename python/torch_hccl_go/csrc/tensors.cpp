#include "tensors.hpp"

#include <c10/util/Exception.h>

#include <sstream>

namespace hccl_go {

namespace {

// Python-style names ("float32"), so messages read like the user's code.
const char* dtypeName(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kChar:
      return "int8";
    case at::kShort:
      return "int16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    case at::kUInt16:
      return "uint16";
    case at::kUInt32:
      return "uint32";
    case at::kUInt64:
      return "uint64";
    case at::kFloat8_e5m2:
      return "float8_e5m2";
    case at::kFloat8_e4m3fn:
      return "float8_e4m3fn";
    case at::kFloat8_e5m2fnuz:
      return "float8_e5m2fnuz";
    case at::kFloat8_e4m3fnuz:
      return "float8_e4m3fnuz";
    case at::kFloat8_e8m0fnu:
      return "float8_e8m0fnu";
    case at::kFloat4_e2m1fn_x2:
      return "float4_e2m1fn_x2";
    case at::kComplexHalf:
      return "complex32";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(type);
  }
}

const char* kSupportedDtypes =
    "float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool "
    "(complex64/complex128/complex32 as pairs of reals); float8 and float4_e2m1fn_x2 in every op but "
    "reductions";

// Float8 and packed float4 tensors move as bytes; no reduction is defined
// for them here.
bool movesAsBytes(at::ScalarType type) { return at::isFloat8Type(type) || type == at::kFloat4_e2m1fn_x2; }

const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "UNUSED";
  }
}

double preMulScalarOf(const c10d::ReduceOp& op, const char* opName) {
  auto* sup = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK_VALUE(sup != nullptr, "hccl_go: ", opName,
                    ": ReduceOp.PREMUL_SUM without its scalar; build it with "
                    "torch.distributed._make_nccl_premul_sum(factor)");
  if (sup->tensor_factor.defined()) {
    TORCH_CHECK_VALUE(sup->tensor_factor.numel() == 1, "hccl_go: ", opName,
                      ": the PREMUL_SUM factor must be a 1-element tensor, got ", describe(sup->tensor_factor));
    TORCH_CHECK_VALUE(!sup->tensor_factor.is_complex(), "hccl_go: ", opName,
                      ": a complex PREMUL_SUM factor is not supported");
    return sup->tensor_factor.to(at::kCPU).item().toDouble();
  }
  return sup->double_factor;
}

}  // namespace

std::string describe(const at::Tensor& t) {
  if (!t.defined()) {
    return "undefined tensor";
  }
  std::ostringstream s;
  s << t.device() << " " << dtypeName(t.scalar_type());
  if (t.is_sparse()) {
    s << " sparse";
  }
  s << " tensor of shape " << t.sizes();
  if (t.layout() == at::kStrided && !t.is_contiguous()) {
    s << " (non-contiguous)";
  }
  return s.str();
}

std::optional<hcclGoDataType_t> goDtype(at::ScalarType type) {
  if (at::isComplexType(type)) {
    type = c10::toRealValueType(type);
  }
  switch (type) {
    case at::kFloat:
      return hcclGoFloat32;
    case at::kDouble:
      return hcclGoFloat64;
    case at::kHalf:
      return hcclGoFloat16;
    case at::kBFloat16:
      return hcclGoBfloat16;
    case at::kChar:
      return hcclGoInt8;
    case at::kShort:
      return hcclGoInt16;
    case at::kInt:
      return hcclGoInt32;
    case at::kLong:
      return hcclGoInt64;
    case at::kByte:
      return hcclGoUint8;
    case at::kBool:
      return hcclGoBool;
    case at::kUInt16:
      return hcclGoUint16;
    case at::kUInt32:
      return hcclGoUint32;
    case at::kUInt64:
      return hcclGoUint64;
    default:
      if (movesAsBytes(type)) {
        return hcclGoUint8;
      }
      return std::nullopt;
  }
}

Buffer bufferOf(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.is_contiguous(), "hccl_go: bufferOf needs a contiguous tensor, got ", describe(t));
  Buffer b;
  b.dtype = *goDtype(t.scalar_type());
  b.count = static_cast<size_t>(t.numel()) * (t.is_complex() ? 2 : 1);
  b.ptr = b.count == 0 ? nullptr : t.data_ptr();
  return b;
}

void checkTensor(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK_VALUE(t.defined(), "hccl_go: ", op, ": ", name, " is an undefined tensor");
  TORCH_CHECK_VALUE(t.device().is_cpu(), "hccl_go: ", op, ": ", name, " is a ", describe(t),
                    "; the hccl_go backend takes CPU tensors only (use backend=\"cpu:hccl_go,cuda:nccl\" "
                    "or move the tensor to the CPU)");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, "hccl_go: ", op, ": ", name, " is a ", describe(t), " with layout ",
                    t.layout(), "; only dense (strided) tensors are supported");
  TORCH_CHECK_VALUE(goDtype(t.scalar_type()).has_value(), "hccl_go: ", op, ": ", name, " is a ", describe(t),
                    "; supported dtypes: ", kSupportedDtypes);
}

void checkTensorList(const std::vector<at::Tensor>& ts, const char* op, const char* name, bool sameSize) {
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string item = std::string(name) + "[" + std::to_string(i) + "]";
    checkTensor(ts[i], op, item.c_str());
    TORCH_CHECK_VALUE(ts[i].scalar_type() == ts[0].scalar_type(), "hccl_go: ", op, ": ", item, " is a ",
                      describe(ts[i]), " but ", name, "[0] is a ", describe(ts[0]),
                      "; all tensors must have the same dtype");
    TORCH_CHECK_VALUE(!sameSize || ts[i].numel() == ts[0].numel(), "hccl_go: ", op, ": ", item, " is a ",
                      describe(ts[i]), " but ", name, "[0] is a ", describe(ts[0]),
                      "; all tensors must have the same number of elements");
  }
}

at::Tensor& single(std::vector<at::Tensor>& tensors, const char* op, const char* name) {
  TORCH_CHECK_VALUE(tensors.size() == 1, "hccl_go: ", op, ": expected exactly one tensor in ", name, ", got ",
                    tensors.size(), " (one tensor per rank; the multi-tensor form is not supported)");
  checkTensor(tensors[0], op, name);
  return tensors[0];
}

Reduction reductionFor(const c10d::ReduceOp& op, at::ScalarType type, const char* opName_) {
  TORCH_CHECK_VALUE(!movesAsBytes(type), "hccl_go: ", opName_, ": reductions of ", dtypeName(type),
                    " tensors are not supported (broadcast, all_gather, all_to_all, gather, scatter and send/recv "
                    "move them); reduce in bfloat16 or float32 instead");
  const bool integral = at::isIntegralType(type, /*includeBool=*/true);
  const bool complex = at::isComplexType(type);
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = hcclGoSum;
      break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK_VALUE(type != at::kBool, "hccl_go: ", opName_, ": ReduceOp.AVG is not defined for bool tensors");
      r.op = hcclGoAvg;
      break;
    case c10d::ReduceOp::PRODUCT:
      r.op = hcclGoProd;
      break;
    case c10d::ReduceOp::MIN:
      r.op = hcclGoMin;
      break;
    case c10d::ReduceOp::MAX:
      r.op = hcclGoMax;
      break;
    case c10d::ReduceOp::BAND:
      r.op = hcclGoBand;
      break;
    case c10d::ReduceOp::BOR:
      r.op = hcclGoBor;
      break;
    case c10d::ReduceOp::BXOR:
      r.op = hcclGoBxor;
      break;
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK_VALUE(!integral, "hccl_go: ", opName_, ": ReduceOp.PREMUL_SUM needs a floating-point tensor, got ",
                        dtypeName(type));
      r.op = hcclGoPremulSum;
      r.preMulScalar = preMulScalarOf(op, opName_);
      break;
    default:
      TORCH_CHECK_VALUE(false, "hccl_go: ", opName_, ": unsupported ReduceOp ", static_cast<int>(op.op_));
  }
  const bool bitwise = r.op == hcclGoBand || r.op == hcclGoBor || r.op == hcclGoBxor;
  TORCH_CHECK_VALUE(!bitwise || integral, "hccl_go: ", opName_, ": ReduceOp.", opName(op.op_),
                    " needs an integer or bool tensor, got ", dtypeName(type));
  const bool ordered = r.op == hcclGoMin || r.op == hcclGoMax || r.op == hcclGoProd;
  TORCH_CHECK_VALUE(!ordered || !complex, "hccl_go: ", opName_, ": ReduceOp.", opName(op.op_),
                    " is not defined for complex tensors (", dtypeName(type), "); use SUM, AVG or PREMUL_SUM");
  return r;
}

void checkRank(int64_t rank, int size, const char* op, const char* name) {
  TORCH_CHECK_VALUE(rank >= 0 && rank < size, "hccl_go: ", op, ": ", name, " ", rank,
                    " is out of range for a group of ", size, " ranks");
}

std::optional<at::Tensor> flatViewOf(const std::vector<at::Tensor>& ts) {
  if (ts.empty()) {
    return std::nullopt;
  }
  const at::Tensor& t0 = ts[0];
  const auto* base = static_cast<const char*>(t0.storage().data());
  const size_t itemsize = t0.element_size();
  int64_t offset = t0.storage_offset();
  int64_t total = 0;
  for (const auto& t : ts) {
    if (!t.is_contiguous() || t.scalar_type() != t0.scalar_type() ||
        static_cast<const char*>(t.storage().data()) != base || t.storage_offset() != offset) {
      return std::nullopt;
    }
    offset += t.numel();
    total += t.numel();
  }
  if (static_cast<size_t>(offset) * itemsize > t0.storage().nbytes()) {
    return std::nullopt;
  }
  return t0.as_strided({total}, {1}, t0.storage_offset());
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) {
    return false;
  }
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  const auto* a1 = a0 + a.nbytes();
  const auto* b1 = b0 + b.nbytes();
  return a0 < b1 && b0 < a1;
}

bool disjointOrOwnBlock(const at::Tensor& block, const at::Tensor& whole, int64_t rank) {
  const auto* own = static_cast<const char*>(whole.data_ptr()) + rank * block.nbytes();
  return !overlaps(block, whole) || static_cast<const char*>(block.data_ptr()) == own;
}

}  // namespace hccl_go
