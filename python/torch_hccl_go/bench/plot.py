"""--plot PATH.png: busbw and latency against size, one line per backend, log axes.

One row of two panels per (op, dtype). Needs matplotlib; without it the plot is skipped
with a note on stderr and the run still succeeds.
"""

from __future__ import annotations

import sys
from itertools import groupby

from .results import Result
from .sizes import format_size


def write_plot(path: str, results: list[Result], backends: tuple[str, ...]) -> bool:
    """Draws the figure; False (with a note on stderr) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullLocator
    except ImportError:
        print("--plot: matplotlib is not installed (pip install matplotlib); no plot written", file=sys.stderr)
        return False

    panels = [(key, list(rows)) for key, rows in groupby(results, key=lambda r: (r.op, r.dtype))]
    fig, axes = plt.subplots(len(panels), 2, figsize=(12, 4.2 * len(panels)), squeeze=False)
    for row, ((op, dtype), rows) in enumerate(panels):
        bw_ax, lat_ax = axes[row]
        sizes = sorted({r.size for r in rows})
        for backend in backends:
            ok = [r for r in rows if r.backend == backend and r.ok]
            if not ok:
                continue
            x = [r.size for r in ok]
            bw_ax.plot(x, [r.busbw for r in ok], marker="o", label=backend)
            lat_ax.plot(x, [r.time_us for r in ok], marker="o", label=backend)
        world = rows[0].world
        for ax, ylabel, title in ((bw_ax, "busbw (GB/s)", "bus bandwidth"), (lat_ax, "time (us, median)", "latency")):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xticks(sizes, [format_size(s) for s in sizes], rotation=60, fontsize=8)
            ax.set_xlabel("size")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{op} {dtype}, world {world}: {title}")
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_lines():
                ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
