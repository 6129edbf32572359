"""The first transmission's LAST DATA packet as an implicit PROBE (``last_as_probe``), with real sockets.

A shed tensor (test_host_shed_droppable.py) never has all its packets at the receiver, so it could finish
only through its PROBE: a lost PROBE cost it a whole RTO. With ``last_as_probe`` (ns-3's ``lastAsProbe``) the
receiver takes the first transmission's LAST packet, arriving before any PROBE, as PROBE(0): DONE when the loss
bound is met, else BITMAP(0) after the hold-off (a packet reordered behind LAST within it is not asked for),
then DONE on the DATA that meets the bound. The PROBEs are dropped by a real relay (``LossyRelay``'s raw rule, each header decoded with the agent's own
parser); the sender's RTO is made long (3 s) so that waiting for it cannot pass for finishing without it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from host_helpers import agent_switch, run_both
from test_host_shed_droppable import LINK, expected_shed, tensor

from host_agent import protocol as P
from host_agent.endpoint import EndpointConfig
from host_agent.errors import UserError
from host_agent.relay import DROP, FORWARD, LossyRelay

RTO = 3.0                    # the sender's first re-probe: the old code's cost of a lost PROBE


class DropFirstProbe:
    """Raw rule: drop the first PROBE of each tensor; optionally drop packet ``drop``'s first transmission, or
    hold packet ``hold`` back and send it ``delay`` s after the first transmission's LAST went through
    (reordering behind LAST)."""

    def __init__(self, relay_box: list, hold: int | None = None, delay: float = 0.02,
                 drop: int | None = None) -> None:
        self.relay_box = relay_box
        self.hold, self.delay, self.drop = hold, delay, drop
        self.probes_dropped = 0
        self.held: bytes | None = None
        self.released_at: float | None = None
        self._probed: set[int] = set()

    def __call__(self, data: bytes) -> int:
        h = P.DlcpHeader.unpack(data)
        if h.msg_type == P.MSG_PROBE and h.tensor_id not in self._probed:
            self._probed.add(h.tensor_id)
            self.probes_dropped += 1
            return DROP
        if h.msg_type == P.MSG_DATA and not h.flags & P.FLAG_RETX:
            if h.offset // 362 == self.drop:
                return DROP
            if self.hold is not None and h.offset // 362 == self.hold:
                self.held = data
                return DROP
            if h.flags & P.FLAG_LAST and self.held is not None:
                threading.Timer(self.delay, self._release).start()
        return FORWARD

    def _release(self) -> None:
        relay = self.relay_box[0]
        next(iter(relay.upstream.values())).sendto(self.held, relay.target)   # from the relay's own port
        self.released_at = time.monotonic()


def run_dropping_probes(endpoints, seed: int, tid: int, last_as_probe: bool, rx_kw: dict | None = None, **rule_kw):
    g, pt = tensor(seed, tid=tid)
    rx = endpoints(job_id=1, link_rate=LINK, shed_senders=0, last_as_probe=last_as_probe, **(rx_kw or {}))
    tx = endpoints(job_id=1, worker_id=1, rto_initial=RTO, rto_max=RTO)
    box: list = []
    rule = DropFirstProbe(box, **rule_kw)
    out = np.full_like(g, np.nan)
    with LossyRelay(rx.address, raw_rule=rule) as relay:
        box.append(relay)
        recv = rx.expect(1, 0, tid, out)
        send = tx.send(pt, relay.address)
        t0 = time.monotonic()
        run_both(tx, [send], rx, [recv], timeout=25.0)
        took = time.monotonic() - t0
    assert rule.probes_dropped == 1
    return g, pt, rx, send, recv, out, rule, took


@pytest.mark.parametrize("last_as_probe", [True, False])
def test_shed_tensor_whose_probe_is_lost_completes_without_an_rto(endpoints, last_as_probe):
    """The receiver holds its one sender (shed_senders=0), so the gradient is shed and can never be whole;
    its PROBE is dropped. With last_as_probe it completes at its LAST packet (the bound is met there), long
    before the sender's 3 s RTO; without it the receiver waits for the re-probe that the RTO brings."""
    g, pt, rx, send, recv, out, _rule, took = run_dropping_probes(endpoints, 5, 7, last_as_probe)
    shed = expected_shed(pt)
    assert shed.size >= 10 and send.stats.shed == shed.size
    assert send.stats.retransmitted == 0
    assert recv.stats.zero_filled_packets == shed.size
    want = g.reshape(-1, 362).copy()
    want[shed] = 0.0
    assert np.array_equal(out, want.reshape(-1))
    if last_as_probe:
        assert took < RTO / 2, took
        assert send.stats.probes == 1                     # the lost one: no re-probe was needed
        assert rx.counters()["last_probe_completions"] == 1
    else:
        assert took >= RTO, took
        assert send.stats.probes == 2
        assert rx.counters()["last_probe_completions"] == 0


