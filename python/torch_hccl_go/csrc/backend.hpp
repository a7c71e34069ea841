// backend.hpp: HcclGoBackend, the c10d::Backend of torch.distributed's
// "hccl_go" backend. Every torch call checks its tensors, makes them
// contiguous if needed, issues the matching hcclGo* op(s) and returns an
// HcclGoWork that completes through the library's callback.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "completion_queue.hpp"
#include "gil.hpp"
#include "hccl_go.h"
#include "tensors.hpp"
#include "work.hpp"

namespace hccl_go {

class Issue;

class HcclGoBackend : public c10d::Backend {
 public:
  // What the rendezvous (Python, through the c10d Store) produced.
  struct Setup {
    int rank = 0;
    int size = 0;
    hcclGoListener_t listener = 0;        // from hcclGoListen; consumed
    std::vector<std::string> peerAddrs;   // size entries
    std::vector<std::string> hostIds;     // size entries
    std::string secret;                   // the job's handshake secret
    std::string options;                  // "key=value;..." for the library
    std::chrono::milliseconds timeout{};  // default wait() timeout
  };

  // What a backend split from another (hcclGoCommSplit) needs.
  struct SplitSetup {
    int rank = 0;                         // in the new group
    std::vector<int> parentRanks;         // per rank of the new group: its rank in the parent
    std::string name;                     // the same on every member
    std::string options;                  // "key=value;..." for the library
    std::chrono::milliseconds timeout{};  // default wait() timeout
  };

  // Creates the communicator (blocks until every peer has connected, or
  // the library's connect timeout); throws on failure.
  explicit HcclGoBackend(const Setup& setup);
  // Creates the communicator as a split of parent's: it shares parent's
  // links and completion threads (blocks until every member has agreed,
  // or the library's connect timeout); throws on failure.
  HcclGoBackend(const HcclGoBackend& parent, const SplitSetup& setup);
  ~HcclGoBackend() override;

  const std::string getBackendName() const override { return "hccl_go"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void setTimeout(std::chrono::milliseconds timeout) override;
  bool supportsCoalescing() const override { return true; }
  bool supportsSplitting() const override { return true; }

  // torch.distributed.split_group: the new group of ranks (this group's
  // ranks) as a split of this backend; nullptr on a rank not among them.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  // Whether ops may still be issued (not shut down or aborted).
  bool isOpen() const;

  // ---- collectives ----
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                           std::vector<at::Tensor>& inputTensors,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputTensorLists, std::vector<at::Tensor>& inputTensors,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputTensors,
                                        std::vector<at::Tensor>& inputTensors,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputTensors,
                                         std::vector<std::vector<at::Tensor>>& inputTensors,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputTensors, std::vector<std::vector<at::Tensor>>& inputTensors,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& outputBuffer, at::Tensor& inputBuffer,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& outputBuffer, at::Tensor& inputBuffer,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputTensors, std::vector<at::Tensor>& inputTensors,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // ---- point to point (never queued behind collectives) ----
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // all_reduce of a sparse COO tensor (sparse_allreduce.cpp); SUM only.
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(at::Tensor& t, const c10d::AllreduceOptions& opts);

  // torch's monitored_barrier (monitored_barrier.cpp).
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks = false) override;

  // ---- coalescing: ops issued in between complete one Work ----
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  uint64_t getSequenceNumberForGroup() override;
  void setSequenceNumberForGroup() override;

  // Fails pending ops at once, then frees the communicator. Idempotent.
  void abort() override;
  // Waits for pending ops (up to the library's timeout), then frees the
  // communicator. Idempotent; destroy_process_group calls it.
  void shutdown() override;

  // Runs an all_reduce of t, contiguous and checked, to completion right
  // here, with no Work (the library's blocking call, whose small ops take
  // its fast lane): for callers that wait at once and want nothing back
  // (torch_hccl_go.all_reduce, and allreduce() when it would return no
  // Work). Throws the op's error. Returns false, having done nothing,
  // inside a coalescing group, whose ops must all be issued before any is
  // waited for.
  bool allReduceNow(const at::Tensor& t, const Reduction& red, const char* op);

  // Runs one collective to completion right here, with no Work, as
  // allReduceNow does: issueOp calls the library with a NULL work pointer
  // (its blocking call, which runs the op at once on this thread when its
  // stream is idle). Throws the op's error, named as its Work's would be.
  // Returns false, having done nothing, inside a coalescing group. Callers
  // check first that the call is blocking and may return no Work.
  template <typename Call>
  bool runNow(const char* op, Call&& issueOp) {
    uint64_t seq = 0;
    if (!takeSeqNow(op, &seq)) {
      return false;
    }
    hcclGoResult_t r;
    {
      MaybeReleaseGil nogil;
      r = issueOp();
    }
    if (r != hcclGoSuccess) {
      throwNow(r, op, seq);
    }
    return true;
  }

  // hcclGoCommInfo as a JSON string.
  std::string commInfo();
  hcclGoComm_t commHandle() const { return comm_; }
  const std::string& optionsString() const { return options_; }

