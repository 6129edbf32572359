"""Receiver-driven admission (CONTROL/GRANT) with real sockets: 6 (or 12) senders into one receiver.

The senders reach the receiver through ``Bottleneck``, a relay on real UDP sockets that emulates
one switch port: a FIFO of ``depth`` packets drained at ``rate`` bytes/s, tail drop when full.
Queue occupancy is computed from the kernel's receive timestamps (SO_TIMESTAMPNS), so a relay
thread that is descheduled for a while does not invent a burst. Without grants six unpaced
senders overrun the queue (the incast of docs/experiments-history.md); with grants the receiver shares
its link among them and the queue never overflows. With ``stall`` the relay also behaves like a
descheduled software switch (it stops reading for a while and loses that link time): then only
the window (ACK-clocked packets in flight) keeps the backlog within the queue.
"""

from __future__ import annotations

import collections
import select
import socket
import threading
import time

import numpy as np
import pytest
from cpu_wait import SO_TIMESTAMPNS, CpuWait, kernel_time

from host_agent import endpoint, ratecontrol, receiver
from host_agent import protocol as P
from host_agent.packetizer import packetize
from host_agent.policy import TagPolicy
from host_agent.receiver import GRANT_SHARE

WIRE_OVERHEAD = 42            # Ethernet + IPv4 + UDP bytes around a DLCP datagram
LINK = 1.5e6                  # bytes/s of the emulated receiver link (12 Mbit/s)
DEPTH = 64                    # packets, as the Mininet studies' queues
SENDERS = 6
PACKETS = 160                 # per sender: 960 packets, ~0.9 s at LINK
DRIVE_TIMEOUT = 60.0          # s a transfer may take (a starved machine) before the test fails


