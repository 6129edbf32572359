"""AIMD pacer: multiplicative decrease on congestion, additive increase, token-bucket pacing.

Driven by an explicit clock so the arithmetic is checked exactly (the live ECN-echo loop is tested
over real sockets in test_host_transport.py)."""

from __future__ import annotations

import pytest

from host_agent.ratecontrol import AimdPacer, RateConfig


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_unpaced_until_first_signal_then_half_measured_rate():
    clk = Clock()
    p = AimdPacer(RateConfig(min_rate=1e3), clock=clk)
    for _ in range(100):                    # 100 kB in 10 ms = 10 MB/s
        assert p.allow(1000)
        clk.t += 0.0001
    assert p.rate is None and p.measured_rate == pytest.approx(1e7, rel=0.05)
    assert p.on_congestion()
    assert p.rate == pytest.approx(p.measured_rate / 2)
    assert not p.on_congestion()            # within decrease_gap: ignored
    clk.t += 0.011
    r = p.rate
    assert p.on_congestion() and p.rate == pytest.approx(r / 2)


def test_additive_increase_and_cap():
    clk = Clock()
    cfg = RateConfig(initial_rate=10e6, max_rate=10.02e6, additive_step=0.01e6, increase_interval=0.005)
    p = AimdPacer(cfg, clock=clk)
    clk.t += 0.005
    p.allow(1)
    assert p.rate == pytest.approx(10.01e6)
    clk.t += 0.05
    p.allow(1)
    assert p.rate == pytest.approx(10.02e6)   # capped at max_rate


def test_token_bucket_paces_to_rate():
    clk = Clock()
    p = AimdPacer(RateConfig(initial_rate=1e6, additive_step=0.0, burst=10_000), clock=clk)
    sent = 0
    for _ in range(100_000):                 # 1 s of simulated time in 10 us steps
        while p.allow(1000):
            sent += 1000
        clk.t += 1e-5
    assert sent == pytest.approx(1e6 + 10_000, rel=0.02)
    assert p.wait_time() > 0


def test_min_rate_floor():
    clk = Clock()
    p = AimdPacer(RateConfig(initial_rate=2e6, min_rate=1.5e6), clock=clk)
    p.on_congestion()
    assert p.rate == 1.5e6


def test_decrease_never_leaves_the_rate_above_what_was_delivered():
    """A sender far above a slow bottleneck lands at the delivered rate in one step."""
    clk = Clock()
    p = AimdPacer(RateConfig(initial_rate=100e6, min_rate=1e3), clock=clk)
    assert p.on_congestion(delivered_rate=2.5e6)
    assert p.rate == 2.5e6
    clk.t += 0.011
    assert p.on_congestion(delivered_rate=10e6)          # delivered above half: plain halving
    assert p.rate == 1.25e6


def test_recovery_scales_with_the_rate_and_decrease_waits_an_rtt():
    clk = Clock()
    cfg = RateConfig(initial_rate=2e6, min_rate=1e3, additive_step=1.0, additive_frac=0.02,
                     increase_interval=0.005)
    p = AimdPacer(cfg, clock=clk)
    p.on_congestion()
    assert p.rate == 1e6 and p.cut_rate == 1e6
    clk.t += 0.005 * 50                                   # 50 intervals of 2 % of 1e6: back to 2e6
    p.allow(1)
    assert p.rate == pytest.approx(2e6)
    p.rtt = 0.05
    clk.t += 0.02
    assert p.on_congestion()
    clk.t += 0.02                                         # 20 ms later: within one RTT, ignored
    assert not p.on_congestion()
    clk.t += 0.04
    assert p.on_congestion()


def test_ecn_cut_is_proportional_to_the_marked_share():
    clk = Clock()
    p = AimdPacer(RateConfig(initial_rate=4e6, min_rate=1e3), clock=clk)
    assert p.on_ecn(0.1)                                  # 10 % marked: -5 %
    assert p.rate == pytest.approx(3.8e6)
    assert not p.on_ecn(1.0)                              # within decrease_gap
    clk.t += 0.011
    assert p.on_ecn(1.0) and p.rate == pytest.approx(1.9e6)   # everything marked: halve


def test_grant_pacer_bounds_each_destination_at_its_grant():
    from host_agent.ratecontrol import GRANT_BURST_MIN, GrantPacer
    clk = Clock()
    g = GrantPacer(default_rate=1e6, clock=clk)
    a, b, c = ("10.0.0.1", 1), ("10.0.0.2", 1), ("10.0.0.3", 1)
    g.grant(a, 1e5)                         # receiver a: 100 kB/s
    sent = 0
    for _ in range(1000):                   # 1 s in 1 ms steps, 1500-byte packets
        while g.ready(a):
            g.charge(a, 1500)
            sent += 1500
        clk.t += 0.001
    assert sent == pytest.approx(1e5 + GRANT_BURST_MIN, abs=1500)   # the rate plus one bucket
    assert g.wait_time(a) > 0 or g.ready(a)
    # b has granted nothing yet: bound by the sender's own link (default_rate), in its own bucket
    assert g.rate(b) == 1e6 and g.ready(b)
    # no link rate known and no grant: not bound at all
    assert GrantPacer(None, clock=clk).ready(c) and GrantPacer(None, clock=clk).wait_time(c) == 0.0
    # a smaller grant takes effect at once: the bucket is clipped to the new (minimum) burst
    clk.t += 10.0
    g.grant(a, 1e4)
    assert g.ready(a)
    for _ in range(3):
        g.charge(a, 1500)                   # 4500 bytes out of a 3000-byte bucket
    assert g.wait_time(a) == pytest.approx((4500 - GRANT_BURST_MIN) / 1e4)


