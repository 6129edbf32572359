"""Python's garbage collector in a switch process: how often it ran and what it cost.

Why it exists (issue 15): a p4sim switch stops forwarding while CPython's cyclic collector runs,
and a full (generation 2) collection walks every tracked object of the process -- the compiled
program, its tables, the gRPC server: 90,000-140,000 objects with a DLCP program loaded, 35-50 ms
of CPU each. Whether that happens while packets flow (it does not in steady forwarding: per-packet
objects die by reference count) is a question about delay spikes in Mininet runs, so the switch's
final log line reports the collections per generation, their CPU time and the longest full one.
"""

from __future__ import annotations

import gc
import threading
import time


class GcPauses:
    """Collections per generation, their CPU time (the collecting thread's) and longest wall time."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.cpu_s = [0.0, 0.0, 0.0]
        self.max_wall_s = [0.0, 0.0, 0.0]
        self._start: dict[int, tuple[float, float]] = {}

    def _callback(self, phase: str, info: dict) -> None:
        tid = threading.get_ident()
        if phase == "start":
            self._start[tid] = (time.thread_time(), time.perf_counter())
            return
        begun = self._start.pop(tid, None)
        if begun is None:
            return
        gen = min(int(info.get("generation", 0)), 2)
        self.count[gen] += 1
        self.cpu_s[gen] += time.thread_time() - begun[0]
        self.max_wall_s[gen] = max(self.max_wall_s[gen], time.perf_counter() - begun[1])

    def summary(self) -> str:
        """E.g. ``gen0 120 (0.01 s CPU), gen1 11 (0.01 s), gen2 0 (0.00 s, longest 0 ms)``."""
        c, cpu = self.count, self.cpu_s
        return (f"gen0 {c[0]} ({cpu[0]:.2f} s CPU), gen1 {c[1]} ({cpu[1]:.2f} s), "
                f"gen2 {c[2]} ({cpu[2]:.2f} s, longest {self.max_wall_s[2] * 1e3:.0f} ms)")


_pauses: GcPauses | None = None
_lock = threading.Lock()


def pauses() -> GcPauses:
    """The process's collector accounting (installed on first use)."""
    global _pauses
    with _lock:
        if _pauses is None:
            _pauses = GcPauses()
            gc.callbacks.append(_pauses._callback)
        return _pauses
