// completion_queue.hpp: moves library completions off Go threads.
//
// The library calls its completion callback on a Go thread, where nothing
// slow may run: no tensor copies, no torch Future callbacks (which may be
// DDP comm hooks or Python). The callback only queues the event; completion
// threads then finish the Works.
//
// Future callbacks may block on later completions: PowerSGD's hook issues
// an all_reduce inside a then() callback and waits for its Future. So the
// threads form an elastic pool: an event that finds no waiting thread gets
// a new one, and a blocked callback never holds up another completion.
// Normally one thread serves everything; extra threads exit when idle.
//
// A queue serves every backend split from the one that made it (they share
// its threads): each tracks its own Works, and the last one to leave stops
// the threads.
#pragma once

#include <c10/util/SmallVector.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hccl_go.h"
#include "work.hpp"

namespace hccl_go {

class CompletionQueue : public std::enable_shared_from_this<CompletionQueue> {
 public:
  // Starts the first completion thread; the caller is the first user.
  static std::shared_ptr<CompletionQueue> create();
  // Adds a user (a backend split from the first); each user calls leave()
  // once, and the last one's leave() returns true: it must then stop the
  // threads (requestStop, waitExited).
  void join();
  bool leave();

  // Makes the library work `handle` one part of `work`: when it completes,
  // a completion thread frees the handle and reports the part done.
  void watch(const c10::intrusive_ptr<HcclGoWork>& work, hcclGoWork_t handle);
  // Lets the calling thread (a waiter) run the Work's ops itself when they
  // are next in line on their streams, and complete the Work on this thread:
  // a small op then costs no thread hand-off at all. Waits at most limit.
  void driveInline(const c10::intrusive_ptr<HcclGoWork>& work, std::chrono::milliseconds limit);
  // Runs work->finish() on a completion thread.
  void postFinish(const c10::intrusive_ptr<HcclGoWork>& work);
  // Has a completion thread run the Work's ops now and complete it (ops
  // not next on their streams start on library threads instead): for Works
  // followed through their Future, which nobody will wait() on. The thread
  // that runs an op then also completes it, saving the hand-off from a
  // library thread to a completion thread.
  void postDrive(const c10::intrusive_ptr<HcclGoWork>& work);

  // Works not yet finished, for shutdown, by user (the backend that issued
  // them). A Work is tracked from creation to finish().
  void track(const c10::intrusive_ptr<HcclGoWork>& work, const void* user);
  void untrack(HcclGoWork* work);
  // Waits until no Work of user is in flight; false on timeout.
  bool waitIdle(const void* user, std::chrono::milliseconds timeout);
  std::vector<c10::intrusive_ptr<HcclGoWork>> inFlight(const void* user);

  // Waits until every live queue is quiet: no Work in flight, no event
  // queued, every completion thread idle; false if one is not by the
  // deadline. For interpreter exit (torch_hccl_go registers it with
  // atexit): once Python finalizes, a completion thread that drops the
  // last reference to a tensor Python still owns cannot take the GIL, and
  // the thread is torn down mid-destructor (std::terminate).
  static bool drainAll(std::chrono::milliseconds timeout);

  // Threads exit once no event is left.
  void requestStop();
  // Waits for every completion thread to exit; false on timeout.
  bool waitExited(std::chrono::milliseconds timeout);
  // True on one of this queue's completion threads (where waiting for
  // completions could deadlock).
  bool onCompletionThread() const;

 private:
  struct Event {
    c10::intrusive_ptr<HcclGoWork> work;
    hcclGoWork_t handle = 0;  // 0: a finish-only event (postFinish) or a drive (postDrive)
    hcclGoResult_t status = hcclGoSuccess;
    std::string msg;
    bool drive = false;  // run the Work's ops now (postDrive)
  };
  struct Tracked {
    c10::intrusive_ptr<HcclGoWork> work;
    const void* user = nullptr;
  };
  struct CallbackContext {
    std::shared_ptr<CompletionQueue> queue;
    c10::intrusive_ptr<HcclGoWork> work;
  };

  CompletionQueue() = default;
  // No Work in flight, no event queued, every thread waiting; false on timeout.
  bool waitQuiet(std::chrono::steady_clock::time_point deadline);
  static void onLibraryCompletion(void* userData, hcclGoWork_t handle, hcclGoResult_t status, const char* msg) noexcept;
  void push(Event ev);
  // Starts a detached thread running serve(); call with threads_ counted.
  void spawn();
  void serve();
  void handle(Event& ev);
  // driveNow: what a drive event does. runOps calls run(handle) for each
  // op of the Work, collecting the completions reported on this thread, then
  // handles them.
  void driveNow(const c10::intrusive_ptr<HcclGoWork>& work);
  template <typename Run>
  void runOps(const c10::intrusive_ptr<HcclGoWork>& work, Run run);

  // Set on a thread inside driveInline: completions of that Work reported
  // on this very thread are collected here instead of queued.
  static thread_local HcclGoWork* inlineWork_;
  static thread_local c10::SmallVectorImpl<Event>* inlineEvents_;

  std::mutex mu_;
  std::condition_variable eventCv_;  // events_ or stop_ changed
  std::condition_variable stateCv_;  // inFlight_ or threads_ changed
  std::deque<Event> events_;
  std::unordered_map<HcclGoWork*, Tracked> inFlight_;
  // How many of inFlight_ per user.
  std::unordered_map<const void*, int> inFlightOf_;
  int users_ = 1;
  int threads_ = 0;  // running completion threads
  int waiting_ = 0;  // of which waiting for an event
  bool stop_ = false;
};

}  // namespace hccl_go
