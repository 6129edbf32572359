"""CPU use of every switch and agent process during a run, from ``/proc/<pid>/stat``.

The emulation is only meaningful if the software switches keep up: a Python switch that is busy
most of a core delays and drops packets for reasons a real switch would not have. ``CpuSampler``
reads utime+stime of the processes it is given every ``interval`` seconds in a background thread;
``summary()`` gives, per process, the mean share of one core over the run and the highest share
seen in any ``interval`` window.
"""

from __future__ import annotations

import os
import threading
import time

TICKS = os.sysconf("SC_CLK_TCK")
SWITCH_LIMIT = 0.70          # share of one core above which a switch is called CPU-bound


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks (None once the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()   # after "pid (comm) ": field 3 onwards
    return int(fields[11]) + int(fields[12])        # utime (14), stime (15)


class CpuSampler:
    """Samples named processes; ``add`` may be called while it runs."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._procs: dict[str, int] = {}
        self._first: dict[str, tuple[float, int]] = {}
        self._last: dict[str, tuple[float, int]] = {}
        self._peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def add(self, name: str, pid: int) -> None:
        with self._lock:
            self._procs[name] = pid
            ticks = cpu_ticks(pid)
            if ticks is not None:
                self._first[name] = self._last[name] = (time.monotonic(), ticks)

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def _sample(self) -> None:
        now = time.monotonic()
        with self._lock:
            for name, pid in self._procs.items():
                ticks = cpu_ticks(pid)
                if ticks is None:
                    continue
                if name not in self._first:
                    self._first[name] = self._last[name] = (now, ticks)
                    continue
                t0, k0 = self._last[name]
                if now - t0 > 0.2:
                    share = (ticks - k0) / TICKS / (now - t0)
                    self._peak[name] = max(self._peak.get(name, 0.0), share)
                self._last[name] = (now, ticks)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> dict[str, dict[str, float]]:
        self._sample()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2 * self.interval)
        return self.summary()

    def summary(self) -> dict[str, dict[str, float]]:
        out = {}
        with self._lock:
            for name in self._procs:
                if name not in self._first:
                    continue
                (t0, k0), (t1, k1) = self._first[name], self._last[name]
                mean = (k1 - k0) / TICKS / (t1 - t0) if t1 > t0 else 0.0
                out[name] = {"mean_core": round(mean, 3), "peak_core": round(self._peak.get(name, mean), 3)}
        return out


def cpu_bound_switches(cpu: dict[str, dict[str, float]], limit: float = SWITCH_LIMIT) -> list[str]:
    """Switch processes (names ``switch:<name>``) whose mean use exceeded ``limit`` of a core."""
    return sorted(n.split(":", 1)[1] for n, v in cpu.items() if n.startswith("switch:") and v["mean_core"] > limit)