class Bottleneck:
    """Relay whose client->target direction is one rate-limited, tail-dropping FIFO port."""

    def __init__(self, target: tuple[str, int], rate: float, depth: int,
                 stall: tuple[float, float] | None = None, delay: float = 0.0,
                 mark_depth: int | None = None) -> None:
        self.target, self.rate, self.depth = target, rate, depth
        self.mark_depth = mark_depth  # CE on packets that find at least this many waiting (ECN-capable port)
        self.ce_marked = 0
        self.delay = delay            # s added to every packet's way up (a long path; replies are not delayed)
        self.data_seen: dict[int, list[float]] = collections.defaultdict(list)   # tensor id -> DATA arrivals
        # (every, for): stop reading for ``for`` s every ``every`` s and take packets when read, as a
        # descheduled software switch does (it sees a packet when it reads it: its link time is lost)
        self.stall = stall
        self._next_stall = time.time() + (stall[0] if stall else 0.0)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        self.up: dict[tuple[str, int], socket.socket] = {}
        self.client_of: dict[socket.socket, tuple[str, int]] = {}
        self.queue: collections.deque = collections.deque()  # (departure time, upstream, bytes)
        self.drained = 0.0            # virtual time the port is busy until
        self.tail_drops = 0
        self.forwarded = 0
        self.max_occupancy = 0
        self.grants_seen = 0
        self.cpu_wait = 0.0           # s the test's threads waited for a CPU during the incast (CpuWait)
        self.min_grant: dict[tuple[str, int], int] = {}   # client -> smallest rate granted to it
        self.min_window: dict[tuple[str, int], int] = {}  # client -> smallest window granted to it
        # ACKs against windows: the receiver's count in the last ACK and the window of the last GRANT passed
        # to each client; ACKs checked (all but the first after a change of window, which may still count
        # packets that came under the old one) and those that acknowledged more than half the window
        self.acked: dict[tuple[str, int], int] = {}
        self.window_now: dict[tuple[str, int], int] = {}
        self._window_changed: set[tuple[str, int]] = set()
        self.acks_checked: collections.Counter[tuple[str, int]] = collections.Counter()
        self.acks_over_half: collections.Counter[tuple[str, int]] = collections.Counter()
        # per client: DATA that reached the port, and the most of it ever in flight by the port's count
        # (arrived, less the receiver's count in the last ACK passed back): at most the sender's own
        # count (it sent them before they arrived, and the ACK is passed back before it reads it)
        self.data_up: collections.Counter[tuple[str, int]] = collections.Counter()
        self.flight_max: dict[tuple[str, int], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def passed_while_waiting(self, seconds: float | None = None) -> float:
        """Full packets the port passes in ``seconds`` (default: the time the test's threads waited for a
        CPU, ``cpu_wait``)."""
        return (self.cpu_wait if seconds is None else seconds) * self.rate / ratecontrol.WINDOW_PACKET_BYTES

    def relay_wait(self) -> float:
        """Seconds the relay's own thread has waited for a CPU so far (its ``run_delay``; 0 where the
        kernel has no schedstat): the only wait that can bunch the packets it passes to the receiver."""
        try:
            with open(f"/proc/self/task/{self._thread.native_id}/schedstat") as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError, TypeError):
            return 0.0

    def __enter__(self) -> Bottleneck:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for s in [self.sock, *self.up.values()]:
            s.close()

    def _upstream(self, client: tuple[str, int]) -> socket.socket:
        s = self.up.get(client)
        if s is None:
            s = self.up[client] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            self.client_of[s] = client
        return s

    def _arrive(self, data: bytes, when: float, client: tuple[str, int]) -> None:
        if len(data) >= P.DLCP_HEADER_LEN and data[0] & 0xF == P.MSG_DATA:
            self.data_seen[P.DlcpHeader.unpack(data).tensor_id].append(when)
            self.data_up[client] += 1
            flight = self.data_up[client] - self.acked.get(client, 0)
            self.flight_max[client] = max(flight, self.flight_max.get(client, 0))
        # the queue as it stood at the packet's arrival: what had left by then is gone
        waiting = sum(1 for dep, *_rest in self.queue if dep - self.delay > when)
        if waiting >= self.depth:
            self.tail_drops += 1
            return
        self.max_occupancy = max(self.max_occupancy, waiting + 1)
        start = max(when, self.drained)
        self.drained = start + (len(data) + WIRE_OVERHEAD) / self.rate
        ce = self.mark_depth is not None and waiting >= self.mark_depth and data[0] & 0xF == P.MSG_DATA
        self.ce_marked += ce
        self.queue.append((self.drained + self.delay, self._upstream(client), data, ce))

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            if self.stall and now >= self._next_stall:
                time.sleep(self.stall[1])
                self._next_stall = time.time() + self.stall[0]
                now = time.time()
            while self.queue and self.queue[0][0] <= now:
                _dep, up, data, ce = self.queue.popleft()
                if ce:
                    up.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, P.ECN_CE)
                up.sendto(data, self.target)
                if ce:
                    up.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)
                self.forwarded += 1
            wait = min(0.01, max(0.0, self.queue[0][0] - now)) if self.queue else 0.01
            readable, _, _ = select.select([self.sock, *self.up.values()], [], [], wait)
            for s in readable:
                if s is self.sock:
                    data, anc, _f, client = s.recvmsg(65536, socket.CMSG_SPACE(16))
                    stamp = kernel_time(anc) if self.stall is None else None
                    self._arrive(data, time.time() if stamp is None else stamp, client)
                else:                          # replies travel back unlimited
                    data = s.recv(65536)
                    client = self.client_of[s]
                    body = P.DLCP_HEADER_LEN + P.CONTROL_HEAD.size
                    control = len(data) >= body and data[0] & 0xF == P.MSG_CONTROL
                    if control and data[P.DLCP_HEADER_LEN] == P.CTRL_GRANT:
                        self.grants_seen += 1
                        rate, _senders, window = P.GRANT_BODY.unpack_from(data, body)
                        self.min_grant[client] = min(rate, self.min_grant.get(client, rate))
                        self.min_window[client] = min(window, self.min_window.get(client, window))
                        if window != self.window_now.get(client):
                            self.window_now[client] = window
                            self._window_changed.add(client)
                    elif control and data[P.DLCP_HEADER_LEN] == P.CTRL_ACK:
                        received = P.unpack_ack(data[body:])[0]
                        step = received - self.acked.get(client, 0)
                        self.acked[client] = max(received, self.acked.get(client, 0))
                        if client in self._window_changed:
                            self._window_changed.discard(client)
                        elif client in self.window_now:
                            self.acks_checked[client] += 1
                            self.acks_over_half[client] += step > self.window_now[client] // 2
                    self.sock.sendto(data, self.client_of[s])


