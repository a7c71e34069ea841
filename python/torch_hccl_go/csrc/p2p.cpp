// p2p.cpp: send and recv. The library runs them apart from collectives and
// from the other direction, so batch_isend_irecv issued one op at a time
// cannot deadlock.
#include <c10/util/Exception.h>

#include "backend.hpp"
#include "issue.hpp"
#include "tensors.hpp"

namespace hccl_go {

namespace {

uint32_t checkedTag(int tag, const char* op) {
  TORCH_CHECK_VALUE(tag >= 0, "hccl_go: ", op, ": tag must be >= 0, got ", tag);
  return static_cast<uint32_t>(tag);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> HcclGoBackend::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  return sendTagged(tensors, dstRank, checkedTag(tag, "send"));
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  return recvTagged(tensors, srcRank, checkedTag(tag, "recv"));
}

c10::intrusive_ptr<HcclGoWork> HcclGoBackend::sendTagged(std::vector<at::Tensor>& tensors, int dstRank, uint32_t utag) {
  const char* op = "send";
  at::Tensor& t = single(tensors, op, "tensor");
  checkRank(dstRank, size_, op, "dst");
  auto work = newWork(c10d::OpType::SEND, op, tensors, c10d::kUnsetTimeout, /*p2p=*/true);
  {
    Issue is(*this, work);
    Buffer b = bufferOf(is.input(t));
    is.call([&](hcclGoWork_t* h) { return hcclGoSend(b.ptr, b.count, b.dtype, dstRank, utag, comm_, h); });
    work->setOutputs(tensors);
  }
  return work;
}

c10::intrusive_ptr<HcclGoWork> HcclGoBackend::recvTagged(std::vector<at::Tensor>& tensors, int srcRank, uint32_t utag) {
  const char* op = "recv";
  at::Tensor& t = single(tensors, op, "tensor");
  checkRank(srcRank, size_, op, "src");
  auto work = newWork(c10d::OpType::RECV, op, tensors, c10d::kUnsetTimeout, /*p2p=*/true);
  {
    Issue is(*this, work);
    Buffer b = bufferOf(is.output(t, /*withData=*/false));
    is.call([&](hcclGoWork_t* h) { return hcclGoRecv(b.ptr, b.count, b.dtype, srcRank, utag, comm_, h); });
    *work->sourceSlot() = srcRank;
    work->setOutputs(tensors);
  }
  return work;
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  const char* op = "recv from any source";
  at::Tensor& t = single(tensors, op, "tensor");
  const uint32_t utag = checkedTag(tag, op);
  auto work = newWork(c10d::OpType::RECVANYSOURCE, op, tensors, c10d::kUnsetTimeout, /*p2p=*/true);
  {
    Issue is(*this, work);
    Buffer b = bufferOf(is.output(t, /*withData=*/false));
    int* source = work->sourceSlot();
    is.call([&](hcclGoWork_t* h) { return hcclGoRecvAny(b.ptr, b.count, b.dtype, utag, source, comm_, h); });
    work->setOutputs(tensors);
  }
  return work;
}

}  // namespace hccl_go
