// completion_queue.hpp: moves library completions off Go threads.
//
// The library calls its completion callback on a Go thread, where nothing
// slow may run: no tensor copies, no torch Future callbacks (which may be
// DDP comm hooks or Python). The callback only queues the event; one thread
// per backend (run()) then finishes the Works in order.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "hccl_go.h"
#include "work.hpp"

namespace hccl_go {

class CompletionQueue : public std::enable_shared_from_this<CompletionQueue> {
 public:
  // Makes the library work `handle` one part of `work`: when it completes,
  // the completion thread frees the handle and reports the part done.
  void watch(const c10::intrusive_ptr<HcclGoWork>& work, hcclGoWork_t handle);
  // Runs work->finish() on the completion thread.
  void postFinish(const c10::intrusive_ptr<HcclGoWork>& work);

  // Works not yet finished, for shutdown. A Work is tracked from creation
  // to finish().
  void track(const c10::intrusive_ptr<HcclGoWork>& work);
  void untrack(HcclGoWork* work);
  // Waits until no Work is in flight; false on timeout.
  bool waitIdle(std::chrono::milliseconds timeout);
  std::vector<c10::intrusive_ptr<HcclGoWork>> inFlight();

  // The completion thread's body: handles events until requestStop() was
  // called and none is left.
  void run();
  void requestStop();
  // Waits for run() to return; false on timeout.
  bool waitExited(std::chrono::milliseconds timeout);
  // True on the completion thread (where waiting for completions would
  // deadlock).
  bool onCompletionThread();

 private:
  struct Event {
    c10::intrusive_ptr<HcclGoWork> work;
    hcclGoWork_t handle = 0;  // 0: a finish-only event (postFinish)
    hcclGoResult_t status = hcclGoSuccess;
    std::string msg;
  };
  struct CallbackContext {
    std::shared_ptr<CompletionQueue> queue;
    c10::intrusive_ptr<HcclGoWork> work;
  };

  static void onLibraryCompletion(void* userData, hcclGoWork_t handle, hcclGoResult_t status,
                                  const char* msg) noexcept;
  void push(Event ev);
  void handle(Event& ev);

  std::mutex mu_;
  std::condition_variable cv_;  // events_ or stop_ changed; exited_ or inFlight_ changed
  std::deque<Event> events_;
  std::unordered_map<HcclGoWork*, c10::intrusive_ptr<HcclGoWork>> inFlight_;
  bool stop_ = false;
  bool exited_ = false;
  std::thread::id threadId_;
};

}  // namespace hccl_go
