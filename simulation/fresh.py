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

It also carries an early stop to every run it started (``stop_on_signals``, used by dlcp-sim): the
first SIGINT or SIGTERM asks each running ns-3 run to end after its current slice (simulation.job
polls ``stop_requested`` between slices and returns the records of everything closed so far); a
second one kills the runs' processes at once. A run's process also takes SIGINT/SIGTERM sent to it
directly (Ctrl-C reaches the whole process group) the same way.
"""

from __future__ import annotations

import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MALLOC_ENV = "DLCP_SIM_MALLOC"
_ENV_LOCK = threading.Lock()        # runs started from several threads (dlcp-sim --parallel)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_STOP_LOCK = threading.Lock()
_SPAWN = multiprocessing.get_context("spawn")
_shared_stop = None                 # parent: RawValue("i") shared with every run it starts (signal number, 0: none)
_own_stop = 0                       # a run's process: the first stop signal it received itself


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
    """``fn(*args)`` in a fresh spawned process (malloc_library() and the TCP fast path,
    simulation.tcp_fastpath, preloaded there); its result."""
    from simulation import tcp_fastpath

    libs = [lib for lib in (malloc_library(), tcp_fastpath.library()) if lib]
    shared = _stop_value()
    with _ENV_LOCK:
        old = os.environ.get("LD_PRELOAD")
        new = [lib for lib in libs if Path(lib).name not in (old or "")]
        if new:
            os.environ["LD_PRELOAD"] = ":".join(new + ([old] if old else []))
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)   # the child starts with them blocked
        try:
            pool = ProcessPoolExecutor(max_workers=1, mp_context=_SPAWN, max_tasks_per_child=1,
                                       initializer=_child_init, initargs=(shared,))
            future = pool.submit(fn, *args)          # spawns the worker now, with this environment
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            if old is None:
                os.environ.pop("LD_PRELOAD", None)
            else:
                os.environ["LD_PRELOAD"] = old
    with pool:
        return future.result()


def _stop_value():
    global _shared_stop
    with _STOP_LOCK:
        if _shared_stop is None:
            _shared_stop = _SPAWN.RawValue("i", 0)
        return _shared_stop


def _child_init(shared) -> None:
    """A run's process: keep the parent's stop flag; its own first SIGINT/SIGTERM stops it after the
    current slice, a second one ends it at once. The signals were blocked from the spawn until here,
    so one that came earlier (Ctrl-C reaches the whole process group) is taken now, not lost and not
    a KeyboardInterrupt in the middle of the process's start."""
    global _shared_stop
    _shared_stop = shared

    def on_signal(signum: int, _frame) -> None:
        global _own_stop
        if _own_stop:
            os._exit(128 + signum)
        _own_stop = signum

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)     # blocked since the spawn (run_fresh)


def stop_requested() -> str | None:
    """In a run's process: the name of the signal that asked this run to stop early (sent to
    dlcp-sim or to this process), or None."""
    signum = _own_stop or (_shared_stop.value if _shared_stop is not None else 0)
    return signal.Signals(signum).name if signum else None


@contextmanager
def stop_on_signals(what: str = "dlcp-sim") -> Iterator[dict]:
    """While inside: the first SIGINT/SIGTERM asks every run started by run_fresh to stop after its
    current slice (the yielded dict gets ``signal``: its name); a second one kills those runs'
    processes and exits at once (status 128 + signal). Off the main thread it installs nothing."""
    state: dict = {"signal": None}
    shared = _stop_value()
    shared.value = 0

    def on_signal(signum: int, _frame) -> None:
        if state["signal"] is not None:
            for child in multiprocessing.active_children():
                child.kill()
            print(f"\n{what}: second {signal.Signals(signum).name}: runs killed, nothing written", file=sys.stderr,
                  flush=True)
            os._exit(128 + signum)
        state["signal"] = signal.Signals(signum).name
        shared.value = signum
        print(f"\n{what}: {state['signal']}: each running mode stops after its current slice and writes what "
              f"closed so far (a second signal aborts)", file=sys.stderr, flush=True)

    if threading.current_thread() is not threading.main_thread():   # only the main thread can take signals
        yield state
        return
    old = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        yield state
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        shared.value = 0