@pytest.mark.parametrize("last_as_probe", [True, False])
def test_bound_not_met_at_last_answers_bitmap_without_the_probe(endpoints, last_as_probe):
    """A CRITICAL packet's first transmission and the PROBE are dropped: at LAST the bound is not met, so the
    receiver answers BITMAP(0) once DATA is quiet, as to PROBE(0); the sender repairs at once and the tensor
    completes long before the 3 s RTO. Without last_as_probe only the re-probe after the RTO gets a BITMAP."""
    g, pt = tensor(8, tid=10)
    lost = int(np.flatnonzero(pt.critical[:-1])[0])
    g, pt, rx, send, recv, out, _rule, took = run_dropping_probes(endpoints, 8, 10, last_as_probe, drop=lost)
    assert recv.stats.missing_critical == 0 and send.stats.retransmitted >= 1
    assert np.array_equal(out.reshape(-1, 362)[lost], g.reshape(-1, 362)[lost])
    if last_as_probe:
        assert took < RTO / 2, took
        assert send.stats.probes == 2                     # the lost PROBE(0), then PROBE(1) after the repair
    else:
        assert took >= RTO, took
        assert send.stats.probes == 3                     # and the re-probe after the RTO


def test_data_reordered_behind_last_is_accepted_not_zero_filled(endpoints):
    """A CRITICAL packet (not LAST) held back and delivered 20 ms after LAST, within the hold-off (0.1 s here):
    at LAST the bound is not met (a critical packet is missing), so the receiver neither finishes nor asks for
    it; the late packet is accepted, meets the bound, and completes the tensor then, with no repair round (its
    PROBE was lost: no RTO waited)."""
    g, pt = tensor(6, tid=8)
    hold = int(np.flatnonzero(pt.critical[:-1])[0])
    g, pt, rx, send, recv, out, rule, took = run_dropping_probes(
        endpoints, 6, 8, True, rx_kw={"probe_holdoff": 0.1}, hold=hold)
    shed = expected_shed(pt)
    assert rule.released_at is not None
    assert hold not in shed
    assert recv.stats.zero_filled_packets == shed.size and recv.stats.missing_critical == 0
    assert np.array_equal(out.reshape(-1, 362)[hold], g.reshape(-1, 362)[hold])   # its values, not zeros
    assert send.stats.retransmitted == 0 and send.stats.probes == 1
    assert took < RTO / 2, took
    assert rx.counters()["last_probe_completions"] == 1


def test_explicit_probe_still_completes_first(endpoints):
    """Nothing lost: the tensor completes as before (every packet here), and no completion is credited to
    the implicit PROBE (a whole tensor completes on its own)."""
    g, pt = tensor(7, tid=9)
    rx = endpoints(job_id=1, link_rate=LINK, last_as_probe=True)
    tx = endpoints(job_id=1, worker_id=1)
    out = np.full_like(g, np.nan)
    recv = rx.expect(1, 0, 9, out)
    run_both(tx, [tx.send(pt, rx.address)], rx, [recv], timeout=25.0)
    assert np.array_equal(out, g)
    assert rx.counters()["last_probe_completions"] == 0


def test_agent_switch_and_environment(monkeypatch):
    """dlcp-agent's --last-as-probe/--no-last-as-probe, else DLCP_LAST_AS_PROBE, else on; a bad value of the
    variable is a clear error naming it."""
    cases = [([], None, True), (["--no-last-as-probe"], None, False), ([], "0", False),
             (["--last-as-probe"], "0", True)]          # the flag wins over the environment
    for argv, env, want in cases:
        assert agent_switch(monkeypatch, "DLCP_LAST_AS_PROBE", env, argv, "last_as_probe") is want, (argv, env)
    monkeypatch.setenv("DLCP_LAST_AS_PROBE", "on")
    with pytest.raises(UserError, match="DLCP_LAST_AS_PROBE='on': 0 or 1"):
        EndpointConfig()
