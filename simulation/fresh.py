"""One ns-3 run in a fresh process, with a faster malloc there when one is installed.

Why this exists: ns-3 keeps state across runs in one process (its random streams are numbered
process-wide), so every run gets a spawned process of its own (dlcp-sim, the sweeps, the
cross-check, the knob studies). ns-3's per-packet path allocates and frees all the time (packets,
their buffers and tags, TCP's per-segment tx items, events), and glibc's malloc was 7.5 % of a
load-0.6 run's samples. jemalloc, preloaded into that process, gives the same events and the same
per-transfer results (checked by digest on scale-16 at load 0.6 for DLCP, DCTCP and TCP Cubic) in
less CPU time (docs/simulation.md "Faster malloc"). It is used when the dynamic loader knows it
(Debian's libjemalloc2, which `make setup` installs); ``DLCP_SIM_MALLOC=system`` keeps glibc's, and
``DLCP_SIM_MALLOC=/path/lib.so`` preloads another library.
"""

from __future__ import annotations

import ctypes.util
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

MALLOC_ENV = "DLCP_SIM_MALLOC"
_ENV_LOCK = threading.Lock()        # runs started from several threads (dlcp-sim --parallel)


def malloc_library() -> str | None:
    """The library a fresh run preloads: jemalloc if installed ("auto", the default), none for
    "system", or the path given in DLCP_SIM_MALLOC."""
    choice = os.environ.get(MALLOC_ENV, "auto").strip()
    if choice == "system":
        return None
    if choice == "auto":
        return ctypes.util.find_library("jemalloc")
    if not Path(choice).is_file():
        raise ValueError(f"{MALLOC_ENV}={choice!r}: expected 'auto', 'system' or the path of a shared library")
    return choice


def run_fresh(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a fresh spawned process (malloc_library() preloaded there); its result."""
    lib = malloc_library()
    with _ENV_LOCK:
        old = os.environ.get("LD_PRELOAD")
        if lib and Path(lib).name not in (old or ""):
            os.environ["LD_PRELOAD"] = f"{lib}:{old}" if old else lib
        try:
            pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                       max_tasks_per_child=1)
            future = pool.submit(fn, *args)          # spawns the worker now, with this environment
        finally:
            if old is None:
                os.environ.pop("LD_PRELOAD", None)
            else:
                os.environ["LD_PRELOAD"] = old
    with pool:
        return future.result()
