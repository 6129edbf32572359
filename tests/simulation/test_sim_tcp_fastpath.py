"""The TCP fast path (simulation/tcp_fastpath.cc) changes no result of a TCP run (issue 13).

Why this exists: every ns-3 run's process preloads a library that answers most of ns-3's
TcpTxBuffer::NextSeg calls without walking the sent list, and finds each retransmitted segment
through an index instead of ns-3's walk, for speed only. A wrong shortcut would change when and what
TCP sends, in every baseline, and nobody would see it. The first tests check that the library is
built and preloaded, that ``nextseg`` keeps only the NextSeg cut and that a bad setting is refused;
the last runs the same short load-0.6 case on scale-16 (DCTCP: ECN marks, losses, recoveries and
retransmissions in its background flows) with the fast path and with stock ns-3, each in a fresh
process, and compares every record. The fast path's run is made with DLCP_SIM_TCP_FASTPATH_CHECK=1:
each shortened NextSeg call is also answered by ns-3's own walk, each indexed retransmission is also
made by ns-3's own GetTransmittedSegment on a deep copy of the buffer (whole sent list, counters and
item returned compared) and the index is checked against a walk of the list at every call; the run
aborts on any difference. The run must have had calls of every kind (shortened, passed to ns-3,
retransmissions through the index). Budget: about 2 min (two ns-3 imports).
"""

from __future__ import annotations

import os

import pytest

from simulation import tcp_fastpath
from simulation.fresh import run_fresh
from simulation.job import JobSpec, run_job_fresh
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload

CHECK_ENV = "DLCP_SIM_TCP_FASTPATH_CHECK"


def _spec() -> JobSpec:
    work = ps_workload("resnet50", 0.0005, 4, 30, 100_000_000_000, 1.0)
    return JobSpec(work, load_cdf("web-search"), "web-search", 0.6, 0.1, 1, 1.0e-3, progress=False)


def test_the_library_is_built_and_preloaded_where_ns3_is(ns3_installed, monkeypatch) -> None:
    monkeypatch.delenv(tcp_fastpath.ENV, raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    lib = tcp_fastpath.library()
    assert lib is not None and os.path.isfile(lib), "the fast path did not build (see stderr)"
    assert lib in run_fresh(os.getenv, "LD_PRELOAD").split(":")
    assert run_fresh(tcp_fastpath.calls)["retx_index_on"] == 1
    monkeypatch.setenv(tcp_fastpath.ENV, "nextseg")            # session 15's NextSeg cut alone
    assert tcp_fastpath.library() == lib
    assert run_fresh(tcp_fastpath.calls)["retx_index_on"] == 0
    monkeypatch.setenv(tcp_fastpath.ENV, "off")
    assert tcp_fastpath.library() is None
    assert lib not in (run_fresh(os.getenv, "LD_PRELOAD") or "")


def test_a_bad_setting_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setenv(tcp_fastpath.ENV, "fast")
    with pytest.raises(ValueError, match="DLCP_SIM_TCP_FASTPATH='fast': expected one of on, 1, yes, nextseg"):
        tcp_fastpath.library()


def test_a_dctcp_run_is_the_same_with_and_without_the_fast_path(ns3_installed, monkeypatch) -> None:
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    topo, policy = preset("scale-16"), load_policy(FABRIC_POLICY)
    monkeypatch.setenv(tcp_fastpath.ENV, "on")
    monkeypatch.setenv(CHECK_ENV, "1")
    fast = run_job_fresh(topo, policy, "dctcp", _spec())
    monkeypatch.setenv(tcp_fastpath.ENV, "off")
    stock = run_job_fresh(topo, policy, "dctcp", _spec())
    calls = fast.extra["tcp_fastpath"]
    assert calls is not None and stock.extra["tcp_fastpath"] is None
    assert calls["shortened"] > 10_000 and calls["stock"] > 0, calls
    assert calls["retx_indexed"] > 100, calls             # 532 at 64e4e5d: each checked against ns-3's own
    assert fast.events == stock.events > 100_000
    assert fast.transfers == stock.transfers and fast.iterations == stock.iterations
    assert fast.counters == stock.counters
