#include "completion_queue.hpp"

#include <pthread.h>

#include <c10/core/GradMode.h>

#include "errors.hpp"

namespace hccl_go {

void CompletionQueue::watch(const c10::intrusive_ptr<HcclGoWork>& work, hcclGoWork_t handle) {
  work->addPart();
  auto* ctx = new CallbackContext{shared_from_this(), work};
  // The callback may run at once, on this thread, if the op already ended.
  hcclGoResult_t r = hcclGoWorkSetCallback(handle, &CompletionQueue::onLibraryCompletion, ctx);
  if (r != hcclGoSuccess) {
    delete ctx;
    std::string msg = "registering the completion callback: " + lastError(0);
    hcclGoWorkFree(handle);
    // Not the last part: the issuing thread has not sealed the Work yet.
    work->partDone(r, msg);
  }
}

void CompletionQueue::onLibraryCompletion(void* userData, hcclGoWork_t handle, hcclGoResult_t status,
                                          const char* msg) noexcept {
  std::unique_ptr<CallbackContext> ctx(static_cast<CallbackContext*>(userData));
  try {
    ctx->queue->push(Event{std::move(ctx->work), handle, status, msg != nullptr ? msg : ""});
  } catch (...) {
    // Out of memory on a Go thread: nothing sensible is left to do; the
    // Work will report a timeout from wait().
  }
}

void CompletionQueue::postFinish(const c10::intrusive_ptr<HcclGoWork>& work) {
  push(Event{work, 0, hcclGoSuccess, ""});
}

void CompletionQueue::push(Event ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

void CompletionQueue::track(const c10::intrusive_ptr<HcclGoWork>& work) {
  std::lock_guard<std::mutex> lock(mu_);
  inFlight_.emplace(work.get(), work);
}

void CompletionQueue::untrack(HcclGoWork* work) {
  c10::intrusive_ptr<HcclGoWork> last;  // released outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = inFlight_.find(work);
    if (it == inFlight_.end()) {
      return;
    }
    last = std::move(it->second);
    inFlight_.erase(it);
  }
  cv_.notify_all();
}

bool CompletionQueue::waitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return inFlight_.empty(); });
}

std::vector<c10::intrusive_ptr<HcclGoWork>> CompletionQueue::inFlight() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<c10::intrusive_ptr<HcclGoWork>> works;
  works.reserve(inFlight_.size());
  for (auto& kv : inFlight_) {
    works.push_back(kv.second);
  }
  return works;
}

void CompletionQueue::run() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    threadId_ = std::this_thread::get_id();
  }
  pthread_setname_np(pthread_self(), "hccl_go_done");
  // Copying results into tensors that require grad is not an autograd op.
  c10::AutoGradMode noGrad(false);
  for (;;) {
    Event ev;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !events_.empty() || stop_; });
      if (events_.empty()) {
        break;
      }
      ev = std::move(events_.front());
      events_.pop_front();
    }
    handle(ev);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
  }
  cv_.notify_all();
}

void CompletionQueue::handle(Event& ev) {
  if (ev.handle == 0) {
    ev.work->finish();
    return;
  }
  hcclGoWorkFree(ev.handle);
  if (ev.work->partDone(ev.status, ev.msg)) {
    ev.work->finish();
  }
}

void CompletionQueue::requestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

bool CompletionQueue::waitExited(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return exited_; });
}

bool CompletionQueue::onCompletionThread() {
  std::lock_guard<std::mutex> lock(mu_);
  return threadId_ == std::this_thread::get_id();
}

}  // namespace hccl_go
