"""Regression tests for transport deadlocks seen through real switches (issue: PS stalls in Mininet).

Each test puts a ``LossyRelay`` (real UDP sockets) between real endpoints and drops chosen packet
types *repeatedly*, the way a switch whose selective drop keeps firing does:

- non-critical DATA dropped every time, retransmissions included: the transport must still finish,
  because the retransmissions the receiver needs go out CRITICAL (never selectively dropped);
- PROBE and BITMAP lost for a while: the sender backs off instead of storming;
- retransmission rounds that make no progress: the next PROBE is deferred by a doubling RTO;
- a parameter server whose fast worker starts iteration i+1 while the server still finishes i,
  with every non-critical packet in both directions dropped: every iteration completes.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from host_agent import protocol as P
from host_agent.collectives import PSServer, PSWorker
from host_agent.endpoint import Endpoint, EndpointConfig
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.relay import LossyRelay
from tests.host_agent.host_helpers import run_both

EPP = 362


def grad(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).laplace(0, 1e-3, n).astype(np.float32)


def selective_switch(h: P.DlcpHeader) -> bool:
    """A switch stuck in selective drop: every non-CRITICAL DATA packet, every time."""
    return h.msg_type == P.MSG_DATA and not h.flags & P.FLAG_CRITICAL


def test_repeated_selective_drop_is_repaired_with_critical_retransmissions(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(EPP * 100)
    pt = packetize(g, tensor_id=3, policy=TagPolicy(loss_bound=0.1, critical_share=0.05), job_id=1,
                   worker_id=2, iteration=1)
    n_crit = int(pt.critical.sum())
    n_nc = pt.n_packets - n_crit
    needed = int(np.ceil(0.9 * n_nc - 1e-9))
    out = np.full_like(g, np.nan)
    with LossyRelay(rx.address, selective_switch) as relay:
        r = rx.expect(2, 1, 3, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r], timeout=10)
    assert relay.dropped["DATA_noncritical"] == n_nc        # every first transmission of them
    assert s.stats.rounds == 1 and s.stats.retransmitted == needed   # one round, all of it got through
    assert r.stats.received == n_crit + needed and r.stats.zero_filled_packets == n_nc - needed
    assert r.stats.missing_critical == 0
    got = np.repeat(rx.assemblies[(2, 3)].received, EPP)[: g.size]
    assert np.array_equal(out[got], g[got]) and np.all(out[~got] == 0)


def test_promoted_retransmissions_keep_the_completion_rule_exact(endpoints):
    """A promoted non-critical packet must not stand in for a missing critical one."""
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(EPP * 60, seed=5)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.1, critical_share=0.1), job_id=1,
                   worker_id=2, iteration=1)
    crit = np.flatnonzero(pt.critical)
    lost_crit = {int(crit[0]) * EPP}
    retx_crit_seen: list[int] = []

    def rule(h: P.DlcpHeader) -> bool:
        if h.msg_type != P.MSG_DATA:
            return False
        if h.offset in lost_crit:             # this critical packet is lost twice (e.g. overflow)
            retx_crit_seen.append(h.offset)
            return len(retx_crit_seen) <= 2
        return selective_switch(h)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, rule) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r], timeout=10)
    n_nc = pt.n_packets - crit.size
    needed = int(np.ceil(0.9 * n_nc - 1e-9))
    assert len(retx_crit_seen) == 3                          # sent three times, arrived the third
    # round 1: the critical packet (lost again) + the deficit, all CRITICAL; round 2: the critical
    # one alone. Counting promoted packets as critical would re-request the deficit (duplicates).
    assert s.stats.rounds == 2 and s.stats.retransmitted == needed + 2
    assert r.stats.duplicates == 0 and r.stats.missing_critical == 0
    assert r.stats.received == crit.size + needed
    i = int(crit[0])
    assert np.array_equal(out[i * EPP:(i + 1) * EPP], g[i * EPP:(i + 1) * EPP])


def test_lost_probes_and_bitmaps_back_off_instead_of_storming(endpoints):
    """PROBEs and BITMAPs lost for a second: one PROBE per round, each RTO double the last.

    The spacing is read from the sender's own log (``probe_sent``: round -> when its PROBE left,
    kept until an answer pops it, so every PROBE the relay dropped is still there), not from the
    relay's arrival times: a late relay thread shortens the next gap it sees, and a late sender
    lengthens one gap, which made a ratio of consecutive gaps fail under load (session 16). Each
    gap is bounded below by its RTO step, which lateness can only lengthen; the count bounds the
    storm."""
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(EPP * 50)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.1), job_id=1, worker_id=2, iteration=1)
    blackout = time.monotonic() + 1.0

    def up(h: P.DlcpHeader) -> bool:
        if h.msg_type == P.MSG_PROBE:
            return time.monotonic() < blackout
        return selective_switch(h)

    def down(h: P.DlcpHeader) -> bool:
        return h.msg_type == P.MSG_BITMAP and time.monotonic() < blackout
    out = np.zeros_like(g)
    with LossyRelay(rx.address, up, reverse_rule=down) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r], timeout=15)
    assert r.done and r.stats.missing_critical == 0
    lost = [h.seq for h in relay.dropped_headers if h.msg_type == P.MSG_PROBE]   # a PROBE's seq is its round
    # RTO 20 ms doubling to 0.5 s: about 6 PROBEs in a one-second blackout, never hundreds
    assert 3 <= len(lost) <= 8, lost
    assert lost == list(range(len(lost))), lost                # one PROBE per round, no repeats
    sent = [s.tx.probe_sent[k] for k in lost]                  # when the sender sent each (its clock)
    gaps = np.diff(sent)
    steps = np.minimum(tx.cfg.rto_initial * 2.0 ** np.arange(gaps.size), tx.cfg.rto_max)
    assert np.all(gaps >= steps - 1e-6), (gaps, steps)         # exponential backoff: 20, 40, 80 ... ms


def test_stalled_retransmit_rounds_back_off(endpoints):
    """Every retransmission is lost for a second (a queue overflowing): rounds space out."""
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(EPP * 50, seed=2)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.1), job_id=1, worker_id=2, iteration=1)
    blackout = time.monotonic() + 1.0
    probes: list[float] = []

    def up(h: P.DlcpHeader) -> bool:
        if h.msg_type == P.MSG_PROBE:
            probes.append(time.monotonic())
            return False
        if h.msg_type == P.MSG_DATA and h.flags & P.FLAG_RETX:
            return time.monotonic() < blackout
        return selective_switch(h)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, up) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r], timeout=15)
    assert r.done and r.stats.missing_critical == 0
    assert relay.dropped["DATA_critical"] > 0                 # promoted retransmissions were lost
    in_blackout = [t for t in probes if t < blackout]
    assert len(in_blackout) <= 10                              # not one round per RTT (thousands)
    assert s.stats.rounds <= 10


def _ps_job(iterations: int, shapes: list[tuple[int, ...]], slow_worker_delay: float) -> list[list[int]]:
    """PS with 2 workers, each behind a relay dropping every non-critical packet both ways."""
    policy = TagPolicy(loss_bound=0.1)
    cfg = {"give_up_after": 5.0}
    sep = Endpoint(EndpointConfig(job_id=4, worker_id=0xFFFF, **cfg))
    server = PSServer(sep, shapes, 2, policy, timeout=15)
    relays = [LossyRelay(sep.address, selective_switch, reverse_rule=selective_switch).__enter__()
              for _ in range(2)]
    done: list[list[int]] = [[], []]
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            for it in range(iterations):
                server.step(it)
            sep.close(linger=0.5)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def work(rank: int) -> None:
        ep = Endpoint(EndpointConfig(job_id=4, worker_id=rank, **cfg))
        params = [np.zeros(s, np.float32) for s in shapes]
        w = PSWorker(ep, relays[rank].address, params, policy, timeout=15)
        try:
            for it in range(iterations):
                if rank == 1:
                    time.sleep(slow_worker_delay)      # worker 0 runs ahead into the next iteration
                w.step(it, [np.full(s, rank + it + 1, np.float32) for s in shapes])
                done[rank].append(it)
            ep.close(linger=0.5)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=serve, daemon=True)]
    threads += [threading.Thread(target=work, args=(r,), daemon=True) for r in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        for relay in relays:
            relay.stop()
    if errors:
        raise errors[0]
    return done


def test_ps_with_repeated_selective_drops_and_a_fast_worker_completes():
    done = _ps_job(4, [(EPP * 30,), (EPP * 4,), (100,)], slow_worker_delay=0.05)
    assert done == [[0, 1, 2, 3], [0, 1, 2, 3]]
