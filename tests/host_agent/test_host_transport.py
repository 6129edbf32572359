"""Bounded-loss transport over real UDP sockets on loopback, with loss from a real lossy relay."""

from __future__ import annotations

import numpy as np
import pytest
from host_helpers import run_both

from host_agent import protocol as P
from host_agent.errors import TransportError
from host_agent.packetizer import packetize
from host_agent.policy import BASELINE_POLICY, TagPolicy
from host_agent.ratecontrol import RateConfig
from host_agent.relay import LossyRelay, drop_noncritical, drop_offsets

RNG = np.random.default_rng(7)


def grad(n: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(n).astype(dtype)


def noncritical_offsets(pt, k: int, tensor_id: int) -> set[tuple[int, int]]:
    idx = np.flatnonzero(~pt.critical)[:k]
    return {(tensor_id, int(i) * pt.elems_per_packet) for i in idx}


@pytest.mark.parametrize("tx_offload,rx_offload", [("auto", "auto"), ("on", "off"), ("off", "on")])
def test_lossless_roundtrip_bit_exact_all_dtypes(endpoints, tx_offload, rx_offload):
    """GSO runs / GRO batches (vectorised path) and plain per-packet paths give the same bytes."""
    tx = endpoints(job_id=4, worker_id=1, offload=tx_offload)
    rx = endpoints(job_id=4, worker_id=0, offload=rx_offload)
    tensors = {
        1: grad(100_003),
        2: grad(5_001, np.float16),
        3: RNG.integers(-128, 127, 7_777).astype(np.int8),
        4: RNG.integers(0, 1 << 16, 3_000).astype(np.uint16),   # bfloat16 bits
        5: grad(1),
    }
    sends, recvs, outs = [], [], {}
    for tid, t in tensors.items():
        pt = packetize(t, tensor_id=tid, policy=TagPolicy(), position=tid - 1, num_layers=5, job_id=4,
                       worker_id=1, iteration=11, bfloat16=(tid == 4))
        outs[tid] = np.zeros_like(t)
        recvs.append(rx.expect(1, 11, tid, outs[tid]))
        sends.append(tx.send(pt, rx.address))
    run_both(tx, sends, rx, recvs)
    for tid, t in tensors.items():
        assert outs[tid].tobytes() == t.tobytes()
    for s, r in zip(sends, recvs, strict=True):
        assert s.stats.retransmitted == 0 and s.stats.zero_filled_packets == 0
        assert r.stats.received == r.stats.n_packets
    assert not rx.drops


def test_loss_under_bound_completes_without_retransmission(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 200)
    pt = packetize(g, tensor_id=9, policy=TagPolicy(critical_share=0.1, loss_bound=0.1), job_id=1,
                   worker_id=2, iteration=1)
    dropped = noncritical_offsets(pt, 15, 9)          # 15 of 180 non-critical < 10 %
    out = np.full_like(g, np.nan)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(2, 1, 9, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert relay.dropped["DATA_noncritical"] == 15
    assert s.stats.retransmitted == 0 and s.stats.rounds == 0
    assert r.stats.zero_filled_packets == 15 == s.stats.zero_filled_packets
    assert r.stats.zero_filled_elements == 15 * 362 == s.stats.zero_filled_elements
    lost = np.zeros(g.size, bool)
    for _, off in dropped:
        lost[off:off + 362] = True
    assert np.all(out[lost] == 0)
    assert np.array_equal(out[~lost], g[~lost])


def test_loss_above_bound_retransmits_down_to_bound(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 200)
    pt = packetize(g, tensor_id=9, policy=TagPolicy(critical_share=0.1, loss_bound=0.1), job_id=1,
                   worker_id=2, iteration=1)
    dropped = noncritical_offsets(pt, 60, 9)          # 60 of 180 non-critical: 18 allowed
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(2, 1, 9, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert s.stats.retransmitted == 60 - 18
    assert r.stats.zero_filled_packets == 18
    # the retransmitted ones are the largest-magnitude of the dropped packets
    idx = np.array(sorted(off // 362 for _, off in dropped))
    kept = idx[np.argsort(-pt.magnitude[idx], kind="stable")[:42]]
    for i in kept:
        assert np.array_equal(out[i * 362:(i + 1) * 362], g[i * 362:(i + 1) * 362])


def test_lost_critical_packet_is_retransmitted(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 50)
    pt = packetize(g, tensor_id=3, policy=TagPolicy(critical_share=0.1, loss_bound=0.5), job_id=1,
                   worker_id=2, iteration=5)
    crit = np.flatnonzero(pt.critical)
    dropped = {(3, int(i) * 362) for i in crit[:2]}
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(2, 5, 3, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert relay.dropped["DATA_critical"] == 2
    assert s.stats.retransmitted == 2 and s.stats.rounds == 1
    assert np.array_equal(out, g) and r.stats.zero_filled_packets == 0


def test_random_loss_stays_within_bound(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 500)
    pt = packetize(g, tensor_id=3, policy=TagPolicy(loss_bound=0.1), job_id=1, worker_id=2, iteration=5)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_noncritical(0.2, seed=1)) as relay:
        r = rx.expect(2, 5, 3, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    noncrit = int((~pt.critical).sum())
    assert relay.dropped["DATA_noncritical"] > 0.1 * noncrit
    assert r.stats.zero_filled_packets <= 0.1 * noncrit
    assert s.stats.retransmitted > 0
    crit = np.repeat(pt.critical, pt.elems_per_packet)[: g.size]
    assert np.array_equal(out[crit], g[crit])


def test_parameters_keep_previous_value(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=9), endpoints(job_id=1)
    new = grad(362 * 40)
    pt = packetize(new, tensor_id=1, policy=TagPolicy(critical_share=0.0, loss_bound=0.2), job_id=1,
                   worker_id=9, iteration=2, pull=True, kind=P.KIND_PARAMETER)
    assert all(pt.header(i).flags & P.FLAG_PULL for i in range(pt.n_packets))
    dropped = {(1, 362 * 3), (1, 362 * 7)}
    prev = np.full_like(new, 5.0)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(9, 2, 1, prev)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert s.stats.retransmitted == 0
    lost = np.zeros(new.size, bool)
    lost[362 * 3:362 * 4] = lost[362 * 7:362 * 8] = True
    assert np.all(prev[lost] == 5.0) and np.array_equal(prev[~lost], new[~lost])
    assert r.stats.zero_filled_packets == 0


def test_baseline_mode_is_fully_reliable(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 100)
    pt = packetize(g, tensor_id=1, policy=BASELINE_POLICY, job_id=1, worker_id=2, iteration=1)
    dropped = {(1, 362 * i) for i in range(0, 100, 7)}
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_offsets(dropped)) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert s.stats.retransmitted == len(dropped)
    assert np.array_equal(out, g)


def test_sender_before_receiver_is_staged(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(10_000)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
    s = tx.send(pt, rx.address)
    for _ in range(50):
        tx.poll(0.001)
        rx.poll(0.001)
    out = np.zeros_like(g)
    r = rx.expect(2, 1, 1, out)
    run_both(tx, [s], rx, [r])
    assert np.array_equal(out, g)
    assert rx.staged_elements == 0


def test_lost_open_and_lost_done_recover(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 20)
    dropped_open: set[int] = set()
    dropped_done: set[int] = set()

    def drop_first_open(h):          # the first OPEN of every iteration
        if h.msg_type == P.MSG_CONTROL and h.iteration not in dropped_open:
            dropped_open.add(h.iteration)
            return True
        return False

    def drop_first_done(h):
        if h.msg_type == P.MSG_DONE and h.iteration not in dropped_done:
            dropped_done.add(h.iteration)
            return True
        return False
    with LossyRelay(rx.address, drop_first_open, reverse_rule=drop_first_done) as relay:
        # iteration 1, first contact: the sender waits for OPEN_ACK, repeats the OPEN, loses no data
        out1 = np.zeros_like(g)
        pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.0), job_id=1, worker_id=2, iteration=1)
        r1 = rx.expect(2, 1, 1, out1)
        s1 = tx.send(pt, relay.address)
        run_both(tx, [s1], rx, [r1])
        assert s1.stats.retransmitted == 0 and rx.drops["unknown_tensor"] == 0
        # iteration 2, peer known: DATA follows the (lost) OPEN at once; the receiver holds it (the
        # iteration-1 tensor is complete, this is the next one) and the PROBE's descriptor opens it
        out2 = np.zeros_like(g)
        pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.0), job_id=1, worker_id=2, iteration=2)
        r2 = rx.expect(2, 2, 1, out2)
        s2 = tx.send(pt, relay.address)
        run_both(tx, [s2], rx, [r2])
    assert relay.dropped["CONTROL_critical"] == 2 and relay.dropped["DONE_critical"] == 2
    assert np.array_equal(out1, g) and np.array_equal(out2, g)
    assert rx.early_held == pt.n_packets and rx.drops["wrong_iteration"] == 0
    assert s2.stats.retransmitted == 0                     # a lost OPEN costs one PROBE, no data


def test_ecn_marks_are_echoed_and_slow_the_sender(endpoints):
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1)
    g = grad(362 * 300)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, mark_ce=True) as relay:
        assert tx.pacer_for(relay.address).rate is None
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
        pacer = tx.pacer_for(relay.address)
    assert r.stats.ce_marks == pt.n_packets == s.stats.ce_marks
    assert tx.ecn_echoes_received > 0 and pacer.decreases > 0
    assert pacer.rate is not None
    assert np.array_equal(out, g)


