"""Sender side of one tensor: send queue, probe rounds, selective-retransmit planning.

State machine (docs/transport.md): [OPENING, first contact with a peer only: OPEN repeated until
OPEN_ACK] -> SENDING (DATA paced out of the queue) -> PROBING (PROBE sent,
waiting for BITMAP or DONE) -> SENDING again with the retransmit plan, or DONE. The retransmit plan
from a round's BITMAP: every missing CRITICAL packet first, then the missing non-critical packets
with the largest magnitudes, as many as the receiver's reported deficit.
"""

from __future__ import annotations

import enum
import math
import secrets
from dataclasses import dataclass

import numpy as np

from host_agent import protocol as P
from host_agent.packetizer import PacketizedTensor

# A tensor of at most this many packets, every one of which the receiver needs (no loss budget to
# spend: n_critical + ceil((1 - p) * n_noncritical) == n_packets), sends no PROBE after its DATA:
# the receiver completes it the moment its last packet arrives and sends DONE unsolicited, so the
# PROBE (and the DONE that answers it) only ever repeated what the DONE says. The PROBE goes out
# when the DONE is later than the class's RTO (loss). Measured in `accuracy` (H10-4,
# docs/experiments-history.md): 1-2 packet tensors in the low classes took 2-3 PROBEs each, and PROBEs
# plus their DONE answers were about 40 % of the packets at the PS server's port.
PROBE_FREE_MAX_PACKETS = 4


class SendState(enum.Enum):
    OPENING = "opening"     # first contact with this peer: OPEN repeated until OPEN_ACK
    SENDING = "sending"
    PROBING = "probing"
    DONE = "done"
    FAILED = "failed"


@dataclass
class SendStats:
    packets: int = 0
    bytes: int = 0
    retransmitted: int = 0
    rounds: int = 0
    probes: int = 0
    shed: int = 0             # droppable packets left out while the receiver held senders (endpoint.py)
    # from the receiver's DONE
    received: int = 0
    zero_filled_packets: int = 0
    zero_filled_elements: int = 0
    duplicates: int = 0
    ce_marks: int = 0


