"""Overcommitment in the ns-3 DLCP transport (simulation/switch_model/dlcp_transport.h, issue 13).

Why this exists: at 143:1 host_agent's admission (every active sender granted link / n and a
window of max(4, 40 / n) packets, every one re-granted whenever the set changes) sent more GRANTs
than DATA and let 4 x 143 packets into 64-packet queues, and its 40-packet total window is below
one bandwidth-delay product of a 100 Gbit/s link. The transport now grants at most
``overcommitSenders`` senders at a time (HOLD to the rest, Homa-like), re-grants only on a share
that fell or grew by more than ``regrantChange``, sizes the granted senders' window by the BDP, and a sender serves its transfers fewest packets
left first. With layer-class admission (``classAdmission``) the granted senders are those with the
top layer class, pre-empting the others, and a sender serves its top class first.
The layer-class runs leave ``shedDroppable`` (on by default since session 17) off, the by-sender
run beside them too: with it, pre-emption loses DATA of the pre-empted classes in h0's port (15
workers x 30 kB, classes 0 and 7: 9 class-0 DATA in q1, the last class-0 transfer 115.4 us instead
of 87.9; classes 0, 3, 7: 9 class-3 DATA in q2 with one band, 4 class-0 in q1 with two, none
without the knob). Measured in session 17 (/work/notes/s17/h17a-notes.md), not investigated yet;
classAdmission is off by default.
Real ns-3, real DLCP packets through the C++ switch model, all runs in one fresh process.
Budget: about 40-60 s (the ns-3 import dominates; the runs simulate under 1 ms of 100 Gbit/s).
"""

from __future__ import annotations

import math

import pytest

from simulation.job import JobSpec
from simulation.policy import FABRIC_POLICY, load_policy
from simulation.scenario import PAYLOAD, ps_incast
from simulation.switch_model.transport_knobs import run_jobs_fresh
from simulation.topology import preset

# the transport before: host_agent's admission rule and its round-robin sender
HOST_AGENT_ADMISSION = {"overcommit": False, "regrantChange": 0.0, "senderSrpt": False}
OVERCOMMIT = {"overcommitSenders": 4}       # the default (28) scaled down: 15 senders overcommit it
SHED_OFF = {"shedDroppable": False}        # see the docstring: on by default since session 17
CLASSES = OVERCOMMIT | {"classAdmission": True} | SHED_OFF   # layer-class admission (off by default since session 6)
WIRE = 24 + 8 + 20 + 2                                              # DLCP + UDP + IP + PPP header bytes


def _wire_s(flows: list[tuple], bps: float) -> float:
    packets = sum(math.ceil(f[2] / PAYLOAD) for f in flows)
    return (sum(f[2] for f in flows) + packets * WIRE) * 8 / bps


@pytest.fixture(scope="module")
def runs(ns3_installed) -> dict:
    """scale-16 (100 Gbit/s hosts, one leaf): the 15:1 incast (300 kB per worker into h0) and a
    1:15 fan-out from h0; scale-64 (4 leaves): one lone 3 MB transfer across the spine (base RTT
    8.6 µs); each with overcommitment and with host_agent's admission."""
    topo = preset("scale-16")
    wide = preset("scale-64")
    index = {h: i for i, h in enumerate(topo.hosts)}
    incast = [(index[f.src], index[f.dst], f.bytes, f.start_s, f.layer_class)
              for f in ps_incast(topo, 300_000, 0, 0, seed=5)]
    lone = [(len(wide.hosts) - 1, 0, 3_000_000, 0.0, 7)]
    fanout = [(0, dst, 150_000, 0.0, 7) for dst in range(1, len(topo.hosts))]     # a PS's pull to every worker
    policy = load_policy(FABRIC_POLICY)
    specs = {"incast": JobSpec(None, flows=incast, max_sim_s=0.02, progress=False),
             "lone": JobSpec(None, flows=lone, max_sim_s=0.02, progress=False),
             "fanout": JobSpec(None, flows=fanout, max_sim_s=0.02, progress=False)}
    order = [(name, knobs) for name in specs for knobs in ("overcommit", "host_agent")]
    runs = [(OVERCOMMIT if knobs == "overcommit" else HOST_AGENT_ADMISSION, wide if name == "lone" else topo,
             policy, "dlcp", specs[name]) for name, knobs in order]
    # a PS's backward pass in miniature: every worker opens its last layer (class 0) at 0, its front layer (7) at 1 us
    classes = [(w, 0, 30_000, 0.0, 0) for w in range(1, 16)] + [(w, 0, 30_000, 1e-6, 7) for w in range(1, 16)]
    classes_spec = JobSpec(None, flows=classes, max_sim_s=0.02, progress=False)
    order += [("classes", "class_admission"), ("classes", "by_sender")]
    runs += [(CLASSES, topo, policy, "dlcp", classes_spec),
             (OVERCOMMIT | {"classAdmission": False} | SHED_OFF, topo, policy, "dlcp", classes_spec)]
    # three layer classes per worker, opened last layer first (0 at 0, 3 at 1 us, 7 at 2 us): one band or two
    three = [(w, 0, 30_000, k * 1e-6, cls) for k, cls in enumerate((0, 3, 7)) for w in range(1, 16)]
    three_spec = JobSpec(None, flows=three, max_sim_s=0.02, progress=False)
    order += [("three", "bands_1"), ("three", "bands_2")]
    runs += [(CLASSES, topo, policy, "dlcp", three_spec),
             (CLASSES | {"classBands": 2}, topo, policy, "dlcp", three_spec)]
    results = run_jobs_fresh(runs)
    out = dict(zip(order, results, strict=True))
    out["wire_s"] = {"incast": _wire_s(incast, 100e9), "lone": _wire_s(lone, 100e9), "fanout": _wire_s(fanout, 100e9)}
    return out