def _incast(endpoints, link_rate: float | None, stall: tuple[float, float] | None = None, before=None,
            n: int = SENDERS, packets: int = PACKETS, delay: float = 0.0):
    """``n`` senders (six) push one tensor of ``packets`` packets each at the same moment, through a
    port whose path adds ``delay`` s on the way up; returns (bottleneck, sends, rx, senders, secs).

    ``before(port, senders, rx)`` runs between the first contacts and the incast. No sender gives up
    before ``_drive`` does: one thread turns every endpoint, so a process frozen for give_up_after (a
    loaded machine) made a sender's timer fire before the receiver's answers were read
    (test_host_give_up.py covers giving up)."""
    rx = endpoints(job_id=1, link_rate=link_rate, give_up_after=DRIVE_TIMEOUT)
    senders = [endpoints(job_id=1, worker_id=w, link_rate=link_rate, give_up_after=DRIVE_TIMEOUT) for w in range(n)]
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)      # every packet needed: drops show as retx
    with Bottleneck(rx.address, LINK, DEPTH, stall, delay=delay) as port:
        for ep in senders:                     # first contact (OPEN/OPEN_ACK) before the measurement
            h = ep.send(packetize(np.ones(8, np.float32), tensor_id=1, policy=policy, job_id=1,
                                  worker_id=ep.cfg.worker_id, iteration=0), port.address)
            _drive(senders, rx, [h], [])
        if before is not None:
            before(port, senders, rx)
        port.tail_drops = 0
        port.acks_checked.clear()
        port.acks_over_half.clear()
        for ep in senders:                     # windows used in the incast only
            ep.grants.window_peak.clear()
        grads = [np.arange(362 * packets, dtype=np.float32) + w for w in range(n)]
        outs = [np.zeros_like(g) for g in grads]
        recvs = [rx.expect(w, 1, 2, outs[w]) for w in range(n)]
        with CpuWait() as wait:
            t0 = time.monotonic()
            sends = [ep.send(packetize(grads[w], tensor_id=2, policy=policy, job_id=1, worker_id=w, iteration=1),
                             port.address) for w, ep in enumerate(senders)]
            _drive(senders, rx, sends, recvs)
            elapsed = time.monotonic() - t0
            port.cpu_wait = wait.seconds()
    for w in range(n):
        assert np.array_equal(outs[w], grads[w])
    return port, sends, rx, senders, elapsed


def _first_contact(tx, rx, addr, policy: TagPolicy) -> None:
    """``tx`` meets ``rx`` (through ``addr``) with a one-packet tensor 1: OPEN, OPEN_ACK, its first grant."""
    h = tx.send(packetize(np.ones(8, np.float32), tensor_id=1, policy=policy, job_id=1, worker_id=0, iteration=0),
                addr)
    _drive([tx], rx, [h], [])


def _drive(senders, rx, sends, recvs, timeout: float = DRIVE_TIMEOUT, at_least: float = 0.0,
           rx_every: float = 0.0) -> None:
    """One thread turns every endpoint's loop (the endpoints are not thread-safe); the receiver's only
    once per ``rx_every`` s when given (a receiver whose loop waits for a CPU that long each time)."""
    start = time.monotonic()
    end = start + timeout
    rx_next = start
    while not (all(s.done for s in sends) and all(r.done for r in recvs)) or time.monotonic() < start + at_least:
        assert time.monotonic() < end, "incast did not finish"
        assert not any(s.failed for s in sends)
        for ep in senders:
            ep.poll(0.0)
        if time.monotonic() >= rx_next:
            rx.poll(0.0)
            rx_next = time.monotonic() + rx_every
        time.sleep(0.0002)


