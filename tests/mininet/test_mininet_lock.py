"""The Mininet lock on real flocks and real processes: waiting with the holder named, re-entrant for a
process tree (flock(1) wrappers, pytest's conftest, nested use), and dlcp-exp taking it itself.

Every test uses its own lock file (``DLCP_MININET_LOCK``), so none waits for, or blocks, a real
Mininet run; none starts a network (dlcp-exp is stopped while it still waits).
"""

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mininet_topos import mininet_lock as ml

REPO = Path(__file__).resolve().parents[2]
HOLD = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\ntime.sleep(120)\n")


def _env(lock: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != ml.HOLDER_ENV}
    return {**env, "DLCP_MININET_LOCK": str(lock), "PYTHONPATH": str(REPO)}


def _line(stream, timeout: float) -> str:
    """The next line of a child's pipe, or "" after ``timeout`` seconds."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else ""


@pytest.fixture
def holder(tmp_path):
    """A separate process (not an ancestor of the tests' children) holding a fresh lock file."""
    lock = tmp_path / "mininet.lock"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    assert _line(proc.stdout, 20) == "held\n"
    yield lock, proc
    proc.kill()
    proc.wait()


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT first: a dlcp-exp that (wrongly) got as far as a network tears it down on Ctrl-C."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_holders_reads_proc_locks(holder):
    lock, proc = holder
    assert ml.holders(str(lock)) == [proc.pid]
    assert not ml.held_by_tree(str(lock))
    assert ml.holders(str(lock.parent / "never-created.lock")) == []


def test_a_second_tree_waits_naming_the_holder_and_runs_when_it_is_released(holder):
    lock, proc = holder
    waiter = subprocess.Popen([sys.executable, "-m", "mininet_topos.mininet_lock", "--", "echo", "ran"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(lock))
    try:
        line = _line(waiter.stderr, 20)
        assert f"held by pid {proc.pid} (" in line and " -c import fcntl" in line, line
        time.sleep(1.0)
        assert waiter.poll() is None                       # still waiting, the command has not run
        proc.kill()
        proc.wait()
        out, err = waiter.communicate(timeout=20)
    finally:
        if waiter.poll() is None:
            _stop(waiter)
    assert waiter.returncode == 0 and out == "ran\n"
    assert "got the Mininet lock after" in err


def test_reentrant_under_a_flock_wrapper_ancestor(tmp_path):
    """`flock /tmp/dlcp-mininet.lock dlcp-exp ...`, as helpers wrapped it, must not deadlock."""
    lock = tmp_path / "mininet.lock"
    proc = subprocess.run(["flock", str(lock), sys.executable, "-m", "mininet_topos.mininet_lock", "--",
                           "echo", "ran"], capture_output=True, text=True, env=_env(lock), timeout=30)
    assert proc.returncode == 0 and proc.stdout == "ran\n" and "waiting" not in proc.stderr


def test_reentrant_for_children_and_nested_use_and_released_after(tmp_path, monkeypatch):
    lock = tmp_path / "mininet.lock"
    monkeypatch.setenv("DLCP_MININET_LOCK", str(lock))
    monkeypatch.setenv(ml.HOLDER_ENV, "0")         # whatever it was (the conftest's real lock) comes back
    with ml.mininet_lock():
        assert ml.holders(str(lock)) == [os.getpid()]
        assert os.environ[ml.HOLDER_ENV] == str(os.getpid())
        with ml.mininet_lock():                            # nested in-process: no second flock
            assert ml.held_by_tree()
        child = subprocess.run([sys.executable, "-m", "mininet_topos.mininet_lock", "--", "echo", "ran"],
                               capture_output=True, text=True, env=_env(lock), timeout=30)
        assert child.returncode == 0 and child.stdout == "ran\n" and "waiting" not in child.stderr
        assert ml.holders(str(lock)) == [os.getpid()]
    assert ml.holders(str(lock)) == []
    assert os.environ[ml.HOLDER_ENV] == "0"


def test_timeout_names_the_holder(holder):
    lock, proc = holder
    with pytest.raises(TimeoutError, match=f"held by pid {proc.pid}"), ml.mininet_lock(str(lock), timeout=0.6):
        pass


@pytest.mark.parametrize("args, stream", [
    (["--topo", "star", "--mode", "dlcp", "--iterations", "2", "--no-background"], "stderr"),
    (["--scenario", "incast", "--mode", "dlcp", "--seeds", "1", "--iterations", "2"], "stdout"),
])
def test_dlcp_exp_takes_the_lock_itself(holder, tmp_path, args, stream):
    """Both dlcp-exp paths (one experiment, a study) wait for a lock held elsewhere and name the holder."""
    lock, proc = holder
    exe = Path(sys.executable).parent / "dlcp-exp"
    exp = subprocess.Popen([str(exe), *args, "--out", str(tmp_path / "results")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=_env(lock))
    try:
        deadline, seen = time.monotonic() + 90, ""
        while time.monotonic() < deadline and "waiting for the Mininet lock" not in seen:
            line = _line(getattr(exp, stream), deadline - time.monotonic())
            if not line:
                break
            seen += line
        assert f"held by pid {proc.pid}" in seen, seen
        time.sleep(1.0)
        assert exp.poll() is None
    finally:
        _stop(exp)
