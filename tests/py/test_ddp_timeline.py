"""bench/ddp_timeline.py runs end to end on 2 local ranks and reports, for both backends, a
timeline whose events are in causal order on every rank (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

from harness import run_torchrun

ROOT = Path(__file__).resolve().parents[2]


def test_ddp_timeline_orders_each_rank_events(tmp_path: Path) -> None:
    out_json = tmp_path / "timeline.json"
    target = [str(ROOT / "bench" / "ddp_timeline.py"), "--steps", "2", "--warmup", "1", "--json", str(out_json)]
    proc, out = run_torchrun(target, cwd=ROOT)
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