@pytest.mark.timeout(120)
def test_grants_keep_six_senders_within_one_queue(endpoints):
    port, sends, rx, senders, elapsed = _incast(endpoints, LINK)
    # the receiver saw six active senders and granted each a sixth of its link
    assert rx.rx.active_senders_max == SENDERS
    assert port.grants_seen >= SENDERS
    assert len(port.min_grant) == SENDERS
    assert all(rate == pytest.approx(GRANT_SHARE * LINK / SENDERS, rel=0.01) for rate in port.min_grant.values())
    assert all(ep.grants.grants_received >= 1 for ep in senders)
    # ... which kept the port's queue from overflowing: nothing dropped, nothing resent
    assert port.tail_drops == 0, f"{port.tail_drops} tail drops (max occupancy {port.max_occupancy})"
    assert sum(s.stats.retransmitted for s in sends) == 0
    # and the link stayed busy: at least half its rate over the time the test's threads had a CPU (a
    # starved loop sends late and loses link time; a sender held back by the mechanism idles in select)
    sent = sum(s.stats.bytes for s in sends)
    ran = max(elapsed - port.cpu_wait, 1e-3)
    assert sent / ran >= 0.5 * LINK, \
        f"{sent / ran / 1e6:.2f} MB/s over {ran:.2f}s ({elapsed:.2f}s less {port.cpu_wait:.2f}s waiting for a CPU)"


