"""Python's garbage collector in a switch process: how often it ran, what it cost, and keeping the
long-lived heap out of its full scans.

Why it exists (issue 15): a p4sim switch stops forwarding while CPython's cyclic collector runs,
and a full (generation 2) collection walks every tracked object of the process -- the compiled
program, its tables, the gRPC server: 120,000-180,000 objects with a DLCP program loaded, 50-200
ms each on a shared machine. Per-packet objects die by reference count, but a P4Runtime Read of a
large counter builds thousands of objects that live for the whole read; they are promoted to the
oldest generation, and once those exceed a quarter of it CPython runs a full collection: a switch
forwarding while its counters were read made 20 full collections in 6 s, each pausing the packet
thread 50-200 ms (the pauses issue 10's pcaps showed). The fix is CPython's own tool for a heap
that is built once and then kept: ``gc.freeze()`` moves every object into a permanent generation
the collector never scans, so a full collection walks only what was allocated since. A process
that is a switch and nothing else (``p4sim switch``, ``claim_heap``) freezes its heap when a
pipeline is loaded (within the load, which the controller waits for and before any table entry
exists: the one collection of the whole heap, 100-200 ms, happens there) and after control-plane
write bursts (the P4Runtime server's deferred freezer: young objects only), and thaws it before a
new pipeline replaces the old one (frozen cyclic garbage would never be freed otherwise). An in-process server (tests, embedded use) does not own the heap and
leaves others' objects alone.

``GcPauses`` counts collections per generation, their CPU time and longest wall time, and
separately the full collections after the switch began forwarding (with how many objects each
had to walk): the switch's final log line reports both.
"""

from __future__ import annotations

import gc
import threading
import time


class GcPauses:
    """Collections per generation, their CPU time (the collecting thread's) and longest wall time;
    full collections while forwarding: how many, the longest, and the most objects one walked."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.cpu_s = [0.0, 0.0, 0.0]
        self.max_wall_s = [0.0, 0.0, 0.0]
        self.forwarding_since: float | None = None     # perf_counter of the first forwarded packet
        self.full_while_forwarding = 0
        self.full_max_wall_s = 0.0
        self.full_max_objects = 0
        self.freezes = 0                 # ``freeze_heap``'s own collections (not counted above)
        self.freeze_max_wall_s = 0.0
        self._start: dict[int, tuple[float, float, int]] = {}

    def mark_forwarding(self) -> None:
        """The switch forwards packets from now on (the first packet a loaded program saw)."""
        if self.forwarding_since is None:
            self.forwarding_since = time.perf_counter()

    def _callback(self, phase: str, info: dict) -> None:
        tid = threading.get_ident()
        if phase == "start":
            walked = 0
            if info.get("generation") == 2 and self.forwarding_since is not None:
                walked = len(gc.get_objects(2))     # what this collection walks (frozen ones excluded)
            self._start[tid] = (time.thread_time(), time.perf_counter(), walked)
            return
        begun = self._start.pop(tid, None)
        if begun is None:
            return
        gen = min(int(info.get("generation", 0)), 2)
        wall = time.perf_counter() - begun[1]
        self.count[gen] += 1
        self.cpu_s[gen] += time.thread_time() - begun[0]
        self.max_wall_s[gen] = max(self.max_wall_s[gen], wall)
        if _freezing:
            self.freezes += 1
            self.freeze_max_wall_s = max(self.freeze_max_wall_s, wall)
        elif gen == 2 and self.forwarding_since is not None and begun[1] >= self.forwarding_since:
            self.full_while_forwarding += 1
            self.full_max_wall_s = max(self.full_max_wall_s, wall)
            self.full_max_objects = max(self.full_max_objects, begun[2])

    def summary(self) -> str:
        """E.g. ``gen0 120 (0.01 s CPU), gen1 11 (0.01 s), gen2 3 (0.12 s, longest 90 ms); while
        forwarding gen2 1 (longest 2 ms, at most 3,100 objects); heap freezes 2 (longest 150 ms)``
        (the freezes' own collections are counted only there)."""
        c, cpu = self.count, self.cpu_s
        return (f"gen0 {c[0]} ({cpu[0]:.2f} s CPU), gen1 {c[1]} ({cpu[1]:.2f} s), "
                f"gen2 {c[2]} ({cpu[2]:.2f} s, longest {self.max_wall_s[2] * 1e3:.0f} ms); "
                f"while forwarding gen2 {self.full_while_forwarding} (longest {self.full_max_wall_s * 1e3:.0f} ms, "
                f"at most {self.full_max_objects:,} objects); heap freezes {self.freezes} "
                f"(longest {self.freeze_max_wall_s * 1e3:.0f} ms)")


_pauses: GcPauses | None = None
_lock = threading.Lock()
_owns_heap = False
_freezing = False       # freeze_heap's collection is running (the callback counts it apart)
# In a switch process, a full collection is considered after this many middle-generation ones
# (CPython's default 10): a large P4Runtime Read (a DLCP counter snapshot builds ~50,000 objects)
# passes through 5-10 middle collections, so with 10 nearly every read ended in a full collection
# walking the read's objects (10 ms); cyclic garbage is rare in a switch (per-packet objects die
# by reference count), so waiting longer costs little memory.
FULL_EVERY = 100


def pauses() -> GcPauses:
    """The process's collector accounting (installed on first use)."""
    global _pauses
    with _lock:
        if _pauses is None:
            _pauses = GcPauses()
            gc.callbacks.append(_pauses._callback)
        return _pauses


def claim_heap() -> None:
    """This process is a p4sim switch and nothing else (``p4sim switch``): it may freeze its whole
    heap after a pipeline load and thaw it before the next (``freeze_heap``)."""
    global _owns_heap
    _owns_heap = True
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)


def owns_heap() -> bool:
    """Whether ``claim_heap`` was called in this process."""
    return _owns_heap


def freeze_heap(thaw_first: bool = False) -> None:
    """Collect, then move every surviving object out of the collector's reach. ``thaw_first``
    (only in a process that ``owns_heap``): first give back what earlier freezes pinned -- the
    previous pipeline's objects -- so its cyclic garbage is freed by this collection."""
    global _freezing
    if thaw_first and _owns_heap:
        gc.unfreeze()
    _freezing = True
    try:
        gc.collect()
    finally:
        _freezing = False
    gc.freeze()
