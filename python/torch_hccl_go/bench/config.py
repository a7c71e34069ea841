"""Command line of `python -m torch_hccl_go.bench` and the settings every rank receives."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from .ops import DTYPES, REDOPS, SPECS, dtype_by_name, dtype_name
from .sizes import DEFAULT_SIZES, parse_sizes

PEER_NAMES = ("deepspeed", "mpi")  # peers/: libraries timed in jobs of their own


@dataclass(frozen=True)
class BenchConfig:
    ops: tuple[str, ...]
    sizes: tuple[int, ...]
    dtypes: tuple[str, ...]  # canonical names ("float32"); torch dtypes do not pickle by name
    redop: str
    root: int
    world_size: int
    backends: tuple[str, ...]
    warmup: int
    iters: int | None  # None: adaptive, within max_time per size and backend
    max_time: float
    rewarm_ms: float  # untimed iterations before each batch, for about this long (timing.py)
    check: bool
    threads: int
    timeout: float
    json_path: str | None
    plot_path: str | None
    progress: bool
    argv: tuple[str, ...]  # for the report: how to reproduce it
    jobs: int | None = None  # --jobs N: N fresh jobs per backend (None: one job, backends together)
    history: bool = False  # --history: time single ops after idle gaps, small ops, compute (history.py)
    peers: tuple[str, ...] = ()  # --peers: other libraries, each in jobs of its own (peers/)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m torch_hccl_go.bench",
        description="Time torch.distributed collectives on CPU tensors for several backends in one "
        "run and print nccl-tests style tables. Launches --world-size ranks itself, or runs as one "
        "rank under torchrun (RANK/WORLD_SIZE set).",
    )
    p.add_argument(
        "--ops", default="all_reduce", help=f"comma list of {', '.join(SPECS)}, or 'all' (default all_reduce)"
    )
    p.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help="start:stop[:factor] (factor 2 if omitted) and/or a comma list; units B, K/KiB, "
        f"M/MiB, G/GiB, all binary (default {DEFAULT_SIZES})",
    )
    p.add_argument("--dtypes", default="float32", help=f"comma list of {', '.join(DTYPES)} (default float32)")
    p.add_argument("--redop", default="sum", choices=sorted(REDOPS), help="reduction of reducing ops (default sum)")
    p.add_argument("--root", type=int, default=0, help="root rank of broadcast and reduce (default 0)")
    p.add_argument(
        "-n", "--world-size", type=int, default=2, help="ranks to launch (default 2; ignored under torchrun)"
    )
    p.add_argument(
        "--backends",
        default="hccl_go,gloo",
        help="comma list; the first is compared with each other one (default hccl_go,gloo)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=5,
        help="untimed iterations per size and backend (default 5; adaptive mode stops early on "
        "sizes where they would exceed a quarter of --max-time)",
    )
    p.add_argument(
        "--iters",
        default="auto",
        help="timed iterations per size and backend, in min(N, 10) batches; or 'auto' (default): "
        "batches of about 10 ms, as many as fit in --max-time (3 to 50 batches)",
    )
    p.add_argument(
        "--rewarm-ms",
        type=float,
        default=5.0,
        help="untimed iterations before each timed batch, for about this many milliseconds (default 5; "
        "at least one iteration, at most a batch): the backends' batches alternate, and "
        "this times each in steady state rather than right after the other's; 0 turns it off",
    )
    p.add_argument(
        "--max-time",
        type=float,
        default=1.0,
        help="adaptive mode: seconds of timed iterations per size and backend (default 1.0)",
    )
    p.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check every result once against a reference (default on)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads in each rank (default 1)")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before a stuck collective fails the run (default 300)"
    )
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write every figure to this JSON file")
    p.add_argument(
        "--plot",
        dest="plot_path",
        metavar="PATH.png",
        help="draw busbw and latency against size per backend (needs matplotlib)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="run the benchmark as N fresh jobs per backend (new processes each, backends' jobs "
        "interleaved) and report the spread of the per-job medians and the slow jobs",
    )
    p.add_argument(
        "--history",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also time single ops right after 8-byte all_reduces, idle gaps of 1/10/100 ms and a "
        "compute burst, against the warm median (default off)",
    )
    p.add_argument(
        "--peers",
        default="",
        help=f"comma list of other libraries to time in jobs of their own: {', '.join(PEER_NAMES)} "
        "(skipped with a note when not installed)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress bar on a terminal for sweeps longer than a few seconds (default on)",
    )
    return p


def parse_args(argv: list[str]) -> BenchConfig:
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        ops = _split(a.ops)
        if ops == ["all"]:
            ops = list(SPECS)
        for op in ops:
            if op not in SPECS:
                raise ValueError(f"unknown op {op!r}: want one of {', '.join(SPECS)}")
        dtypes = [dtype_name(dtype_by_name(d)) for d in _split(a.dtypes)]
        sizes = parse_sizes(a.sizes)
        backends = _split(a.backends)
        iters = None if a.iters == "auto" else int(a.iters)
        peers = _split(a.peers)
        for peer in peers:
            if peer not in PEER_NAMES:
                raise ValueError(f"unknown peer {peer!r}: want one of {', '.join(PEER_NAMES)}")
    except ValueError as e:
        parser.error(str(e))
    if len(set(peers)) != len(peers) or set(peers) & set(backends):
        parser.error(f"--peers: want distinct names that are not in --backends, got {a.peers!r}")
    if a.jobs is not None and a.jobs < 1:
        parser.error(f"--jobs: want a positive number of jobs, got {a.jobs}")
    if not backends or len(set(backends)) != len(backends):
        parser.error(f"--backends: want distinct names, got {a.backends!r}")
    if a.world_size < 1 or a.threads < 1 or a.warmup < 0 or a.max_time <= 0 or (iters is not None and iters < 1):
        parser.error("--world-size, --threads, --iters and --max-time must be positive, --warmup non-negative")
    if a.rewarm_ms < 0:
        parser.error(f"--rewarm-ms: want a non-negative number of milliseconds, got {a.rewarm_ms}")
    if a.root < 0:
        parser.error("--root must be a rank")
    return BenchConfig(
        ops=tuple(ops),
        sizes=tuple(sizes),
        dtypes=tuple(dtypes),
        redop=a.redop,
        root=a.root,
        world_size=a.world_size,
        backends=tuple(backends),
        warmup=a.warmup,
        iters=iters,
        max_time=a.max_time,
        rewarm_ms=a.rewarm_ms,
        check=a.check,
        threads=a.threads,
        timeout=a.timeout,
        json_path=a.json_path,
        plot_path=a.plot_path,
        progress=a.progress,
        argv=tuple(argv),
        jobs=a.jobs,
        history=a.history,
        peers=tuple(peers),
    )


def to_argv(cfg: BenchConfig) -> list[str]:
    """A command line that parse_args turns back into cfg (but for argv): a job's own."""
    argv = ["--ops", ",".join(cfg.ops), "--sizes", ",".join(str(s) for s in cfg.sizes)]
    argv += ["--dtypes", ",".join(cfg.dtypes), "--redop", cfg.redop, "--root", str(cfg.root)]
    argv += ["--world-size", str(cfg.world_size), "--backends", ",".join(cfg.backends)]
    argv += ["--warmup", str(cfg.warmup), "--iters", "auto" if cfg.iters is None else str(cfg.iters)]
    argv += ["--rewarm-ms", repr(cfg.rewarm_ms), "--max-time", repr(cfg.max_time)]
    argv += ["--check" if cfg.check else "--no-check", "--threads", str(cfg.threads), "--timeout", repr(cfg.timeout)]
    argv += ["--history" if cfg.history else "--no-history", "--progress" if cfg.progress else "--no-progress"]
    if cfg.jobs is not None:
        argv += ["--jobs", str(cfg.jobs)]
    if cfg.peers:
        argv += ["--peers", ",".join(cfg.peers)]
    if cfg.json_path:
        argv += ["--json", cfg.json_path]
    if cfg.plot_path:
        argv += ["--plot", cfg.plot_path]
    return argv


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