@pytest.mark.timeout(120)
def test_recent_senders_hold_standby_grants_for_their_next_tensor(endpoints):
    """A sender that goes idle keeps a standby grant: the share it would get if every sender active
    in the last GRANT_MEMORY s came back. The six senders met the receiver one after another (each
    alone on its link then); before the incast each holds a sixth of the link and of the window, so
    the six starting together need no fresh GRANT round trip and still fit the queue."""
    held = {}

    def before(port, senders, rx) -> None:
        _drive(senders, rx, [], [], at_least=0.1)       # the last standby grants reach the senders
        held.update({ep.cfg.worker_id: (ep.grants.rates[port.address], ep.grants.windows[port.address])
                     for ep in senders})

    port, sends, rx, senders, elapsed = _incast(endpoints, LINK, before=before)
    share = GRANT_SHARE * LINK / SENDERS
    assert all(rate == pytest.approx(share, rel=0.01) for rate, _w in held.values()), held
    window = max(receiver.WINDOW_MIN, receiver.WINDOW_PACKETS // SENDERS)
    assert all(w == window for _r, w in held.values()), held
    assert rx.rx.standby_grants_sent >= SENDERS
    assert port.tail_drops == 0, f"{port.tail_drops} tail drops (max occupancy {port.max_occupancy})"
    assert sum(s.stats.retransmitted for s in sends) == 0


WIDE = 12                     # senders of the wide incast (incast-wide: 12 workers into one port)
WIDE_PACKETS = 100            # per sender: 1,200 packets, ~1.2 s at LINK
ACK_PATH = 0.04               # s one way: an ACK comes back 40 ms after the DATA that completed it at the earliest


@pytest.mark.timeout(120)
def test_twelve_senders_are_acknowledged_twice_per_window(endpoints):
    """With 12 senders the receiver's window share is 40 // 12 = 3 packets; at a window of ACK_EVERY (4,
    WINDOW_MIN until session 11) a sender had its whole window unacknowledged when the ACK left, and held
    a round trip per ACK (incast-wide, H10a session 10: ~1 s per worker and iteration held by the window,
    the server's port idle in 5-20 ms holes). WINDOW_MIN = 2 x ACK_EVERY: every ACK the relay passes back
    acknowledges at most half the window granted, so a sender sends the next half while the ACK of the last
    is on its way (over a path whose ACK comes back 40 ms after the DATA, ~3.5 packets at a twelfth of the
    link). Every tensor still arrives whole. (The twelve windows, 96 packets, exceed a 64-packet queue:
    with every packet protected, as here, the relay tail-drops a few and they are resent; in the studies
    the cost was 7-66 tail drops per incast-wide run, docs/experiments-history.md.)"""
    port, sends, rx, senders, _elapsed = _incast(endpoints, LINK, n=WIDE, packets=WIDE_PACKETS, delay=ACK_PATH)
    assert rx.rx.active_senders_max == WIDE
    assert min(port.min_window.values()) == max(receiver.WINDOW_MIN, receiver.WINDOW_PACKETS // WIDE)
    assert all(port.acks_checked[ep.address] >= WIDE_PACKETS // (2 * receiver.ACK_EVERY) for ep in senders)
    assert sum(port.acks_over_half.values()) == 0, \
        f"{sum(port.acks_over_half.values())} of {sum(port.acks_checked.values())} ACKs came after half a window"


PATH_DELAY = 0.08             # s one way, sender -> receiver (below the old code's 0.1 s wait for a GRANT)
FAST_LINK = 15e6              # bytes/s: 16 packets take 1.6 ms


@pytest.mark.timeout(120)
def test_next_tensor_starts_without_a_grant_round_trip(endpoints):
    """After first contact a sender holds a grant from the receiver, so each further tensor goes out
    at once at that rate: its DATA leaves in one paced run, not 4 packets and then a wait for the
    GRANT answering its OPEN (a round trip per tensor: what made 16-packet tensors slower than TCP).
    The DATA's times are the relay's kernel timestamps; the time the test's threads waited for a CPU
    (a loaded machine) is taken off, a wait in ``select`` for a GRANT is not."""
    rx = endpoints(job_id=1, link_rate=FAST_LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=FAST_LINK)
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)
    with Bottleneck(rx.address, FAST_LINK, 4096, delay=PATH_DELAY) as port:
        _first_contact(tx, rx, port.address, policy)
        for tid in (2, 3, 4):                  # 16 packets each, one after the other
            grad = np.arange(359 * 16, dtype=np.float32) + tid
            out = np.zeros_like(grad)
            r = rx.expect(0, 0, tid, out)
            with CpuWait() as wait:
                t0 = time.time()               # the relay's clock
                h = tx.send(packetize(grad, tensor_id=tid, policy=policy, job_id=1, worker_id=0, iteration=0),
                            port.address)
                _drive([tx], rx, [h], [r])
                starved = wait.seconds()
            assert np.array_equal(out, grad)
            sent = port.data_seen[tid]
            assert len(sent) == 16
            # 16 packets at the grant take ~2 ms; a wait for the GRANT would take the round trip
            assert sent[-1] - sent[0] - starved < PATH_DELAY / 2, \
                f"tensor {tid}: DATA spread over {sent[-1] - sent[0]:.3f}s, {starved:.3f}s waiting for a CPU"
            assert sent[0] - t0 - starved < PATH_DELAY / 2, \
                f"tensor {tid}: first DATA {sent[0] - t0:.3f}s after send(), {starved:.3f}s waiting for a CPU"
    assert tx.grants.window_stalls == 0


def _one_sender_over(endpoints, delay: float, packets: int):
    """One granted sender (link LINK) meets the receiver over a path adding ``delay`` s on the way up, then
    pushes a tensor of ``packets`` packets (tensor 2); returns (sender, port, its SendHandle, the CPU wait
    of the test's threads during the push)."""
    rx = endpoints(job_id=1, link_rate=LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=LINK)
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)
    with Bottleneck(rx.address, LINK, 4096, delay=delay) as port:
        _first_contact(tx, rx, port.address, policy)
        grad = np.arange(359 * packets, dtype=np.float32)
        out = np.zeros_like(grad)
        r = rx.expect(0, 0, 2, out)
        with CpuWait() as wait:
            h = tx.send(packetize(grad, tensor_id=2, policy=policy, job_id=1, worker_id=0, iteration=0),
                        port.address)
            _drive([tx], rx, [h], [r])
            starved = wait.seconds()
        assert np.array_equal(out, grad)
    return tx, port, h, starved


LONG_PATH = 0.1               # s one way: the round trip holds ~90 packets at the grant, the window 40
PATH_SHARE = 0.5              # ratecontrol.PATH_SHARE_MAX here: the path's share is at most 20 packets


@pytest.mark.timeout(120)
def test_window_covers_the_round_trip_of_a_long_path(endpoints, monkeypatch):
    """The window is the receiver's queue share plus what the grant keeps on the path for one round
    trip (grant x smallest ACK round trip, at most half the share): over a 100 ms path, where the
    round trip holds ~90 packets at the grant, one sender gets 60 packets per round trip (0.54 of its
    grant measured; the queue share alone, 40 packets: 0.39). Asserted by counts, which a loaded machine
    cannot change: the window the sender computed, and more than the queue share in flight as the relay
    counts it (DATA arrived less the receiver's last ACK count passed back), and never more than the
    window (no write-off: see test_a_window_is_not_written_off_before_an_ack_could_come). (Until session 13
    a rate of at least 0.55 of the grant: met only with the write-off's extra packets, 0.72 with the share
    alone; until session 14 the write-off was moved out of the way here, WRITE_OFF_MIN 1.0.)"""
    monkeypatch.setattr(ratecontrol, "PATH_SHARE_MAX", PATH_SHARE)   # off by default (docs/experiments-history.md H10-2, H10-3)
    tx, port, h, starved = _one_sender_over(endpoints, LONG_PATH, 600)
    sent = port.data_seen[2]
    grant = GRANT_SHARE * LINK
    rate = h.stats.bytes / (sent[-1] - sent[0])
    # the round trip learnt from the ACKs is the path's: a sample falls short of it only by a preemption
    # between a packet's send and its timestamp (98.8 ms seen once), never by half (loopback: ~0.1 ms)
    assert tx.grants.ack_rtt_min[port.address] > LONG_PATH / 2
    # ... so the window is the queue share plus the path's share at its cap (grant x round trip > the cap)
    share, cap = receiver.WINDOW_PACKETS, int(receiver.WINDOW_PACKETS * PATH_SHARE)
    assert grant * LONG_PATH / 2 / ratecontrol.WINDOW_PACKET_BYTES > cap        # (the test's premise)
    assert tx.grants.window_peak[port.address] == share + cap
    # and the sender used it: more than the queue share in flight (the relay's count; at most the sender's)
    assert port.flight_max[tx.address] > share, \
        f"at most {port.flight_max[tx.address]} packets in flight ({rate / grant:.2f} of the grant)"
    assert port.tail_drops == 0
    # ... but never more than the window: nothing was written off (unless the test's threads waited for a
    # CPU as long as the path's round trip, the timer's margin; measured before session 14: the first
    # window written off at 0.1 s, 100 packets in flight for a window of 60)
    if starved < LONG_PATH:
        assert tx.grants.window_stalls == 0 and port.flight_max[tx.address] <= share + cap, \
            (tx.grants.window_stalls, port.flight_max[tx.address], starved)


SLOW_ACK_PATH = 0.15          # s one way: the first ACK comes back > 0.15 s after the window's first packet


@pytest.mark.timeout(60)
def test_a_window_is_not_written_off_before_an_ack_could_come(endpoints):
    """The write-off (a closed window's packets presumed lost after a time without ACK progress) waits at
    least for a round trip the sender measured: the ACKs' (2 srtt or srtt + 4 rttvar), before the first ACK
    the first contact's OPEN round trip (3 x). Until session 14 it was max(0.1 s, 2 RTO), the RTO sampled from
    BITMAP rounds only (so rto_initial, 0.02 s, in most runs): over a path whose ACKs take longer than 0.1 s
    the first window was written off before its first ACK could come, and the sender put a second window on
    top. Counts: no write-off, never more than the window (40) in flight by the relay's count (DATA arrived
    less the receiver's last ACK count passed back), excused only when the test's threads waited for a CPU
    as long as the path's one-way delay (the timers' margin)."""
    tx, port, _h, starved = _one_sender_over(endpoints, SLOW_ACK_PATH, 160)
    window = tx.grants.window_peak[port.address]
    assert window == receiver.WINDOW_PACKETS
    assert port.flight_max[tx.address] >= window            # the window was used (and closed)
    if starved < SLOW_ACK_PATH:
        assert tx.grants.window_stalls == 0 and port.flight_max[tx.address] <= window, \
            (tx.grants.window_stalls, port.flight_max[tx.address], starved)


@pytest.mark.timeout(60)
def test_standby_grants_end_when_every_sender_is_forgotten(endpoints, monkeypatch):
    """After GRANT_MEMORY without any sender the receiver forgets them all and grants nobody (090cbb0
    computed a standby share for zero senders there and the PS server died of an AssertionError)."""
    monkeypatch.setattr(receiver, "GRANT_MEMORY", 0.05)
    rx = endpoints(job_id=1, link_rate=LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=LINK)
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)
    h = tx.send(packetize(np.ones(800, np.float32), tensor_id=1, policy=policy, job_id=1, worker_id=0,
                          iteration=0), rx.address)
    _drive([tx], rx, [h], [], at_least=0.3)    # the receiver's ticks outlive GRANT_MEMORY
    assert tx.grants.grants_received >= 1
    assert not rx.rx._recent and not rx.rx._granted


