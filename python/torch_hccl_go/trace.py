"""The flight recorder: dump a communicator's last ops, and compare the dumps of all ranks.

Every hccl_go communicator records its last HCCL_GO_TRACE_SIZE ops (default 2000):
kind, sequence number, bytes, dtype, route, stream, when each was queued, started
and ended, its state and error. It writes them as JSON on its first failure (a
timeout, a dead peer, a failed collective) to HCCL_GO_TRACE_DIR (default
$TMPDIR/hccl-go-trace), one file per rank, and names the file in the error. On
request:

    import torch_hccl_go.trace
    path = torch_hccl_go.trace.dump_trace()          # the default group; returns the file

To find which rank is behind, give the dumps of all ranks (or their directory) to

    python -m torch_hccl_go.trace analyze /tmp/hccl-go-trace/
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

# --- dumping -----------------------------------------------------------------


def _lib() -> ctypes.CDLL:
    from . import library_path

    lib = ctypes.CDLL(library_path())  # already loaded by the extension: the same handle
    lib.hcclGoCommDumpTrace.argtypes = [ctypes.c_uint64, ctypes.c_char_p]
    lib.hcclGoCommDumpTrace.restype = ctypes.c_int
    lib.hcclGoCommTracePath.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
    lib.hcclGoCommTracePath.restype = ctypes.c_int
    lib.hcclGoGetLastError.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
    lib.hcclGoGetLastError.restype = ctypes.c_int
    return lib


def _check(lib: ctypes.CDLL, comm: int, rc: int, what: str) -> None:
    if rc != 0:
        buf = ctypes.create_string_buffer(1024)
        lib.hcclGoGetLastError(comm, buf, len(buf))
        raise RuntimeError(f"hccl_go: {what}: {buf.value.decode(errors='replace')} (result {rc})")


def trace_path(group=None) -> str:
    """Where dump_trace(group) writes by default."""
    from .comm import get_backend

    comm = get_backend(group).comm_handle
    lib = _lib()
    buf = ctypes.create_string_buffer(4096)
    _check(lib, comm, lib.hcclGoCommTracePath(comm, buf, len(buf)), "hcclGoCommTracePath")
    return buf.value.decode()


def dump_trace(group=None, path: str | None = None) -> str:
    """Writes the flight recorder of group's communicator (default: the world) as JSON
    to path (default: trace_path(group)) and returns the path."""
    from .comm import get_backend

    comm = get_backend(group).comm_handle
    path = path or trace_path(group)
    lib = _lib()
    _check(lib, comm, lib.hcclGoCommDumpTrace(comm, os.fsencode(path)), "hcclGoCommDumpTrace")
    return path


# --- analysis ----------------------------------------------------------------


@dataclass
class Dump:
    """One rank's dump."""

    path: str
    data: dict
    ops: list[dict] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return self.data["rank"]


