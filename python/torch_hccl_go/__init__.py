"""torch_hccl_go: the hccl_go backend for torch.distributed.

    import torch_hccl_go                         # registers the backend
    dist.init_process_group(backend="hccl_go")   # CPU tensors

Public API: Options, library_path(), comm_info(group), get_backend(group),
symm (symmetric memory: symm.empty, symm.rendezvous), get_stream/set_stream/use_stream (the library stream of a group's
collectives), all_reduce(tensor, op, group) (in place and synchronous, without
c10d's dispatch: see direct.py), __version__. `python -m torch_hccl_go.info` prints the configuration.
"""

import atexit as _atexit

import torch  # noqa: F401  (loads libtorch before the extension)

from ._library import library_path, load_extension
from ._version import __version__

_C = load_extension()  # the build for this torch, as torch_hccl_go._C; starts the Go runtime
from . import symm  # noqa: E402  (torch_hccl_go.symm.empty, .rendezvous)
from ._creator import register  # noqa: E402
from .comm import comm_info, get_backend  # noqa: E402
from .direct import all_reduce  # noqa: E402
from .options import Options  # noqa: E402
from .stats import stats  # noqa: E402
from .streams import get_stream, set_stream, use_stream  # noqa: E402
from .trace import dump_trace  # noqa: E402

register()

# At exit, before Python finalizes, let completions still in flight finish: a completion
# thread that drops a tensor Python owns once finalization has begun aborts the process.
_atexit.register(_C.drain_at_exit, 2000)

__all__ = [
    "Options",
    "__version__",
    "all_reduce",
    "comm_info",
    "dump_trace",
    "get_backend",
    "get_stream",
    "library_path",
    "set_stream",
    "stats",
    "symm",
    "use_stream",
]
