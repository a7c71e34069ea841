// backend.cpp: HcclGoBackend's life (creation, coalescing, shutdown).
// The collectives themselves are in collectives.cpp and p2p.cpp.
#include "backend.hpp"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "errors.hpp"
#include "gil.hpp"

namespace hccl_go {

namespace {

// After the communicator is destroyed, how long callbacks of its last ops
// may take to arrive, and how long the completion thread may take to exit.
constexpr std::chrono::milliseconds kDrainGrace{10000};
// How long a destructor (no explicit shutdown) lets pending ops finish
// before it aborts them.
constexpr std::chrono::milliseconds kDestructorGrace{2000};

hcclGoComm_t initComm(const HcclGoBackend::Setup& s) {
  if (static_cast<int>(s.peerAddrs.size()) != s.size || static_cast<int>(s.hostIds.size()) != s.size) {
    hcclGoListenerClose(s.listener);  // not consumed: no init happens
    TORCH_CHECK_VALUE(false, "hccl_go: need one address and one host id per rank: got ", s.peerAddrs.size(), " and ",
                      s.hostIds.size(), " for ", s.size, " ranks");
  }
  std::vector<const char*> addrs;
  std::vector<const char*> hosts;
  for (int i = 0; i < s.size; ++i) {
    addrs.push_back(s.peerAddrs[i].c_str());
    hosts.push_back(s.hostIds[i].c_str());
  }
  hcclGoComm_t comm = 0;
  hcclGoResult_t r = hcclGoCommInitRank(&comm, s.size, s.rank, s.listener, addrs.data(), hosts.data(), s.secret.c_str(),
                                        s.options.c_str());
  if (r != hcclGoSuccess) {
    throwResult(r, 0,
                "hccl_go: creating the communicator (rank " + std::to_string(s.rank) + " of " + std::to_string(s.size) +
                    ", options \"" + s.options + "\")");
  }
  return comm;
}

hcclGoComm_t splitComm(hcclGoComm_t parent, const HcclGoBackend::SplitSetup& s) {
  hcclGoComm_t comm = 0;
  hcclGoResult_t r = hcclGoCommSplit(parent, static_cast<int>(s.parentRanks.size()), s.parentRanks.data(),
                                     s.name.c_str(), s.options.c_str(), &comm);
  if (r != hcclGoSuccess) {
    throwResult(r, parent,
                "hccl_go: creating group \"" + s.name + "\" (rank " + std::to_string(s.rank) + " of " +
                    std::to_string(s.parentRanks.size()) + ") as a split of its parent",
                lastError(parent));
  }
  return comm;
}

// options without the keys a split sets itself (timeout_ms, global_ranks).
std::string splitOptions(const std::string& options, std::chrono::milliseconds timeout,
                         const std::vector<uint64_t>& globalRanks) {
  std::string out = "timeout_ms=" + std::to_string(timeout.count());
  size_t start = 0;
  while (start <= options.size()) {
    size_t end = options.find(';', start);
    if (end == std::string::npos) {
      end = options.size();
    }
    const std::string pair = options.substr(start, end - start);
    const std::string key = pair.substr(0, pair.find('='));
    if (!pair.empty() && key != "timeout_ms" && key != "global_ranks") {
      out += ";" + pair;
    }
    start = end + 1;
  }
  if (!globalRanks.empty()) {
    out += ";global_ranks=";
    for (size_t i = 0; i < globalRanks.size(); ++i) {
      out += (i ? "," : "") + std::to_string(globalRanks[i]);
    }
  }
  return out;
}

// This process's id, kept current across fork by an atfork handler: the
// fork check runs on every op, and getpid() is a system call.
std::atomic<pid_t> currentPid{getpid()};

void noteForkedChild() { currentPid.store(getpid(), std::memory_order_relaxed); }

[[maybe_unused]] const int atforkRegistered = pthread_atfork(nullptr, nullptr, noteForkedChild);

}  // namespace

HcclGoBackend::HcclGoBackend(const Setup& setup)
    : c10d::Backend(setup.rank, setup.size),
      options_(setup.options),
      pid_(currentPid.load(std::memory_order_relaxed)),
      timeoutMs_(setup.timeout.count()) {
  comm_ = initComm(setup);
  try {
    queue_ = CompletionQueue::create();
  } catch (...) {
    hcclGoCommDestroy(comm_);
    throw;
  }
  init();
}

HcclGoBackend::HcclGoBackend(const HcclGoBackend& parent, const SplitSetup& setup)
    : c10d::Backend(setup.rank, static_cast<int>(setup.parentRanks.size())),
      options_(setup.options),
      pid_(currentPid.load(std::memory_order_relaxed)),
      timeoutMs_(setup.timeout.count()) {
  parent.checkUsable("new group (split)");
  comm_ = splitComm(parent.comm_, setup);
  queue_ = parent.queue_;
  queue_->join();
  stream_.store(parent.stream());
  syncReturnsNone_.store(parent.syncReturnsNone());
  init();
}

c10::intrusive_ptr<c10d::Backend> HcclGoBackend::split(const c10::intrusive_ptr<c10d::Store>& /*store*/,
                                                       const std::vector<int>& ranks,
                                                       const c10::intrusive_ptr<Options>& opts) {
  const auto self = std::find(ranks.begin(), ranks.end(), rank_);
  if (self == ranks.end()) {
    return nullptr;  // not a member: the members need nothing from this rank
  }
  SplitSetup s;
  s.rank = static_cast<int>(self - ranks.begin());
  s.parentRanks = ranks;
  s.timeout = opts && opts->timeout.count() > 0 ? opts->timeout : std::chrono::milliseconds(timeoutMs_.load());
  s.name = opts && !opts->group_name.empty() ? opts->group_name : "split";
  std::vector<uint64_t> globalRanks;
  if (opts && opts->global_ranks_in_group.size() == ranks.size()) {
    globalRanks = opts->global_ranks_in_group;
  }
  s.options = splitOptions(options_, s.timeout, globalRanks);
  MaybeReleaseGil nogil;  // the members agree over the links: let other Python threads run
  return c10::make_intrusive<HcclGoBackend>(*this, s);
}

bool HcclGoBackend::isOpen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !closed_ && !inForkedChild();
}

