"""bench/ddp_timeline.py runs end to end on 2 local ranks and reports, for both backends, a
timeline whose events are in causal order on every rank (no timing assertions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_ddp_timeline_orders_each_rank_events(tmp_path: Path) -> None:
    out_json = tmp_path / "timeline.json"
    cmd = [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", "--nproc_per_node=2",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}",
        str(ROOT / "bench" / "ddp_timeline.py"), "--steps", "2", "--warmup", "1",
        "--json", str(out_json),
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"ddp_timeline exited with {proc.returncode}:\n{out[-4000:]}"
    assert "# DDP step timeline, world 2" in out, out[-2000:]
    data = json.loads(out_json.read_text())
    assert set(data["results"]) == {"hccl_go", "gloo"}
    for backend, r in data["results"].items():
        per_rank = r["per_rank"]
        for rank in range(2):
            order = [per_rank[f][rank] for f in ("start", "forward", "issue", "done", "backward", "step")]
            assert order == sorted(order), (backend, rank, order)
        assert r["issue_first"] <= r["issue_last"] and r["done_first"] <= r["done_last"], (backend, r)
        assert len(r["optimizer_cpu_wall_ms_per_rank"]) == 2, (backend, r)
