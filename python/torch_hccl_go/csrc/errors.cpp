#include "errors.hpp"

#include <c10/util/Exception.h>

namespace hccl_go {

std::string lastError(hcclGoComm_t comm) {
  char buf[1024] = {0};
  if (hcclGoGetLastError(comm, buf, sizeof(buf)) != hcclGoSuccess) {
    return "";
  }
  return std::string(buf);
}

const char* resultName(hcclGoResult_t result) {
  switch (result) {
    case hcclGoSuccess:
      return "hcclGoSuccess";
    case hcclGoInvalidArgument:
      return "hcclGoInvalidArgument";
    case hcclGoInvalidUsage:
      return "hcclGoInvalidUsage";
    case hcclGoSystemError:
      return "hcclGoSystemError";
    case hcclGoRemoteError:
      return "hcclGoRemoteError";
    case hcclGoTimeout:
      return "hcclGoTimeout";
    case hcclGoInternalError:
      return "hcclGoInternalError";
    case hcclGoInProgress:
      return "hcclGoInProgress";
    case hcclGoAborted:
      return "hcclGoAborted";
    case hcclGoNotSupported:
      return "hcclGoNotSupported";
    default:
      return "hcclGo(unknown result)";
  }
}

namespace {

std::string formatOpError(hcclGoResult_t result, const std::string& what, const std::string& detail) {
  std::string msg = what + " failed: ";
  msg += detail.empty() ? std::string("(no message from the library)") : detail;
  msg += " [";
  msg += resultName(result);
  msg += "]";
  return msg;
}

}  // namespace

std::exception_ptr makeOpError(hcclGoResult_t result, const std::string& what, const std::string& detail) {
  std::string msg = formatOpError(result, what, detail);
  switch (result) {
    case hcclGoInvalidArgument:
      return std::make_exception_ptr(c10::ValueError({__func__, __FILE__, __LINE__}, msg));
    case hcclGoInvalidUsage:
      return std::make_exception_ptr(c10::Error({__func__, __FILE__, __LINE__}, msg));
    default:
      return std::make_exception_ptr(c10::DistBackendError({__func__, __FILE__, __LINE__}, msg));
  }
}

void throwResult(hcclGoResult_t result, hcclGoComm_t comm, const std::string& what, std::string detail) {
  if (detail.empty()) {
    detail = lastError(comm);
  }
  std::rethrow_exception(makeOpError(result, what, detail));
}

}  // namespace hccl_go