@pytest.mark.timeout(120)
def test_without_grants_six_senders_overrun_the_queue(endpoints):
    """The control case: the same incast unpaced (no link rate known) tail-drops and retransmits.

    Each sender sends its whole tensor in one turn of its loop (no pacing, no window; GSO batches of
    ~43 on loopback): alone it already overruns the 64-packet queue by 96. How far six of them overrun
    it together depends on how close their turns come (a quarter of the 960 packets dropped on an idle
    machine, 128 and 161 measured at nice 19 beside busy loops), so the bound is one sender's overrun."""
    port, sends, rx, senders, _elapsed = _incast(endpoints, None)
    assert rx.rx.grants_sent == 0 and port.grants_seen == 0
    assert port.tail_drops > PACKETS - DEPTH, f"{port.tail_drops} tail drops"
    assert sum(s.stats.retransmitted for s in sends) > 0


STALL = (0.2, 0.08)           # the relay stops for 80 ms every 200 ms (a loaded machine's switch process)


@pytest.mark.timeout(120)
def test_window_bounds_the_burst_after_a_switch_stall(endpoints, monkeypatch):
    """Rate alone keeps sending into a stalled switch, which then releases the backlog at once; the
    window (ACK-clocked) stops each sender after its share of the queue. (The write-off of a window
    that got no ACK for 0.1 s, loss recovery, is moved out of the way: a loaded test machine can
    delay this loop's ACKs that long; test_host_ratecontrol.py checks it.)"""
    monkeypatch.setattr(endpoint, "WRITE_OFF_MIN", 0.5)
    port, sends, rx, senders, elapsed = _incast(endpoints, LINK, STALL)
    assert rx.rx.acks_sent > 0 and all(ep.grants.windows for ep in senders)
    # the queue never held more than the windows allowed (the receiver's share plus each sender's
    # round trip at its grant, window_limit) and a few packets of pacing each
    allowed = sum(ep.grants.window_peak[port.address] for ep in senders)
    assert port.max_occupancy <= allowed + SENDERS * 2, (port.max_occupancy, allowed)
    assert port.tail_drops == 0, f"{port.tail_drops} tail drops (max occupancy {port.max_occupancy})"


