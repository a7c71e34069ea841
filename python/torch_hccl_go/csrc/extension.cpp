// extension.cpp: the one translation unit setup.py compiles.
//
// Every source of the extension includes the torch headers, whose parsing
// costs ~10 s of CPU per file (20 s with pybind11); compiling the sources
// as one unit parses them once, which makes a build ~3x cheaper on a small
// machine. The sources stay separate files, one concept each; names in
// their anonymous namespaces must therefore not clash.
#include "backend.cpp"
#include "bindings.cpp"
#include "collectives.cpp"
#include "completion_queue.cpp"
#include "direct.cpp"
#include "errors.cpp"
#include "monitored_barrier.cpp"
#include "p2p.cpp"
#include "sparse_allreduce.cpp"
#include "symm_alloc.cpp"
#include "tensors.cpp"
#include "work.cpp"
