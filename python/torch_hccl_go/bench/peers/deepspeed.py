"""DeepSpeed's shared-memory all_reduce as a peer: `--peers deepspeed`.

Its job is this benchmark itself with `--backends deepspeed`, so it is timed by exactly
the same code as hccl_go and gloo. Each op is `deepspeed.comm.inference_all_reduce(t)`:
a sum all_reduce in place, which DeepSpeed runs in its own shared-memory kernel (a C++ op
compiled on first use, ~30-90 s, cached in ~/.cache/torch_extensions) when every rank is
on one host (LOCAL_SIZE == world size) and the CPU has the kernel's instructions (AVX2
for float32, AVX-512BW for float16/bfloat16). Otherwise DeepSpeed quietly falls back to
torch.distributed.all_reduce on the default group (gloo here), which would be gloo under
another name; the benchmark then reports the cases as n/a, with the reason.

DeepSpeed names its segments /dev/shm/deepspeed_allreduce_buffer_<uid>_<MASTER_ADDR>_
<MASTER_PORT>_<rank> and never removes them (66 MiB each). Spawned ranks have no
MASTER_ADDR/MASTER_PORT, so they agree on a name of their own, and every rank removes its
segment once every rank has mapped them all (mappings outlive the name).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import replace
from datetime import timedelta

from ..config import BenchConfig
from ..jobs import bench_command

NAME = "deepspeed"
OPS = ("all_reduce",)
# The shm kernel's instruction-set level each dtype needs (deepspeed's vector_kernel_level:
# 1 AVX2, 2 AVX-512BW).
KERNEL_LEVEL = {"float32": 1, "bfloat16": 2, "float16": 2}
SEGMENT_PREFIX = "deepspeed_allreduce_buffer"


class DeepSpeedPeer:
    """The parent's side: whether it can run, and its job's command."""

    name = NAME

    def skip_reason(self, cfg: BenchConfig) -> str | None:
        if not installed():
            return "deepspeed is not installed (pip install deepspeed==0.19.8 ninja)"
        return _unsupported_sweep(cfg)

    def command(self, cfg: BenchConfig, json_path: str) -> list[str]:
        job = replace(
            cfg,
            backends=(NAME,),
            ops=tuple(op for op in cfg.ops if op in OPS),
            dtypes=tuple(d for d in cfg.dtypes if d in KERNEL_LEVEL),
        )
        return bench_command(job, json_path)

    def env(self, cfg: BenchConfig) -> dict[str, str]:
        return {}


def installed() -> bool:
    return importlib.util.find_spec("deepspeed") is not None


def _unsupported_sweep(cfg: BenchConfig) -> str | None:
    """Why none of the sweep's cases is one deepspeed can run, or None."""
    if not any(op in OPS for op in cfg.ops):
        return f"inference_all_reduce is an all_reduce; --ops asks for {','.join(cfg.ops)}"
    if cfg.redop != "sum":
        return f"inference_all_reduce sums; --redop is {cfg.redop}"
    if not any(d in KERNEL_LEVEL for d in cfg.dtypes):
        return f"its shm kernel reduces {', '.join(KERNEL_LEVEL)}; --dtypes asks for {','.join(cfg.dtypes)}"
    return None


class DeepSpeedBackend:
    """A rank's side (backends.py): DeepSpeed's comm over the control group."""

    name = NAME

    def __init__(self, timeout: float, world: int):
        import torch.distributed as dist

        self._rank, self._world = dist.get_rank(), world
        self._local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        os.environ.setdefault("DS_ACCELERATOR", "cpu")  # CPU tensors; skips its accelerator probe
        os.environ["LOCAL_SIZE"] = str(self._local)
        if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
            key = [f"{os.getpid()}"]
            dist.broadcast_object_list(key, src=0)
            os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "hccl_go_bench", key[0]

        import deepspeed
        import deepspeed.comm

        deepspeed.utils.logger.setLevel(logging.WARNING)
        # torch.distributed is initialised already: DeepSpeed wraps the default group and
        # builds (or loads) its shm kernel.
        deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=timeout), verbose=False)
        cdb = deepspeed.comm.comm.cdb
        self._all_reduce = deepspeed.comm.inference_all_reduce
        self._backend_class = type(cdb).__name__
        self._level = cdb.shm_vector_kernel_level if getattr(cdb, "shm_comm_op", None) is not None else None
        self._version = deepspeed.__version__
        dist.barrier()  # every rank has mapped every rank's segment
        self._segment_removed = self._remove_segment()

    def _remove_segment(self) -> bool:
        if self._level is None or self._local != self._world:
            return False
        name = "_".join(
            [SEGMENT_PREFIX, str(os.getuid()), os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], str(self._rank)]
        )
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except FileNotFoundError:
            return False
        return True

    def unsupported(self, case) -> str | None:
        if case.op not in OPS:
            return f"deepspeed: inference_all_reduce is an all_reduce, not {case.op}"
        if case.redop != "sum":
            return f"deepspeed: inference_all_reduce sums, not {case.redop}"
        if self._level is None:
            return "deepspeed: its shm kernel did not build; inference_all_reduce would be gloo's all_reduce"
        if self._local != self._world:
            return "deepspeed: its shm kernel needs every rank on one host; it would fall back to gloo"
        dtype = str(case.dtype).removeprefix("torch.")
        if self._level < KERNEL_LEVEL.get(dtype, 99):
            return f"deepspeed: its shm kernel has no {dtype} path on this CPU (level {self._level})"
        return None

    def run(self, case, buffers) -> object:
        return self._all_reduce(buffers.input)

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier()

    def small_all_reduce(self, tensor) -> object:
        return self._all_reduce(tensor)

    def info(self) -> dict:
        return {
            "deepspeed": self._version,
            "op": "deepspeed.comm.inference_all_reduce",
            "comm_backend": self._backend_class,
            "shm_kernel_level": self._level,
            "local_size": self._local,
            "shm_segment_removed": self._segment_removed,
        }