@pytest.mark.timeout(120)
def test_rate_without_window_overruns_a_stalling_switch(endpoints, monkeypatch):
    monkeypatch.setattr(receiver, "WINDOW_PACKETS", 1 << 20)      # grants as before, window never closes
    monkeypatch.setattr(endpoint, "WRITE_OFF_MIN", 0.5)
    port, sends, rx, senders, elapsed = _incast(endpoints, LINK, STALL)
    assert port.tail_drops > SENDERS * 2, f"{port.tail_drops} tail drops"


def _marked_transfer(endpoints, port_rate: float, n_packets: int = 300, stall: tuple[float, float] | None = None,
                     rx_every: float = 0.0):
    """One granted sender (receiver link LINK) through a port of ``port_rate`` that CE-marks DATA
    finding 4 or more packets queued; returns (sender, receiver, the sender's AIMD pacer, port).
    ``port.relay_waited``: the relay thread's CPU wait during the transfer; ``rx_every``: see ``_drive``."""
    rx = endpoints(job_id=1, link_rate=LINK)
    tx = endpoints(job_id=1, worker_id=0, link_rate=LINK)
    policy = TagPolicy(critical_share=1.0, loss_bound=0.0)
    grad = np.arange(362 * n_packets, dtype=np.float32)
    out = np.zeros_like(grad)
    with Bottleneck(rx.address, port_rate, DEPTH, stall, mark_depth=4) as port:
        _first_contact(tx, rx, port.address, policy)
        r = rx.expect(0, 1, 2, out)
        with CpuWait() as wait:
            relay0 = port.relay_wait()
            h = tx.send(packetize(grad, tensor_id=2, policy=policy, job_id=1, worker_id=0, iteration=1), port.address)
            _drive([tx], rx, [h], [r], rx_every=rx_every)
            port.cpu_wait = wait.seconds()
            port.relay_waited = port.relay_wait() - relay0
        pacer = tx.pacer_for(port.address)
    assert np.array_equal(out, grad) and port.tail_drops == 0
    return tx, rx, pacer, port