def load(paths: list[str]) -> dict[str, dict[int, Dump]]:
    """Reads dumps (files, or directories of hccl-go-trace-*.json) grouped by job, then rank."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.glob("hccl-go-trace-*.json")) if p.is_dir() else [p])
    jobs: dict[str, dict[int, Dump]] = {}
    for f in files:
        data = json.loads(f.read_text())
        d = Dump(str(f), data, data.get("ops", []))
        jobs.setdefault(data["job"], {})[d.rank] = d
    return jobs


def _ranks(rs) -> str:
    return "[" + " ".join(str(r) for r in sorted(rs)) + "]"


def _describe(op: dict) -> str:
    parts = [f"{op['op']} seq {op['seq']}", f"{op['bytes']} B"]
    if op.get("dtype"):
        parts.append(op["dtype"])
    if op.get("red_op"):
        parts.append(op["red_op"])
    if op.get("root", -1) >= 0:
        parts.append(f"root {op['root']}")
    return " ".join(parts[:1]) + " (" + ", ".join(parts[1:]) + ")"


def _fingerprint(op: dict) -> tuple:
    nbytes = None if op["op"] == "alltoallv" else op["bytes"]
    return (op["op"], nbytes, op.get("dtype", ""), op.get("red_op", ""), op.get("root", -1), op["stream"])


def analyze(dumps: dict[int, Dump]) -> list[str]:
    """Says, for one job, which ranks are behind at which op, and which collectives the
    ranks issued differently. Returns report lines."""
    lines: list[str] = []
    any_dump = next(iter(dumps.values()))
    size = any_dump.data["size"]
    missing = [r for r in range(size) if r not in dumps]
    lines.append(f"job {any_dump.data['job']}: {size} ranks, dumps from ranks {_ranks(dumps)}")
    if missing:
        lines.append(f"  no dump from ranks {_ranks(missing)} (dead, or not dumped): they may be the ones behind")

    for r, d in sorted(dumps.items()):
        issued = d.data["issued_seq"]
        active = [op for op in d.ops if op["state"] in ("running", "queued")]
        desc = f"  rank {r}: issued up to seq {issued}"
        running = [op for op in active if op["state"] == "running"]
        if running:
            desc += "; in " + ", ".join(
                f"{_describe(op)} on {op['stream']} for {op['ran_ms'] / 1000:.1f} s" for op in running
            )
        queued = [op for op in active if op["state"] == "queued"]
        if queued:
            desc += f"; {len(queued)} queued"
        if d.data.get("failure"):
            desc += f"; failed: {d.data['failure'][:200]}"
        lines.append(desc)

    # The op everybody should be in: the oldest collective some rank is still running
    # (or failed in). A rank is behind when it has not started it.
    stuck: dict[tuple[str, int], set[int]] = {}
    for r, d in dumps.items():
        for op in d.ops:
            ran = op["state"] == "running" or (op["state"] == "failed" and "not run" not in op.get("error", ""))
            if op["seq"] > 0 and ran:
                stuck.setdefault((op["stream"], op["seq"]), set()).add(r)
    if stuck:
        stream, seq = min(stuck, key=lambda k: k[1])
        waiting = stuck[(stream, seq)]
        behind: list[str] = []
        for r, d in sorted(dumps.items()):
            if r in waiting:
                continue
            started = {op["seq"] for op in d.ops if op["stream"] == stream and op["state"] != "queued"}
            if seq in started:
                continue
            if d.data["issued_seq"] < seq:
                behind.append(f"rank {r} has not issued seq {seq} (last issued seq {d.data['issued_seq']})")
            else:
                ahead = [op for op in d.ops if op["stream"] == stream and op["state"] == "running"]
                where = f" behind {_describe(ahead[0])}" if ahead else ""
                behind.append(f"rank {r} has seq {seq} queued{where}")
        behind.extend(f"rank {r} left no dump" for r in missing)
        name = next(_describe(op) for op in dumps[min(waiting)].ops if op["seq"] == seq and op["stream"] == stream)
        if behind:
            lines.append(f"verdict: ranks {_ranks(waiting)} wait in {name} on stream {stream}; " + "; ".join(behind))
        else:
            lines.append(f"verdict: every rank reached {name}; look for a failed or slow link in the errors above")
    else:
        lines.append("verdict: no collective in progress on any rank")

    # Collectives issued differently on different ranks (what HCCL_GO_CHECK=1 catches live).
    by_seq: dict[int, dict[tuple, list[int]]] = {}
    for r, d in dumps.items():
        for op in d.ops:
            if op["seq"] > 0:
                by_seq.setdefault(op["seq"], {}).setdefault(_fingerprint(op), []).append(r)
    for seq, variants in sorted(by_seq.items()):
        if len(variants) > 1:
            desc = "; ".join(
                f"{fp[0]} {fp[1]} B {fp[2]} {fp[3]} root {fp[4]} on ranks {_ranks(rs)}" for fp, rs in variants.items()
            )
            lines.append(f"mismatch at seq {seq}: {desc}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_hccl_go.trace", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyze", help="say which rank is behind at which op, from the dumps of all ranks")
    a.add_argument("dumps", nargs="+", help="dump files, or directories holding hccl-go-trace-*.json")
    args = parser.parse_args(argv)
    jobs = load(args.dumps)
    if not jobs:
        print("no dumps found", file=sys.stderr)
        return 1
    for dumps in jobs.values():
        print("\n".join(analyze(dumps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
