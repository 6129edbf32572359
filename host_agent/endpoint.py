"""The DLCP transport endpoint: one UDP socket, one single-threaded event loop, both directions.

An endpoint sends tensors (``send``: OPEN, paced DATA, PROBE rounds, selective retransmit until
DONE) and receives them (``expect``: payloads written in place, BITMAP answers, DONE on completion)
at the same time, which is what the collectives need (a ring step sends one chunk and receives
another). ``run(handles)`` turns the loop until the given handles are finished. This module holds
the socket, the loop and the send side; the receive side lives in ``receiver.py``. Everything the
receiver drops is counted in ``drops[reason]``; nothing hostile is ever written out of bounds.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import select
import socket
import struct
import sys
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from host_agent import protocol as P
from host_agent.errors import TransportError, UserError
from host_agent.outgoing import OutgoingTensor, SendState, SendStats
from host_agent.packetizer import PacketizedTensor
from host_agent.policy import TagPolicy
from host_agent.ratecontrol import CRITICAL_CLASS, AimdPacer, GrantPacer, RateConfig
from host_agent.receiver import ACK_EVERY, SHED_SENDERS, ReceiveSide, RecvHandle

__all__ = ["Endpoint", "EndpointConfig", "RecvHandle", "SendHandle"]

log = logging.getLogger(__name__)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SOL_UDP = getattr(socket, "SOL_UDP", 17)
UDP_SEGMENT = getattr(socket, "UDP_SEGMENT", 103)   # Linux UDP GSO (send)
UDP_GRO = getattr(socket, "UDP_GRO", 104)           # Linux UDP GRO (receive)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # the kernel's receive time of each datagram
TIMESPEC = struct.Struct("@ll")                      # its ancillary data: struct timespec (CLOCK_REALTIME)
GSO_MAX_SEGMENTS = 64
OFFLOAD_MODES = ("auto", "on", "off")
GSO_MAX_BYTES = 65000
GRANT_FLOOR = 1e4                      # bytes/s: a grant below this is raised to it
# Unacknowledged packets of a closed window are presumed lost (selective or tail drop) after this long
# without ACK progress: max(WRITE_OFF_MIN, 2 RTO, the ACK round trip's bound), the last at most
# WRITE_OFF_MAX. The ACK round trip's bound (GrantPacer.write_off_bound: 2 srtt or srtt + 4 rttvar of the
# ACK round trips, the first contact's OPEN round trip before the first ACK) keeps the timer from firing
# before an ACK could have come: with WRITE_OFF_MIN alone (until session 14; the RTO is sampled from BITMAP
# rounds only, so it mostly stayed at rto_initial) a path whose ACKs take >= 0.1 s had its whole window
# written off before its first ACK could come, and then two windows were in flight (HT13: 100 packets for a
# window of 60 over a path whose ACKs took 0.104 s). WRITE_OFF_MAX: a stalled path holds the window at most
# this long per write-off.
WRITE_OFF_MIN = 0.1
WRITE_OFF_MAX = 0.5


# The loop serves the tensors being sent highest layer class first (else in send() order). Off for
# an endpoint unless its user turns it on (the DLCP parameter server does: host_agent/overlap.py).
# The environment variable DLCP_SEND_BY_CLASS (0/1) overrides either choice (measurements only).
SEND_BY_CLASS = False


def env_switch(name: str, default: bool) -> bool:
    """``default`` unless the environment variable ``name`` says 0 or 1 (UserError on anything else)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw not in ("0", "1"):
        raise UserError(f"{name}={raw!r}: 0 or 1")
    return raw == "1"


def shed_droppable(default: bool = True) -> bool:
    """Whether endpoints shed droppable packets (``EndpointConfig.shed_droppable``): ``default`` unless the
    environment variable DLCP_SHED_DROPPABLE (0/1) says (measurements only: an A/B of a whole study)."""
    return env_switch("DLCP_SHED_DROPPABLE", default)


def last_as_probe(default: bool = True) -> bool:
    """Whether a receiver treats a tensor's LAST DATA packet as an implicit PROBE (``EndpointConfig.last_as_probe``):
    ``default`` unless the environment variable DLCP_LAST_AS_PROBE (0/1) says (measurements only)."""
    return env_switch("DLCP_LAST_AS_PROBE", default)


def send_by_class(default: bool = SEND_BY_CLASS) -> bool:
    """Whether an endpoint sends the highest layer class first: ``default`` unless DLCP_SEND_BY_CLASS says."""
    return env_switch("DLCP_SEND_BY_CLASS", default)


