"""Every benchmark under benchmarks/ runs, in quick mode, as part of ``make test``.

Why: benchmarks are only run by hand (``make bench``), so one that breaks goes unnoticed: one
imported a deleted test helper and ``make bench`` failed in 0.2 s for weeks (issue 16). Here each
``benchmarks/bench_*.py`` (found by name, so a new one is covered without editing this file) runs
as a new process with ``--quick`` and ``DLCP_BENCH_QUICK=1``: tiny sizes, short trials, seconds
each. Its figures are meaningless under quick mode and are not asserted; what fails the test is
an import error, a crash, a non-zero exit, a benchmark that ignores quick mode (it must say so on
stdout, ``benchmarks/benchmode.py``), or one that takes more than its time limit.

Budget: about 1.5 minutes for all of them on the loaded 2-core CI machine. Benchmarks that need
root and network namespaces run as root (CI) under the project's namespace lock and say why they
skip otherwise; p4sim is part of this repository, so nothing skips for lack of it.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))
QUICK_LINE = "quick mode:"            # benchmode.announce's line
TIME_LIMIT_S = 150                    # per benchmark, on a loaded machine; quick runs take 2-25 s
NETNS_LOCK = "/tmp/dlcp-mininet.lock"  # held by everything creating network namespaces
NEEDS_NETNS = {"bench_switch_forwarding.py", "bench_host_agent_cpu.py"}


@contextmanager
def netns_lock(needed: bool):
    """Hold the machine-wide namespace lock (as ``flock`` does) while a benchmark makes veths."""
    if not needed:
        yield
        return
    with open(NETNS_LOCK, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def test_benchmarks_exist() -> None:
    assert len(BENCHMARKS) >= 11, [b.name for b in BENCHMARKS]


@pytest.mark.parametrize(
    "bench",
    [pytest.param(b, id=b.stem, marks=[pytest.mark.slow] if b.name in NEEDS_NETNS else [])
     for b in BENCHMARKS])
def test_benchmark_runs_in_quick_mode(bench: Path, tmp_path: Path) -> None:
    env = dict(os.environ, DLCP_BENCH_QUICK="1", PYTHONDONTWRITEBYTECODE="1")
    with netns_lock(bench.name in NEEDS_NETNS):
        try:
            done = subprocess.run([sys.executable, str(bench), "--quick"], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=TIME_LIMIT_S)
        except subprocess.TimeoutExpired as err:
            pytest.fail(f"{bench.name} --quick took more than {TIME_LIMIT_S} s; output so far:\n"
                        f"{(err.stdout or b'')[-2000:]!r}")
    tail = f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{bench.name} --quick exited {done.returncode}\n{tail}"
    first = done.stdout.splitlines()[0] if done.stdout else ""
    assert first.startswith(QUICK_LINE), f"{bench.name} does not announce quick mode (benchmode.announce)\n{tail}"
    if "skipped (" in done.stdout:
        reason = done.stdout.split("skipped (", 1)[1].split(")")[0]
        assert os.geteuid() != 0, f"{bench.name} skipped although running as root: {reason}"
        pytest.skip(f"{bench.name}: {reason}")
    assert len(done.stdout.splitlines()) > 1, f"{bench.name} printed no figures\n{tail}"