def test_marks_towards_one_receiver_do_not_slow_the_others(endpoints):
    """AIMD per destination (H10-3): CE marks on the path to one receiver (its port, say) cut the rate
    towards it only. A PS server fanning out to three workers must not hold the other two because one
    worker's queue marked. With one endpoint-wide pacer (before) the clean transfer after the marked one
    ran at the cut rate, held by AIMD."""
    tx, marked_rx, clean_rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1), endpoints(job_id=1)
    g = grad(362 * 300)
    with LossyRelay(marked_rx.address, mark_ce=True) as relay:
        out = np.zeros_like(g)
        r = marked_rx.expect(2, 1, 1, out)
        s = tx.send(packetize(g, tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1), relay.address)
        run_both(tx, [s], marked_rx, [r])
        assert tx.pacer_for(relay.address).decreases > 0 and tx.pacer_for(relay.address).rate is not None
    held_before = tx.send_blocked["aimd"]
    big = grad(362 * 2000)
    out2 = np.zeros_like(big)
    r2 = clean_rx.expect(2, 1, 2, out2)
    s2 = tx.send(packetize(big, tensor_id=2, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1),
                 clean_rx.address)
    run_both(tx, [s2], clean_rx, [r2])
    assert np.array_equal(out2, big)
    assert tx.pacer_for(clean_rx.address).decreases == 0 and tx.pacer_for(clean_rx.address).rate is None
    assert tx.send_blocked["aimd"] == held_before          # the clean transfer never waited for AIMD