  // The library stream collectives are issued on (HCCL_GO_STREAM_DEFAULT,
  // HCCL_GO_STREAM_HIGH_PRIORITY, or another of the communicator's
  // HCCL_GO_STREAMS). Point-to-point ops have queues of their own. A change
  // applies to the calls issued after it; the library rejects a stream the
  // communicator does not have when an op is issued on it.
  int stream() const { return stream_.load(std::memory_order_relaxed); }
  void setStream(int stream) { stream_.store(stream, std::memory_order_relaxed); }

  // Whether a collective that ran to completion inside its call (a
  // blocking Issue) returns no Work. Its caller, one of torch.distributed's
  // functions called with async_op=False, only waits on the Work it gets
  // and takes None as "synchronised already" (as ProcessGroupNCCL can
  // return): no Python object to make, no wait() to call, about 0.6 us of a
  // 7 us all_reduce. Off when something else may look at the Work: torch's
  // flight-recorder hook (HCCL_GO_TORCH_FLIGHT_RECORDER=1), whose callbacks
  // get every Work, so the creator turns it off then.
  bool syncReturnsNone() const { return syncReturnsNone_.load(std::memory_order_relaxed); }
  void setSyncReturnsNone(bool on) { syncReturnsNone_.store(on, std::memory_order_relaxed); }

 private:
  friend class Issue;

  // Throws if the backend was shut down or this is a forked child.
  void checkUsable(const char* op) const;
  // runNow's first step: the checks and the op's number (false: inside a
  // coalescing group, nothing taken); and its error.
  bool takeSeqNow(const char* op, uint64_t* seq);
  [[noreturn]] void throwNow(hcclGoResult_t r, const char* op, uint64_t seq) const;
  // Whether a synchronous call with these options runs without a Work:
  // blocking and nothing may look at a Work.
  bool noWork(bool asyncOp, std::chrono::milliseconds opTimeout) const {
    return blocking(asyncOp, opTimeout) && mayReturnNoWork();
  }
  // A new Work for one torch call (tracked; added to the coalescing group
  // if one is open). Call after all argument checks.
  c10::intrusive_ptr<HcclGoWork> newWork(c10d::OpType type, const char* name, const std::vector<at::Tensor>& inputs,
                                         std::chrono::milliseconds opTimeout, bool p2p = false);
  std::chrono::milliseconds timeoutOr(std::chrono::milliseconds opTimeout) const;
  // send and recv under any library tag, including those above what torch
  // can pass (tags are ints >= 0 there), which internal protocols use.
  c10::intrusive_ptr<HcclGoWork> sendTagged(std::vector<at::Tensor>& tensors, int dstRank, uint32_t tag);
  c10::intrusive_ptr<HcclGoWork> recvTagged(std::vector<at::Tensor>& tensors, int srcRank, uint32_t tag);
  // What a collective returns: its Work, or none for a blocking call when
  // nothing may look at it (syncReturnsNone; also not while the profiler's
  // record-function callbacks, which may box results, or torch.compile's
  // in-flight collective registry are active).
  c10::intrusive_ptr<c10d::Work> handOver(c10::intrusive_ptr<HcclGoWork> work) const;
  // Whether a blocking call may return no Work (handOver's conditions).
  bool mayReturnNoWork() const;
  // Whether a call with these options may run its ops to completion inside
  // the library call (a blocking Issue): its caller waits at once
  // (asyncOp false) with the communicator's own timeout, which bounds a
  // blocking library call.
  bool blocking(bool asyncOp, std::chrono::milliseconds opTimeout) const {
    return !asyncOp && timeoutOr(opTimeout).count() == timeoutMs_.load();
  }

  // Shared by the single and coalesced forms.
  void checkAllgatherBase(const at::Tensor& output, const at::Tensor& input, const char* op) const;
  void issueAllgatherBase(Issue& is, const at::Tensor& output, const at::Tensor& input);
  void checkAllgatherList(const std::vector<at::Tensor>& outputs, const at::Tensor& input, const char* op) const;
  void issueAllgatherList(Issue& is, const std::vector<at::Tensor>& outputs, const at::Tensor& input);
  void checkReduceScatterBase(const at::Tensor& output, const at::Tensor& input, const char* op) const;
  void issueReduceScatterBase(Issue& is, const at::Tensor& output, const at::Tensor& input, const Reduction& red);

  void teardown(bool abortFirst);
  // True in a child forked after this backend was made (no system call).
  bool inForkedChild() const;
  // Throws, naming both processes, in such a child.
  void checkNotForked(const char* op) const;
  // Throws if the group was shut down; call with mu_ held.
  void checkOpenLocked(const char* op) const;

  hcclGoComm_t comm_ = 0;
  const std::string options_;
  const pid_t pid_;  // the creating process; a forked child must not use or free comm_
  std::atomic<int64_t> timeoutMs_;
  std::atomic<int> stream_{HCCL_GO_STREAM_DEFAULT};
  std::atomic<bool> syncReturnsNone_{true};

  std::shared_ptr<CompletionQueue> queue_;

  std::atomic<uint64_t> seqCollective_{0};
  std::atomic<uint64_t> seqP2P_{0};

  mutable std::mutex mu_;  // guards coalesced_ and closed_
  c10::intrusive_ptr<HcclGoWork> coalesced_;
  bool closed_ = false;
};

}  // namespace hccl_go
