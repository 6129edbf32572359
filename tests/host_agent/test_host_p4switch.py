"""Host-agent traffic through the DLCP P4 program (p4src/bmv2/dlcp.p4) on p4sim's v1model path.

A real transfer between two endpoints, where every upstream packet is also handed, as an
Ethernet/IPv4/UDP frame, to the compiled P4 program's ingress: when the program drops it (the
selective drop of a congested queue), the relay drops it too. This shows the host's packets are
well formed for the switch (no `malformed` counts), that tags steer queues and drops as intended,
and that the transport's accounting matches the switch's drop counters exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from host_helpers import run_both
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.relay import DROP, FORWARD, MARK_CE, LossyRelay

ROOT = Path(__file__).resolve().parents[2]
EGRESS_PORT = 2
DEPTH = 1000


@pytest.fixture(scope="module")
def program():
    try:
        from p4sim.backend import compile_file
        from p4sim.v1model.pipeline import V1ModelPath  # noqa: F401
    except ImportError as err:
        pytest.skip(f"p4sim compiler / v1model path not available: {err}")
    try:
        return compile_file(str(ROOT / "p4src/bmv2/dlcp.p4"), [str(ROOT / "p4src/include")])
    except Exception as err:  # noqa: BLE001 - the data-plane suite owns compile failures; skip here
        pytest.skip(f"p4sim cannot compile dlcp.p4 right now: {err!r}")


class Switch:
    """dlcp.p4 with 10.0.2.0/24 -> port 2, queue = layer class, drops for mag <= ``drop_mag``."""

    def __init__(self, program, drop_mag: int, ecn_depth: int = (1 << 19) - 1) -> None:
        from p4sim.runtime import tables as rt
        from p4sim.v1model.pipeline import V1ModelPath
        self.pipeline = program.instantiate()
        self.path = V1ModelPath(self.pipeline)
        t = self.pipeline.tables
        t["DlcpIngress.nexthops"].insert(rt.TableEntry(
            match=(rt.Exact(1),), action=rt.ActionCall("DlcpIngress.set_nexthop", (EGRESS_PORT, 0x02, 0x04))))
        t["DlcpIngress.ipv4_routes"].insert(rt.TableEntry(
            match=(rt.Lpm(0x0A000200, 24),), action=rt.ActionCall("DlcpIngress.route_to_nexthop", (1,))))
        keys = [k.name for k in t["DlcpIngress.priority_map"].keys]
        for layer in range(8):
            fields = {"is_dlcp": (1, 1), "layer_class": (layer, 7)}
            match = tuple(rt.Ternary(*fields[k]) if k in fields else None for k in keys)
            t["DlcpIngress.priority_map"].insert(rt.TableEntry(
                match=match, action=rt.ActionCall("DlcpIngress.set_queue", (layer,)), priority=10))
        for q in range(8):
            for mag in range(16):
                drop = DEPTH // 2 if mag <= drop_mag else (1 << 19) - 1
                t["DlcpIngress.drop_thresholds"].insert(rt.TableEntry(
                    match=(rt.Exact(q), rt.Exact(mag)),
                    action=rt.ActionCall("DlcpIngress.set_thresholds", (drop, ecn_depth))))
        self.congest(DEPTH)
        self.dropped: list[P.DlcpHeader] = []
        self.queues: dict[int, int] = {}
        self.depth = DEPTH
        self.marked = 0

    def congest(self, depth: int) -> None:
        """Every queue of the egress port holds ``depth`` packets: the counts dlcp.p4's ingress
        reads (enq_count_reg - deq_count_reg, docs/dataplane.md "Per-queue depth")."""
        self.depth = depth
        enq, deq = self.pipeline.registers["enq_count_reg"], self.pipeline.registers["deq_count_reg"]
        for q in range(8):
            enq.write(EGRESS_PORT * 8 + q, depth)
            deq.write(EGRESS_PORT * 8 + q, 0)

    def __call__(self, udp_payload: bytes) -> int:
        """Run one packet through ingress and egress: DROP, MARK_CE (the program set CE) or FORWARD."""
        from p4sim.v1model.pipeline import QueueMetadata, Transmit
        frame = bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01")
                      / IP(src="10.0.1.1", dst="10.0.2.2", tos=P.ECN_ECT0)
                      / UDP(sport=40000, dport=P.DLCP_UDP_PORT) / udp_payload)
        self.congest(self.depth)            # the queues stay as deep as we say, packet after packet
        out = self.path.ingress(frame, 1, 0)
        h = P.DlcpHeader.unpack(udp_payload)
        if not out:
            self.dropped.append(h)
            return DROP
        if h.msg_type == P.MSG_DATA:
            self.queues[h.layer_class] = out[0].priority
        # the TM reports the port as deep as we say (egress clamps the counts to it)
        qmeta = QueueMetadata(enq_timestamp=0, enq_qdepth=self.depth, deq_qdepth=self.depth,
                              deq_timedelta=0, qid=out[0].priority)
        sent = [o for o in self.path.egress(out[0], qmeta, 0) if isinstance(o, Transmit)]
        assert len(sent) == 1 and sent[0].port == EGRESS_PORT
        if Ether(sent[0].data)[IP].tos & 3 == P.ECN_CE:
            self.marked += 1
            return MARK_CE
        return FORWARD

    def counter(self, name: str) -> list[list[int]]:
        return self.pipeline.counters[name].cells


def test_switch_drops_match_transport_accounting(endpoints, program):
    sw = Switch(program, drop_mag=0)          # congested: drop non-critical magnitude class 0
    tx, rx = endpoints(job_id=3, worker_id=1), endpoints(job_id=3)
    g = np.random.default_rng(9).laplace(0, 1e-3, 362 * 160).astype(np.float32)
    # plain magnitude quantiles (not the loss-budget tagging): 10 packets per class
    pt = packetize(g, tensor_id=2, policy=TagPolicy(loss_bound=0.1, drop_within_bound=False), position=3,
                   num_layers=8, job_id=3, worker_id=1, iteration=1)
    out = np.full_like(g, np.nan)
    with LossyRelay(rx.address, raw_rule=sw) as relay:
        r = rx.expect(1, 1, 2, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert sw.counter("DlcpIngress.malformed") == [[0, 0]] * 4
    assert all(h.mag_class == 0 and not h.flags & P.FLAG_CRITICAL and h.msg_type == P.MSG_DATA
               for h in sw.dropped)
    assert len(sw.dropped) == 10                             # 160 packets: 10 per magnitude class
    assert sw.queues == {4: 4}                               # layer class 4 -> queue 4
    queue = pt.layer_class
    assert sw.counter("DlcpIngress.selective_drops")[queue * 16 + 0][0] == 10
    assert s.stats.retransmitted == 0 and r.stats.zero_filled_packets == 10
    lost = np.zeros(g.size, bool)
    for h in sw.dropped:
        lost[h.offset:h.offset + h.count] = True
    assert np.all(out[lost] == 0) and np.array_equal(out[~lost], g[~lost])


def test_switch_drops_above_bound_are_repaired_when_congestion_clears(endpoints, program):
    sw = Switch(program, drop_mag=3)          # drop magnitude classes 0..3: 25 % > p = 10 %
    retx_seen = []

    def rule(udp_payload: bytes) -> int:
        h = P.DlcpHeader.unpack(udp_payload)
        if h.flags & P.FLAG_RETX and not retx_seen:
            retx_seen.append(h)
            sw.congest(0)                     # the queue drained: retransmissions pass
        return sw(udp_payload)
    tx, rx = endpoints(job_id=3, worker_id=1), endpoints(job_id=3)
    g = np.random.default_rng(4).laplace(0, 1e-3, 362 * 160).astype(np.float32)
    pt = packetize(g, tensor_id=0, policy=TagPolicy(loss_bound=0.1, drop_within_bound=False), position=0,
                   num_layers=8, job_id=3, worker_id=1, iteration=1)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, raw_rule=rule) as relay:
        r = rx.expect(1, 1, 0, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    assert len(sw.dropped) == 40 and {h.mag_class for h in sw.dropped} == {0, 1, 2, 3}
    noncritical = pt.n_packets - int(pt.critical.sum())
    allowed = noncritical - int(np.ceil(0.9 * noncritical - 1e-9))
    assert s.stats.retransmitted == 40 - allowed and r.stats.zero_filled_packets == allowed
    # the retransmitted ones were the largest-magnitude of the dropped packets
    dropped_idx = np.array([h.offset // 362 for h in sw.dropped])
    kept = dropped_idx[np.argsort(-pt.magnitude[dropped_idx], kind="stable")[: 40 - allowed]]
    for i in kept:
        assert np.array_equal(out[i * 362:(i + 1) * 362], g[i * 362:(i + 1) * 362])


def _congested_transfer(endpoints, program, policy: TagPolicy, seed: int):
    """A 160-packet tensor through a switch whose queue is far above every droppable class's
    threshold (the default policy's classes 0..11 dropped, 12..15 never): what it costs."""
    sw = Switch(program, drop_mag=11)
    tx, rx = endpoints(job_id=3, worker_id=1), endpoints(job_id=3)
    g = np.random.default_rng(seed).laplace(0, 1e-3, 362 * 160).astype(np.float32)
    pt = packetize(g, tensor_id=5, policy=policy, position=0, num_layers=8, job_id=3, worker_id=1,
                   iteration=1)
    out = np.full_like(g, np.nan)
    with LossyRelay(rx.address, raw_rule=sw) as relay:
        r = rx.expect(1, 1, 5, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
    return sw, pt, s, r


@pytest.mark.parametrize("seed", [1, 2])
def test_selective_drops_never_exceed_the_loss_budget(endpoints, program, seed):
    """Regression (issue 10, hypothesis 1): the switch used to shed far more than the receiver may
    give up (3/4 of the packets were in droppable classes 0..11), so every selective drop beyond
    the bound was retransmitted. Tagged from the loss budget, the switch drops exactly what the
    receiver can do without: no retransmission, the bound used up, the rest delivered intact."""
    policy = TagPolicy(loss_bound=0.1)
    sw, pt, s, r = _congested_transfer(endpoints, program, policy, seed)
    noncritical = pt.n_packets - int(pt.critical.sum())
    budget = policy.droppable_count(noncritical)
    assert budget == noncritical - int(np.ceil(0.9 * noncritical - 1e-9)) == 15
    assert len(sw.dropped) == budget and all(not h.flags & P.FLAG_CRITICAL for h in sw.dropped)
    assert s.stats.retransmitted == 0 and s.stats.rounds == 0
    assert r.stats.zero_filled_packets == budget and r.stats.missing_critical == 0
    # the dropped ones are the smallest non-critical packets by magnitude
    dropped = sorted(h.offset // 362 for h in sw.dropped)
    noncrit = np.flatnonzero(~pt.critical)[:-1] if not pt.critical[-1] else np.flatnonzero(~pt.critical)
    smallest = noncrit[np.argsort(pt.magnitude[noncrit], kind="stable")[:budget]]
    assert dropped == sorted(smallest.tolist())
    # the same congestion with plain quantile tags (the old tagging) sheds 3/4 and repairs most
    old_sw, old_pt, old_s, _old_r = _congested_transfer(endpoints, program,
                                                        TagPolicy(loss_bound=0.1, drop_within_bound=False), seed)
    assert len(old_sw.dropped) > 100 and old_s.stats.retransmitted >= len(old_sw.dropped) - budget


def test_switch_ecn_marks_are_echoed_and_slow_the_sender(endpoints, program):
    """Depth above ecn_depth but below every drop threshold: CE marks, no drops, the sender backs off."""
    sw = Switch(program, drop_mag=-1, ecn_depth=DEPTH // 2)
    tx, rx = endpoints(job_id=3, worker_id=1), endpoints(job_id=3)
    g = np.random.default_rng(5).standard_normal(362 * 100).astype(np.float32)
    pt = packetize(g, tensor_id=1, policy=TagPolicy(), job_id=3, worker_id=1, iteration=1)
    out = np.zeros_like(g)
    with LossyRelay(rx.address, raw_rule=sw) as relay:
        r = rx.expect(1, 1, 1, out)
        s = tx.send(pt, relay.address)
        run_both(tx, [s], rx, [r])
        pacer = tx.pacer_for(relay.address)
    assert not sw.dropped and sw.marked == pt.n_packets == relay.ce_marked
    assert r.stats.ce_marks == pt.n_packets and np.array_equal(out, g)
    assert tx.ecn_echoes_received > 0 and pacer.decreases > 0 and pacer.rate is not None
    assert sw.counter("DlcpIngress.ecn_marks")[pt.layer_class * 16 + 15][0] > 0
