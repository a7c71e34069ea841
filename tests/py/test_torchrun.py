"""torchrun launches the example training job (2 processes, env:// rendezvous on 127.0.0.1)."""

from __future__ import annotations

import re
from pathlib import Path

from harness import BACKEND, run_torchrun

ROOT = Path(__file__).resolve().parents[2]


def test_torchrun_trains_digits() -> None:
    proc, out = run_torchrun(
        [str(ROOT / "examples" / "train_digits.py"), "--backend", BACKEND, "--epochs", "4"], cwd=ROOT
    )
    assert proc.returncode == 0, f"torchrun exited with {proc.returncode}:\n{out[-4000:]}"
    summary = [line for line in proc.stdout.splitlines() if line.startswith("summary:")]
    assert len(summary) == 1, f"expected one summary line from rank 0:\n{out[-4000:]}"
    print(summary[0])
    assert f"backend={BACKEND} world=2" in summary[0]
    assert "params_in_sync=yes" in summary[0]
    acc = float(re.search(r"test_acc=([\d.]+)%", summary[0]).group(1))
    assert acc > 80.0, f"test accuracy {acc}% after 4 epochs: training is not learning"
