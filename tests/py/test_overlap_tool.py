"""The overlap measurement tool (python -m torch_hccl_go.overlap) runs end to end on 2 ranks
and reports every phase per rank and the slowest rank's figures (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path

from harness import run_torchrun

ROOT = Path(__file__).resolve().parents[2]


def test_overlap_tool_reports_slowest_rank(tmp_path: Path) -> None:
    out_json = tmp_path / "overlap.json"
    target = [
        "-m", "torch_hccl_go.overlap",
        "--backends", "hccl_go,gloo", "--model", "mlp", "--width", "64", "--depth", "2",
        "--inputs", "32", "--batch", "8", "--steps", "2", "--warmup", "1", "--threads", "1",
        "--json", str(out_json),
    ]  # fmt: skip
    proc, out = run_torchrun(target, cwd=ROOT)
    assert proc.returncode == 0, f"overlap tool exited with {proc.returncode}:\n{out[-4000:]}"
    data = json.loads(out_json.read_text())
    text = json.dumps(data)
    for key in ("per_rank", "rank_ms", "hccl_go", "gloo"):
        assert key in text, f"{key!r} missing from the JSON: {text[:2000]}"
    for result in data["results"]:
        assert {r["backend"] for r in data["results"]} == {"hccl_go", "gloo"}
        for phase in ("compute", "comm", "step"):
            per_rank = result["per_rank"][phase]
            assert len(per_rank) == 2, (phase, per_rank)
            slowest = [max(samples) for samples in zip(*per_rank, strict=True)]
            assert result[phase]["samples"] == slowest, (result["backend"], phase)
