// issue.hpp: Issue, the helper that turns one torch call into library ops
// on its Work. Scope it around the issuing code:
//
//   Issue is(*this, work);
//   at::Tensor in = is.input(t);            // contiguous, kept alive
//   at::Tensor out = is.output(o, false);   // contiguous, copied back to o
//   is.call([&](hcclGoWork_t* h) { return hcclGoAllGather(..., h); });
//
// Its destructor seals the Work; if an exception leaves the scope, the Work
// first records it, so a half-issued call still completes (with an error)
// once the ops already issued have finished with its tensors.
//
// A blocking Issue (for a caller that waits at once: c10d's asyncOp=false)
// runs each op to completion inside its library call (a NULL work
// pointer): no handle, callback or completion thread, and the Work has
// completed, on this thread, when the Issue ends. An op that fails throws
// its error at once, as wait() would have.
#pragma once

#include <ATen/ATen.h>

#include <exception>
#include <string>
#include <utility>

#include "backend.hpp"
#include "errors.hpp"
#include "work.hpp"

namespace hccl_go {

class Issue {
 public:
  // blocking: see above; ignored for a Work inside a coalescing group,
  // whose ops must all be issued before any is waited for.
  Issue(HcclGoBackend& backend, c10::intrusive_ptr<HcclGoWork> work, bool blocking = false)
      : backend_(backend),
        work_(std::move(work)),
        uncaught_(std::uncaught_exceptions()),
        blocking_(blocking && !work_->inGroup()) {}

  Issue(const Issue&) = delete;
  Issue& operator=(const Issue&) = delete;

  ~Issue() {
    if (std::uncaught_exceptions() > uncaught_ && !failed_) {
      work_->failIssue(hcclGoInternalError, "the call failed while its ops were being issued");
    }
    if (blocking_) {
      work_->sealDone();
    } else {
      work_->seal();
    }
  }

  // t's data in a contiguous tensor that lives as long as the Work.
  at::Tensor input(const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    work_->keep(c);
    return c;
  }

  // A contiguous tensor the op writes; on success its contents land in t.
  // withData: it starts with t's data (in-place ops such as all_reduce).
  at::Tensor output(const at::Tensor& t, bool withData) {
    if (t.is_contiguous()) {
      work_->keep(t);
      return t;
    }
    at::Tensor c = withData ? t.contiguous() : at::empty(t.sizes(), t.options());
    work_->keep(t);
    work_->keep(c);
    work_->copyBackOnSuccess(t, c);
    return c;
  }

  // A new contiguous 1-D temporary of n elements like t.
  at::Tensor temp(int64_t n, const at::Tensor& like) {
    at::Tensor c = at::empty({n}, like.options().memory_format(at::MemoryFormat::Contiguous));
    work_->keep(c);
    return c;
  }

  HcclGoWork& work() { return *work_; }

  // Issues one library op (call gets the hcclGoWork_t* to fill) as a part
  // of the Work; throws with the library's message if it is refused.
  template <typename Call>
  void call(Call&& issueOp) {
    if (blocking_) {
      callBlocking(issueOp);
      return;
    }
    hcclGoWork_t handle = 0;
    hcclGoResult_t r = issueOp(&handle);
    if (r != hcclGoSuccess) {
      std::string msg = lastError(backend_.comm_);
      work_->failIssue(r, msg);
      failed_ = true;
      throwResult(r, backend_.comm_, "hccl_go: " + work_->name(), msg);
    }
    backend_.queue_->watch(work_, handle);
  }

 private:
  template <typename Call>
  void callBlocking(Call& issueOp) {
    hcclGoResult_t r = issueOp(nullptr);
    if (r != hcclGoSuccess) {
      std::string msg = lastError(backend_.comm_);
      work_->failIssue(r, msg);
      failed_ = true;
      // Named like the op's error from wait() (the op had its number).
      throwResult(r, backend_.comm_, work_->label(), msg);
    }
  }

  HcclGoBackend& backend_;
  c10::intrusive_ptr<HcclGoWork> work_;
  const int uncaught_;
  const bool blocking_;
  bool failed_ = false;
};

}  // namespace hccl_go