@dataclass
class EndpointConfig:
    job_id: int = 0
    worker_id: int = 0
    bind: tuple[str, int] = ("127.0.0.1", 0)
    rate: RateConfig = field(default_factory=RateConfig)
    # This host's link rate (bytes/s), None = unknown. Known: as a receiver we grant each active
    # sender link / n (CONTROL/GRANT), and as a sender we pace each destination at its grant, or
    # at this rate before the first grant (ratecontrol.GrantPacer; docs/transport.md).
    link_rate: float | None = None
    ecn: bool = True                   # send ECT(0), read the TOS byte of received packets
    rto_initial: float = 0.02          # s before the first re-probe
    rto_max: float = 0.5
    give_up_after: float = 10.0        # s without any answer from the receiver of a tensor
    stage_unexpected: bool = True      # OPENs with no expect() yet get a staging buffer
    max_staged_elements: int = 1 << 27   # elements held for OPENs nobody expect()ed yet
    max_staged_peer_share: float = 0.5   # share of that one sending address may hold
    idle_timeout: float = 5.0          # s without DATA before an unfinished tensor is forgotten
    receive_deadline: float | None = None  # s after OPEN: complete as soon as the bound is met
    probe_holdoff: float = 0.0005      # s of DATA silence before a PROBE is answered (reordering)
    # A PROBE that finds the loss bound met is answered (DONE) at once, without the hold-off:
    # what is still missing fits the bound, so waiting for stragglers only delays the tensor.
    complete_when_bound_met: bool = True
    # Needed retransmissions (missing critical + the receiver's deficit) go out CRITICAL, so the
    # switch never selectively drops them again (each carries its original class in seq's low bit).
    promote_retransmissions: bool = True
    socket_buffer: int = 64 << 20
    send_batch: int = 256
    # Linux UDP GSO (send 44 datagrams per syscall) / GRO (receive them as one buffer).
    # "auto": GRO always, GSO only towards loopback addresses: a GSO batch crossing a veth reaches an
    # AF_PACKET software switch (p4sim, BMv2) as one 64 KB frame unless the veth segments it.
    # "on": GSO to every destination (NICs and veths with tx-udp-segmentation off); "off": neither.
    offload: str = "auto"
    # As a receiver that grants: the first magnitude class the switches never drop (the tag policy's
    # protected_mag_class, matching the switch policy). Our ACKs (format 2) count the packets below it
    # that are not CRITICAL separately, so their senders window only the protected ones (packets
    # dropped by design are never acknowledged; ratecontrol.GrantPacer). ack_split False: format 1.
    protected_mag_class: int = TagPolicy.protected_mag_class
    ack_split: bool = True
    # Shed droppable packets while the receiver holds senders (ns-3's ``shedDroppable``). As a receiver that
    # grants: with more than ``shed_senders`` senders active (standby: recent) our GRANTs carry
    # GRANT_FLAG_SHED (receiver.SHED_SENDERS). As a sender: while the last GRANT from a destination carried
    # it, a gradient's first transmission leaves out the packets the receiver can do without by design (not
    # CRITICAL, magnitude class below protected_mag_class, not LAST, at most the tensor's loss budget); they
    # count as lost and the receiver zero-fills them within the loss bound. Parameters (kept stale where
    # missing) and retransmission rounds never leave a packet out.
    # Off: GRANTs in format 1 (no flags) and flags from others ignored. CLI: --no-shed-droppable.
    shed_droppable: bool = field(default_factory=shed_droppable)
    shed_senders: int = SHED_SENDERS
    # As a receiver: the first transmission's LAST DATA packet is an implicit PROBE(0) (ns-3's ``lastAsProbe``).
    # It is sent after every other packet of the first transmission, right before PROBE(0), so when it arrives
    # before any PROBE the receiver acts as on PROBE(0): DONE at once if the loss bound is met, else BITMAP(0)
    # after the hold-off; from then on the tensor completes on the DATA that meets the bound. A shed tensor
    # never has all its packets, and a lost PROBE cost it an RTO. PROBE(0) arriving after LAST's BITMAP(0) is
    # not answered again. Needs no wire change (DATA carries FLAG_LAST).
    # CLI: --no-last-as-probe; environment DLCP_LAST_AS_PROBE=0/1.
    last_as_probe: bool = field(default_factory=last_as_probe)


class SendHandle:
    """A tensor being sent; ``done`` once the receiver's DONE arrived."""

    def __init__(self, out: OutgoingTensor) -> None:
        self.tx = out

    @property
    def done(self) -> bool:
        return self.tx.state is SendState.DONE

    @property
    def failed(self) -> bool:
        return self.tx.state is SendState.FAILED

    @property
    def stats(self) -> SendStats:
        return self.tx.stats