HcclGoBackend::~HcclGoBackend() {
  try {
    // Dropped without destroy_process_group() (e.g. at interpreter exit):
    // do not let a stuck op hold the process for the whole timeout.
    bool abortFirst = false;
    bool open = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = !closed_;
    }
    if (open && !inForkedChild()) {
      MaybeReleaseGil nogil;
      abortFirst = queue_->onCompletionThread() || !queue_->waitIdle(this, kDestructorGrace);
      if (abortFirst) {
        TORCH_WARN(
            "hccl_go: a process group was destroyed with ops still pending; aborting them "
            "(call torch.distributed.destroy_process_group() to wait for them instead)");
      }
    }
    teardown(abortFirst);
  } catch (const std::exception& e) {
    // A destructor must not throw; the communicator is gone either way.
    TORCH_WARN("hccl_go: shutting the backend down in its destructor: ", e.what());
  }
}

c10::intrusive_ptr<c10d::Backend::Options> HcclGoBackend::getBackendOptions() {
  return c10::make_intrusive<c10d::Backend::Options>("hccl_go", std::chrono::milliseconds(timeoutMs_.load()));
}

void HcclGoBackend::setTimeout(std::chrono::milliseconds timeout) { timeoutMs_.store(timeout.count()); }

std::chrono::milliseconds HcclGoBackend::timeoutOr(std::chrono::milliseconds opTimeout) const {
  if (opTimeout == c10d::kUnsetTimeout || opTimeout.count() <= 0) {
    return std::chrono::milliseconds(timeoutMs_.load());
  }
  return opTimeout;
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::handOver(c10::intrusive_ptr<HcclGoWork> work) const {
  if (work->ranBlocking() && mayReturnNoWork()) {
    return {};
  }
  return work;
}

bool HcclGoBackend::mayReturnNoWork() const {
  return syncReturnsNone() && !at::hasCallbacks() && !c10d::allow_inflight_collective_as_graph_input();
}

bool HcclGoBackend::allReduceNow(const at::Tensor& t, const Reduction& red, const char* op) {
  Buffer b = bufferOf(t);
  return runNow(op, [&] {
    return hcclGoAllReduce(b.ptr, b.ptr, b.count, b.dtype, red.op, red.preMulScalar, comm_, stream(), nullptr);
  });
}

bool HcclGoBackend::takeSeqNow(const char* op, uint64_t* seq) {
  checkNotForked(op);
  std::lock_guard<std::mutex> lock(mu_);
  checkOpenLocked(op);
  if (coalesced_) {
    return false;
  }
  *seq = ++seqCollective_;
  return true;
}

void HcclGoBackend::throwNow(hcclGoResult_t r, const char* op, uint64_t seq) const {
  throwResult(r, comm_, "hccl_go: " + std::string(op) + " (op #" + std::to_string(seq) + ")", lastError(comm_));
}

bool HcclGoBackend::inForkedChild() const { return currentPid.load(std::memory_order_relaxed) != pid_; }

void HcclGoBackend::checkNotForked(const char* op) const {
  TORCH_CHECK(!inForkedChild(), "hccl_go: ", op, ": this process group was created by process ", pid_,
              " and cannot be used in the forked child process ", getpid(),
              " (the Go runtime does not survive fork, so no hccl_go group can be used or made in a "
              "process forked after torch_hccl_go was imported). Start ranks with torchrun or the 'spawn' "
              "or 'forkserver' start method.");
}

void HcclGoBackend::checkOpenLocked(const char* op) const {
  TORCH_CHECK(!closed_, "hccl_go: ", op, ": the process group was shut down or aborted");
}

void HcclGoBackend::checkUsable(const char* op) const {
  checkNotForked(op);
  std::lock_guard<std::mutex> lock(mu_);
  checkOpenLocked(op);
}

c10::intrusive_ptr<HcclGoWork> HcclGoBackend::newWork(c10d::OpType type, const char* name,
                                                      const std::vector<at::Tensor>& inputs,
                                                      std::chrono::milliseconds opTimeout, bool p2p) {
  checkNotForked(name);
  const uint64_t seq = p2p ? ++seqP2P_ : ++seqCollective_;
  auto work = c10::make_intrusive<HcclGoWork>(rank_, type, name, seq, timeoutOr(opTimeout), queue_, inputs);
  {
    std::lock_guard<std::mutex> lock(mu_);
    checkOpenLocked(name);
    if (coalesced_) {
      coalesced_->addChild(work);
    }
  }
  queue_->track(work, this);
  return work;
}

void HcclGoBackend::startCoalescing() {
  checkUsable("start_coalescing");
  auto group = c10::make_intrusive<HcclGoWork>(rank_, c10d::OpType::COALESCED, "coalesced", seqCollective_.load(),
                                               timeoutOr(c10d::kUnsetTimeout), queue_, std::vector<at::Tensor>{});
  std::lock_guard<std::mutex> lock(mu_);
  TORCH_CHECK(!coalesced_, "hccl_go: start_coalescing: a coalescing group is already open on this process group");
  queue_->track(group, this);
  coalesced_ = group;
}

c10::intrusive_ptr<c10d::Work> HcclGoBackend::endCoalescing() {
  c10::intrusive_ptr<HcclGoWork> group;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK(coalesced_, "hccl_go: end_coalescing without start_coalescing");
    group = std::move(coalesced_);
    coalesced_.reset();
  }
  group->seal();
  return group;
}

