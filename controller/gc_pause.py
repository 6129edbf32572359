"""Cyclic garbage collection paused around the controller's bulk work.

Loading a 10,000-route YAML, building its entries and diffing them against a read-back allocate
hundreds of thousands of small acyclic objects (YAML nodes, tuples, bytes); CPython's generational
collector then runs dozens of full passes over them, which on this project's benchmark is a third
to a half of the time of ``apply``. None of that work creates reference cycles that need the
collector, so it runs with collection paused; the previous state is restored afterwards (nesting
and other threads' pauses are respected: only the outermost pause re-enables).

Re-enabling alone would make the next allocation run one young-generation pass over everything
allocated during the pause (0.1 s after a 10,000-route load), so the outermost pause first moves
every tracked object into the permanent generation (``gc.freeze``): objects that are still alive
(the loaded network, the desired entries) are never scanned again; ones freed later are freed by
reference counting as usual. The cost is that a reference cycle among objects that existed at the
end of a pause is not reclaimed; the controller's bulk data is acyclic.
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
                gc.freeze()
                gc.enable()
