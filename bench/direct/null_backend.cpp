// null_backend.cpp: a c10d backend whose all_reduce and barrier do nothing
// and return no Work, as hccl_go's synchronous all_reduce returns none: a
// dist.all_reduce on it costs torch's own path alone (Python, the
// dispatcher, ProcessGroup), the floor under every backend's small ops.
// Built on first use by bench/direct/allreduce.py (torch.utils.cpp_extension).
#include <torch/python.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace {

class NullBackend : public c10d::Backend {
 public:
  NullBackend(int rank, int size) : c10d::Backend(rank, size) {}
  const std::string getBackendName() const override { return "null"; }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>&, const c10d::AllreduceOptions&) override {
    return {};
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override { return {}; }
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  py::module_::import("torch._C._distributed_c10d");
  py::class_<NullBackend, c10d::Backend, c10::intrusive_ptr<NullBackend>>(m, "NullBackend")
      .def(py::init<int, int>(), py::arg("rank"), py::arg("size"));
}
