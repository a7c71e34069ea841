#include "work.hpp"

#include <ATen/core/jit_type.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "completion_queue.hpp"
#include "errors.hpp"

namespace hccl_go {

namespace {

// condition_variable::wait_for overflows on huge durations (a timeout of
// timedelta.max); a year is forever enough.
std::chrono::milliseconds clampTimeout(std::chrono::milliseconds t) {
  constexpr std::chrono::milliseconds kYear{365LL * 24 * 3600 * 1000};
  return std::min(t, kYear);
}

}  // namespace

HcclGoWork::HcclGoWork(int rank, c10d::OpType opType, std::string name, uint64_t seq, std::chrono::milliseconds timeout,
                       std::shared_ptr<CompletionQueue> queue, const std::vector<at::Tensor>& inputs)
    // A profiler range only while something (the torch profiler) records:
    // for any title c10d::Work makes a RecordFunction, an allocation per op.
    : c10d::Work(rank, opType, at::hasCallbacks() ? ("hccl_go:" + name).c_str() : nullptr, inputs),
      name_(std::move(name)),
      seq_(seq),
      timeout_(timeout),
      queue_(std::move(queue)) {}

void HcclGoWork::keep(const at::Tensor& t) { kept_.push_back(t); }

const std::vector<size_t>& HcclGoWork::keepCounts(std::vector<size_t> counts) {
  keptCounts_.push_back(std::move(counts));
  return keptCounts_.back();
}

void HcclGoWork::copyBackOnSuccess(const at::Tensor& dst, const at::Tensor& src) { copyBack_.emplace_back(dst, src); }

void HcclGoWork::setOutputs(std::vector<at::Tensor> outputs) { outputs_ = std::move(outputs); }

void HcclGoWork::addPart() { pending_.fetch_add(1, std::memory_order_relaxed); }

void HcclGoWork::failIssue(hcclGoResult_t status, const std::string& msg) {
  std::lock_guard<std::mutex> lock(errMu_);
  if (status_ == hcclGoSuccess) {
    status_ = status;
    errMsg_ = msg;
  }
}

void HcclGoWork::seal() {
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // Every part is already done: finish on the completion thread, so that
    // Future callbacks always run there.
    queue_->postFinish(c10::intrusive_ptr<HcclGoWork>::reclaim_copy(this));
  }
}

void HcclGoWork::sealDone() {
  ranBlocking_ = true;
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    finish();
  }
}

void HcclGoWork::addChild(const c10::intrusive_ptr<HcclGoWork>& child) {
  addPart();
  children_.push_back(child);
  child->parents_.push_back(c10::intrusive_ptr<HcclGoWork>::reclaim_copy(this));
}

bool HcclGoWork::partDone(hcclGoResult_t status, const std::string& msg) {
  if (status != hcclGoSuccess) {
    failIssue(status, msg);
  }
  return pending_.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

void HcclGoWork::finish() {
  if (finished_.exchange(true)) {
    return;
  }
  hcclGoResult_t status;
  std::string msg;
  {
    std::lock_guard<std::mutex> lock(errMu_);
    status = status_;
    msg = errMsg_;
  }
  // Results reach the caller's tensors before anyone can see completion.
  if (status == hcclGoSuccess) {
    try {
      for (auto& [dst, src] : copyBack_) {
        dst.copy_(src);
      }
    } catch (const std::exception& e) {
      status = hcclGoInternalError;
      msg = std::string("copying the result back into the output tensor: ") + e.what();
    }
  }
  for (auto& child : children_) {
    outputs_.insert(outputs_.end(), child->outputs_.begin(), child->outputs_.end());
  }
  auto parents = std::move(parents_);
  children_.clear();
  kept_.clear();
  copyBack_.clear();
  keptCounts_.clear();

  // Named only on error: a success builds no text.
  const std::string what = status == hcclGoSuccess ? std::string() : label();
  std::exception_ptr err = status == hcclGoSuccess ? nullptr : makeOpError(status, what, msg);
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(errMu_);
    outcome_ = err;
    futureDue_ = true;
    future = future_;
  }
  // Like ProcessGroupGloo: the Future first, then the Work.
  if (future) {
    completeFuture(future);
  }
  c10d::Work::finish(err);
  queue_->untrack(this);

  for (auto& parent : parents) {
    if (parent->partDone(status, status == hcclGoSuccess ? "" : what + ": " + msg)) {
      parent->finish();
    }
  }
}

void HcclGoWork::completeFuture(const c10::intrusive_ptr<c10::ivalue::Future>& f) {
  try {
    if (outcome_) {
      f->setError(outcome_);
    } else {
      f->markCompleted(c10::IValue(outputs_));
    }
  } catch (const std::exception& e) {
    // A Future callback threw; the Work itself still completes.
    TORCH_WARN("hccl_go: a callback of the Future of ", name_, " (op #", seq_, ") threw: ", e.what());
  }
}

bool HcclGoWork::wait(std::chrono::milliseconds timeout) {
  // Without an explicit timeout, give the library (which fails the op itself
  // at the op timeout, with a message naming the late ranks) time to report.
  auto limit = clampTimeout(timeout == kNoTimeout ? timeout_ + std::chrono::seconds(2) : timeout);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  if (!isCompleted() && !queue_->onCompletionThread()) {
    queue_->driveInline(c10::intrusive_ptr<HcclGoWork>::reclaim_copy(this), limit);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_until(lock, deadline, [&] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError, label() + " timed out after " + std::to_string(limit.count()) +
                                          " ms in wait(); the op is still running");
  }
  if (exception_) {
    std::rethrow_exception(exception_);
  }
  return true;
}

std::vector<at::Tensor> HcclGoWork::result() {
  TORCH_CHECK(isCompleted(), "hccl_go: ", name_, ": result() needs a completed Work; call wait() first");
  return outputs_;
}

c10::intrusive_ptr<c10::ivalue::Future> HcclGoWork::getFuture() {
  // Whoever takes the Future (DDP's comm hooks, then() chains) follows the
  // op through it, never through wait(), so no waiter will run it inline.
  // Rather than leave it to a library thread after the inline grace (and
  // hand its completion over to a completion thread), a completion thread
  // runs it now and completes it itself. (A then() callback that issues a
  // collective on this group therefore races with other threads issuing on
  // it, as with gloo: README, "Ordering".)
  c10::intrusive_ptr<c10::ivalue::Future> future;
  bool completeNow = false;
  {
    std::lock_guard<std::mutex> lock(errMu_);
    if (!future_) {
      future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
      completeNow = futureDue_;  // finish() has run and found no Future to complete
    }
    future = future_;
  }
  if (completeNow) {
    completeFuture(future);
  }
  if (!started_.exchange(true) && !isCompleted() && !handles_.empty()) {
    queue_->postDrive(c10::intrusive_ptr<HcclGoWork>::reclaim_copy(this));
  }
  return future;
}

uint64_t HcclGoWork::getSequencenumber() const { return seq_; }

std::chrono::milliseconds HcclGoWork::getTimeout() const { return timeout_; }

int HcclGoWork::sourceRank() const {
  TORCH_CHECK(retrieveOpType() == c10d::OpType::RECV || retrieveOpType() == c10d::OpType::RECVANYSOURCE, label(),
              ": sourceRank() is only defined for receives");
  TORCH_CHECK(finished_.load() && source_ >= 0, label(),
              ": sourceRank() of a receive that has not completed successfully");
  return source_;
}

}  // namespace hccl_go