def test_overcommitment_grants_a_bounded_subset_with_o_n_control_and_no_loss(runs) -> None:
    """15 senders into one 100 Gbit/s port, 4 granted at a time: the rest held, each sender told
    a few times (GRANT or HOLD answering its OPEN, GRANT on promotion, HOLD when it finishes while
    others wait; only the first 4 joiners re-granted as their share falls) instead of on every change of the set; nothing is dropped or retransmitted and the port
    stays busy. host_agent's rule (the transport before) re-grants every active sender on every
    join and every DONE: O(n^2) GRANTs."""
    r, before = runs[("incast", "overcommit")], runs[("incast", "host_agent")]
    for run in (r, before):
        grads = [t for t in run.transfers if t["kind"] == "gradient"]
        assert run.finished and len(grads) == 15 and all(t["completed"] for t in grads)
    tr = r.counters["transport"]
    assert tr["holds_sent"] >= 15 - 4, tr                       # the 5th..15th opener was held
    told = tr["grants_sent"] + tr["holds_sent"]
    # O(n): 56 with per-sender admission; 62 with layer-class admission (the incast's flows have classes
    # 7..0, and a granted sender of a lower class is pre-empted once by a HOLD and granted again later)
    assert told <= 5 * 15, tr
    assert before.counters["transport"]["grants_sent"] > 8 * 15, before.counters["transport"]   # O(n^2): 166
    assert before.counters["transport"]["holds_sent"] == 0
    grads = [t for t in r.transfers if t["kind"] == "gradient"]
    assert sum(r.counters["tail_drops"].values()) == 0, r.counters["tail_drops"]
    assert sum(t["retx"] for t in grads) == 0
    held = [t for t in grads if t["hold_wait_s"] > 0]
    assert len(held) >= 15 - 4                                 # their DATA waited for the promotion
    assert max(t["fct_s"] for t in grads) <= 1.15 * runs["wire_s"]["incast"]


def test_granted_window_covers_the_bandwidth_delay_product(runs) -> None:
    """One sender alone into a 100 Gbit/s host: the window of the granted senders is sized by the
    fabric's BDP (windowBdps x link x base RTT), so the transfer runs near line rate.
    host_agent's 40-packet window (its WINDOW_PACKETS, sized for 20 Mbit/s) is about half a BDP
    at 100 Gbit/s x 8.6 us and caps the sender near half the link."""
    r, before = runs[("lone", "overcommit")], runs[("lone", "host_agent")]
    fct = r.transfers[0]["fct_s"]
    fct_before = before.transfers[0]["fct_s"]
    wire = runs["wire_s"]["lone"]
    assert fct <= 1.2 * wire, (fct, wire)
    assert fct_before >= 1.4 * wire, (fct_before, wire)
    assert r.transfers[0]["window_wait_s"] < before.transfers[0]["window_wait_s"]


