"""python -m torch_hccl_go.info: versions, library path and settings in force.

Run inside an initialized process group, report() also includes the
communicator's own description (hcclGoCommInfo).
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist

import torch_hccl_go

from . import _C, _settings
from ._library import built_torch_versions


def _version_string(code: int) -> str:
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def report(group: dist.ProcessGroup | None = None) -> str:
    """The text `python -m torch_hccl_go.info` prints."""
    lines = [
        f"torch_hccl_go   {torch_hccl_go.__version__}",
        f"torch           {torch.__version__} (extensions built for torch {', '.join(built_torch_versions())})",
        f"library         {torch_hccl_go.library_path()}",
        f"library version {_version_string(_C.library_version())} (header {_version_string(_C.HEADER_VERSION)})",
        "settings (environment; unset ones take the default):",
    ]
    for setting, value in _settings.in_force():
        if value is None:
            shown = f"(unset, default {setting.default or 'empty'})"
        else:
            shown = "(set, not shown)" if setting.secret else value
        lines.append(f"  {setting.env:<28} {shown}")
    for env, value in sorted(_settings.unknown().items()):
        lines.append(f"  {env:<28} {value}   <- not a known setting")
    if dist.is_available() and dist.is_initialized():
        try:
            info = torch_hccl_go.comm_info(group)
        except ValueError as e:
            lines.append(f"communicator: none ({e})")
        else:
            lines.append("communicator (hcclGoCommInfo):")
            lines.extend("  " + line for line in json.dumps(info, indent=2, sort_keys=True).splitlines())
    return "\n".join(lines)


def main() -> int:
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