class OutgoingTensor:
    """One tensor on its way to one destination."""

    def __init__(self, pt: PacketizedTensor, dest: tuple[str, int], now: float, rto: float) -> None:
        self.pt = pt
        self.dest = dest
        self.token = secrets.randbits(32)   # per-transfer; announced in OPEN/PROBE, carried in seq
        pt.seal(self.token)
        self.queue = np.arange(pt.n_packets, dtype=np.int64)
        self.sequential = True        # queue is 0..n-1 in order (GSO runs allowed)
        self.pos = 0
        self.state = SendState.SENDING
        self.round = 0
        self.rto_initial = rto
        self.rto = rto
        self.probe_due = 0.0
        self.last_heard = now
        self.started = now
        self.data_start = now         # first DATA may leave (reset when OPEN_ACK releases it)
        self.tail_sent: float | None = None   # when the first transmission's last packet left
        self.finished: float | None = None
        self.chunks: dict[int, tuple[int, int, np.ndarray]] = {}
        self.chunk_round = -1         # round the stored chunks answer
        self.planned_round = -1       # newest round whose BITMAP was acted upon
        self.n_chunks = 0
        self.probe_sent: dict[int, float] = {}   # round -> when its PROBE left (RTT samples)
        self.rtt_sample: float | None = None      # set by an answer to a PROBE; read by the endpoint
        self.best_received = -1       # most packets any BITMAP showed received (progress)
        self.stalls = 0               # consecutive retransmit rounds that made no progress
        self.probe_pending = False    # PROBE deferred until probe_due (backoff after a stall)
        self.ecn_marks_base = 0       # receiver's CE count / our packets sent at the last ECN cut
        self.ecn_sent_base = 0
        self.deficit = 0
        self.next_seq = pt.n_packets
        self.stats = SendStats()
        self.error: str | None = None

    @property
    def needs_every_packet(self) -> bool:
        """The receiver completes only once every packet is in (the loss bound allows none missing)."""
        pt = self.pt
        n_c = int(pt.critical.sum())
        n_nc = pt.n_packets - n_c
        return n_c + math.ceil((1.0 - pt.loss_bound) * n_nc - 1e-9) >= pt.n_packets

    @property
    def probe_free(self) -> bool:
        """No PROBE right after the first transmission (PROBE_FREE_MAX_PACKETS): DONE comes unasked."""
        return self.pt.n_packets <= PROBE_FREE_MAX_PACKETS and self.needs_every_packet

    def done_rtt(self, now: float) -> float | None:
        """First transmission's last packet -> DONE, when no retransmission round was needed (Karn:
        then the DONE answers that transmission); the round trip of this tensor's queue class."""
        if self.stats.rounds or self.tail_sent is None:
            return None
        return now - self.tail_sent

    # -- messages ------------------------------------------------------------------------------
    def control_header(self, msg_type: int, count: int = 0, seq: int = 0) -> bytes:
        pt = self.pt
        flags = P.FLAG_CRITICAL | (P.FLAG_PULL if pt.kind == P.KIND_PARAMETER else 0)
        return P.DlcpHeader(msg_type=msg_type, layer_class=pt.layer_class, flags=flags, dtype=pt.dtype,
                            job_id=pt.job_id, worker_id=pt.worker_id, iteration=pt.iteration,
                            tensor_id=pt.tensor_id, count=count, seq=seq).pack()

    def open_message(self) -> bytes:
        return (self.control_header(P.MSG_CONTROL) + P.CONTROL_HEAD.pack(P.CTRL_OPEN)
                + self.pt.descriptor().pack() + P.TOKEN.pack(self.token))

    def probe_message(self) -> bytes:
        return (self.control_header(P.MSG_PROBE, seq=self.round) + self.pt.descriptor().pack()
                + P.TOKEN.pack(self.token))

    # -- events --------------------------------------------------------------------------------
    def start_probe(self, now: float, defer: bool = False) -> None:
        """Enter PROBING for the current round; the caller sends the PROBE unless ``defer``.

        A deferred PROBE (after retransmit rounds that made no progress) leaves at ``probe_due``,
        so a path that keeps losing our packets sees one PROBE per backed-off RTO, not a storm.
        """
        if self.state is SendState.SENDING:
            # the receiver answers PROBEs, not DATA (a receiver without a link rate says nothing while it
            # comes): its silence counts from the end of the transmission, so a paced one that took longer
            # than give_up_after is no reason to give up before the PROBE had a chance to be answered
            self.last_heard = max(self.last_heard, now)
        self.state = SendState.PROBING
        self.probe_due = now + self.rto
        self.probe_pending = defer
        if not defer:
            self.probe_sent[self.round] = now
            self.stats.probes += 1

    def send_deferred_probe(self, now: float) -> None:
        self.probe_pending = False
        self.probe_due = now + self.rto
        self.probe_sent[self.round] = now
        self.stats.probes += 1

    def _rtt(self, round_: int, now: float) -> None:
        sent = self.probe_sent.pop(round_, None)
        if sent is not None:
            self.rtt_sample = now - sent

    def on_bitmap(self, round_: int, chunk: int, n_chunks: int, first: int, nbits: int, deficit: int,
                  bits: bytes, now: float) -> bool:
        """Store one BITMAP chunk; True when a round's chunks are all here (plan now).

        A BITMAP of an older round than the last PROBE is still used (the answer was merely slower
        than the RTO), as long as it is newer than the last round acted upon.
        """
        self.last_heard = now
        if self.state is not SendState.PROBING or round_ <= self.planned_round or round_ > self.round:
            return False
        if first + nbits > self.pt.n_packets or len(bits) * 8 < nbits or chunk >= n_chunks:
            return False
        self._rtt(round_, now)
        if round_ != self.chunk_round:
            if round_ < self.chunk_round:
                return False
            self.chunks = {}
            self.chunk_round = round_
        self.n_chunks = n_chunks
        self.deficit = deficit
        received = np.unpackbits(np.frombuffer(bits, np.uint8), bitorder="little", count=nbits).astype(bool)
        self.chunks[chunk] = (first, nbits, received)
        return len(self.chunks) == n_chunks

    def plan_retransmit(self) -> np.ndarray:
        """Packets to resend from the chunks of this round: missing critical, then by magnitude."""
        pt = self.pt
        covered = np.zeros(pt.n_packets, bool)
        received = np.zeros(pt.n_packets, bool)
        for first, nbits, bits in self.chunks.values():
            covered[first:first + nbits] = True
            received[first:first + nbits] = bits
        missing = covered & ~received
        crit = np.flatnonzero(missing & pt.critical)
        noncrit = np.flatnonzero(missing & ~pt.critical)
        take = min(self.deficit, noncrit.size)
        if take < noncrit.size:
            order = np.argsort(-pt.magnitude[noncrit], kind="stable")
            noncrit = noncrit[order[:take]]
        return np.concatenate([crit, noncrit]).astype(np.int64)

    def delivery_rate(self, now: float) -> float | None:
        """Bytes/s the receiver got in the first round (None when there is no fair sample).

        Only the first round counts: its BITMAP shows what a bottleneck let through of a queue sent
        as fast as the pacer allowed, so received bytes over the elapsed time is our share.
        """
        if self.stats.rounds > 0 or not self.chunks:
            return None
        elapsed = now - self.data_start
        got = self.received_in_chunks()
        if elapsed < 0.005 or got < 8:
            return None
        return got * self.pt.stride / elapsed

    def received_in_chunks(self) -> int:
        return sum(int(bits.sum()) for _f, _n, bits in self.chunks.values())

    def begin_retransmit(self, plan: np.ndarray, now: float, rto: float, rto_max: float,
                         promote: bool = True) -> None:
        """Queue ``plan`` as the next round; with ``promote`` every packet goes out CRITICAL.

        The plan holds only packets the receiver needs (missing critical ones and its deficit), so
        they must not be selectively dropped again. Rounds that show no progress over the best
        BITMAP so far back off: the RTO doubles and the next PROBE is deferred by it.
        """
        got = self.received_in_chunks()
        if got > self.best_received:
            self.best_received = got
            self.stalls = 0
            self.rto = rto
        else:
            self.stalls += 1
            self.rto = min(max(self.rto, rto) * 2, rto_max)
        self.planned_round = self.round   # answers to PROBEs sent before this plan are stale now
        for i in plan.tolist():
            self.pt.mark_retransmit(i, self.next_seq, promote)
            self.next_seq += 1
        self.queue = plan
        self.sequential = False
        self.pos = 0
        self.round += 1
        self.chunks = {}
        self.stats.retransmitted += int(plan.size)
        self.stats.rounds += 1
        self.state = SendState.SENDING

    def on_timeout(self, now: float, rto_max: float) -> None:
        """No full answer in time: act on partial chunks, else probe again (new round, backoff)."""
        if self.chunk_round >= 0:
            self.planned_round = max(self.planned_round, self.chunk_round)
        self.chunks = {}
        self.round += 1
        self.rto = min(self.rto * 2, rto_max)

    def on_done(self, body: bytes, now: float) -> None:
        self.last_heard = now
        if self.state in (SendState.DONE, SendState.FAILED):
            return
        if len(body) >= P.DONE_BODY.size:
            (self.stats.received, self.stats.zero_filled_packets, self.stats.zero_filled_elements,
             self.stats.duplicates, self.stats.ce_marks) = P.DONE_BODY.unpack_from(body)
        self.state = SendState.DONE
        self.finished = now