def test_silent_receiver_fails_cleanly(endpoints):
    tx = endpoints(job_id=1, worker_id=2, give_up_after=0.3)
    dead = endpoints(job_id=1)
    addr = dead.address
    dead.sock.close()
    pt = packetize(grad(1000), tensor_id=1, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
    s = tx.send(pt, addr)
    with pytest.raises(TransportError, match="no answer from 127.0.0.1:.* OPEN of tensor 1"):
        tx.run([s], timeout=5)


def test_receive_deadline_completes_without_probe(endpoints):
    """Every PROBE is lost: the receiver completes on its deadline because the bound is met."""
    tx, rx = endpoints(job_id=1, worker_id=2), endpoints(job_id=1, receive_deadline=0.05)
    g = grad(362 * 50)
    pt = packetize(g, tensor_id=4, policy=TagPolicy(loss_bound=0.1), job_id=1, worker_id=2, iteration=1)
    dropped = noncritical_offsets(pt, 3, 4)
    lose = drop_offsets(dropped)

    def rule(h):
        return h.msg_type == P.MSG_PROBE or lose(h)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, rule) as relay:
        r = rx.expect(2, 1, 4, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert relay.dropped["PROBE_critical"] >= 1
    assert r.stats.zero_filled_packets == 3 and s.stats.retransmitted == 0


def test_recv_mode_releases_staging(endpoints):
    """Unexpected tensors are staged within a cap; releasing consumed ones lets the next in."""
    tx = endpoints(job_id=1, worker_id=2)
    rx = endpoints(job_id=1, max_staged_elements=25_000)
    seen = []

    def consume(h):
        seen.append((h.tensor_id, h.assembly.out.copy()))
        rx.release(h)
    rx.on_unexpected = consume
    tensors = [grad(10_000) for _ in range(5)]
    sends = []
    for tid, g in enumerate(tensors):
        pt = packetize(g, tensor_id=tid, policy=TagPolicy(), job_id=1, worker_id=2, iteration=1)
        sends.append(tx.send(pt, rx.address))
        run_both(tx, sends[-1:], rx, [])
    assert [t for t, _ in seen] == list(range(5))
    assert all(np.array_equal(a, tensors[t]) for t, a in seen)
    assert rx.staged_elements == 0 and not rx.drops


def test_multi_chunk_bitmap_for_large_tensor(endpoints):
    """20 000 packets: the BITMAP of a round spans 3 chunks; every chunk's losses are repaired."""
    # paced so the Python relay never overflows: only the chosen packets are lost
    tx = endpoints(job_id=1, worker_id=2, rate=RateConfig(initial_rate=60e6, additive_step=0.0))
    rx = endpoints(job_id=1)
    g = grad(362 * 20_000)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(critical_share=0.01, loss_bound=0.0), job_id=1,
                   worker_id=2, iteration=1)
    crit = np.flatnonzero(pt.critical)
    lost = {int(crit[-1])} | {i for i in (5, 8191, 8192, 9000, 16384, 19_999) if not pt.critical[i]}
    out = np.zeros_like(g)
    with LossyRelay(rx.address, drop_offsets({(1, i * 362) for i in lost})) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r], timeout=60)
    assert sum(relay.dropped.values()) == len(lost)
    assert s.stats.retransmitted == len(lost) and s.stats.rounds == 1
    assert np.array_equal(out, g)


