"""CPU use of, and CPU wait of, every switch and agent process during a run, and the machine's load.

The emulation is only meaningful if the software switches keep up. Two different ways they may not:

- **CPU-bound**: a Python switch busy most of a core delays and drops packets for reasons a real
  switch would not have (``SWITCH_LIMIT``, 70 % of a core on average, from utime+stime in
  ``/proc/<pid>/stat``).
- **CPU-starved**: a switch well below that can still wait for a CPU while it has packets to
  send, when the machine's cores are busy with other processes (the other switches, the agents,
  the bulk flows, other users). Its ports then deliver less than their emulated link rate. Linux
  counts, per thread, the time it was runnable but not running (``run_delay``, the second field of
  ``/proc/<pid>/task/<tid>/schedstat``). A switch's busiest thread is its packet thread; its
  ``wait_share`` is that thread's ``run_delay`` over the run's wall time. A switch is called
  starved when ``wait_share`` > ``STARVED_WAIT_SHARE`` (how that limit was chosen:
  docs/experiments.md, "How a study runs").

``CpuSampler`` reads both every ``interval`` seconds in a background thread. ``summary()`` gives,
per process: ``mean_core`` and ``peak_core`` (mean share of one core, highest 1-interval share),
``wait_s`` (run_delay of all its threads), ``thread_run_s`` / ``thread_wait_s`` (its busiest
thread's CPU time and run_delay), ``wait_share`` and ``peak_wait_share`` (the busiest thread's
run_delay over the wall time, over the run and in the worst interval). ``machine()`` gives the
machine's busy share of all cores from ``/proc/stat`` (mean and highest interval), the hypervisor's
steal share, the mean number of runnable tasks (``procs_running``) and the core count.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
SWITCH_LIMIT = 0.70          # share of one core above which a switch is called CPU-bound
# Share of the run a switch's packet thread waited for a CPU above which the run is called starved.
# Measured (tcp-bulk, H10c 12:22-12:29, pcaps, simulation.pcap_drain): at waits of 0.21-0.28 the
# backlogged ports delivered 0.94-1.0 of their link rate, at 0.35-0.40 0.82-0.90, at 0.47-0.50
# 0.73-0.81, at 0.59-0.60 0.55-0.62; so above 0.30 a port loses more than about a tenth.
STARVED_WAIT_SHARE = 0.30


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of ``pid`` in clock ticks (None once the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()   # after "pid (comm) ": field 3 onwards
    return int(fields[11]) + int(fields[12])        # utime (14), stime (15)


def thread_schedstat(pid: int) -> dict[int, tuple[int, int]] | None:
    """Per thread of ``pid``: (ns on a CPU, ns runnable but waiting for one); None once it is gone
    or where the kernel keeps no schedstat (no CONFIG_SCHED_INFO)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
        except (OSError, ValueError):
            continue
        out[int(tid)] = (int(run), int(wait))
    return out or None


def machine_times() -> tuple[int, int, int, int] | None:
    """(busy, steal, total) jiffies of all cores from /proc/stat, and procs_running now."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    v = [int(x) for x in lines[0].split()[1:]]
    v += [0] * (8 - len(v))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    running = next((int(line.split()[1]) for line in lines if line.startswith("procs_running")), 0)
    return user + nice + system + irq + softirq, steal, sum(v[:8]), running


class _Rate:
    """A cumulative counter ``y`` against ``x``: its first and last samples and the highest slope
    dy/dx between two samples at least ``min_dx`` apart (a process's CPU seconds per wall second;
    the machine's busy jiffies per jiffy)."""

    __slots__ = ("first", "last", "peak", "min_dx")

    def __init__(self, min_dx: float) -> None:
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] | None = None
        self.peak = 0.0
        self.min_dx = min_dx

    def add(self, x: float, y: float) -> None:
        if self.first is None or self.last is None:
            self.first = self.last = (x, y)
            return
        x0, y0 = self.last
        if x - x0 > self.min_dx:
            self.peak = max(self.peak, (y - y0) / (x - x0))
        self.last = (x, y)

    def mean(self) -> float:
        if self.first is None or self.last is None or self.last[0] <= self.first[0]:
            return 0.0
        return (self.last[1] - self.first[1]) / (self.last[0] - self.first[0])


class _Proc:
    """What the sampler keeps about one process."""

    __slots__ = ("cpu", "threads_first", "threads_last", "wait_last", "wait_prev", "peak_wait")

    def __init__(self) -> None:
        self.cpu = _Rate(0.2)                          # CPU seconds against wall seconds
        self.threads_first: dict[int, tuple[int, int]] = {}
        self.threads_last: dict[int, tuple[int, int]] = {}
        self.wait_last: float | None = None           # when the threads were last read
        self.wait_prev: dict[int, int] = {}           # tid -> run_delay then
        self.peak_wait = 0.0


