"""Test helpers for timing on a loaded machine: the CPU wait of the test's threads, kernel receive times.

``CpuWait``: what a loaded machine takes from a test is the time its threads are runnable but get no CPU.
The kernel counts exactly that per thread (``run_delay``, the 2nd field of /proc/self/task/<tid>/schedstat).
A time bound measured against the elapsed time less this cannot be failed by starvation, while a product
that idles (sleeping in ``select`` for a GRANT, an ACK or a timer: not runnable) still fails it. Summed over
the threads it over-excuses when several wait at once: strict on a quiet machine, lenient only under load.

``kernel_time``: the arrival time the kernel stamped on a datagram (SO_TIMESTAMPNS), so a relay thread that
is descheduled for a while does not see a burst that never was.
"""

from __future__ import annotations

import os
import socket
import struct
import threading

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class CpuWait:
    """Seconds this process's threads were runnable but waited for a CPU (the kernel's ``run_delay``,
    /proc/self/task/*/schedstat), summed over the threads, since the meter started.

    A daemon thread samples every ``every`` s, so a thread that ends in between counts up to its last
    sample and one born in between from its start; the sampler's own waits do not count. 0 where the
    kernel has no schedstat (the bounds are then the plain ones).
    """

    def __init__(self, every: float = 0.01) -> None:
        self.every = every
        self._first: dict[str, int] = self._read()     # threads alive at the start: from their count now
        self._last: dict[str, int] = dict(self._first)
        self._lock = threading.Lock()
        self._own = ""                                  # the sampler thread's id, once it runs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _read() -> dict[str, int]:
        out = {}
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    out[tid] = int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
        return out

    def _sample(self) -> None:
        now = self._read()
        with self._lock:
            self._last.update(now)

    def _loop(self) -> None:
        self._own = str(threading.get_native_id())
        while not self._stop.wait(self.every):
            self._sample()

    def seconds(self) -> float:
        self._sample()
        with self._lock:
            return sum(max(0, v - self._first.get(tid, 0)) for tid, v in self._last.items() if tid != self._own) / 1e9

    def __enter__(self) -> CpuWait:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(1)


def kernel_time(ancillary: list) -> float | None:
    """The SO_TIMESTAMPNS receive time (``time.time()`` clock) in ``recvmsg``'s ancillary data, if any."""
    for level, kind, cdata in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(cdata) >= 16:
            sec, nsec = struct.unpack("qq", cdata[:16])
            return sec + nsec * 1e-9
    return None
