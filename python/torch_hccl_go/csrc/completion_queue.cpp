#include "completion_queue.hpp"

#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <pthread.h>

#include <algorithm>
#include <thread>

#include "errors.hpp"
#include "gil.hpp"

namespace hccl_go {

namespace {

// More threads only exist while callbacks block; past this many, events wait.
constexpr int kMaxCompletionThreads = 64;
// A thread beyond the first exits after this long without an event.
constexpr std::chrono::seconds kIdleExit{10};

// The queue whose completion thread this is (null elsewhere).
thread_local const CompletionQueue* tlsQueue = nullptr;

// Every queue made, for drainAll at exit (one per backend and the backends
// split from it; the registry only observes them).
std::mutex registryMu;
std::vector<std::weak_ptr<CompletionQueue>>& registry() {
  static auto* queues = new std::vector<std::weak_ptr<CompletionQueue>>();  // never destroyed: used at exit
  return *queues;
}

}  // namespace

std::shared_ptr<CompletionQueue> CompletionQueue::create() {
  std::shared_ptr<CompletionQueue> queue(new CompletionQueue());
  {
    std::lock_guard<std::mutex> lock(queue->mu_);
    queue->threads_ = 1;
  }
  queue->spawn();
  std::lock_guard<std::mutex> lock(registryMu);
  auto& queues = registry();
  queues.erase(std::remove_if(queues.begin(), queues.end(), [](const auto& q) { return q.expired(); }), queues.end());
  queues.push_back(queue);
  return queue;
}

bool CompletionQueue::drainAll(std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<CompletionQueue>> live;
  {
    std::lock_guard<std::mutex> lock(registryMu);
    for (auto& q : registry()) {
      if (auto queue = q.lock()) {
        live.push_back(std::move(queue));
      }
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool quiet = true;
  for (auto& queue : live) {
    quiet = queue->waitQuiet(deadline) && quiet;
  }
  return quiet;
}

bool CompletionQueue::waitQuiet(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return stateCv_.wait_until(lock, deadline,
                             [&] { return inFlight_.empty() && events_.empty() && waiting_ == threads_; });
}

void CompletionQueue::spawn() {
  auto self = shared_from_this();
  try {
    std::thread([self] { self->serve(); }).detach();
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    --threads_;
    if (threads_ == 0) {
      throw;  // not even one thread: the backend cannot work
    }
    // Otherwise the running threads take the events, later.
  }
}

thread_local HcclGoWork* CompletionQueue::inlineWork_ = nullptr;
thread_local c10::SmallVectorImpl<CompletionQueue::Event>* CompletionQueue::inlineEvents_ = nullptr;

void CompletionQueue::watch(const c10::intrusive_ptr<HcclGoWork>& work, hcclGoWork_t handle) {
  work->addPart();
  work->addHandle(handle);
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
    if (inlineWork_ != nullptr && ctx->work.get() == inlineWork_) {
      // The waiter ran the op on this thread: it completes the Work itself
      // once back from the library (not inside this callback).
      inlineEvents_->push_back(Event{std::move(ctx->work), handle, status, msg != nullptr ? msg : ""});
      return;
    }
    ctx->queue->push(Event{std::move(ctx->work), handle, status, msg != nullptr ? msg : ""});
  } catch (...) {
    // Out of memory on a Go thread: nothing sensible is left to do; the
    // Work will report a timeout from wait().
  }
}

void CompletionQueue::driveInline(const c10::intrusive_ptr<HcclGoWork>& work, std::chrono::milliseconds limit) {
  runOps(work, [limit](hcclGoWork_t h) {
    // Runs the op here if it is next on its stream, else waits for it. A
    // handle already freed by a completion thread just returns an error.
    hcclGoWorkWait(h, limit.count());
  });
}

void CompletionQueue::driveNow(const c10::intrusive_ptr<HcclGoWork>& work) {
  runOps(work, [](hcclGoWork_t h) {
    // Runs the op here if it is next on its stream, else has a library
    // thread start it: this thread must not block behind earlier ops (a
    // burst of DDP buckets would take a thread each).
    hcclGoWorkDrive(h);
  });
}

template <typename Run>
void CompletionQueue::runOps(const c10::intrusive_ptr<HcclGoWork>& work, Run run) {
  if (work->handles().empty() || inlineWork_ != nullptr) {
    return;  // coalesced parents have no ops of their own; no nesting
  }
  c10::SmallVector<Event, 2> events;  // no allocation for the usual one op
  inlineWork_ = work.get();
  inlineEvents_ = &events;
  for (hcclGoWork_t h : work->handles()) {
    run(h);
  }
  inlineWork_ = nullptr;
  inlineEvents_ = nullptr;
  for (auto& ev : events) {
    handle(ev);
  }
}

void CompletionQueue::postFinish(const c10::intrusive_ptr<HcclGoWork>& work) {
  push(Event{work, 0, hcclGoSuccess, ""});
}

void CompletionQueue::postDrive(const c10::intrusive_ptr<HcclGoWork>& work) {
  Event ev{work, 0, hcclGoSuccess, ""};
  ev.drive = true;
  push(std::move(ev));
}

void CompletionQueue::push(Event ev) {
  bool grow = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(ev));
    // Every queued event needs a waiting thread: a running one may be
    // blocked in a Future callback for good.
    if (static_cast<int>(events_.size()) > waiting_ && threads_ < kMaxCompletionThreads && !stop_) {
      ++threads_;
      grow = true;
    }
  }
  eventCv_.notify_one();
  if (grow) {
    try {
      spawn();
    } catch (...) {
      // Called from a Go thread: nothing may escape. The running threads
      // take the event.
    }
  }
}

