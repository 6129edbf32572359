"""A fresh run's process: jemalloc preloaded when installed, glibc's malloc on request, and the
same simulated results with either (issue 13).

Why this exists: simulation/fresh.py starts every ns-3 run in its own spawned process and preloads
jemalloc there, for speed only; a preload that changed what is simulated, leaked into the caller's
environment or ignored DLCP_SIM_MALLOC would go unnoticed. The first tests spawn a plain child (no
ns-3) and read its LD_PRELOAD; the last runs the same short load-0.6 case on scale-16 (DLCP and its
TCP NewReno background) under both allocators in fresh processes and compares every record.
Budget: about 60 s (two ns-3 imports).
"""

from __future__ import annotations

import os

import pytest

from simulation import tcp_fastpath
from simulation.fresh import MALLOC_ENV, malloc_library, run_fresh
from simulation.job import JobSpec, run_job_fresh
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload


def test_the_child_gets_the_library_and_the_caller_keeps_its_environment(monkeypatch) -> None:
    monkeypatch.setenv(tcp_fastpath.ENV, "off")          # the malloc alone (the fast path: test_sim_tcp_fastpath)
    monkeypatch.delenv(MALLOC_ENV, raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    lib = malloc_library()
    child = run_fresh(os.getenv, "LD_PRELOAD")
    assert child == lib, (child, lib)
    assert "LD_PRELOAD" not in os.environ


def test_system_keeps_glibc_malloc_and_a_missing_library_is_refused(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(tcp_fastpath.ENV, "off")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setenv(MALLOC_ENV, "system")
    assert malloc_library() is None
    assert run_fresh(os.getenv, "LD_PRELOAD") is None
    monkeypatch.setenv(MALLOC_ENV, str(tmp_path / "libnothere.so"))
    with pytest.raises(ValueError, match="libnothere.so"):
        malloc_library()


def test_jemalloc_and_glibc_malloc_simulate_the_same(ns3_installed, monkeypatch) -> None:
    monkeypatch.setenv(tcp_fastpath.ENV, "off")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv(MALLOC_ENV, raising=False)
    if malloc_library() is None:
        pytest.skip("jemalloc is not installed (apt-get install libjemalloc2; make setup installs it)")
    topo = preset("scale-16")
    work = ps_workload("resnet50", 0.0005, 4, 30, 100_000_000_000, 1.0)
    spec = JobSpec(work, load_cdf("web-search"), "web-search", 0.6, 0.1, 1, 0.6e-3, progress=False)
    fast = run_job_fresh(topo, load_policy(FABRIC_POLICY), "dlcp", spec)
    monkeypatch.setenv(MALLOC_ENV, "system")
    plain = run_job_fresh(topo, load_policy(FABRIC_POLICY), "dlcp", spec)
    assert "jemalloc" in fast.extra["ld_preload"] and plain.extra["ld_preload"] == ""
    assert fast.events == plain.events > 100_000
    assert fast.transfers == plain.transfers and fast.iterations == plain.iterations
    assert fast.counters == plain.counters