class CpuSampler:
    """Samples named processes and the machine; ``add`` may be called while it runs."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._procs: dict[str, int] = {}
        self._state: dict[str, _Proc] = {}
        self._busy = _Rate(0.0)                        # busy jiffies against all jiffies
        self._steal: list[tuple[int, int]] = []        # (steal, total) first and last
        self._running: list[int] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def add(self, name: str, pid: int) -> None:
        with self._lock:
            self._procs[name] = pid
            self._state[name] = _Proc()
            self._sample_proc(name, pid, time.monotonic())

    def start(self) -> CpuSampler:
        with self._lock:
            self._sample_machine()
        self._thread.start()
        return self

    def _sample_proc(self, name: str, pid: int, now: float) -> None:
        st = self._state[name]
        ticks = cpu_ticks(pid)
        if ticks is None:
            return
        st.cpu.add(now, ticks / TICKS)
        threads = thread_schedstat(pid)
        if threads is None:
            return
        born = bool(st.threads_first)          # threads born during the run count from zero
        for tid, value in threads.items():
            st.threads_first.setdefault(tid, (0, 0) if born else value)
            st.threads_last[tid] = value
        if st.wait_last is not None and now - st.wait_last > 0.2:
            busiest = max(threads, key=lambda t: threads[t][0] - st.threads_first[t][0])
            if busiest in st.wait_prev:
                st.peak_wait = max(st.peak_wait, (threads[busiest][1] - st.wait_prev[busiest]) / 1e9
                                   / (now - st.wait_last))
        st.wait_last = now
        st.wait_prev = {t: v[1] for t, v in threads.items()}

    def _sample_machine(self) -> None:
        m = machine_times()
        if m is None:
            return
        busy, steal, total, running = m
        self._busy.add(total, busy)
        self._steal = [self._steal[0] if self._steal else (steal, total), (steal, total)]
        self._running.append(running)

    def _sample(self) -> None:
        now = time.monotonic()
        with self._lock:
            for name, pid in self._procs.items():
                self._sample_proc(name, pid, now)
            self._sample_machine()

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
            for name, st in self._state.items():
                if st.cpu.first is None or st.cpu.last is None:
                    continue
                wall = st.cpu.last[0] - st.cpu.first[0]
                mean = st.cpu.mean()
                row = {"mean_core": round(mean, 3), "peak_core": round(st.cpu.peak or mean, 3)}
                deltas = {t: (v[0] - st.threads_first[t][0], v[1] - st.threads_first[t][1])
                          for t, v in st.threads_last.items()}
                if deltas:
                    busiest = max(deltas, key=lambda t: deltas[t][0])
                    run, wait = deltas[busiest]
                    row.update({"wait_s": round(sum(w for _, w in deltas.values()) / 1e9, 3),
                                "thread_run_s": round(run / 1e9, 3), "thread_wait_s": round(wait / 1e9, 3),
                                "wait_share": round(wait / 1e9 / wall, 3) if wall > 0 else 0.0,
                                "peak_wait_share": round(st.peak_wait, 3)})
                out[name] = row
        return out

    def machine(self) -> dict[str, float]:
        """Busy and steal share of all cores over the run (and the busiest interval), runnable tasks."""
        with self._lock:
            if self._busy.first is None:
                return {}
            (s0, t0), (s1, t1) = self._steal[0], self._steal[-1]
            return {"busy_share": round(self._busy.mean(), 3), "peak_busy_share": round(self._busy.peak, 3),
                    "steal_share": round((s1 - s0) / (t1 - t0), 3) if t1 > t0 else 0.0,
                    "runnable_mean": round(sum(self._running) / len(self._running), 2) if self._running else 0.0,
                    "cores": os.cpu_count() or 0}


def cpu_bound_switches(cpu: dict[str, dict[str, float]], limit: float = SWITCH_LIMIT) -> list[str]:
    """Switch processes (names ``switch:<name>``) whose mean use exceeded ``limit`` of a core."""
    return sorted(n.split(":", 1)[1] for n, v in cpu.items() if n.startswith("switch:") and v["mean_core"] > limit)


def starved_switches(cpu: dict[str, dict[str, float]], limit: float = STARVED_WAIT_SHARE) -> list[str]:
    """Switch processes whose packet thread waited for a CPU more than ``limit`` of the run."""
    return sorted(n.split(":", 1)[1] for n, v in cpu.items()
                  if n.startswith("switch:") and v.get("wait_share", 0.0) > limit)