void CompletionQueue::serve() {
  tlsQueue = this;
  pthread_setname_np(pthread_self(), "hccl_go_done");
  // Copying results into tensors that require grad is not an autograd op.
  c10::AutoGradMode noGrad(false);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!events_.empty()) {
      Event ev = std::move(events_.front());
      events_.pop_front();
      lock.unlock();
      try {
        handle(ev);
      } catch (const std::exception& e) {
        TORCH_WARN("hccl_go: completing ", ev.work->name(), ": ", e.what());
      }
      if (pythonFinalizing()) {
        // Dropping the Work may drop a tensor that Python owns, which needs
        // the GIL, which a thread cannot take any more: leak it instead,
        // the process is ending. (drainAll at exit makes this rare.)
        (void)ev.work.release();
      }
      ev = Event{};  // drop the Work (and maybe its tensors) outside the lock
      lock.lock();
      continue;
    }
    if (stop_) {
      break;
    }
    ++waiting_;
    if (waiting_ == threads_ && inFlight_.empty()) {
      stateCv_.notify_all();  // quiet: drainAll may be waiting
    }
    const bool woken = eventCv_.wait_for(lock, kIdleExit, [&] { return !events_.empty() || stop_; });
    --waiting_;
    if (!woken && threads_ > 1) {
      break;  // an extra thread, idle: the first one stays
    }
  }
  --threads_;
  lock.unlock();
  stateCv_.notify_all();
}

void CompletionQueue::join() {
  std::lock_guard<std::mutex> lock(mu_);
  ++users_;
}

bool CompletionQueue::leave() {
  std::lock_guard<std::mutex> lock(mu_);
  return --users_ == 0;
}

void CompletionQueue::track(const c10::intrusive_ptr<HcclGoWork>& work, const void* user) {
  std::lock_guard<std::mutex> lock(mu_);
  if (inFlight_.emplace(work.get(), Tracked{work, user}).second) {
    ++inFlightOf_[user];
  }
}

void CompletionQueue::untrack(HcclGoWork* work) {
  c10::intrusive_ptr<HcclGoWork> last;  // released outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = inFlight_.find(work);
    if (it == inFlight_.end()) {
      return;
    }
    last = std::move(it->second.work);
    auto count = inFlightOf_.find(it->second.user);
    if (count != inFlightOf_.end() && --count->second == 0) {
      inFlightOf_.erase(count);
    }
    inFlight_.erase(it);
  }
  stateCv_.notify_all();
}

bool CompletionQueue::waitIdle(const void* user, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return stateCv_.wait_for(lock, timeout, [&] { return inFlightOf_.find(user) == inFlightOf_.end(); });
}

std::vector<c10::intrusive_ptr<HcclGoWork>> CompletionQueue::inFlight(const void* user) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<c10::intrusive_ptr<HcclGoWork>> works;
  for (auto& kv : inFlight_) {
    if (kv.second.user == user) {
      works.push_back(kv.second.work);
    }
  }
  return works;
}

void CompletionQueue::handle(Event& ev) {
  if (ev.drive) {
    if (!ev.work->isCompleted()) {
      driveNow(ev.work);
    }
    return;
  }
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
  eventCv_.notify_all();
}

bool CompletionQueue::waitExited(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return stateCv_.wait_for(lock, timeout, [&] { return threads_ == 0; });
}

bool CompletionQueue::onCompletionThread() const { return tlsQueue == this; }

}  // namespace hccl_go
