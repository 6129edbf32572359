"""The machine-wide Mininet lock: one emulated network at a time, re-entrant for a process tree.

Mininet's hosts and switch ports have fixed names (h1-eth0, s1-eth1): two networks at once collide
and one's teardown deletes the other's links. Everything that builds one (``dlcp-exp``, ``make
demo``, tests/mininet, the BMv2 experiment test) therefore holds an exclusive ``flock`` on
``/tmp/dlcp-mininet.lock`` (``DLCP_MININET_LOCK`` names another file, for tests of this module).

Re-entrant: a process whose tree already holds the lock does not take it again (that would wait
for itself forever). The tree holds it when

- this process took it through ``mininet_lock`` (nesting counts), or
- ``/proc/locks`` shows the lock file held by this process or one of its ancestors: pytest's
  tests/mininet/conftest.py running ``dlcp-exp`` as a child, or ``flock /tmp/dlcp-mininet.lock
  dlcp-exp ...`` as helpers used to wrap it; or
- ``/proc/locks`` cannot be read and ``DLCP_MININET_LOCK_HOLDER`` (set by every holder for its
  children) names this process or an ancestor that is still alive.

While it waits it says once, on ``log``, who holds the lock (pid and command line from
``/proc/locks`` and ``/proc/<pid>/cmdline``).

    python -m mininet_topos.mininet_lock -- COMMAND [ARGS...]   # like flock(1), re-entrant
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

DEFAULT_PATH = "/tmp/dlcp-mininet.lock"
HOLDER_ENV = "DLCP_MININET_LOCK_HOLDER"
POLL_S = 0.5

_held: dict[str, list] = {}      # lock path -> [file object, depth] held by this process


def lock_path() -> str:
    return os.environ.get("DLCP_MININET_LOCK") or DEFAULT_PATH


def _ancestors(pid: int | None = None) -> list[int]:
    """``pid`` (default: this process) and its ancestors up to init, from /proc/<pid>/stat."""
    out, pid = [], os.getpid() if pid is None else pid
    while pid > 0 and pid not in out:
        out.append(pid)
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(text[text.rindex(")") + 2:].split()[1])
    return out


def holders(path: str) -> list[int] | None:
    """Pids holding a flock on ``path`` according to /proc/locks ([] if none; None if unreadable)."""
    try:
        st = os.stat(path)
        text = Path("/proc/locks").read_text()
    except FileNotFoundError:
        return []
    except OSError:
        return None
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    out = []
    for line in text.splitlines():
        parts = line.split()
        if "->" in parts:            # a waiter, not a holder
            continue
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        try:
            major, minor, ino = parts[5].split(":")
            if (int(major, 16), int(minor, 16), int(ino)) == want:
                out.append(int(parts[4]))
        except ValueError:
            continue
    return out


def held_by_tree(path: str | None = None) -> bool:
    """Whether this process or an ancestor holds the lock (see the module docstring)."""
    path = path or lock_path()
    if path in _held:
        return True
    tree = set(_ancestors())
    pids = holders(path)
    if pids is not None:
        return any(p in tree for p in pids)
    env = os.environ.get(HOLDER_ENV, "")
    return env.isdigit() and int(env) in tree


def describe(pid: int) -> str:
    """``pid (command line)`` for the waiting message."""
    try:
        cmd = " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split())
    except OSError:
        cmd = ""
    return f"pid {pid} ({cmd[:160]})" if cmd else f"pid {pid}"


@contextlib.contextmanager
def mininet_lock(path: str | None = None, log: Callable[[str], None] | None = None,
                 timeout: float | None = None) -> Iterator[None]:
    """Hold the Mininet lock for the block (no-op where this process tree already holds it).

    Waits while another tree holds it, telling ``log`` once who that is; ``timeout`` seconds
    (None: for ever) then ``TimeoutError`` naming the holder.
    """
    path = path or lock_path()
    if path in _held:
        _held[path][1] += 1
        try:
            yield
        finally:
            _held[path][1] -= 1
        return
    if held_by_tree(path):
        yield
        return
    f = open(path, "a+")      # never truncate: a holder may be a script that opened it itself
    try:
        start, told = time.monotonic(), False
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                who = ", ".join(describe(p) for p in holders(path) or []) or "another process"
                if timeout is not None and time.monotonic() - start > timeout:
                    raise TimeoutError(f"{path}: still held by {who} after {timeout:g} s") from None
                if not told and log is not None:
                    log(f"waiting for the Mininet lock {path}, held by {who}")
                    told = True
                time.sleep(POLL_S)
        if told and log is not None:
            log(f"got the Mininet lock after {time.monotonic() - start:.0f} s")
        _held[path] = [f, 1]
        before = os.environ.get(HOLDER_ENV)
        os.environ[HOLDER_ENV] = str(os.getpid())
        try:
            yield
        finally:
            del _held[path]
            if before is None:
                os.environ.pop(HOLDER_ENV, None)
            else:
                os.environ[HOLDER_ENV] = before
            fcntl.flock(f, fcntl.LOCK_UN)
    finally:
        f.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m mininet_topos.mininet_lock -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    with mininet_lock(log=lambda line: print(f"mininet_lock: {line}", file=sys.stderr, flush=True)):
        return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main())
