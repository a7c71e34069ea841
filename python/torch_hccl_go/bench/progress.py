"""A progress bar on the terminal (stderr) for sweeps that run more than a few seconds.

tqdm draws it when installed; otherwise a plain one-line counter. Nothing is drawn when
stderr is not a terminal, so logs and pipes get only the tables.
"""

from __future__ import annotations

import sys
import time

SHOW_AFTER_S = 3.0


class Progress:
    """The silent default."""

    def describe(self, text: str) -> None:
        pass

    def advance(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Tqdm(Progress):
    def __init__(self, total: int):
        from tqdm import tqdm

        self._bar = tqdm(total=total, unit="case", delay=SHOW_AFTER_S, leave=False, file=sys.stderr, dynamic_ncols=True)

    def describe(self, text: str) -> None:
        self._bar.set_description_str(text, refresh=False)

    def advance(self) -> None:
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


class _Line(Progress):
    """ "[ 5/14] all_reduce 2KiB", redrawn in place once the sweep has run SHOW_AFTER_S."""

    def __init__(self, total: int):
        self._total = total
        self._done = 0
        self._text = ""
        self._started = time.monotonic()
        self._drawn = False

    def describe(self, text: str) -> None:
        self._text = text
        self._draw()

    def advance(self) -> None:
        self._done += 1
        self._draw()

    def _draw(self) -> None:
        if time.monotonic() - self._started < SHOW_AFTER_S:
            return
        width = len(str(self._total))
        sys.stderr.write(f"\r[{self._done:{width}}/{self._total}] {self._text:<40}")
        sys.stderr.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            sys.stderr.write("\r" + " " * (len(str(self._total)) * 2 + 45) + "\r")
            sys.stderr.flush()


def make_progress(total: int, enabled: bool) -> Progress:
    if not enabled or not sys.stderr.isatty():
        return Progress()
    try:
        return _Tqdm(total)
    except ImportError:
        return _Line(total)