uint64_t HcclGoBackend::getSequenceNumberForGroup() { return seqCollective_.load(); }

void HcclGoBackend::setSequenceNumberForGroup() {
  // Sequence numbers start at 0 on every rank: nothing to agree on.
}

std::string HcclGoBackend::commInfo() {
  checkUsable("comm_info");
  for (size_t len = 64 * 1024; len <= 64 * 1024 * 1024; len *= 4) {
    std::string buf(len, '\0');
    check(hcclGoCommInfo(comm_, buf.data(), buf.size()), comm_, "hccl_go: comm_info");
    const size_t n = std::strlen(buf.c_str());
    if (n + 1 < len) {  // not truncated
      buf.resize(n);
      return buf;
    }
  }
  TORCH_CHECK(false, "hccl_go: comm_info: the description is larger than 64 MiB");
}

void HcclGoBackend::abort() { teardown(/*abortFirst=*/true); }

void HcclGoBackend::shutdown() { teardown(/*abortFirst=*/false); }

void HcclGoBackend::teardown(bool abortFirst) {
  if (inForkedChild()) {
    // A forked child: the communicator and the completion threads belong
    // to the parent. Touch neither (no Go call; the queue's mutexes may have
    // been copied locked): leak them.
    new std::shared_ptr<CompletionQueue>(std::move(queue_));
    return;
  }
  c10::intrusive_ptr<HcclGoWork> openGroup;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      return;
    }
    closed_ = true;
    openGroup = std::move(coalesced_);
    coalesced_.reset();
  }
  if (openGroup) {
    openGroup->failIssue(hcclGoAborted, "the process group was shut down inside a coalescing group");
    openGroup->seal();
  }

  MaybeReleaseGil nogil;
  // On a completion thread (a Future callback dropped the last reference)
  // waiting for completions could deadlock: they finish after we return.
  const bool onCompletionThread = queue_->onCompletionThread();
  if (abortFirst) {
    hcclGoResult_t r = hcclGoCommAbort(comm_);
    if (r != hcclGoSuccess) {
      TORCH_WARN("hccl_go: abort: ", lastError(comm_), " [", resultName(r), "]");
    }
  }
  // Waits (in the library, up to its timeout) for pending ops, whose
  // callbacks then fire.
  hcclGoResult_t r = hcclGoCommDestroy(comm_);
  if (r != hcclGoSuccess) {
    TORCH_WARN("hccl_go: destroying the communicator: ", lastError(comm_), " [", resultName(r), "]");
  }
  if (!onCompletionThread && !queue_->waitIdle(this, kDrainGrace)) {
    // The library no longer touches their buffers: fail what is left.
    for (auto& work : queue_->inFlight(this)) {
      work->failIssue(hcclGoAborted, "the communicator was destroyed while the op was pending");
      queue_->postFinish(work);
    }
    queue_->waitIdle(this, kDrainGrace);
  }
  if (!queue_->leave()) {
    return;  // backends split from this one (or it from them) still use the threads
  }
  queue_->requestStop();
  if (!onCompletionThread && !queue_->waitExited(kDrainGrace)) {
    // A Future callback is stuck (e.g. waiting for the GIL while Python
    // finalizes): do not hang the caller; the detached thread holds what it
    // needs.
    TORCH_WARN("hccl_go: a completion thread did not exit within ", kDrainGrace.count(), " ms; leaving it");
  }
}

}  // namespace hccl_go
