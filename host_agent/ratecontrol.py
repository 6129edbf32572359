"""ECN-echo AIMD rate control with a token-bucket pacer (one per destination of an endpoint).

The switch marks ECN CE on ECN-capable DLCP packets above a queue depth and drops low-magnitude
packets above a deeper one; the receiver echoes CE marks (CONTROL/ECN_ECHO, and in BITMAP rounds
that show loss). Each congestion signal halves the sending rate at most once per ``decrease_gap``
(or per measured RTT, when longer), and never leaves it above the delivery rate the receiver
reported (so a sender that blasted far beyond a slow bottleneck lands at its share in one step,
not after log2(excess) round trips); every ``increase_interval`` without a signal adds
``additive_step`` or ``additive_frac`` of the rate set by the last decrease, whichever is larger
(scale-free: at 20 Mbit/s and at loopback speed a halved rate recovers in about 0.25 s). Until the
first signal the sender runs at ``initial_rate`` (None = unpaced, useful on loopback).

``GrantPacer`` bounds each destination separately: at the rate the receiver granted us
(receiver-driven admission, CONTROL/GRANT), or at our own link rate before a grant. See
docs/transport.md.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class RateConfig:
    initial_rate: float | None = None     # bytes/s; None = unpaced until congestion is seen
    max_rate: float | None = None         # bytes/s cap for additive increase (None = no cap)
    min_rate: float = 2e5                 # bytes/s floor (1.6 Mbit/s)
    additive_step: float = 1e4            # bytes/s added per increase_interval, at least
    additive_frac: float = 0.02           # ... or this share of the rate set by the last decrease
    increase_interval: float = 0.005      # s
    decrease_gap: float = 0.010           # s: at most one halving per gap (≈ one RTT of reaction)
    burst: int = 64 * 1024                # bytes the bucket may hold


class AimdPacer:
    """Token bucket whose rate follows AIMD; ``allow(nbytes)`` says whether a packet may go now."""

    def __init__(self, cfg: RateConfig | None = None, clock=time.monotonic) -> None:
        self.cfg = cfg or RateConfig()
        self.clock = clock
        self.rate: float | None = self.cfg.initial_rate
        now = clock()
        self.tokens = float(self.cfg.burst)
        self.last_refill = now
        self.last_decrease = -1e9
        self.last_increase = now
        self.decreases = 0
        self.cut_rate = 0.0               # rate set by the last decrease (additive_frac base)
        self.rtt = 0.0                    # smoothed RTT hint from the endpoint (decrease gap)
        # send-rate estimate, used as the starting point of the first decrease when unpaced
        self._win_start = now
        self._win_bytes = 0
        self.measured_rate = 0.0

    def _refill(self, now: float) -> None:
        if self.rate is None:
            return
        steps = int((now - self.last_increase) / self.cfg.increase_interval + 1e-9)
        if steps > 0:
            self.rate += steps * max(self.cfg.additive_step, self.cfg.additive_frac * self.cut_rate)
            if self.cfg.max_rate is not None:
                self.rate = min(self.rate, self.cfg.max_rate)
            self.last_increase += steps * self.cfg.increase_interval
        self.tokens = min(float(self.cfg.burst), self.tokens + (now - self.last_refill) * self.rate)
        self.last_refill = now

    def allow(self, nbytes: int) -> bool:
        """True (and the bytes are charged) when the packet may be sent now."""
        now = self.clock()
        self._count(now, nbytes)
        if self.rate is None:
            return True
        self._refill(now)
        if self.tokens >= 0:
            self.tokens -= nbytes
            return True
        self._win_bytes -= nbytes
        return False

    def wait_time(self) -> float:
        """Seconds until the bucket is non-negative again (0 when unpaced)."""
        if self.rate is None or self.tokens >= 0:
            return 0.0
        return -self.tokens / self.rate

    def _count(self, now: float, nbytes: int) -> None:
        self._win_bytes += nbytes
        span = now - self._win_start
        if span >= 0.005:
            self.measured_rate = self._win_bytes / span
            self._win_start = now
            self._win_bytes = 0

    def on_congestion(self, delivered_rate: float | None = None) -> bool:
        """Multiplicative decrease (once per decrease_gap or RTT); True when the rate was cut.

        ``delivered_rate`` (bytes/s the receiver actually got, from a BITMAP) caps the new rate.
        """
        now = self.clock()
        if now - self.last_decrease < max(self.cfg.decrease_gap, self.rtt):
            return False
        new = self._base() / 2
        if delivered_rate is not None and delivered_rate > 0:
            new = min(new, delivered_rate)
        self._cut(now, new)
        return True

    def on_ecn(self, marked_fraction: float) -> bool:
        """DCTCP-like decrease for CE marks: cut by half the share of packets marked since the
        last cut (all marked: halve; a few: a few percent), once per decrease_gap or RTT.

        Marks mean a queue passed the marking depth, not that anything was lost, so a light
        marking rate must not halve the sender the way loss does.
        """
        now = self.clock()
        if now - self.last_decrease < max(self.cfg.decrease_gap, self.rtt):
            return False
        frac = min(1.0, max(0.0, marked_fraction))
        self._cut(now, self._base() * (1.0 - frac / 2))
        return True

    def _base(self) -> float:
        return self.rate if self.rate is not None else max(self.measured_rate, 2 * self.cfg.min_rate)

    def _cut(self, now: float, new: float) -> None:
        self.rate = max(self.cfg.min_rate, new)
        self.cut_rate = self.rate
        self.last_decrease = now
        self.last_increase = now
        self.last_refill = now
        self.tokens = min(self.tokens, float(self.cfg.burst))
        self.decreases += 1


WINDOW_PACKET_BYTES = 1514   # bytes a window's packet is counted as (a full DLCP frame)
GRANT_BURST_S = 0.002        # a destination's bucket holds this many seconds of its grant ...
PACE_PACKETS = 2             # ... at least this many full packets, and a paced sender wakes for that many
GRANT_BURST_MIN = PACE_PACKETS * WINDOW_PACKET_BYTES   # (the default pace's smallest bucket)
# A sender with DATA waiting for a destination (``GrantPacer.set_backlog``) may catch up on this much of
# its grant that it missed: its bucket holds up to CATCH_UP_S of the grant, not GRANT_BURST_S. After a
# late wake-up (a descheduled agent on a loaded machine) or a late ACK that held its window, it sends
# the packets the grant allowed since, back to back, instead of losing that link time (a sender that
# woke late by d with a 2-packet bucket lost d - 3.6 ms of its grant at a third of 20 Mbit/s; the
# receiver's link went to lower-priority traffic meanwhile). The window still bounds what is in flight
# (the receiver's share of the queue), so the catch-up is at most a window. An idle sender's bucket
# stays GRANT_BURST_S: a tensor that starts after a pause does not burst. 20 ms as p4sim's traffic
# manager lets a late link catch up (switch/tm.py) and BMv2's rate limiter does by construction.
# Measured (H10b, session 11): docs/performance.md section 7.2, docs/experiments-history.md.
CATCH_UP_S = 0.020
RTT_MIN_WINDOW = 2.0         # s: the smallest ACK round trip is taken over this long (the path changes)
# The window's path term (grant x smallest ACK round trip, on top of the receiver's queue share), at
# most this share of the receiver's window. Off: measured twice it made tcp-bulk slower. H10-2: the
# deeper queues drew ECN marks and one endpoint-wide AIMD pacer held the fan-out 0.5-1.5 s. H10-3, with
# the AIMD per destination and no echo of marks a receiver's own full link set (04:36-04:45 UTC, load
# 1.4-6.5, results/h10a-3/bulk-final and bulk-path0, 5 seeds each): DLCP median 1.74 s, p99 2.29 s with
# it (0.5), 1.62 s and 1.71 s without (0). H10a session 8 (tcp-bulk, a stated CPU load of 0.5 core, 5
# seeds x 8 it., every run CPU-starved), the smoothed round trip and at most 0.4 of the window: job time
# unchanged (before / with 0.998 [0.84, 1.21]), the ACK round trip grew with the window (largest srtt
# 119 -> 129 ms: the packets queue at the starved switches, not on an idle path), selective drops
# 629 -> 948 per run, DLCP-queue tail drops 10 -> 74.
# Kept measurable (> 0) for such studies.
PATH_SHARE_MAX = 0.0
# The round trip the path term covers: the smallest ACK round trip of the last 2-4 s (False), or the
# smoothed one (True): on software switches the ACKs' round trip swings with the switches' CPU.
PATH_RTT_SMOOTHED = False
CRITICAL_CLASS = 16          # ``on_sent``'s class code of a CRITICAL packet (never droppable by design)


class GrantPacer:
    """Per-destination token buckets: never send to a receiver faster than it granted.

    A receiver that knows its link rate grants each sender ``link / active senders``
    (CONTROL/GRANT, receiver.py); before the first grant from a destination a sender uses
    ``default_rate`` (its own link rate, None = no per-destination bound). Grants persist across
    tensors and iterations: the next tensor to the same receiver starts at the last granted rate.
    The bucket is small (``GRANT_BURST_S`` of the rate), so six senders starting together put a
    few packets each into the receiver's queue, not a window each; while the sender has DATA waiting
    for the destination (``set_backlog``) it holds up to ``CATCH_UP_S`` of the grant, so link time
    missed to a late wake-up or a late ACK is sent back to back afterwards instead of lost. The endpoint's AimdPacer of that
    destination still applies on top (congestion the receiver cannot see, e.g. a spine).

    A receiver that grants also gives a window (packets in flight, its share of a queue) and
    acknowledges every few DATA packets (CONTROL/ACK, cumulative per sender), so a sender stops
    after its window when the path stalls (a descheduled software switch that would otherwise take
    a rate's worth of backlog and release it into one queue at once) instead of pacing on into it.
    The receiver's window is its share of a queue; ``PATH_SHARE_MAX`` > 0 adds the packets the grant
    keeps on the path for one round trip without queueing (grant x the smallest ACK round trip of
    the last 2-4 s, at most ``PATH_SHARE_MAX`` of the window).

    Only protected packets are windowed once the receiver's ACKs say which of ours it counted as
    droppable by design (ACK format 2, ``protocol.ACK_BODY_SPLIT``): a packet the switch drops by
    design (not CRITICAL, magnitude class below the receiver's protected class) is never
    acknowledged, and counted in flight it held a window slot until a write-off (``max(0.1 s, 2
    RTO)``; a 442-packet layer with 41 such drops stalled once per tensor). Those packets are paced
    by the grant only; the loss budget bounds them (the packetizer tags at most floor(p * n_nc) of a
    tensor droppable). Against a receiver that sends ACK format 1 every packet is windowed.

    A closed window's packets are written off (presumed lost) after a time without ACK progress that
    the endpoint chooses (``endpoint._write_off``), at least ``write_off_bound``: what an ACK can take
    on this path by its measured round trips.
    """

    def __init__(self, default_rate: float | None = None, clock=time.monotonic,
                 pace_packets: int = PACE_PACKETS) -> None:
        self.default_rate = default_rate
        self.clock = clock
        self.pace_packets = max(1, pace_packets)   # full packets per paced wake-up (``wait_time``)
        self.rates: dict = {}          # dest -> granted bytes/s
        self._tokens: dict = {}        # dest -> bytes (may go negative: the debt of the last packet)
        self._refilled: dict = {}      # dest -> time of the last refill
        self.grants_received = 0
        # window (receivers that grant also acknowledge): DATA packets in flight per destination
        self.windows: dict = {}        # dest -> packets it lets us have in flight
        self._sent: dict = {}          # dest -> DATA packets sent to it (all tensors)
        self._acked: dict = {}         # dest -> DATA packets it reported received (CONTROL/ACK)
        self._written_off: dict = {}   # dest -> windowed packets presumed lost (no ACK for them in time)
        # the split (ACK format 2): per destination, our non-critical packets sent by magnitude class,
        # the receiver's protected class, and of the packets sent / acknowledged the droppable ones
        self._sent_by_class: dict = {}  # dest -> count per class code (0..15, CRITICAL_CLASS)
        self._protected: dict = {}     # dest -> protected class of its last format-2 ACK (absent: no split)
        self._sent_droppable: dict = {}   # dest -> sent packets with a class below it (not windowed)
        self._acked_droppable: dict = {}  # dest -> droppable packets it reported received
        self._lost_before: dict = {}   # dest -> packets lost before the last round's answer (exact)
        self._progress: dict = {}      # dest -> when the in-flight count last went down
        self.window_stalls = 0         # times a window was written off for want of ACKs
        # ACK round trips: (DATA count sent, when) per destination; the smallest sample is the path's
        # round trip without queueing (what a window must cover to keep the link busy)
        self._sent_at: dict = {}       # dest -> deque of (cumulative sent, time)
        self.ack_rtt_min: dict = {}    # dest -> seconds
        self.ack_srtt: dict = {}       # dest -> smoothed ACK round trip (s), what the ACKs take now
        self._rtt_min_at: dict = {}    # dest -> (window start, its smallest sample, the previous window's)
        self.window_peak: dict = {}    # dest -> largest window_limit used (packets)
        # the write-off timer's round trip: ack_srtt and this variation of the ACK round trips per destination
        # (RFC 6298 smoothing); before the first ACK sample the first contact's OPEN round trip (seed_rtt)
        self._ack_rttvar: dict = {}
        self._rtt_seed: dict = {}
        # catch-up (CATCH_UP_S): destinations we have DATA waiting for, and what the catch-up did
        self._backlog: frozenset = frozenset()
        self.caught_up_bytes = 0       # bytes sent on credit beyond the idle bucket (missed link time made up)
        self.clipped_s = 0.0           # seconds of grant missed while backlogged beyond CATCH_UP_S (lost)

    def rate(self, dest) -> float | None:
        return self.rates.get(dest, self.default_rate)

    def grant(self, dest, rate: float) -> None:
        """A receiver's new grant (bytes/s) for us; takes effect for the next packet."""
        self.grants_received += 1
        self._refill(dest, self.clock())
        self.rates[dest] = max(1.0, float(rate))
        self._tokens[dest] = min(self._tokens.get(dest, 0.0), self._cap(dest, self.rates[dest]))

    def set_backlog(self, dests) -> None:
        """The destinations we have DATA waiting for now (the endpoint says so each loop turn).

        While a destination is in it, its bucket fills up to CATCH_UP_S of the grant (a late wake-up or
        a late ACK is made up); time before it joined earns only the idle bucket, and when it leaves
        (nothing more to send) the bucket is cut back to the idle bucket.
        """
        if dests == self._backlog:
            return
        now = self.clock()
        for d in self._backlog - dests:          # nothing more to send: back to the idle bucket
            rate = self.rate(d)
            if rate is not None and d in self._refilled:
                self._tokens[d] = min(self._refill(d, now), self._burst(rate))
        for d in dests - self._backlog:          # the idle time so far earns the idle bucket only
            self._refill(d, now)
        self._backlog = frozenset(dests)

    def set_window(self, dest, packets: int) -> None:
        self.windows[dest] = max(1, int(packets))

    def on_sent(self, dest, packets: int, classes: Sequence[int] = ()) -> None:
        """``packets`` DATA packets left for ``dest``; ``classes``: each one's magnitude class, or
        ``CRITICAL_CLASS`` for a CRITICAL one (empty: not known, all count as protected).

        Counted for every destination, windowed or not yet: a receiver that grants counts every DATA
        packet from us in its ACKs, those sent before its first GRANT reached us included (the first
        packets of a tensor whose GRANT was lost or is still on its way). Counted only once the window
        was known (until session 12), they raised the ACKed count above the sent one, and the window
        under-counted what was in flight by that many for the rest of the run.
        """
        now = self.clock()
        if self.in_flight(dest) == 0:
            self._progress[dest] = now                # the write-off timer runs from here
        if classes:
            by_class = self._sent_by_class.get(dest)
            if by_class is None:
                by_class = self._sent_by_class[dest] = [0] * (CRITICAL_CLASS + 1)
            protected = self._protected.get(dest, 0)
            for c in classes:
                by_class[c] += 1
                if c < protected:
                    self._sent_droppable[dest] = self._sent_droppable.get(dest, 0) + 1
        self._sent[dest] = self._sent.get(dest, 0) + packets
        marks = self._sent_at.setdefault(dest, collections.deque(maxlen=4096))
        marks.append((self._sent[dest], now))

    def on_ack(self, dest, received: int, droppable: int | None = None, protected: int = 0) -> None:
        """The receiver's cumulative DATA count from us (monotonic; older ACKs are ignored); with ACK
        format 2 also the droppable packets among them and the protected class it counted with.

        Never more than we sent: a count above it (a packet duplicated on the way) is taken as all sent.
        """
        received = min(received, self._sent.get(dest, 0))
        if received > self._acked.get(dest, 0):
            now = self.clock()
            before = self._windowed_acked(dest)
            self._acked[dest] = received
            self._acked_droppable[dest] = droppable or 0
            self._set_split(dest, protected if droppable is not None else 0)
            if self._windowed_acked(dest) > before:
                self._progress[dest] = now
            sent = self._sent.get(dest, 0)
            lost = self._lost_before.get(dest, 0)
            if received + lost > sent:            # packets counted lost turned up after all
                lost = self._lost_before[dest] = max(0, sent - received)
            marks = self._sent_at.get(dest)
            sent_at = None
            # the packet that completed this count is the (received + lost)-th sent, lost = the packets
            # lost before the last round's answer: matching the bare count against the send log dated
            # every sample back by all packets lost so far (the "minimum" grew 4 -> 40 ms over a
            # tcp-bulk run, H10-3); losses since that answer still lengthen samples, never shorten them
            while marks and marks[0][0] <= received + lost:
                sent_at = marks.popleft()[1]
            if sent_at is not None:
                # the packet that completed this count left at sent_at or later (later when packets
                # were lost: then the sample is too long, never too short); the smallest sample of
                # this and the previous RTT_MIN_WINDOW is the path's round trip
                sample = now - sent_at
                start, current, previous = self._rtt_min_at.get(dest, (now, sample, sample))
                if now - start > RTT_MIN_WINDOW:
                    start, current, previous = now, sample, current
                else:
                    current = min(current, sample)
                self._rtt_min_at[dest] = (start, current, previous)
                self.ack_rtt_min[dest] = min(current, previous)
                srtt = self.ack_srtt.get(dest)
                if srtt is None:
                    self.ack_srtt[dest], self._ack_rttvar[dest] = sample, sample / 2
                else:
                    self._ack_rttvar[dest] = 0.75 * self._ack_rttvar[dest] + 0.25 * abs(srtt - sample)
                    self.ack_srtt[dest] = srtt + (sample - srtt) / 8

    def seed_rtt(self, dest, sample: float) -> None:
        """A round trip to ``dest`` measured before any ACK (the first contact's OPEN -> OPEN_ACK): the
        write-off timer's estimate until the first ACK sample replaces it."""
        if sample >= 0:
            self._rtt_seed[dest] = sample

    def write_off_bound(self, dest) -> float | None:
        """How long an ACK may take before the window's packets are presumed lost: a round trip could have
        completed twice, or srtt + 4 rttvar of the ACK round trips if longer; before the first ACK sample
        3 x the seed (RFC 6298's first RTO: srtt + 4 x srtt / 2). None: no round trip known."""
        srtt = self.ack_srtt.get(dest)
        if srtt is None:
            seed = self._rtt_seed.get(dest)
            return None if seed is None else 3 * seed
        return max(2 * srtt, srtt + 4 * self._ack_rttvar[dest])

    def window_limit(self, dest) -> int | None:
        """Packets we may have in flight to ``dest``: its window plus our path's share (None: unbound)."""
        window = self.windows.get(dest)
        if window is None:
            return None
        rtt, rate = (self.ack_srtt if PATH_RTT_SMOOTHED else self.ack_rtt_min).get(dest), self.rate(dest)
        if rtt and rate:
            window += min(int(window * PATH_SHARE_MAX), int(rate * rtt / WINDOW_PACKET_BYTES))
        if window > self.window_peak.get(dest, 0):
            self.window_peak[dest] = window
        return window

    def _set_split(self, dest, protected: int) -> None:
        """Window only packets of class >= ``protected`` from now on (0: every packet)."""
        if self._protected.get(dest, 0) == protected:
            return
        if protected:
            self._protected[dest] = protected
        else:
            self._protected.pop(dest, None)
        self._sent_droppable[dest] = sum(self._sent_by_class.get(dest, [])[:protected])
        # what was written off counted on the old basis: never more than is in flight on the new one
        self._written_off[dest] = max(0, min(self._written_off.get(dest, 0),
                                             self._windowed_sent(dest) - self._windowed_acked(dest)))

    def _windowed_sent(self, dest) -> int:
        return self._sent.get(dest, 0) - self._sent_droppable.get(dest, 0)

    def _windowed_acked(self, dest) -> int:
        return self._acked.get(dest, 0) - (self._acked_droppable.get(dest, 0) if dest in self._protected else 0)

    def unwindowed_sent(self) -> int:
        """Packets sent (all destinations) that no window counted: droppable by design."""
        return sum(self._sent_droppable.values())

    def in_flight(self, dest) -> int:
        """Windowed packets sent to ``dest`` and neither acknowledged nor written off."""
        return max(0, self._windowed_sent(dest) - self._windowed_acked(dest) - self._written_off.get(dest, 0))

    def window_open(self, dest, write_off_after: float) -> bool:
        """True when one more packet may go to ``dest`` without exceeding its window.

        Packets not acknowledged within ``write_off_after`` of the last progress are presumed lost
        (selective drop, tail drop) and stop counting, so losses cannot close the window for good;
        a path that stalls (a descheduled software switch) holds at most a window per write-off.
        """
        window = self.window_limit(dest)
        if window is None:
            return True
        flight = self.in_flight(dest)
        if flight < window:
            return True
        if self.clock() - self._progress.get(dest, 0.0) >= write_off_after:
            self._written_off[dest] = self._written_off.get(dest, 0) + flight
            self._progress[dest] = self.clock()
            self.window_stalls += 1
            return True
        return False

    def write_off(self, dest, lost: int | None = None) -> None:
        """Nothing is in flight to ``dest`` any more (a round's answer came): forget the rest.

        ``lost``: how many of our packets the answer says were lost (a DONE's count, for a tensor too
        small for the receiver's exact ACK before its DONE, receiver.ACK_EVERY). Then only those, on
        top of what was written off before, stop counting: the rest arrived and the receiver's next
        ACK counts them (it acknowledges every few packets). Written off too, they made the window
        under-count what was in flight by up to ACK_EVERY - 1 packets after each such tensor (until the
        next answer).
        None: everything unacknowledged is lost (the receiver's exact ACK came before its answer).
        """
        unacked = self._windowed_sent(dest) - self._windowed_acked(dest)
        behind = self._sent.get(dest, 0) - self._acked.get(dest, 0)
        if lost is None:
            self._written_off[dest] = unacked
            self._lost_before[dest] = behind
        else:
            self._written_off[dest] = min(unacked, self._written_off.get(dest, 0) + lost)
            self._lost_before[dest] = min(behind, self._lost_before.get(dest, 0) + lost)
        self._progress[dest] = self.clock()

    def window_wait(self, dest, write_off_after: float) -> float:
        """Seconds until a closed window is written off (0 when open or not bound)."""
        window = self.window_limit(dest)
        if window is None or self.in_flight(dest) < window:
            return 0.0
        return max(0.0, self._progress.get(dest, 0.0) + write_off_after - self.clock())

    def _burst(self, rate: float) -> float:
        return max(self.pace_packets * WINDOW_PACKET_BYTES, rate * GRANT_BURST_S)

    def _cap(self, dest, rate: float) -> float:
        """Most bytes ``dest``'s bucket holds: CATCH_UP_S of the grant while we have DATA for it."""
        burst = self._burst(rate)
        return max(burst, rate * CATCH_UP_S) if dest in self._backlog else burst

    def _refill(self, dest, now: float) -> float:
        rate = self.rate(dest)
        if rate is None:
            return 0.0
        last = self._refilled.get(dest)
        if last is None:
            tokens = self._tokens.get(dest, self._burst(rate))
        else:
            tokens = self._tokens[dest] + (now - last) * rate
            cap = self._cap(dest, rate)
            if tokens > cap:
                if dest in self._backlog:
                    self.clipped_s += (tokens - max(cap, self._tokens[dest])) / rate
                tokens = cap
        self._tokens[dest] = tokens
        self._refilled[dest] = now
        return tokens

    def burst_bytes(self, dest) -> float | None:
        """Most bytes ``dest``'s bucket may release at once (None: not bound)."""
        rate = self.rate(dest)
        return None if rate is None else self._burst(rate)

    def ready(self, dest) -> bool:
        """True when a packet may go to ``dest`` now (charge it with ``charge`` once sent)."""
        return self.rate(dest) is None or self._refill(dest, self.clock()) >= 0

    def charge(self, dest, nbytes: int) -> None:
        rate = self.rate(dest)
        if rate is not None:
            tokens = self._tokens.get(dest, 0.0)
            if dest in self._backlog and tokens > (burst := self._burst(rate)):
                self.caught_up_bytes += int(min(nbytes, tokens - burst))
            self._tokens[dest] = tokens - nbytes

    def wait_time(self, dest, packets: int = 1) -> float:
        """Seconds until ``packets`` full packets may go to ``dest`` back to back (0 when not bound).

        A paced sender sleeps this long: asked for ``pace_packets`` (2 by default) it wakes once per
        that many packets instead of once per packet (the bucket's debt rule lets the last of them
        go at >= 0 tokens, and the bucket holds them), which halves the agent's wake-ups at the
        price of a pair's burst at the grant; the average rate is the grant's either way.
        """
        rate = self.rate(dest)
        if rate is None:
            return 0.0
        tokens = self._refill(dest, self.clock())
        need = min((max(1, packets) - 1) * WINDOW_PACKET_BYTES, self._burst(rate) - WINDOW_PACKET_BYTES)
        return 0.0 if tokens >= need else (need - tokens) / rate
