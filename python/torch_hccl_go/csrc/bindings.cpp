// bindings.cpp: the torch_hccl_go._C module. Python does the rendezvous
// (torch_hccl_go/_rendezvous.py) and calls these.
#include <dlfcn.h>
#include <torch/python.h>

#include "backend.hpp"
#include "completion_queue.hpp"
#include "errors.hpp"
#include "symm_alloc.hpp"

namespace py = pybind11;

namespace hccl_go {
namespace {

// hcclGoListenRank: opens this rank's listener once the host ids are known;
// returns (listener, address peers should dial).
std::pair<uint64_t, std::string> listenRank(int rank, const std::vector<std::string>& hostIds,
                                            const std::string& storeHost, const std::string& options) {
  std::vector<const char*> hosts;
  for (const auto& h : hostIds) {
    hosts.push_back(h.c_str());
  }
  char addr[512] = {0};
  hcclGoListener_t listener = 0;
  hcclGoResult_t r;
  {
    py::gil_scoped_release nogil;
    r = hcclGoListenRank(static_cast<int>(hosts.size()), rank, hosts.data(), storeHost.c_str(), options.c_str(),
                         &listener, addr, sizeof(addr));
  }
  check(r, 0, "hccl_go: opening the listening socket of rank " + std::to_string(rank));
  return {listener, std::string(addr)};
}

void listenerClose(uint64_t listener) { check(hcclGoListenerClose(listener), 0, "hccl_go: closing the listener"); }

int libraryVersion() {
  int v = 0;
  check(hcclGoGetVersion(&v), 0, "hccl_go: hcclGoGetVersion");
  return v;
}

// The file the dynamic linker actually loaded hcclGoGetVersion from (which
// LD_LIBRARY_PATH may make differ from the packaged copy).
std::string loadedLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&hcclGoGetVersion), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

c10::intrusive_ptr<HcclGoBackend> createBackend(int rank, int size, uint64_t listener,
                                                std::vector<std::string> peerAddrs, std::vector<std::string> hostIds,
                                                std::string secret, std::string options, int64_t timeoutMs) {
  HcclGoBackend::Setup s;
  s.rank = rank;
  s.size = size;
  s.listener = listener;
  s.peerAddrs = std::move(peerAddrs);
  s.hostIds = std::move(hostIds);
  s.secret = std::move(secret);
  s.options = std::move(options);
  s.timeout = std::chrono::milliseconds(timeoutMs);
  // Connecting to every peer blocks: let other Python threads run.
  py::gil_scoped_release nogil;
  return c10::make_intrusive<HcclGoBackend>(s);
}

c10::intrusive_ptr<HcclGoBackend> splitBackend(const c10::intrusive_ptr<HcclGoBackend>& parent, int rank,
                                               std::vector<int> parentRanks, std::string name, std::string options,
                                               int64_t timeoutMs) {
  HcclGoBackend::SplitSetup s;
  s.rank = rank;
  s.parentRanks = std::move(parentRanks);
  s.name = std::move(name);
  s.options = std::move(options);
  s.timeout = std::chrono::milliseconds(timeoutMs);
  // The members agree over the parent's links, which blocks.
  py::gil_scoped_release nogil;
  return c10::make_intrusive<HcclGoBackend>(*parent, s);
}

}  // namespace

void allReduceDirectPy(const at::Tensor& t, const c10d::ReduceOp& op, c10d::ProcessGroup& pg);  // direct.cpp

}  // namespace hccl_go

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using hccl_go::HcclGoBackend;
  m.doc() = "C++ half of torch_hccl_go: the hccl_go c10d::Backend over libhccl_go.so";

  // The base class must be registered before a subclass can be.
  py::module_::import("torch._C._distributed_c10d");

  py::class_<HcclGoBackend, c10d::Backend, c10::intrusive_ptr<HcclGoBackend>>(m, "HcclGoBackend")
      .def(py::init(&hccl_go::createBackend), py::arg("rank"), py::arg("size"), py::arg("listener"),
           py::arg("peer_addrs"), py::arg("host_ids"), py::arg("secret"), py::arg("options"), py::arg("timeout_ms"),
           "Creates the communicator; the listener (from listen()) is consumed.")
      .def_static("split_from", &hccl_go::splitBackend, py::arg("parent"), py::arg("rank"), py::arg("parent_ranks"),
                  py::arg("name"), py::arg("options"), py::arg("timeout_ms"),
                  "Creates the communicator as a split of parent's (hcclGoCommSplit): parent_ranks[i] is the "
                  "parent rank of the new group's rank i; every member passes the same name and parent_ranks.")
      .def_property_readonly("is_open", &HcclGoBackend::isOpen,
                             "Whether ops may still be issued (not shut down or aborted).")
      .def("comm_info", &HcclGoBackend::commInfo, py::call_guard<py::gil_scoped_release>(),
           "hcclGoCommInfo as a JSON string.")
      .def_property_readonly("options_string", &HcclGoBackend::optionsString,
                             "The options string the communicator was created with.")
      .def_property_readonly("comm_handle", &HcclGoBackend::commHandle, "The hcclGoComm_t handle (for debugging).")
      .def_property("stream", &HcclGoBackend::stream, &HcclGoBackend::setStream,
                    "The library stream later collectives are issued on (0 default, 1 high priority).")
      .def_property("sync_returns_none", &HcclGoBackend::syncReturnsNone, &HcclGoBackend::setSyncReturnsNone,
                    "Whether a collective called with asyncOp=False (which has completed when it returns) "
                    "returns None instead of a completed Work.");

  m.def("listen_rank", &hccl_go::listenRank, py::arg("rank"), py::arg("host_ids"), py::arg("store_host"),
        py::arg("options"), "hcclGoListenRank: returns (listener, address peers should dial).");
  m.def("listener_close", &hccl_go::listenerClose, py::arg("listener"), "hcclGoListenerClose.");
  m.def("library_version", &hccl_go::libraryVersion, "hcclGoGetVersion of the loaded libhccl_go.so.");
  m.def("loaded_library_path", &hccl_go::loadedLibraryPath, "Path of the libhccl_go.so in use.");
  m.def(
      "drain_at_exit",
      [](int64_t timeoutMs) { return hccl_go::CompletionQueue::drainAll(std::chrono::milliseconds(timeoutMs)); },
      py::arg("timeout_ms"), py::call_guard<py::gil_scoped_release>(),
      "Waits (at most timeout) until no Work is in flight and every completion thread is idle; "
      "registered with atexit, so that no completion thread drops a tensor once Python finalizes.");
  m.def("all_reduce_", &hccl_go::allReduceDirectPy, py::arg("tensor"), py::arg("op"), py::arg("group"),
        "torch_hccl_go.all_reduce in eager mode: an in-place, blocking all_reduce on the group's communicator "
        "(the GIL is released while it runs).");
  m.def("symm_allocator_push", &hccl_go::pushSymmetricAllocator, py::arg("comm"), py::arg("min_bytes"),
        "Installs torch's CPU allocator that serves this thread's allocations of min_bytes or more from "
        "symmetric memory of comm (hcclGoMemAlloc), until symm_allocator_pop.");
  m.def("symm_allocator_pop", &hccl_go::popSymmetricAllocator,
        "Restores the CPU allocator symm_allocator_push replaced.");
  m.attr("HEADER_VERSION") = HCCL_GO_VERSION_CODE;
}