@pytest.mark.timeout(60)
def test_marks_while_our_own_link_is_full_are_not_echoed(endpoints):
    """H10-3: a receiver whose DATA arrives at its granted total (its own link is the bottleneck, and
    its grants and windows already bound the queue there) does not echo the marks that queue sets:
    the sender stays at its grant. Before, every mark was echoed and the sender's AIMD cut it below
    its grant again and again (the PS server's fan-out held 0.17-0.5 s per iteration in tcp-bulk by
    marks at each worker's own port)."""
    tx, rx, pacer, port = _marked_transfer(endpoints, LINK, stall=(0.15, 0.04))   # a descheduled switch
    # A sender the machine's load holds back (its loop waiting for a CPU) sends below OWN_PORT_FULL of its
    # grant for a while, and the marks that come meanwhile read as set on a slow path (measured: 8 echoes
    # for 205 marks, 1 run in 6 on a loaded machine): at most the packets the port passes in that time.
    misread = port.passed_while_waiting()
    assert port.ce_marked > 20 and rx.rx.ce_own_port + misread >= 0.75 * port.ce_marked, \
        (rx.rx.ce_own_port, port.ce_marked, port.cpu_wait)
    # A stall in the transfer's first arrival window may still read as a slow path: a few echoes. Echoing
    # every mark, as before H10-3, gives one echo per ECN_ECHO_GAP while marks come: far above a twentieth.
    assert tx.ecn_echoes_received <= max(2, port.ce_marked // 20) + misread, \
        f"{tx.ecn_echoes_received} echoes for {port.ce_marked} marks, {port.cpu_wait:.3f}s waiting for a CPU"


@pytest.mark.timeout(60)
def test_marks_while_data_arrives_below_our_link_are_echoed(endpoints):
    """The same marking port at a third of the receiver's link (as a congested spine in front of it):
    DATA arrives well below the link, so the marks were set on the way; they are echoed and the
    sender backs off.

    The receiver dates each DATA packet by the kernel's receive time (SO_TIMESTAMPNS), so packets that
    arrived while its loop waited for a CPU, read back to back, keep their spacing. (Dated when read, until
    session 14, they looked like a full link and their marks were not echoed: 62 of 119 and 95 of 145 at
    nice 19 beside busy loops; the bound then excused what the port passed during every thread's CPU wait.)
    What can still bunch the packets is the relay's own thread waiting for a CPU: only that is excused."""
    tx, rx, pacer, port = _marked_transfer(endpoints, LINK / 3, n_packets=150)
    assert port.ce_marked > 20 and tx.ecn_echoes_received >= 10 and pacer.decreases >= 2
    assert rx.rx.ce_own_port < port.ce_marked / 4 + port.passed_while_waiting(port.relay_waited), \
        (rx.rx.ce_own_port, port.ce_marked, port.relay_waited, port.cpu_wait)


RX_EVERY = 0.05               # s between the receiver's loop turns: ~16 packets arrive at a third of LINK


@pytest.mark.timeout(60)
def test_marks_read_late_are_dated_by_their_arrival(endpoints):
    """A receiver that reads its socket only every 50 ms (its loop waiting for a CPU on a loaded machine)
    reads the ~16 packets that came meanwhile back to back. Dated when read, they looked like a full own
    link (16 packets in ~4 ms of busy time), so the marks set on a path at a third of the link were taken
    for our own port's and not echoed (HT13, session 13: 39-95 of 119-145 marks at nice 19). Dated by the
    kernel's receive time (SO_TIMESTAMPNS) they arrive ~3 ms apart: a third of the link, and the marks are
    echoed. Only the relay's own CPU wait can bunch what reaches the receiver: that many packets are
    excused."""
    tx, rx, pacer, port = _marked_transfer(endpoints, LINK / 3, n_packets=150, rx_every=RX_EVERY)
    assert port.ce_marked > 20 and tx.ecn_echoes_received >= 3 and pacer.decreases >= 2, \
        (port.ce_marked, tx.ecn_echoes_received, pacer.decreases, rx.rx.ce_own_port)
    assert rx.rx.ce_own_port < port.ce_marked / 4 + port.passed_while_waiting(port.relay_waited), \
        (rx.rx.ce_own_port, port.ce_marked, port.relay_waited)