def test_grant_pacer_window_acks_and_write_off():
    from host_agent.ratecontrol import GrantPacer
    clk = Clock()
    g = GrantPacer(default_rate=None, clock=clk)
    d = ("10.0.0.1", 1)
    assert g.window_open(d, 0.1)            # no window from this receiver: not bound
    g.set_window(d, 6)
    for _ in range(6):
        assert g.window_open(d, 0.1)
        g.on_sent(d, 1)
    assert not g.window_open(d, 0.1) and g.in_flight(d) == 6
    assert g.window_wait(d, 0.1) == pytest.approx(0.1)
    g.on_ack(d, 4)                          # the receiver counted 4: two still in flight
    assert g.in_flight(d) == 2 and g.window_open(d, 0.1)
    g.on_ack(d, 3)                          # an older ACK changes nothing
    assert g.in_flight(d) == 2
    g.on_sent(d, 4)
    assert not g.window_open(d, 0.1)
    clk.t += 0.11                           # no ACK progress for the write-off time: presumed lost
    assert g.window_open(d, 0.1) and g.in_flight(d) == 0 and g.window_stalls == 1
    g.on_sent(d, 3)
    g.write_off(d)                          # a round's answer: nothing is in flight any more
    assert g.in_flight(d) == 0


def test_ack_round_trip_is_not_stretched_by_earlier_losses():
    """The smallest ACK round trip (the window's path term) stays the path's after packets were lost.

    ACK counts lag the send log by every packet lost so far; matched against the bare count, each
    sample was dated back by the losses (tcp-bulk: the "minimum" grew ~7 ms per iteration, 4 -> 40 ms,
    H10-3). Sixty tensors of 20 packets over 6 s (the minimum is taken over the last 2-4 s), 2 lost
    from each and written off at the round's answer, with a true round trip of 10 ms; a late ACK of a
    packet written off does not confuse the count either.
    """
    from host_agent.ratecontrol import GrantPacer
    clk = Clock()
    g = GrantPacer(default_rate=1e6, clock=clk)
    d = ("10.0.0.1", 9290)
    g.set_window(d, 1000)
    received = 0
    for tensor in range(60):
        start = clk.t
        for i in range(20):                   # one packet per ms
            clk.t = start + i * 1e-3
            g.on_sent(d, 1)
            if i in (5, 6):
                continue                      # lost on the way
            received += 1
            if received % 4 == 0:             # the receiver ACKs every 4; it arrives 10 ms later
                saved = clk.t
                clk.t += 0.010
                g.on_ack(d, received)
                clk.t = saved
        clk.t = start + 0.029
        g.on_ack(d, received)                 # the exact count, sent just before the DONE
        clk.t = start + 0.030
        g.write_off(d)                        # the round's answer: the rest is lost
        if tensor == 30:                      # a straggler written off turns up in the next count
            received += 1
        clk.t = start + 0.1
    assert g.ack_rtt_min[d] == pytest.approx(0.010, abs=1e-6)
    assert g.in_flight(d) == 0


def test_write_off_bound_follows_the_ack_round_trip():
    """The write-off timer's bound (GrantPacer.write_off_bound): 3 x the first contact's OPEN round trip
    before any ACK; the first ACK sample replaces that seed; then 2 srtt or srtt + 4 rttvar of the ACK
    round trips (RFC 6298 smoothing), whichever is longer."""
    from host_agent.ratecontrol import GrantPacer
    clk = Clock()
    g = GrantPacer(default_rate=None, clock=clk)
    d = ("10.0.0.1", 1)
    assert g.write_off_bound(d) is None               # nothing known: the endpoint's floor alone
    g.seed_rtt(d, 0.15)
    assert g.write_off_bound(d) == pytest.approx(0.45)
    g.set_window(d, 40)
    g.on_sent(d, 4)
    clk.t += 0.2                                      # the first ACK: a 0.2 s round trip
    g.on_ack(d, 4)
    assert g.write_off_bound(d) == pytest.approx(0.2 + 4 * 0.1)   # srtt 0.2, rttvar 0.1 (not the seed's)
    for k in range(2, 42):                            # a steady 0.2 s: rttvar decays, 2 srtt remains
        g.on_sent(d, 4)
        clk.t += 0.2
        g.on_ack(d, 4 * k)
    assert g.write_off_bound(d) == pytest.approx(0.4, rel=1e-3)