class Endpoint:
    """See module docstring. Not thread-safe: one endpoint per thread/process."""

    def __init__(self, cfg: EndpointConfig | None = None) -> None:
        self.cfg = cfg or EndpointConfig()
        if not 1 <= self.cfg.protected_mag_class <= P.MAG_CLASS_MAX:
            raise ValueError(f"protected_mag_class {self.cfg.protected_mag_class} outside 1..{P.MAG_CLASS_MAX}")
        if self.cfg.shed_senders < 0:
            raise ValueError(f"shed_senders {self.cfg.shed_senders} is negative")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._size_buffers()
        if self.cfg.ecn:
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, P.ECN_ECT0)
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        # A receiver that grants measures the DATA arrival rate (is its own link full? receiver.own_port_full)
        # from the kernel's receive time of each datagram, not from when this loop gets to read it: after a
        # wait for a CPU the backlog is read back to back, and dated at read time it looked like a full own
        # link, so the CE marks set on the way were not echoed (HT13, session 13: 39-95 of 119-145 marks of
        # a path at a third of the link at nice 19). Not needed (and not paid for) without a link rate.
        self._stamps = False
        if self.cfg.link_rate is not None:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                self._stamps = True
            except OSError:
                pass
        if self.cfg.offload not in OFFLOAD_MODES:
            raise ValueError(f"offload must be one of {', '.join(OFFLOAD_MODES)}, not {self.cfg.offload!r}")
        self._gro = self._gso = False
        if self.cfg.offload != "off":
            try:
                self.sock.setsockopt(SOL_UDP, UDP_GRO, 1)
                self._gro = self._gso = True
            except OSError:
                pass
        self.sock.bind(self.cfg.bind)
        self.sock.setblocking(False)
        # one AIMD pacer per destination: congestion on the way to one receiver (ECN marks at its
        # port, loss in its rounds) says nothing about the paths to the others (a PS server's fan-out)
        self.pacers: dict[tuple[str, int], AimdPacer] = {}
        self.grants = GrantPacer(self.cfg.link_rate)
        self.drops: collections.Counter[str] = collections.Counter()
        self.outgoing: dict[tuple[tuple[str, int], int], OutgoingTensor] = {}
        self._active: list[OutgoingTensor] = []    # sending order (see send_by_class)
        self.send_by_class = send_by_class()
        # per tensor being sent: (round, class code of each packet: magnitude class, CRITICAL_CLASS
        # when CRITICAL) for the window's split (GrantPacer.on_sent); refreshed per retransmit round
        self._classes: weakref.WeakKeyDictionary[OutgoingTensor, tuple[int, list[int]]] = weakref.WeakKeyDictionary()
        self.rx = ReceiveSide(self.cfg, self._sendto, self.drops)
        self._protected = self.cfg.protected_mag_class   # DATA below it (not CRITICAL): droppable by design
        self._shed_by: set[tuple[str, int]] = set()   # destinations whose last GRANT carried GRANT_FLAG_SHED
        # per tensor being sent: the packets its first transmission leaves out while its receiver sheds
        self._sheddable: weakref.WeakKeyDictionary[OutgoingTensor, np.ndarray] = weakref.WeakKeyDictionary()
        self.shed_packets = 0          # DATA packets left out (all-time; per tensor: SendStats.shed)
        self._buf = bytearray(65536)
        self._mv = memoryview(self._buf)
        self.ecn_echoes_received = 0
        self.ready_peers: set[tuple[str, int]] = set()
        self._open_sent: dict[tuple[str, int], float] = {}   # first contact: when the first OPEN left
        self._srtt: dict[tuple[str, int], tuple[float, float]] = {}   # peer -> (srtt, rttvar)
        # (peer, layer class) -> (srtt, rttvar) of the tensor's answer: behind strict-priority queues
        # each class waits its own time (a class-1 DONE 100+ ms, a class-7 one 15 ms in `accuracy`),
        # so a PROBE timer per peer fires too early for the low classes and too late for the high
        self._class_rtt: dict[tuple[tuple[str, int], int], tuple[float, float]] = {}
        self.probes_sent = 0           # PROBEs sent (all-time), for the records
        # seconds the loop had DATA to send but held it, by what held it (window, grant, aimd,
        # socket): the records' evidence of why
        # a transfer took longer than its bytes at the granted rate
        self.send_blocked: collections.Counter[str] = collections.Counter()
        self._blocked_since: float | None = None
        self._blocked_reason = ""

    def _size_buffers(self) -> None:
        for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, force, self.cfg.socket_buffer)
            except OSError:
                self.sock.setsockopt(socket.SOL_SOCKET, plain, self.cfg.socket_buffer)

    def pacer_for(self, dest: tuple[str, int]) -> AimdPacer:
        """The AIMD pacer of ``dest`` (created at the configured initial rate on first use)."""
        pacer = self.pacers.get(dest)
        if pacer is None:
            pacer = self.pacers[dest] = AimdPacer(self.cfg.rate)
        return pacer

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

    # the receive side's state, for callers and tests
    @property
    def assemblies(self) -> dict:
        return self.rx.assemblies

    @property
    def staged_elements(self) -> int:
        return self.rx.staged_elements

    @property
    def early_held(self) -> int:
        """DATA packets that arrived before their OPEN and were held for it (see ReceiveSide)."""
        return self.rx.early_held

    @property
    def packets_received(self) -> int:
        return self.rx.packets_received

    @property
    def spurious_retransmissions(self) -> int:
        """DATA packets received twice after a BITMAP asked for them again (the first copy was late)."""
        return self.rx.spurious_retransmissions

    @property
    def on_unexpected(self):
        """Called with each completed RecvHandle nobody expect()ed (``recv`` mode)."""
        return self.rx.on_unexpected

    @on_unexpected.setter
    def on_unexpected(self, fn) -> None:
        self.rx.on_unexpected = fn

    def expect(self, worker_id: int, iteration: int, tensor_id: int, out: np.ndarray,
               loss_bound: float | None = None) -> RecvHandle:
        """Receive ``tensor_id`` of ``iteration`` from sender ``worker_id`` into ``out`` (see ReceiveSide)."""
        return self.rx.expect(worker_id, iteration, tensor_id, out, loss_bound)

    def release(self, h: RecvHandle) -> None:
        """Free the staging of a completed unexpected tensor (see ReceiveSide.release)."""
        self.rx.release(h)

    def close(self, linger: float = 0.0) -> None:
        """Answer late probes for ``linger`` seconds (so a lost DONE is repeated), then close."""
        end = time.monotonic() + linger
        while time.monotonic() < end:
            self.poll(min(0.01, max(0.0, end - time.monotonic())))
        self.sock.close()

    # -- public API ----------------------------------------------------------------------------
    def send(self, pt: PacketizedTensor, dest: tuple[str, int]) -> SendHandle:
        """Start sending a packetized tensor to ``dest`` (job and worker come from the packets)."""
        try:
            dest = (socket.gethostbyname(dest[0]), int(dest[1]))
        except OSError:
            raise UserError(f"destination {dest[0]!r}: cannot resolve the host name") from None
        now = time.monotonic()
        tx = OutgoingTensor(pt, dest, now, self.rto_for_class(dest, pt.layer_class))
        key = (dest, pt.tensor_id)
        old = self.outgoing.get(key)
        if old is not None and old.state in (SendState.OPENING, SendState.SENDING, SendState.PROBING):
            raise TransportError(f"tensor {pt.tensor_id} to {dest[0]}:{dest[1]} is already in flight")
        self.outgoing[key] = tx
        # no wait for a fresh GRANT: the last grant from ``dest`` (active or standby, receiver.py)
        # is safe to start with
        if self.send_by_class:
            # the highest layer class first: the tensors to one receiver share its grant and window, and
            # the one the next forward pass needs first takes them (a later, higher-class tensor overtakes
            # the rest of a lower one); equal classes keep their order
            at = len(self._active)
            while at > 0 and self._active[at - 1].pt.layer_class < pt.layer_class:
                at -= 1
            self._active.insert(at, tx)
        else:
            self._active.append(tx)
        if dest not in self.ready_peers:         # first contact: wait for OPEN_ACK before DATA
            tx.state = SendState.OPENING
            tx.probe_due = now + tx.rto
            # the OPEN round trip (to the OPEN_ACK), the write-off timer's estimate before the first ACK: timed
            # from the first OPEN (an upper bound: the OPEN_ACK may answer a repeated one; from the latest, a
            # repeat 20 ms before the answer gave 10 ms for a 150 ms path)
            self._open_sent.setdefault(dest, now)
        self._sendto(tx.open_message(), dest)
        return SendHandle(tx)

    def run(self, handles: list, timeout: float = 60.0) -> None:
        """Turn the loop until every handle is done; TransportError on failure or timeout."""
        end = time.monotonic() + timeout
        while True:
            pending = [h for h in handles if not h.done]
            for h in pending:
                if h.failed:
                    raise TransportError(self._failure(h))
            if not pending:
                return
            if time.monotonic() > end:
                raise TransportError(f"timed out after {timeout:.1f}s with {len(pending)} tensor(s) unfinished")
            self.poll(0.05)

    def _failure(self, h) -> str:
        if isinstance(h, SendHandle):
            return h.tx.error or "send failed"
        return f"receive of tensor {h.tensor_id} from worker {h.worker_id} failed"

    # -- event loop ----------------------------------------------------------------------------
    def poll(self, max_wait: float) -> None:
        worked = self._drain(512)
        worked |= self._pump()
        wait = self._timers()
        if not worked:
            for tx in self._active:
                if tx.state is SendState.SENDING and (pacer := self.pacers.get(tx.dest)) and pacer.wait_time():
                    wait = min(wait, pacer.wait_time())
            select.select([self.sock], [], [], max(0.0, min(wait, max_wait)))

    def _sendto(self, data, dest: tuple[str, int]) -> bool:
        try:
            self.sock.sendto(data, dest)
            return True
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            log.debug("sendto %s failed: %s", dest, exc)
            return True  # e.g. ECONNREFUSED from an earlier ICMP: the probe timer covers it

    def rto_for(self, peer: tuple[str, int]) -> float:
        """Retransmission timeout towards ``peer``: srtt + 4 rttvar (RFC 6298), clamped."""
        est = self._srtt.get(peer)
        if est is None:
            return self.cfg.rto_initial
        srtt, var = est
        return min(max(self.cfg.rto_initial, srtt + 4 * var), self.cfg.rto_max)

    def rto_for_class(self, peer: tuple[str, int], layer_class: int) -> float:
        """PROBE timeout for a tensor of ``layer_class`` towards ``peer``: srtt + 4 rttvar of that
        class's answers (first transmission's last packet -> DONE, PROBE -> BITMAP), clamped; the
        peer's RTO until the class has a sample."""
        est = self._class_rtt.get((peer, layer_class))
        if est is None:
            return self.rto_for(peer)
        srtt, var = est
        return min(max(self.cfg.rto_initial, srtt + 4 * var), self.cfg.rto_max)

    @staticmethod
    def _smooth(table: dict, key, sample: float) -> None:
        """RFC 6298 smoothing of ``sample`` into ``table[key]`` = (srtt, rttvar)."""
        est = table.get(key)
        if est is None:
            table[key] = (sample, sample / 2)
        else:
            srtt, var = est
            table[key] = (0.875 * srtt + 0.125 * sample, 0.75 * var + 0.25 * abs(srtt - sample))

    def _rtt_sample(self, tx: OutgoingTensor) -> None:
        sample, tx.rtt_sample = tx.rtt_sample, None
        if sample is None:
            return
        self._smooth(self._srtt, tx.dest, sample)
        self._smooth(self._class_rtt, (tx.dest, tx.pt.layer_class), sample)
        self.pacer_for(tx.dest).rtt = self._srtt[tx.dest][0]

    def counters(self) -> dict:
        """Cumulative transport counters for the per-iteration records (why time went where)."""
        g = self.grants
        return {"send_blocked_s": {k: round(v, 4) for k, v in sorted(self.send_blocked.items())},
                "window_stalls": g.window_stalls, "unwindowed_sent": g.unwindowed_sent(), "standby_grants_sent": self.rx.standby_grants_sent,
                "grants_received": g.grants_received, "grants_sent": self.rx.grants_sent,
                "shed_packets": self.shed_packets, "shed_grants_sent": self.rx.shed_grants_sent,
                "last_probe_completions": self.rx.last_probe_completions,
                "last_probe_repeats": self.rx.last_probe_repeats,
                "acks_sent": self.rx.acks_sent, "ce_not_echoed": self.rx.ce_own_port, "aimd_cuts": sum(p.decreases for p in self.pacers.values()),
                "aimd_cuts_by_peer": {f"{a}:{p}": v.decreases for (a, p), v in self.pacers.items() if v.decreases},
                "aimd_rate": {f"{a}:{p}": round(v.rate) for (a, p), v in self.pacers.items() if v.rate is not None},
                "srtt_ms": {f"{a}:{p}": round(v[0] * 1e3, 2) for (a, p), v in self._srtt.items()},
                "class_srtt_ms": {f"{a}:{p}/{c}": round(v[0] * 1e3, 2) for ((a, p), c), v in self._class_rtt.items()},
                "probes_sent": self.probes_sent,
                "ack_rtt_min_ms": {f"{a}:{p}": round(v * 1e3, 2) for (a, p), v in g.ack_rtt_min.items()},
                "ack_srtt_ms": {f"{a}:{p}": round(v * 1e3, 2) for (a, p), v in g.ack_srtt.items()},
                "window_peak": {f"{a}:{p}": v for (a, p), v in g.window_peak.items()},
                "caught_up_bytes": g.caught_up_bytes, "grant_clipped_s": round(g.clipped_s, 4)}

    def _pump(self) -> bool:
        worked = False
        now = time.monotonic()
        if self._blocked_since is not None:
            self.send_blocked[self._blocked_reason] += now - self._blocked_since
            self._blocked_since = None
        blocked = ""
        backlog = set()                        # destinations with DATA still waiting (GrantPacer catch-up)
        # Destinations whose window, grant, pacer or socket refused an earlier tensor in this turn: the later
        # tensors to them wait for the next turn. They share those limits, so a later tensor could only win the
        # moment the pacer's bucket crossed zero between the two checks (a descheduled loop makes that wide),
        # and the order above (send() order, or highest class first) would not hold.
        refused = set()
        for tx in self._active:
            if tx.state is not SendState.SENDING:
                continue
            if tx.dest in refused:
                backlog.add(tx.dest)
                continue
            before = tx.pos
            reason = self._send_some(tx)
            if reason and tx.pos < tx.queue.size:
                refused.add(tx.dest)
                blocked = blocked or reason
            worked |= tx.pos != before
            if tx.pos < tx.queue.size:
                backlog.add(tx.dest)
            else:
                first = tx.round == 0 and tx.tail_sent is None
                if first:
                    tx.tail_sent = now
                # after a stalled round the PROBE waits (backoff); a small tensor whose every packet is
                # needed sends none at all unless its DONE is late (OutgoingTensor.probe_free)
                defer = tx.stalls > 0 or (first and tx.probe_free)
                tx.start_probe(now, defer=defer)
                if not defer:
                    self._send_probe(tx)
                worked = True
        self.grants.set_backlog(backlog)
        if blocked:
            self._blocked_since, self._blocked_reason = now, blocked
        return worked

    def _write_off(self, dest: tuple[str, int]) -> float:
        """Seconds without ACK progress after which a closed window's packets are presumed lost."""
        after = max(WRITE_OFF_MIN, 2 * self.rto_for(dest))
        ack = self.grants.write_off_bound(dest)
        return after if ack is None else max(after, min(ack, WRITE_OFF_MAX))

    def _send_some(self, tx: OutgoingTensor) -> str:
        """Send up to send_batch packets of ``tx`` (GSO batches for runs of full packets); returns what
        stopped it short of the batch ("window", "grant", "aimd", "socket", "" = nothing)."""
        pt, sock, dest = tx.pt, self.sock, tx.dest
        pacer = self.pacer_for(dest)
        queue, pos = tx.queue, tx.pos
        end = min(pos + self.cfg.send_batch, queue.size)
        lengths, stride = pt.lengths, pt.stride
        full = pt.full_packets
        grants = self.grants
        gso_ok = self._gso and tx.sequential and (self.cfg.offload == "on" or dest[0].startswith("127."))
        gso_k = min(GSO_MAX_SEGMENTS, GSO_MAX_BYTES // stride) if gso_ok else 0
        burst = grants.burst_bytes(dest)
        if burst is not None:                  # a granted rate: no GSO batch beyond its bucket
            gso_k = min(gso_k, int(burst // stride))
        write_off = self._write_off(dest)
        classes = self._packet_classes(tx)
        window = grants.window_limit(dest)
        if window is not None:                 # ... nor beyond the window
            gso_k = min(gso_k, window)
        # the receiver holds senders (its last GRANT said so): a first transmission leaves out the droppable
        shed = self._sheddable_of(tx) if dest in self._shed_by and tx.stats.rounds == 0 else None
        stopped = ""
        while pos < end:
            i = int(queue[pos])
            k = min(gso_k, end - pos, full - i)
            if shed is not None:
                if shed[i]:
                    shed[i] = False            # once: counted as lost from now on
                    tx.stats.shed += 1
                    self.shed_packets += 1
                    pos += 1
                    continue
                if k > 1:                      # a GSO run stops before the next packet to leave out
                    nxt = np.flatnonzero(shed[i:i + k])
                    if nxt.size:
                        k = max(1, int(nxt[0]))
            try:
                if not grants.window_open(dest, write_off):
                    stopped = "window"
                    break
                if not grants.ready(dest):
                    stopped = "grant"
                    break
                if k > 1 and window is not None:   # a batch fills the window, never more
                    k = max(1, min(k, window - grants.in_flight(dest)))
                if k > 1:
                    nbytes = k * stride
                    if not pacer.allow(nbytes):
                        stopped = "aimd"
                        break
                    try:
                        sock.sendmsg(pt.run_buffers(i, k), [(SOL_UDP, UDP_SEGMENT, stride.to_bytes(2, sys.byteorder))],
                                     0, dest)
                    except OSError as exc:
                        if isinstance(exc, (BlockingIOError, InterruptedError)):
                            raise
                        log.info("UDP GSO unavailable (%s); sending packet by packet", exc)
                        self._gso = False
                        gso_k = 0
                        continue
                else:
                    k = 1
                    nbytes = int(lengths[i])
                    if not pacer.allow(nbytes):
                        stopped = "aimd"
                        break
                    if pt.zero_copy:         # header + payload from the tensor's memory
                        sock.sendmsg(pt.buffers(i), (), 0, dest)
                    else:
                        sock.sendto(pt.packet(i), dest)
            except (BlockingIOError, InterruptedError):
                stopped = "socket"
                break
            except OSError as exc:
                log.debug("sendto %s failed: %s", dest, exc)
            grants.charge(dest, nbytes)
            grants.on_sent(dest, k, classes[i:i + k])
            tx.stats.packets += k
            tx.stats.bytes += nbytes
            pos += k
        tx.pos = pos
        return stopped

    def _sheddable_of(self, tx: OutgoingTensor) -> np.ndarray:
        """Per packet of ``tx``: left out of its first transmission while its receiver sheds.

        Droppable by design (not CRITICAL, magnitude class below ``protected_mag_class``), never the LAST
        packet, and at most the tensor's loss budget (``n_nc - ceil((1 - p) n_nc)`` non-critical packets, the
        smallest magnitude classes first), so the packets left out never take the tensor past its bound.
        Gradients only, as in ns-3: a parameter's missing elements keep the receiver's stale values (the
        switch may still drop its droppable packets; the sender never leaves them out). Packets sent before
        the flag came are not marked; a packet is cleared once left out.
        """
        got = self._sheddable.get(tx)
        if got is not None:
            return got
        pt = tx.pt
        rec = pt.records
        mask = np.asarray(P.droppable_by_design(rec["flags"], rec["b1"], self._protected), bool)
        if pt.kind != P.KIND_GRADIENT:
            mask[:] = False
        mask &= (rec["flags"] & P.FLAG_LAST) == 0
        n_nc = pt.n_packets - int(pt.critical.sum())
        budget = n_nc - math.ceil((1.0 - pt.loss_bound) * n_nc - 1e-9)
        idx = np.flatnonzero(mask)
        if idx.size > budget:
            keep = idx[np.argsort(rec["b1"][idx] & P.MAG_CLASS_MAX, kind="stable")[:max(0, budget)]]
            mask[:] = False
            mask[keep] = True
        mask[tx.queue[:tx.pos]] = False        # already sent
        self._sheddable[tx] = mask
        return mask

    def _packet_classes(self, tx: OutgoingTensor) -> list[int]:
        """Class code of each of ``tx``'s packets as its header now says (a retransmission promoted
        to CRITICAL is protected): the magnitude class, or CRITICAL_CLASS when CRITICAL."""
        got = self._classes.get(tx)
        if got is not None and got[0] == tx.round:
            return got[1]
        rec = tx.pt.records
        codes = np.where(rec["flags"] & P.FLAG_CRITICAL, CRITICAL_CLASS, rec["b1"] & P.MAG_CLASS_MAX).tolist()
        self._classes[tx] = (tx.round, codes)
        return codes

    def _timers(self) -> float:
        now = time.monotonic()
        wait = 0.05
        keep = []
        for tx in self._active:
            if tx.state is SendState.SENDING:
                # 0: not grant-bound (pacer, socket); else until a pair (pace_packets) may go, or the rest
                grant_wait = self.grants.wait_time(tx.dest, min(self.grants.pace_packets, tx.queue.size - tx.pos))
                grant_wait = max(grant_wait, self.grants.window_wait(tx.dest, self._write_off(tx.dest)))
                if grant_wait > 0:
                    wait = min(wait, grant_wait)
            elif tx.state is SendState.OPENING:
                if now - tx.last_heard > self.cfg.give_up_after:
                    tx.state = SendState.FAILED
                    self._open_sent.pop(tx.dest, None)
                    tx.error = (f"no answer from {tx.dest[0]}:{tx.dest[1]} to the OPEN of tensor "
                                f"{tx.pt.tensor_id} in {self.cfg.give_up_after:.1f}s")
                elif now >= tx.probe_due:
                    tx.rto = min(tx.rto * 2, self.cfg.rto_max)
                    tx.probe_due = now + tx.rto
                    self._sendto(tx.open_message(), tx.dest)
                if tx.state is SendState.OPENING:
                    wait = min(wait, max(0.0, tx.probe_due - now))
            elif tx.state is SendState.PROBING:
                if now - tx.last_heard > self.cfg.give_up_after:
                    tx.state = SendState.FAILED
                    tx.error = (f"no answer from {tx.dest[0]}:{tx.dest[1]} for tensor {tx.pt.tensor_id} "
                                f"in {self.cfg.give_up_after:.1f}s")
                elif now >= tx.probe_due:
                    if tx.probe_pending:
                        tx.send_deferred_probe(now)
                        self._send_probe(tx)
                    elif tx.chunks:
                        self._plan(tx, now)
                    else:
                        tx.on_timeout(now, self.cfg.rto_max)
                        tx.start_probe(now)
                        self._send_probe(tx)
                if tx.state is SendState.PROBING:
                    wait = min(wait, max(0.0, tx.probe_due - now))
            if tx.state in (SendState.OPENING, SendState.SENDING, SendState.PROBING):
                keep.append(tx)
        self._active = keep
        return self.rx.tick(now, wait)

    def _plan(self, tx: OutgoingTensor, now: float) -> None:
        plan = tx.plan_retransmit()
        if plan.size:
            # loss in the round is a congestion signal too; what arrived bounds the new rate
            self.pacer_for(tx.dest).on_congestion(tx.delivery_rate(now))
            tx.begin_retransmit(plan, now, self.rto_for_class(tx.dest, tx.pt.layer_class), self.cfg.rto_max,
                                self.cfg.promote_retransmissions)
        else:
            tx.on_timeout(now, self.cfg.rto_max)
            tx.start_probe(now)
            self._send_probe(tx)

    def _send_probe(self, tx: OutgoingTensor) -> None:
        self.probes_sent += 1
        self._sendto(tx.probe_message(), tx.dest)

    # -- receive path --------------------------------------------------------------------------
    def _drain(self, budget: int) -> bool:
        """Read up to ``budget`` datagrams (a GRO super-datagram counts once) and dispatch them."""
        sock, mv = self.sock, self._mv
        use_msg = self.cfg.ecn or self._gro or self._stamps
        got = 0
        cmsg_space = 2 * socket.CMSG_SPACE(4) + (socket.CMSG_SPACE(TIMESPEC.size) if self._stamps else 0)
        while got < budget:
            ce = False
            seg = 0
            at = None                  # kernel receive time (time.time() clock), when stamped
            try:
                if use_msg:
                    n, anc, _flags, addr = sock.recvmsg_into([mv], cmsg_space)
                    for level, ctype, cdata in anc:
                        if level == socket.IPPROTO_IP and ctype == socket.IP_TOS and cdata:
                            ce = (cdata[0] & 3) == P.ECN_CE
                        elif level == SOL_UDP and ctype == UDP_GRO and len(cdata) >= 2:
                            seg = int.from_bytes(cdata[:2], sys.byteorder)
                        elif ctype == SO_TIMESTAMPNS and level == socket.SOL_SOCKET and len(cdata) >= TIMESPEC.size:
                            sec, nsec = TIMESPEC.unpack_from(cdata)
                            at = sec + nsec * 1e-9
                else:
                    n, addr = sock.recvfrom_into(mv)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # ICMP errors surface here on Linux; not fatal
                log.debug("recv error: %s", exc)
                continue
            got += 1
            if seg and seg < n:           # GRO: equal-size datagrams glued together, split again
                done = self.rx.gro_batch(self._buf, seg, n, ce, addr, at) if seg > P.DLCP_HEADER_LEN else 0
                for start in range(done, n, seg):
                    self._datagram(mv[start:min(start + seg, n)], ce, addr, at)
            else:
                self._datagram(mv[:n], ce, addr, at)
        return got > 0

    def _datagram(self, mv: memoryview, ce: bool, addr: tuple[str, int], at: float | None = None) -> None:
        """One datagram from ``addr``; ``at``: when the kernel received it (None: not stamped)."""
        n = len(mv)
        drops = self.drops
        if n < P.DLCP_HEADER_LEN:
            drops["truncated"] += 1
            return
        b0, b1, flags, b3, hjob, worker, it, tid, count, off, seq = P.HEADER_STRUCT.unpack_from(mv)
        if b0 >> 4 != P.VERSION:
            drops["bad_version"] += 1
            return
        if hjob != self.cfg.job_id:
            drops["wrong_job"] += 1
            return
        msg = b0 & 0xF
        if msg == P.MSG_DATA:
            self.rx.count_data(addr, 1, worker, it, tid, b3 >> 4, P.droppable_by_design(flags, b1, self._protected), at)
            self.rx.data(mv, flags, b3, worker, it, tid, count, off, ce, seq, addr)
        else:
            self._control(msg, b1 >> 5, flags, b3 >> 4, worker, it, tid, seq,
                          bytes(mv[P.DLCP_HEADER_LEN:]), addr)

    def _control(self, msg: int, layer: int, flags: int, dtype: int, worker: int, it: int, tid: int,
                 seq: int, body: bytes, addr: tuple[str, int]) -> None:
        now = time.monotonic()
        if msg == P.MSG_CONTROL:
            if len(body) < P.CONTROL_HEAD.size:
                self.drops["bad_control"] += 1
                return
            (sub,) = P.CONTROL_HEAD.unpack_from(body)
            rest = body[P.CONTROL_HEAD.size:]
            if sub == P.CTRL_OPEN:
                self.rx.on_open(layer, dtype, worker, it, tid, rest, addr)
            elif sub == P.CTRL_OPEN_ACK:
                self._peer_ready(addr)
            elif sub == P.CTRL_ACK:
                try:
                    received, droppable, protected = P.unpack_ack(rest)
                except ValueError:
                    self.drops["bad_control"] += 1
                    return
                self.grants.on_ack(addr, received, droppable, protected)
            elif sub == P.CTRL_GRANT:
                if len(rest) < P.GRANT_BODY.size:
                    self.drops["bad_control"] += 1
                    return
                try:
                    rate, _senders, window, gflags = P.unpack_grant(rest)
                except ValueError:
                    self.drops["bad_control"] += 1
                    return
                self.grants.grant(addr, max(GRANT_FLOOR, float(rate)))
                self.grants.set_window(addr, window)
                if gflags & P.GRANT_FLAG_SHED and self.cfg.shed_droppable:
                    self._shed_by.add(addr)
                else:
                    self._shed_by.discard(addr)
            elif sub == P.CTRL_ECN_ECHO:
                tx = self.outgoing.get((addr, tid))
                if tx is not None and tx.pt.iteration == it and len(rest) >= P.ECN_ECHO_BODY.size:
                    self.ecn_echoes_received += 1
                    (marks,) = P.ECN_ECHO_BODY.unpack_from(rest)
                    # share of our packets marked since the last cut this tensor caused
                    sent = max(1, tx.stats.packets - tx.ecn_sent_base)
                    if self.pacer_for(addr).on_ecn(max(0, marks - tx.ecn_marks_base) / sent):
                        tx.ecn_marks_base, tx.ecn_sent_base = marks, tx.stats.packets
            else:
                self.drops["bad_control"] += 1
        elif msg == P.MSG_PROBE:
            self.rx.on_probe(layer, dtype, worker, it, tid, seq, body, addr, now)
        elif msg == P.MSG_BITMAP:
            tx = self.outgoing.get((addr, tid))
            if tx is None or tx.pt.iteration != it or len(body) < P.BITMAP_HEAD.size:
                self.drops["stale_control"] += 1
                return
            round_, chunk, n_chunks, first, nbits, deficit, _mc = P.BITMAP_HEAD.unpack_from(body)
            ready = tx.on_bitmap(round_, chunk, n_chunks, first, nbits, deficit, body[P.BITMAP_HEAD.size:], now)
            self._rtt_sample(tx)
            if ready:
                self._round_over(tx)
            if ready:
                self._plan(tx, now)
        elif msg == P.MSG_DONE:
            tx = self.outgoing.get((addr, tid))
            if tx is None or tx.pt.iteration != it:
                self.drops["stale_control"] += 1
                return
            if tx.state is not SendState.DONE and (sample := tx.done_rtt(now)) is not None:
                self._smooth(self._class_rtt, (tx.dest, tx.pt.layer_class), sample)
            tx.on_done(body, now)
            lost = None
            if tx.pt.n_packets < ACK_EVERY:
                # the receiver sends its exact count before a DONE only for tensors of ACK_EVERY packets or
                # more: what arrived of this one may not be acknowledged yet, the DONE says what was lost
                st = tx.stats
                lost = max(0, st.packets - st.received - st.duplicates)
            self._round_over(tx, lost)
        else:
            self.drops["bad_msg_type"] += 1

    def _round_over(self, tx: OutgoingTensor, lost: int | None = None) -> None:
        """A round's answer: what the receiver has not counted of it is lost, not in flight (unless
        another tensor to the same receiver is sending: its packets may still be on the way); ``lost``:
        only that many when the answer says so (GrantPacer.write_off)."""
        if not any(o is not tx and o.dest == tx.dest and o.state is SendState.SENDING for o in self._active):
            self.grants.write_off(tx.dest, lost)

    def _peer_ready(self, addr: tuple[str, int]) -> None:
        if addr in self.ready_peers:
            return
        self.ready_peers.add(addr)
        now = time.monotonic()
        sent = self._open_sent.pop(addr, None)
        if sent is not None:
            self.grants.seed_rtt(addr, now - sent)
        for tx in self._active:
            if tx.state is SendState.OPENING and tx.dest == addr:
                # the OPEN_ACK answers one OPEN; the peer may have missed the others (sent before it
                # listened), and DATA it cannot place is dropped: announce each tensor again first
                self._sendto(tx.open_message(), addr)
                tx.state = SendState.SENDING
                tx.rto = tx.rto_initial
                tx.last_heard = now
                tx.data_start = now

