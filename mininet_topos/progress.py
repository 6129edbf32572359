"""A one-line progress bar on stderr for long experiment runs (no dependency, no-op when not a TTY)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Shows ``mode [#####.....] done/total iterations, elapsed`` as the agents report iterations."""

    def __init__(self, modes: tuple[str, ...], iterations: int, width: int = 30) -> None:
        self.modes = modes
        self.iterations = iterations
        self.width = width
        self.start = time.monotonic()
        self.enabled = sys.stderr.isatty()
        self._last = ""

    def update(self, mode: str, done: int) -> None:
        index = self.modes.index(mode) if mode in self.modes else 0
        filled = int(self.width * min(done, self.iterations) / max(1, self.iterations))
        line = (f"\r[{index + 1}/{len(self.modes)}] {mode:<8} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{done}/{self.iterations} iterations, {time.monotonic() - self.start:5.0f} s")
        if self.enabled and line != self._last:
            sys.stderr.write(line)
            sys.stderr.flush()
            self._last = line

    def close(self) -> None:
        if self.enabled and self._last:
            sys.stderr.write("\n")
