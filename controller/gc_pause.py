"""Cyclic garbage collection paused around the controller's bulk work.

Loading a 10,000-route YAML, building its entries and diffing them against a read-back allocate
hundreds of thousands of small acyclic objects (YAML nodes, tuples, bytes); CPython's generational
collector then runs dozens of full passes over them, which on this project's benchmark is a third
to a half of the time of ``apply``. None of that work creates reference cycles that need the
collector, so it runs with collection paused; the previous state is restored afterwards (nesting
and other threads' pauses are respected: only the outermost pause re-enables).

Re-enabling alone would make the next allocation run one young-generation pass over everything
allocated during the pause (0.1 s after a 10,000-route load). So after a *bulk* pause (one that
allocated, net, at least ``BULK_OBJECTS`` tracked objects) every tracked object is moved straight to
the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``: the young count is reset, nothing is
scanned). That move bypasses CPython's own trigger for full collections (objects promoted by
young passes), so without care cyclic garbage moved this way -- including whatever the program
left between pauses -- would never be collected automatically: ``dlcpctl apply --dry-run`` run
in-process 1,000 times left 800,000 unreachable objects (its YAML fuzzer grew by 440 MB in 200 s,
issue 11). Hence:

* a small pause (the usual case: one small YAML, one switch's restore) just re-enables the
  collector, whose ordinary young pass (a few milliseconds at most) frees its garbage;
* the move is skipped while anything is frozen (``gc.unfreeze()`` cannot tell whose it was);
* the objects moved by bulk pauses are counted, and once they exceed ``FULL_COLLECT_AFTER`` (and
  the population after the previous such collection) a full collection runs at the end of that
  pause, so garbage moved to the oldest generation stays bounded however long the process runs.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_OBJECTS = 100_000            # a pause that allocates (net) at least this many objects is "bulk"
FULL_COLLECT_AFTER = 3_000_000    # objects moved to the oldest generation before a full collection

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_tracked_before = 0     # tracked objects when the outermost pause began
_moved = 0              # objects moved to the oldest generation since the last full collection
_after_collect = 0      # tracked objects after that collection


def _tracked() -> int:
    """Objects the collector tracks (a freeze count: no object is scanned)."""
    gc.freeze()
    n = gc.get_freeze_count()
    gc.unfreeze()
    return n


@contextmanager
def paused() -> Iterator[None]:
    global _depth, _was_enabled, _tracked_before
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            _tracked_before = gc.get_count()[0]
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                _resume()


def _resume() -> None:
    """Re-enable collection at the end of the outermost pause (see the module docstring)."""
    global _moved, _after_collect
    grown = gc.get_count()[0] - _tracked_before     # objects allocated (net) during the pause
    # gc.unfreeze() would also thaw what another part of the process froze on purpose (an
    # in-process p4sim server freezes its installed entries): then just re-enable.
    if grown >= BULK_OBJECTS and gc.get_freeze_count() == 0:
        gc.freeze()                 # everything to the permanent generation, young count reset
        gc.unfreeze()               # ... and back into the oldest one, collectable as before
        _moved += grown
        if _moved > max(FULL_COLLECT_AFTER, _after_collect):
            gc.collect()
            _after_collect = _tracked()
            _moved = 0
    gc.enable()
