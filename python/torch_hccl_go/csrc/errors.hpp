// errors.hpp: turning hcclGoResult_t codes into C++ exceptions that reach
// Python as the right exception type.
#pragma once

#include <exception>
#include <string>

#include "hccl_go.h"

namespace hccl_go {

// The message of the last failed call on comm (0: the calling context),
// or "" when the library has none.
std::string lastError(hcclGoComm_t comm);

// "hcclGoRemoteError" etc.; never null.
const char* resultName(hcclGoResult_t result);

// Throws for a failed call: ValueError for bad arguments, RuntimeError for
// bad usage (destroyed comm, forked child), DistBackendError otherwise.
// what names the call ("hccl_go: all_reduce"); detail is the library's
// message (if empty, the last error of comm is used).
[[noreturn]] void throwResult(hcclGoResult_t result, hcclGoComm_t comm, const std::string& what,
                              std::string detail = "");

// Builds (does not throw) the exception for a failed op, for futures and
// Work::exception().
std::exception_ptr makeOpError(hcclGoResult_t result, const std::string& what, const std::string& detail);

inline void check(hcclGoResult_t result, hcclGoComm_t comm, const std::string& what) {
  if (result != hcclGoSuccess) {
    throwResult(result, comm, what);
  }
}

}  // namespace hccl_go
