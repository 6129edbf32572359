"""Cyclic garbage collection paused around the controller's bulk work.

Loading a 10,000-route YAML, building its entries and diffing them against a read-back allocate
hundreds of thousands of small acyclic objects (YAML nodes, tuples, bytes); CPython's generational
collector then runs dozens of full passes over them, which on this project's benchmark is a third
to a half of the time of ``apply``. None of that work creates reference cycles that need the
collector, so it runs with collection paused; the previous state is restored afterwards (nesting
and other threads' pauses are respected: only the outermost pause re-enables).

Re-enabling alone would make the next allocation run one young-generation pass over everything
allocated during the pause (0.1 s after a 10,000-route load), so the outermost pause first moves
every tracked object straight to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``:
the young count is reset, nothing is scanned). Nothing is exempted from later collections: a
full collection, or an explicit ``gc.collect()``, still sees every object.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.freeze()     # everything to the permanent generation, young count reset
                gc.unfreeze()   # ... and back into the oldest one, collectable as before
                gc.enable()
