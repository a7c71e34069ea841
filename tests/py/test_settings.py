"""Every HCCL_GO_* variable the Python package reads is a setting that
`python -m torch_hccl_go.info` knows (and so documents, rather than calling it a typo)."""

from __future__ import annotations

import re
from pathlib import Path

import torch_hccl_go
from torch_hccl_go import _settings

PACKAGE = Path(torch_hccl_go.__file__).resolve().parent
READ = re.compile(r"""(?:environ\.get\(|environ\[|getenv\()\s*["'](HCCL_GO_[A-Z0-9_]+)["']""")


def test_python_reads_only_known_settings() -> None:
    read = {m for f in PACKAGE.rglob("*.py") for m in READ.findall(f.read_text())}
    assert "HCCL_GO_STREAM" in read, "the pattern no longer finds the variables the package reads"
    known = {s.env for s in _settings.SETTINGS}
    assert read - known == set(), f"read by torch_hccl_go but unknown to torch_hccl_go.info: {sorted(read - known)}"


def test_stream_variable_is_known(monkeypatch) -> None:
    monkeypatch.setenv("HCCL_GO_STREAM", "high")
    assert "HCCL_GO_STREAM" not in _settings.unknown()
