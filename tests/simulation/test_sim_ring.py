"""The ring all-reduce training job in ns-3 (simulation/ring_allreduce.h, `dlcp-sim --workload ring-train`).

Why this exists: issue 13 asks for ring all-reduce beside the PS job, as host_agent runs it
(collectives.ring_allreduce / overlap.ring_steps): per bucket N-1 reduce-scatter steps (gradients,
bounded loss) then N-1 all-gather steps (parameters, reliable), each step to the right neighbour
and only after the previous step's send arrived and the left neighbour's send of that step was
received; buckets in backprop order; the next forward pass waits for the reduced buckets. The test
reads that schedule back from the per-transfer records of a real ns-3 run (DLCP with web-search
background, then TCP cubic over persistent connections, one fresh process). Budget: ~60-90 s
(one process: the ns-3 import and model compile dominate).
"""

from __future__ import annotations

import math
import multiprocessing
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor

import pytest

from simulation.job import JobSpec, run_job
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.topology import preset
from simulation.workload import load_cdf, ps_workload

ITERATIONS = 3
GROUPS = 4


def _runs() -> list:
    """DLCP (web-search background at load 0.2 for 1 ms) then TCP cubic, in this (fresh) process."""
    topo = preset("small-16")
    policy = load_policy(FABRIC_POLICY)
    work = ps_workload("resnet50", 0.002, GROUPS, ITERATIONS, 10_000_000_000, 1.0)
    out = []
    for mode, load in (("dlcp", 0.2), ("tcp-cubic", 0.0)):
        spec = JobSpec(work, load_cdf("web-search"), "web-search", load, 0.10, 3, max_sim_s=0.05,
                       background_until_s=1e-3, progress=False, collective="ring")
        out.append(run_job(topo, policy, mode, spec))
    return out


@pytest.fixture(scope="module")
def ring_runs(ns3_installed):
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(_runs).result()


def _steps(r) -> dict[tuple[str, int, int], list[dict]]:
    """(sender, iteration, layer class = bucket) -> its ring transfers in the order they started."""
    out: dict[tuple[str, int, int], list[dict]] = defaultdict(list)
    for t in r.transfers:
        if t["kind"] != "background":
            out[(t["src"], t["iteration"], t["layer_class"])].append(t)
    for v in out.values():
        v.sort(key=lambda t: (t["start_s"], t["id"]))
    return out


@pytest.mark.parametrize("index", [0, 1], ids=["dlcp", "tcp-cubic"])
def test_ring_closes_every_iteration_with_the_ring_schedule(ring_runs, index: int) -> None:
    r = ring_runs[index]
    hosts = [f"h{i}" for i in range(16)]
    n = len(hosts)
    work = ps_workload("resnet50", 0.002, GROUPS, ITERATIONS, 10_000_000_000, 1.0)
    assert r.finished, f"{r.mode}: not every rank closed {ITERATIONS} iterations"
    times = [rec["iter_s"] for rec in r.iterations]
    assert len(times) == n * ITERATIONS and all(t is not None for t in times)
    compute = sum(work.forward_s) + sum(work.backward_s)
    assert min(times) >= compute - 1e-9                   # an iteration holds its compute, at least
    steps = _steps(r)
    assert len(steps) == n * ITERATIONS * GROUPS
    end = {t["id"]: t["start_s"] + t["fct_s"] for v in steps.values() for t in v}
    for (src, it, cls), seq in steps.items():
        rank = hosts.index(src)
        right, left = hosts[(rank + 1) % n], hosts[(rank - 1) % n]
        # N-1 reduce-scatter steps (gradients, bound p) then N-1 all-gather steps (parameters, reliable)
        assert [t["kind"] for t in seq] == ["gradient"] * (n - 1) + ["parameter"] * (n - 1), (src, it, cls)
        assert all(t["dst"] == right and t["completed"] for t in seq)
        incoming = steps[(left, it, cls)]
        for s in range(1, len(seq)):
            # step s starts once this rank's step s-1 send arrived and its left neighbour's was received
            assert seq[s]["start_s"] >= end[seq[s - 1]["id"]] - 1e-12, (src, it, cls, s)
            assert seq[s]["start_s"] >= end[incoming[s - 1]["id"]] - 1e-12, (src, it, cls, s)
    # every step moves the N chunks of the bucket once: bytes per (iteration, bucket, step) = bucket
    per_step: dict[tuple[int, int, int], int] = defaultdict(int)
    for (_, it, cls), seq in steps.items():
        for s, t in enumerate(seq):
            per_step[(it, cls, s)] += t["bytes"]
    bucket_bytes = dict(zip(work.layer_class, work.group_bytes, strict=True))
    for (_, cls, _), total in per_step.items():
        assert abs(total - bucket_bytes[cls]) <= 4 * n
    # the forward pass of iteration i+1 starts with the front group, which needs the front bucket of i
    # reduced (own last send arrived, left's last send received); then the whole forward pass and the
    # last group's backward run before the first push of i+1
    front = work.layer_class[0]
    for src in hosts:
        left = hosts[(hosts.index(src) - 1) % n]
        for it in range(ITERATIONS - 1):
            reduced = max(end[steps[(src, it, front)][-1]["id"]], end[steps[(left, it, front)][-1]["id"]])
            first_next = min(steps[(src, it + 1, c)][0]["start_s"] for c in bucket_bytes)
            assert first_next >= reduced + sum(work.forward_s) + work.backward_s[-1] - 1e-9, (src, it)
    # buckets in backprop order: the last group (lowest class) is all-reduced first
    for src in hosts:
        for it in range(ITERATIONS):
            firsts = sorted((steps[(src, it, c)][0]["start_s"], c) for c in bucket_bytes)
            assert [c for _, c in firsts] == sorted(bucket_bytes)


def test_ring_over_dlcp_stays_within_the_loss_bound_and_tcp_is_reliable(ring_runs) -> None:
    dlcp, tcp = ring_runs
    grads = [t for t in dlcp.transfers if t["kind"] == "gradient"]
    params = [t for t in dlcp.transfers if t["kind"] == "parameter"]
    assert grads and params and all(t["dlcp"] for t in grads + params)
    for t in grads:
        non_critical = t["packets"] - t["critical"]
        assert t["loss_bound"] == pytest.approx(0.10)
        assert t["zero_filled"] <= non_critical - math.ceil(0.9 * non_critical - 1e-9), t
    assert all(t["loss_bound"] == 0 and t["zero_filled"] == 0 for t in params)   # all-gather: reliable
    background = [t for t in dlcp.transfers if t["kind"] == "background"]
    assert dlcp.extra["background_started"] == len(background) > 0
    assert not any(t["dlcp"] for t in tcp.transfers)
    assert tcp.counters.get("dlcp_data_packets", 0) == 0
