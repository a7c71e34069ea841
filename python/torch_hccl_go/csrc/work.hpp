// work.hpp: the c10d::Work of one torch.distributed call.
//
// One call may issue several library ops (a coalesced all_reduce, a list
// all_gather); the Work completes when all of them have. Its life:
//
//   issuing thread:    addPart() per library op, then seal()
//   completion thread: partDone() per op; the last one (or seal(), if it
//                      comes last) runs finish(): copies results back into
//                      non-contiguous outputs, marks the Work done, completes
//                      the Future.
//
// The Work holds every tensor the library may touch (inputs, outputs and
// temporaries) until it completes, so their memory outlives the op.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>
#include <vector>

#include "hccl_go.h"

namespace hccl_go {

class CompletionQueue;

class HcclGoWork : public c10d::Work {
 public:
  // name is the torch-level op ("all_reduce"); timeout is what wait()
  // uses when given none.
  HcclGoWork(int rank, c10d::OpType opType, std::string name, uint64_t seq, std::chrono::milliseconds timeout,
             std::shared_ptr<CompletionQueue> queue, const std::vector<at::Tensor>& inputs);
  ~HcclGoWork() override = default;

  // ---- issuing side (the thread that made the Work) ----

  // Keeps t alive until the Work completes.
  void keep(const at::Tensor& t);
  // After success and before completion, runs dst.copy_(src).
  void copyBackOnSuccess(const at::Tensor& dst, const at::Tensor& src);
  // Keeps a counts/displacements array alive until the Work completes and
  // returns its stable copy.
  const std::vector<size_t>& keepCounts(std::vector<size_t> counts);
  // The tensors the Future and result() return.
  void setOutputs(std::vector<at::Tensor> outputs);
  // Announces one more library op (or child Work) to wait for.
  void addPart();
  // Records an error found while issuing; the Work fails with it.
  void failIssue(hcclGoResult_t status, const std::string& msg);
  // No more parts: the Work may complete once all parts have.
  void seal();
  // seal() for a Work whose parts have all completed and that nobody else
  // has seen yet (a blocking Issue): it finishes on this thread, since no
  // Future callback can be attached yet.
  void sealDone();
  // Whether its ops ran to completion inside their calls (sealDone).
  bool ranBlocking() const { return ranBlocking_; }
  // Makes this Work complete only after `child` does; its outputs follow
  // those of earlier children (coalescing). Call before this Work's seal()
  // and before the child's first part is issued.
  void addChild(const c10::intrusive_ptr<HcclGoWork>& child);

  // True for a Work inside a coalescing group (it has a parent).
  bool inGroup() const { return !parents_.empty(); }

  // ---- completion side (completion thread, or the CompletionQueue) ----

  // One part finished; returns true if it was the last (call finish()).
  bool partDone(hcclGoResult_t status, const std::string& msg);
  // Completes the Work and its Future. Runs once.
  void finish();

  // The library handles of this Work's own ops, in issue order (written by
  // the issuing thread before the Work is returned to the caller).
  void addHandle(hcclGoWork_t handle) { handles_.push_back(handle); }
  const std::vector<hcclGoWork_t>& handles() const { return handles_; }

  const std::string& name() const { return name_; }
  // How errors name the op: "hccl_go: all_reduce (op #7)".
  std::string label() const { return "hccl_go: " + name_ + " (op #" + std::to_string(seq_) + ")"; }

  // ---- c10d::Work ----
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  uint64_t getSequencenumber() const override;
  std::chrono::milliseconds getTimeout() const override;
  // The sender of a completed receive from any rank.
  int sourceRank() const override;

  // Where the library writes the sender of a receive from any rank; valid
  // as long as this Work, which outlives the op.
  int* sourceSlot() { return &source_; }

 private:
  // Completes f with this finished Work's outcome.
  void completeFuture(const c10::intrusive_ptr<c10::ivalue::Future>& f);

  int source_ = -1;  // written by the library before the op completes
  const std::string name_;
  const uint64_t seq_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<CompletionQueue> queue_;

  // Parts not yet done, plus one until seal().
  std::atomic<int> pending_{1};
  std::atomic<bool> finished_{false};
  std::atomic<bool> started_{false};
  bool ranBlocking_ = false;  // issuing thread only  // getFuture() had a completion thread drive the ops (postDrive)

  // Written by the issuing thread before seal(), read by finish() after the
  // last part: the atomic pending_ orders them.
  std::vector<at::Tensor> kept_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copyBack_;
  std::list<std::vector<size_t>> keptCounts_;  // a list: references stay valid, and empty costs nothing
  std::vector<at::Tensor> outputs_;
  std::vector<hcclGoWork_t> handles_;
  // Coalescing links, both dropped by finish() (no cycle outlives it).
  std::vector<c10::intrusive_ptr<HcclGoWork>> children_;
  std::vector<c10::intrusive_ptr<HcclGoWork>> parents_;

  // Guards the first error of any part, and the Future: made on the first
  // getFuture() (most Works are only waited on), completed by finish() or,
  // if made after that, by getFuture() itself.
  std::mutex errMu_;
  hcclGoResult_t status_ = hcclGoSuccess;
  std::string errMsg_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool futureDue_ = false;      // finish() has run: a Future made now completes at once
  std::exception_ptr outcome_;  // the error finish() reported (null: success)
};

}  // namespace hccl_go
