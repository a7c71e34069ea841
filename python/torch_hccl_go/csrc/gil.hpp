// gil.hpp: releases the Python GIL, if this thread holds it, for a
// blocking wait in code that may be reached with or without it (a backend
// destructor runs wherever the last reference is dropped).
#pragma once

#include <Python.h>

namespace hccl_go {

inline bool pythonFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

class MaybeReleaseGil {
 public:
  MaybeReleaseGil() {
    // While Python finalizes, a thread that gives up the GIL may never get
    // it back: keep it then.
    if (Py_IsInitialized() && !pythonFinalizing() && PyGILState_Check()) {
      state_ = PyEval_SaveThread();
    }
  }
  ~MaybeReleaseGil() {
    if (state_ != nullptr) {
      PyEval_RestoreThread(state_);
    }
  }
  MaybeReleaseGil(const MaybeReleaseGil&) = delete;
  MaybeReleaseGil& operator=(const MaybeReleaseGil&) = delete;

 private:
  PyThreadState* state_ = nullptr;
};

}  // namespace hccl_go
