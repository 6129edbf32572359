"""A paced sender wakes once per pair of packets, not once per packet (GrantPacer.wait_time).

At 20 Mbit/s a grant-paced sender used to sleep until its bucket was non-negative and send one
packet per wake-up; the wake-ups, not the packets, were most of the agents' CPU (docs/performance.md,
"Agent CPU"), and on the 2-core Mininet machine that CPU is what starves the software switches.
``wait_time(dest, PACE_PACKETS)`` sleeps until two full packets may go back to back. The bucket
holds at least two full packets, so the rate and the largest burst stay what the grant allows.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_host_ratecontrol import Clock

from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.ratecontrol import CATCH_UP_S, GRANT_BURST_MIN, PACE_PACKETS, WINDOW_PACKET_BYTES, GrantPacer

RATE = 2.5e5                  # bytes/s (2 Mbit/s): 5.9 ms per packet, so a late wake-up cannot blur the pairs
ELEMENTS = 160_000            # digits-wide's hidden layer: 442 packets


def test_wait_time_counts_until_a_pair_may_go_and_the_bucket_holds_it():
    clk = Clock()
    g = GrantPacer(default_rate=1e6, clock=clk)
    d = ("10.0.0.1", 1)
    assert PACE_PACKETS == 2 and GRANT_BURST_MIN >= PACE_PACKETS * WINDOW_PACKET_BYTES
    assert g.burst_bytes(d) >= 2 * WINDOW_PACKET_BYTES
    while g.ready(d):                       # empty the bucket: the last packet leaves a debt
        g.charge(d, WINDOW_PACKET_BYTES)
    debt = -g._refill(d, clk.t)
    assert g.wait_time(d) == pytest.approx(debt / 1e6)                      # one packet: back to >= 0
    assert g.wait_time(d, 2) == pytest.approx((debt + WINDOW_PACKET_BYTES) / 1e6)   # a pair
    clk.t += g.wait_time(d, 2)
    sent = 0
    while g.ready(d):                       # after that sleep two full packets go back to back
        g.charge(d, WINDOW_PACKET_BYTES)
        sent += 1
    assert sent == 2
    assert g.wait_time(d, 0) == g.wait_time(d, 1)   # nothing (or one packet) left: no pair to wait for
    assert GrantPacer(None, clock=clk).wait_time(d, 2) == 0.0                # not bound: never waits


@pytest.mark.timeout(60)
def test_a_paced_sender_sends_pairs_per_wake_up_over_real_sockets(endpoints):
    """A 442-packet layer paced at the sender's link (``RATE``): the loop (``poll`` sleeping in select
    until its timers are due, as the agents run it) sends about two packets per wake-up that sends
    any (one per wake-up before), never more than the bucket holds, and the layer arrives whole."""
    rx = endpoints(job_id=1)                # no link rate: no grants or ACKs wake the sender
    # packet by packet, as in Mininet (UDP GSO batches only towards loopback or with offload "on")
    tx = endpoints(job_id=1, worker_id=0, link_rate=RATE, offload="off")
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)
    stop = threading.Event()

    def serve() -> None:                    # the receiver's loop in its own thread (one endpoint each)
        while not stop.is_set():
            rx.poll(0.01)

    first = tx.send(packetize(np.ones(8, np.float32), tensor_id=1, policy=policy, job_id=1, worker_id=0,
                              iteration=0), rx.address)
    grad = np.arange(ELEMENTS, dtype=np.float32)
    out = np.zeros_like(grad)
    r = rx.expect(0, 0, 2, out)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        while not first.done:
            tx.poll(0.05)
        h = tx.send(packetize(grad, tensor_id=2, policy=policy, job_id=1, worker_id=0, iteration=0), rx.address)
        per_wake, beyond_earned = [], []
        end = time.monotonic() + 30
        while not h.done:
            assert time.monotonic() < end and not h.failed
            before, turn_start = h.tx.stats.packets, time.monotonic()
            tx.poll(0.05)
            if h.tx.stats.packets > before:
                # a turn that sent does not sleep; if the process was descheduled inside it, the grant
                # earned meanwhile may go in the same turn: allow those packets, none for a prompt turn
                earned = int((time.monotonic() - turn_start) * RATE // 1461)
                per_wake.append(h.tx.stats.packets - before)
                beyond_earned.append(per_wake[-1] - earned)
        while not r.done:
            assert time.monotonic() < end
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(5)
    assert np.array_equal(out, grad)
    n = sum(per_wake)
    assert n >= 442
    # the bucket (two full packets), a third on its debt; after a wake-up late by more than ~11 ms (a
    # loaded machine) the catch-up's CATCH_UP_S of the grant (5,000 bytes here: three packets) and one on its debt
    # (counted beyond what the grant earned while the turn itself ran: a turn descheduled mid-batch may send that too)
    assert max(beyond_earned) <= int(max(GRANT_BURST_MIN, RATE * CATCH_UP_S) // 1461) + 1
    assert n / len(per_wake) >= 1.7, f"{n / len(per_wake):.2f} packets per wake-up"
