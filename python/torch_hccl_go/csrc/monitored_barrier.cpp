// monitored_barrier.cpp: torch's monitored_barrier, run as gloo runs it.
// Every other rank reports to rank 0 and waits for its answer; rank 0 waits
// for the reports one rank after the other within the timeout, names the
// ranks that did not come, and answers the others only when all came.
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "backend.hpp"

namespace hccl_go {

namespace {

// Above every tag torch can pass (ints >= 0), so user messages never match it.
constexpr uint32_t kMonitoredBarrierTag = 0xFFFFFFFFu;

}  // namespace

void HcclGoBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  using std::chrono::milliseconds;
  // An explicit timeout of 0 means "now" (as with gloo), not "the default".
  const milliseconds timeout = opts.timeout == c10d::kUnsetTimeout ? timeoutOr(opts.timeout) : opts.timeout;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // What is left of the timeout, at least 1 ms: wait(0) would mean no limit.
  auto left = [&] {
    auto d = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(d, milliseconds(1));
  };
  if (rank_ != 0) {
    std::vector<at::Tensor> token{at::zeros({1}, at::kInt)};
    try {
      sendTagged(token, 0, kMonitoredBarrierTag)->wait(left());
      recvTagged(token, 0, kMonitoredBarrierTag)->wait(left());
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "Rank ", rank_,
                  " successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
                  "rank 0. Please check rank 0 logs for faulty rank. (",
                  e.what(), ")");
    }
    return;
  }
  std::vector<std::vector<at::Tensor>> tokens(size_);
  std::vector<c10::intrusive_ptr<HcclGoWork>> reports(size_);
  for (int r = 1; r < size_; ++r) {
    tokens[r] = {at::zeros({1}, at::kInt)};
    reports[r] = recvTagged(tokens[r], r, kMonitoredBarrierTag);
  }
  // Waiting for all ranks, each rank gets the whole timeout (else the first
  // missing one would use it up); otherwise the ranks share it, in order.
  std::vector<int> missing, passed;
  for (int r = 1; r < size_; ++r) {
    milliseconds wait = std::max(timeout, milliseconds(1));
    if (!waitAllRanks) {
      auto d = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      std::ostringstream ok;
      for (size_t i = 0; i < passed.size(); ++i) {
        ok << (i ? ", " : "") << passed[i];
      }
      TORCH_CHECK(d.count() > 0, "Rank 0 timed out in monitoredBarrier after ", timeout.count(),
                  " ms. Successfully processed ranks: ", ok.str());
      wait = d;
    }
    try {
      reports[r]->wait(wait);
      passed.push_back(r);
    } catch (const std::exception& e) {
      TORCH_CHECK(waitAllRanks, "Rank ", r, " failed to pass monitoredBarrier in ", timeout.count(),
                  " ms. Original exception: ", e.what());
      missing.push_back(r);
    }
  }
  if (!missing.empty()) {
    std::ostringstream ranks;
    for (size_t i = 0; i < missing.size(); ++i) {
      ranks << (i ? ", " : "") << missing[i];
    }
    TORCH_CHECK(false, "Ranks ", ranks.str(), " failed to pass monitoredBarrier in ", timeout.count(), " ms");
  }
  for (int r = 1; r < size_; ++r) {
    sendTagged(tokens[r], r, kMonitoredBarrierTag)->wait(left());
  }
}

}  // namespace hccl_go