@pytest.mark.parametrize("late_count,holdoff,at_once", [(5, 0.05, False), (5, 0.0, False), (5, 0.05, True),
                                                         (15, 0.05, True)])
def test_probe_holdoff_absorbs_reordering(endpoints, late_count, holdoff, at_once):
    """DATA packets overtaken by the PROBE (as under per-packet spraying). With a hold-off the
    receiver waits for DATA to go quiet and loses nothing; without it, it completes early (within
    the bound) and the stragglers are refused as late. With ``complete_when_bound_met`` (the
    default) a PROBE that finds the bound met (5 stragglers <= the 9 the bound allows) is answered
    at once; 15 stragglers exceed the bound, so the hold-off still waits for them."""
    tx = endpoints(job_id=1, worker_id=2)
    rx = endpoints(job_id=1, probe_holdoff=holdoff, complete_when_bound_met=at_once)
    g = grad(362 * 100)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(loss_bound=0.1), job_id=1, worker_id=2, iteration=1)
    late = {int(i) * 362 for i in np.flatnonzero(~pt.critical)[-late_count:]}
    out = np.zeros_like(g)
    with LossyRelay(rx.address, hold_until_probe=lambda h: h.msg_type == P.MSG_DATA and h.offset in late) as relay:
        r = rx.expect(2, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
        for _ in range(10):
            rx.poll(0.005)
    assert relay.reordered == late_count and s.stats.retransmitted == 0
    if holdoff and late_count > 9 and at_once:
        # held until enough stragglers arrived to meet the bound, then done: at most the 9 allowed
        # are given up, never a retransmission
        assert r.stats.zero_filled_packets <= 9 and r.stats.zero_filled_packets == rx.drops["late"]
    elif holdoff and not at_once:
        assert r.stats.zero_filled_packets == 0 and np.array_equal(out, g)
    else:
        assert r.stats.zero_filled_packets == late_count and rx.drops["late"] == late_count