def test_sender_serves_fewest_packets_left_first(runs) -> None:
    """One host sending 150 kB to each of 15 others at once (a PS's parameter pull): the sender's
    pacer serves the transfer with the fewest packets left first (the earliest on a tie), so the
    transfers complete one after another through the sender's link and the mean FCT is about half
    the last one. host_agent's round robin (the transport before) finishes them all together near
    the end of the fan-out."""
    r, before = runs[("fanout", "overcommit")], runs[("fanout", "host_agent")]
    for run in (r, before):
        assert run.finished and len(run.transfers) == 15 and all(t["completed"] for t in run.transfers)
    fcts = sorted(t["fct_s"] for t in r.transfers)
    fcts_before = sorted(t["fct_s"] for t in before.transfers)
    assert fcts[-1] <= 1.2 * runs["wire_s"]["fanout"]
    assert sum(fcts) / 15 <= 0.65 * fcts[-1], fcts
    assert sum(fcts_before) / 15 >= 0.85 * fcts_before[-1], fcts_before
    assert fcts[0] <= 0.25 * fcts_before[0]


def test_class_admission_takes_the_front_layer_from_every_worker_first(runs) -> None:
    """15 workers each open a class-0 transfer, then a class-7 one, into h0 (4 granted at a time):
    with layer-class admission h0 takes class 7 from every worker before class 0 (the front layer
    is needed first by the next forward pass, and its pull can start while class 0 is still
    arriving): the last class-7 transfer completes at 0.62 of the last class-0 one (measured
    56.5 vs 91.2 us). Granting whole senders, the longest-waiting first (the transport before), a
    worker's two transfers complete together and the last class-7 one completes with the last
    class-0 one (92.0 vs 92.5 us). Nothing is lost either way."""
    ends = {}
    for knobs in ("class_admission", "by_sender"):
        r = runs[("classes", knobs)]
        assert r.finished and all(t["completed"] for t in r.transfers)
        assert sum(r.counters["tail_drops"].values()) == 0 and sum(t["retx"] for t in r.transfers) == 0
        ends[knobs] = {c: max(t["start_s"] + t["fct_s"] for t in r.transfers if t["layer_class"] == c) for c in (0, 7)}
    assert ends["class_admission"][7] <= 0.75 * ends["class_admission"][0], ends
    assert ends["by_sender"][7] >= 0.9 * ends["by_sender"][0], ends


def test_class_bands_keep_a_granted_sender_on_its_next_class_within_the_band(runs) -> None:
    """15 workers each open classes 0, 3 and 7 into h0 (4 granted at a time). One class at a time
    (classBands 1, the default): h0 takes class 7 from every worker, then 3, then 0, so the last
    class-7 transfer ends at about a third of the run. Two bands (classBands 2): the top two classes
    present (7 and 3) rank as one, so a granted worker keeps its grant from its class-7 transfer into
    its class-3 one; class 7 then ends near class 3, and both before class 0 (pre-empted as before).
    Losses: none with two bands. With one band, the granted senders fill the whole link (grantShare
    1.0, since session 10) with classes 7 then 3, so strict priority gives the pre-empted class-0
    packets already in h0's port no service, and their queue (q1) overflows: 11 DATA tail-dropped
    there (9 retransmitted; with grantShare 0.93 the 7 % headroom drained it, none). Only there."""
    ends = {}
    for knobs in ("bands_1", "bands_2"):
        r = runs[("three", knobs)]
        assert r.finished and all(t["completed"] for t in r.transfers)
        tail = r.counters["tail_drops_by_kind"]
        if knobs == "bands_2":
            assert not tail and sum(t["retx"] for t in r.transfers) == 0, tail
        else:
            assert set(tail) <= {"q1/DATA"} and sum(tail.values()) <= 20, tail
            assert all(t["retx"] == 0 for t in r.transfers if t["layer_class"] != 0)
        ends[knobs] = {c: max(t["start_s"] + t["fct_s"] for t in r.transfers if t["layer_class"] == c) for c in (0, 3, 7)}
    one, two = ends["bands_1"], ends["bands_2"]
    assert one[7] <= 0.5 * one[0] and one[3] <= 0.8 * one[0], one
    assert two[7] / two[0] >= 1.3 * one[7] / one[0] and two[3] <= 0.8 * two[0], (one, two)
