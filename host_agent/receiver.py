"""Receive side of an endpoint: every tensor being received, from OPEN to DONE.

Owns the assemblies (one per sender and tensor), the callers' expectations and the staging of
tensors that arrive before anyone asked for them, answers PROBEs (BITMAP or DONE, held back while
DATA is still trickling in), echoes ECN marks and completes tensors. When the host's link rate is known it also grants every active sender an
equal share of that link and of a window of packets in flight (CONTROL/GRANT, receiver-driven
admission) and acknowledges their DATA every few packets (CONTROL/ACK). The endpoint reads the socket
and hands each DATA packet, GRO batch, OPEN and PROBE to this class; everything it refuses is
counted in the shared ``drops`` counter.

Hostile peers: a tensor is bound to the address that opened it and to the transfer token its
OPEN/PROBE announced; DATA from elsewhere (``wrong_peer``) or with a wrong token in ``seq``
(``bad_token``) never touches the tensor, and PROBEs from elsewhere get no answer. Staging for
unexpected tensors is bounded per sending address, and an unfinished tensor that receives no DATA
for ``idle_timeout`` seconds is forgotten (``expired``), so forged OPENs cannot hold memory or
block a genuine sender for long.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from host_agent import protocol as P
from host_agent.assembly import NUMPY_OF_DTYPE, ReceiveStats, TensorAssembly

if TYPE_CHECKING:
    from host_agent.endpoint import EndpointConfig

ECN_ECHO_GAP = 0.001
EARLY_MAX_PACKETS = 4096
HOLDOFF_GAPS = 4.0            # PROBE hold-off: this many smoothed DATA inter-arrival times ...
HOLDOFF_REORDER = 1.5         # ... or this times the largest reordering delay seen
HOLDOFF_NO_LAST = 0.02       # s of DATA silence before answering while LAST is missing
HOLDOFF_MAX = 0.1             # s, upper bound of the adaptive hold-off
REORDER_DECAY = 0.9      # DATA of a not-yet-announced iteration held for its OPEN/PROBE
STAGING_MIN_CHARGE = 1024     # elements a staged tensor costs at least (bounds tiny forged OPENs)
# Share of our link granted to the active senders together: all of it. At 0.93 (headroom for control
# and pacing jitter, until session 9) the queue in front of a receiver stayed below the switch's
# selective-drop depths, so an incast moved every packet and the loss bound never acted: DLCP's push
# ran at 0.97 of the line rate, TCP cubic's at 0.95-0.96 (pcaps at the PS port), iterations 1.01x.
# Granting the whole link, the senders' pacing jitter lets the queue reach the drop depths, and the
# switch drops packets the receiver can do without (droppable by design: the loss budget) instead of
# sending them through the bottleneck; the window still bounds the protected packets in the queue.
# Measured (H10a session 9, incast, quiet machine, 6 seeds x 4 it. interleaved, 00:37-00:43 UTC):
# 0.93: 2.285 s mean, 1.00: 2.239 s (2.19-2.20 in 5 of 6 seeds), 1.05: 2.218 s; given up 18 -> 109
# packets per iteration (of 6,360), no retransmission, no tail drop. docs/experiments-history.md.
GRANT_SHARE = 1.0
GRANT_IDLE = 0.5              # s without DATA after which a sender no longer counts as active
GRANT_TICK = 0.02             # s between checks for senders that went quiet (grants to the others)
GRANT_REFRESH = 0.5           # s: an opener whose share is unchanged gets its grant again after this long
GRANT_MEMORY = 2.0            # s: a sender active this recently may start its next tensor at any moment
WINDOW_PACKETS = 40           # DATA packets all granted senders together may have in flight towards us
# ... but each at least WINDOW_MIN: two ACKs' worth (2 x ACK_EVERY), so a sender sends the next ACK_EVERY
# packets while the ACK of the last is on its way. At 4 (= ACK_EVERY, until session 11), with 10 senders or
# more (40 // 10 = 4), a sender's whole window was unacknowledged when the ACK left: it held a round trip per
# ACK; incast-wide (12 workers) held ~1 s per worker and iteration, the server's port idle in 5-20 ms holes
# (H10a, session 10). Measured 8 vs 4 (H10c session 11, exports of d5e62e0, dlcp, same seeds, 08:15-08:39 UTC,
# steal <= 1.2 %): incast-wide 6 seeds x 3 it. mean 0.967 [0.950, 0.986], p99 0.969 [0.950, 0.978]
# (window-held 1.1-1.5 -> 0.2-0.5 s per worker and iteration; cost: 12 x 8 packets exceed the 64-packet queue,
# 7-66 tail drops per run, 0-1.3 retransmissions, given up 195 -> 249 packets per iteration, droppable by
# design); incast (6 workers, 6 -> 8) 7 x 3: 0.989 [0.985, 0.992], p99 0.992 [0.980, 1.000], no tail drop,
# given up 93 -> 127; tcp-bulk (3 workers: windows 13 and 40, unchanged) 7 x 7: 0.998 [0.990, 1.006], p99
# 1.019 [0.969, 1.068] (the same code path: the demo scenario's noise).
WINDOW_MIN = 8
# A receiver "holds" senders when more are active (or, for standby grants, recent) than SHED_SENDERS: past
# WINDOW_PACKETS // WINDOW_MIN each sender's window is at its floor, so together they may have more packets in
# flight than WINDOW_PACKETS, the receiver's queue budget (host_agent admits every sender; ns-3 holds the ones
# past ``overcommitSenders`` instead). Its GRANTs then carry GRANT_FLAG_SHED (cfg.shed_droppable): a flagged
# sender leaves out its droppable-by-design packets (endpoint.py), which would otherwise take link time in
# front of everyone's protected packets only to be zero-filled or dropped by the switch (ns-3's shedDroppable,
# session 16: -2.7 % mean over iterations 0-1 at paper-144, seeds 1-3).
SHED_SENDERS = WINDOW_PACKETS // WINDOW_MIN
ACK_EVERY = 4                 # CONTROL/ACK after this many DATA packets from a sender
# A receiver that grants does not echo CE marks while DATA arrives at OWN_PORT_FULL of its granted
# total or more: then its own link is the bottleneck, and the queue in front of it is already
# bounded by its grants and windows; echoing would cut the senders below their grants (measured in
# tcp-bulk, H10-3: the server's per-worker AIMD pacers held the fan-out 0.17-0.5 s per iteration
# for marks at each worker's own port). Marks that come while DATA arrives slower than that were
# set elsewhere (a spine, ECMP collisions) and are echoed.
OWN_PORT_FULL = 0.8
ARRIVAL_WINDOW = 0.02         # s of busy time over which the DATA arrival rate is measured
ARRIVAL_GAP_PACKETS = 4       # a gap between arrivals counts as busy time up to this many packet times
WIRE_PACKET_BYTES = 1514      # a full DATA frame on the wire
Address = tuple[str, int]


class RecvHandle:
    """A tensor being received into ``out``; ``done`` once complete (stats filled)."""

    def __init__(self, worker_id: int, iteration: int, tensor_id: int, out: np.ndarray | None,
                 loss_bound: float | None) -> None:
        self.worker_id, self.iteration, self.tensor_id = worker_id, iteration, tensor_id
        self.out = out
        self.loss_bound = loss_bound
        self.assembly: TensorAssembly | None = None
        self.stats: ReceiveStats | None = None
        self.done = False
        self.failed = False
        self.layer_class = 0
        self.kind = P.KIND_GRADIENT
        self.peer: tuple[str, int] | None = None   # address the tensor came from

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.worker_id, self.iteration, self.tensor_id)


class ReceiveSide:
    """See module docstring; ``send(data, addr)`` transmits a reply on the endpoint's socket."""

    def __init__(self, cfg: EndpointConfig, send: Callable[[bytes, Address], object],
                 drops: collections.Counter[str]) -> None:
        self.cfg = cfg
        self._send = send
        self.drops = drops
        self.assemblies: dict[tuple[int, int], TensorAssembly] = {}
        self.handles: dict[tuple[int, int, int], RecvHandle] = {}
        self._asm_handle: dict[int, RecvHandle] = {}
        self._asm_peer: dict[int, Address] = {}
        self._asm_echo: dict[int, float] = {}
        self._asm_ce_own: collections.Counter[int] = collections.Counter()   # marks not echoed, per tensor
        self.staged_elements = 0
        # staged (unexpected) tensors: key -> (sending address, elements charged)
        self._staged: dict[tuple[int, int, int], tuple[Address, int]] = {}
        self._staged_charge = 0
        self._peer_charge: collections.Counter[Address] = collections.Counter()
        self._asm_token: dict[int, int] = {}
        self._held: set[TensorAssembly] = set()      # probes waiting for DATA to go quiet
        self.on_unexpected: Callable[[RecvHandle], None] | None = None
        self.packets_received = 0
        # packets that arrived twice after a BITMAP had asked for them again (all-time count)
        self.spurious_retransmissions = 0
        # largest reordering delay seen (a packet arriving after the one sent next), decaying
        self.reorder = 0.0
        self._next_expiry = 0.0       # when tick() next looks for idle tensors (_expire_idle)
        self._rec_dtypes: dict[int, np.dtype] = {}
        # DATA that overtook its OPEN (sprayed paths) or belongs to the next iteration of a sender
        # whose current one we still hold: kept (bounded) and replayed once the tensor is opened.
        self._early: dict[tuple[int, int, int], list[tuple[bytes, bool, Address]]] = {}
        self._early_count = 0
        self.early_held = 0           # DATA packets held for a later OPEN (all-time count)
        # receiver-driven admission (cfg.link_rate known): the (rate, window) last granted to each
        # sender, and when each sender was last active (with a tensor of it, to address grants)
        self._granted: dict[Address, tuple[int, int, int]] = {}
        self._recent: dict[Address, tuple[float, P.DlcpHeader]] = {}   # -> (last active, GRANT header)
        self.standby_grants_sent = 0
        self._next_grant_check = 0.0
        self.grants_sent = 0
        self.shed_grants_sent = 0     # GRANTs that carried GRANT_FLAG_SHED (we held senders)
        self.last_probe_completions = 0   # tensors completed by the DATA after LAST that met the bound (last_as_probe)
        self.last_probe_repeats = 0       # PROBE(0)s not answered: LAST's BITMAP(0) had left (last_as_probe)
        self.active_senders_max = 0   # most senders granted at once (all-time)
        self._rx_from: collections.Counter[Address] = collections.Counter()   # DATA packets per sender
        self._rx_droppable: collections.Counter[Address] = collections.Counter()   # ... droppable by design
        self._acked_at: dict[Address, int] = {}
        self.acks_sent = 0
        # DATA arrival rate (packets/s) over the last ARRIVAL_WINDOW of busy time, and the one being counted
        self.arrival_rate = 0.0
        self._arrival_prev = 0.0
        self._arrival_busy = 0.0
        self._arrival_count = 0
        self.ce_own_port = 0          # CE-marked packets not echoed: our own link was full (all-time)
        self._open_acked: set[Address] = set()   # addresses whose first OPEN we acknowledged
        self._granted_at: dict[Address, float] = {}   # when each sender last got a grant

    # -- public API ----------------------------------------------------------------------------
    def expect(self, worker_id: int, iteration: int, tensor_id: int, out: np.ndarray,
               loss_bound: float | None = None) -> RecvHandle:
        """Receive tensor ``tensor_id`` of ``iteration`` from sender ``worker_id`` into ``out``.

        ``out`` keeps its content where packets stay missing for parameters; gradients are
        zero-filled there. ``loss_bound`` may tighten the sender's p (never loosen it).
        """
        if not out.flags.c_contiguous:
            raise ValueError("expect(): the destination array must be C-contiguous")
        key = (worker_id, iteration, tensor_id)
        h = self.handles.get(key)
        if h is not None and h.out is None:        # staged before we asked: bind it now
            h.out, h.loss_bound = out, loss_bound
            if h.done:
                self._deliver(h)
            return h
        h = RecvHandle(worker_id, iteration, tensor_id, out, loss_bound)
        self.handles[key] = h
        return h

    def release(self, h: RecvHandle) -> None:
        """Forget the data of a completed tensor nobody expected (``recv`` mode) to free staging.

        The assembly stays (without its buffer) so late PROBEs still get their DONE.
        """
        if not h.done or h.assembly is None:
            return
        self._unstage(h.key, h.assembly.desc.n_elements)
        h.assembly.drop_buffer()
        self.handles.pop(h.key, None)

    # -- packets handed over by the endpoint --------------------------------------------------
    def data(self, mv: memoryview, flags: int, b3: int, worker: int, it: int, tid: int, count: int,
             off: int, ce: bool, seq: int, addr: Address) -> None:
        """One DATA packet from ``addr`` (header already decoded, version and job checked)."""
        asm = self.assemblies.get((worker, tid))
        if asm is None or it > asm.iteration:
            self._hold_early(mv, worker, it, tid, ce, asm, addr)
            return
        if asm.iteration != it:
            self.drops["wrong_iteration"] += 1
            return
        if self._asm_peer.get(id(asm)) != addr:
            self.drops["wrong_peer"] += 1
            return
        plain = P.plain_seq(seq, self._asm_token[id(asm)], flags, off // asm.epp)
        if plain is None:
            self.drops["bad_token"] += 1
            return
        spurious = asm.spurious
        reason = asm.accept(b3 >> 4, flags, count, off, mv[P.DLCP_HEADER_LEN:], ce, plain)
        if reason is not None:
            self.drops[reason] += 1
            self.spurious_retransmissions += asm.spurious - spurious
            return
        self.packets_received += 1
        now = time.monotonic()
        index = off // asm.epp
        first_tx = not flags & P.FLAG_RETX
        if first_tx:                           # first transmissions leave in index order
            late = asm.reorder_delay(index, now)
            if late > 0.0:
                self.reorder = max(late, self.reorder)
        asm.note_arrival(now, index, 1, first_tx)
        if ce:
            self._echo_ce(asm)
        self._after_data(asm, first_tx and bool(flags & P.FLAG_LAST))

    def gro_batch(self, buf: bytearray, seg: int, n: int, ce: bool, addr: Address, at: float | None = None) -> int:
        """Vectorised path for a GRO run of consecutive full DATA packets of one tensor from ``addr``
        (``at``: the kernel's receive time of the run, None when not stamped).

        Returns the bytes consumed (0: let the per-packet path handle every datagram).
        """
        k = n // seg
        if k < 2:
            return 0
        dt = self._rec_dtypes.get(seg)
        if dt is None:
            dt = self._rec_dtypes[seg] = np.dtype({
                "names": ["b0", "b1", "flags", "b3", "jwi", "tc", "off", "seq"],
                "formats": ["u1", "u1", "u1", "u1", "<u8", "<u4", ">u4", ">u4"],
                "offsets": [0, 1, 2, 3, 4, 12, 16, 20], "itemsize": seg})
        v = np.frombuffer(buf, dtype=dt, count=k)
        h = v[0]
        if h["b0"] != (P.VERSION << 4 | P.MSG_DATA):
            return 0
        b0, b1, flags, b3, job, worker, it, tid, count, off, seq = P.HEADER_STRUCT.unpack_from(buf)
        if job != self.cfg.job_id:
            return 0
        asm = self.assemblies.get((worker, tid))
        if asm is None or asm.iteration != it or self._asm_peer.get(id(asm)) != addr:
            return 0
        offs = v["off"]
        # same job/worker/iteration (jwi), tensor/count (tc), version/type, dtype; consecutive offsets
        if not ((v["jwi"] == h["jwi"]).all() and (v["tc"] == h["tc"]).all() and (v["b0"] == b0).all()
                and (v["b3"] == b3).all() and int(offs[-1]) - off == (k - 1) * count
                and (np.diff(offs.astype(np.int64)) == count).all()):
            return 0
        payload = np.frombuffer(buf, np.uint8, count=k * seg).reshape(k, seg)[:, P.DLCP_HEADER_LEN:]
        fl = v["flags"]
        crit = (fl & P.FLAG_CRITICAL) != 0
        retx = (fl & P.FLAG_RETX) != 0
        plain = v["seq"] ^ np.uint32(self._asm_token[id(asm)])
        first_index = off // asm.epp
        expected = np.arange(first_index, first_index + k, dtype=np.uint32)
        if not np.where(retx, plain >> (P.RETX_COUNTER_BITS + 1) == 0, plain == expected).all():
            return 0                           # a wrong token somewhere: the per-packet path counts it
        n_crit = int(np.count_nonzero(crit & (~retx | ((plain & 1) != 0))))
        if not asm.accept_run(b3 >> 4, count, off, payload, n_crit, ce):
            return 0
        self.packets_received += k
        droppable = P.droppable_by_design(fl, v["b1"], self.cfg.protected_mag_class)
        self.count_data(addr, k, worker, it, tid, b3 >> 4, int(np.count_nonzero(droppable)), at)
        asm.note_arrival(time.monotonic(), off // asm.epp, k)
        if ce:
            self._echo_ce(asm)
        self._after_data(asm, bool(fl[-1] & P.FLAG_LAST) and not retx[-1])
        return k * seg

    def _after_data(self, asm: TensorAssembly, last_first_tx: bool) -> None:
        """Complete a tensor once every packet is here, or act on the first transmission's LAST packet.

        ``last_as_probe`` (ns-3's ``lastAsProbe``): LAST leaves after every other packet of the first
        transmission, right before PROBE(0), so its arrival is taken as that PROBE when no PROBE came yet: the
        tensor completes at once if the loss bound is met, else BITMAP(0) is answered once DATA has been quiet
        for the hold-off (stragglers behind LAST are not asked for again), and from then on it completes on the
        DATA that meets the bound. A shed tensor (receiver.SHED_SENDERS) never has all its packets, so without
        this a lost PROBE cost it an RTO. A retransmitted LAST is no trigger (a repair round's order is its
        plan's); PROBE(0) arriving after LAST's BITMAP left is not answered again (``on_probe``).
        """
        if asm.all_received:
            self._complete(asm)
            return
        if not self.cfg.last_as_probe:
            return
        if last_first_tx and not asm.last_probed:
            asm.last_probed = True
            if not asm.probed and not self._bound_ends_wait(asm):
                asm.held_probe = 0            # PROBE(0)'s answer: BITMAP once DATA goes quiet (tick)
                self._held.add(asm)
        if asm.last_probed and self._bound_ends_wait(asm):
            self.last_probe_completions += 1
            self._complete(asm)

    def _hold_early(self, mv: memoryview, worker: int, it: int, tid: int, ce: bool,
                    asm: TensorAssembly | None, addr: Address) -> None:
        """Keep DATA whose OPEN has not arrived when it plausibly comes next, else drop it.

        Plausible: someone expect()ed exactly this (worker, iteration, tensor), or the sender's
        previous iteration of the tensor is complete here and this is the next one.
        """
        reason = "unknown_tensor" if asm is None else "wrong_iteration"
        expected = (worker, it, tid) in self.handles
        follows = asm is not None and asm.complete and it == asm.iteration + 1
        if not (expected or follows) or self._early_count >= EARLY_MAX_PACKETS:
            self.drops[reason] += 1
            return
        self._early.setdefault((worker, it, tid), []).append((bytes(mv), ce, addr))
        self._early_count += 1
        self.early_held += 1

    def _replay_early(self, worker: int, it: int, tid: int) -> None:
        """Feed held DATA of (worker, it, tid) to its new assembly; forget older iterations' DATA."""
        for key in [k for k in self._early if k[0] == worker and k[2] == tid and k[1] <= it]:
            held = self._early.pop(key)
            self._early_count -= len(held)
            if key[1] < it:
                self.drops["wrong_iteration"] += len(held)
                continue
            for data, ce, addr in held:
                _b0, _b1, flags, b3, _job, _w, _it, _tid, count, off, seq = P.HEADER_STRUCT.unpack_from(data)
                self.data(memoryview(data), flags, b3, worker, it, tid, count, off, ce, seq, addr)

    def on_open(self, layer: int, dtype: int, worker: int, it: int, tid: int, body: bytes, addr: Address) -> None:
        """CONTROL/OPEN: set up the tensor and acknowledge it (no ACK when refused).

        Only a sender at first contact waits for the OPEN_ACK (endpoint.send): the first OPEN from an
        address is acknowledged, and an OPEN repeated for a tensor already open (its sender is still
        waiting: the OPEN_ACK was lost, or it restarted), never the OPEN of each further tensor.
        """
        old = self.assemblies.get((worker, tid))
        repeated = old is not None and old.iteration == it
        opened = self._open(layer, dtype, worker, it, tid, body, addr) is not None
        if opened and (repeated or addr not in self._open_acked):
            self._open_acked.add(addr)
            hdr = P.DlcpHeader(msg_type=P.MSG_CONTROL, flags=P.FLAG_CRITICAL, dtype=dtype,
                               job_id=self.cfg.job_id, worker_id=worker, iteration=it, tensor_id=tid)
            self._send(hdr.pack() + P.CONTROL_HEAD.pack(P.CTRL_OPEN_ACK), addr)

    def on_probe(self, layer: int, dtype: int, worker: int, it: int, tid: int, seq: int, body: bytes,
                 addr: Address, now: float) -> None:
        asm = self._open(layer, dtype, worker, it, tid, body, addr)
        if asm is None:
            return
        if self.cfg.last_as_probe and not asm.complete and seq == asm.bitmap_round:
            self.last_probe_repeats += 1  # PROBE(0) after LAST's BITMAP(0) left: answered already
            return
        asm.probed = True
        if not asm.complete and not self._bound_ends_wait(asm) and now - asm.last_data < self.holdoff(asm):
            asm.held_probe = seq          # DATA still trickling in (reordering): answer when quiet
            self._held.add(asm)
        else:
            self._answer_probe(asm, seq)

    def tick(self, now: float, wait: float) -> float:
        """Held probes and receive deadlines; returns the time until the next one is due."""
        for asm in list(self._held):
            if asm.complete:
                self._held.discard(asm)
            elif self._bound_ends_wait(asm) or now - asm.last_data >= (hold := self.holdoff(asm)):
                self._held.discard(asm)
                self._answer_probe(asm, asm.held_probe)
            else:
                wait = min(wait, asm.last_data + hold - now)
        if self.cfg.receive_deadline is not None:
            for asm in list(self.assemblies.values()):
                if not asm.complete and asm.deadline is not None and now >= asm.deadline and asm.bound_met():
                    self._complete(asm)
        if now >= self._next_expiry:
            self._expire_idle(now)
        if self._granted and now >= self._next_grant_check:
            self._regrant(now)
        return wait

    # -- receiver-driven admission -------------------------------------------------------------
    def active_senders(self, now: float) -> dict[Address, TensorAssembly]:
        """Senders with an unfinished tensor towards us that sent DATA (or opened) recently."""
        active: dict[Address, TensorAssembly] = {}
        for asm in self.assemblies.values():
            if not asm.complete and now - asm.last_data < GRANT_IDLE:
                peer = self._asm_peer.get(id(asm))
                if peer is not None:
                    active[peer] = asm
        return active

    def count_data(self, addr: Address, k: int, worker: int, it: int, tid: int, dtype: int,
                   droppable: int = 0, at: float | None = None) -> None:
        """``k`` DATA packets arrived from ``addr`` at ``at`` (the kernel's receive time, ``time.time()``
        clock; None: now), ``droppable`` of them droppable by design (not CRITICAL, magnitude class below
        ``protected_mag_class``): acknowledge every ``ACK_EVERY`` (window clock).

        The counts are cumulative over all tensors from that address, whatever became of the packets
        (accepted, duplicate, refused): the sender's window counts packets that left the network.
        """
        if self.cfg.link_rate is None:
            return
        # arrival rate over ARRIVAL_WINDOW of busy time: a gap between two arrivals counts at most
        # ARRIVAL_GAP_PACKETS packet times at our link rate, so a stall of the path (a descheduled
        # software switch: nothing, then a burst at the link rate) or the pause between two tensors
        # does not read as a slow link, while a path that delivers at a fraction of it does. Dated by the
        # kernel's receive time (the endpoint's SO_TIMESTAMPNS): when this loop read the packets says
        # nothing about the link (after a wait for a CPU a backlog is read back to back: at read time that
        # looked like a full link, and the marks set on a slower path on the way were not echoed)
        now = time.time() if at is None else at
        cap = ARRIVAL_GAP_PACKETS * WIRE_PACKET_BYTES / self.cfg.link_rate
        self._arrival_busy += min(max(0.0, now - self._arrival_prev), cap)
        self._arrival_prev = now
        self._arrival_count += k
        if self._arrival_busy >= ARRIVAL_WINDOW:
            self.arrival_rate = self._arrival_count / self._arrival_busy
            self._arrival_busy, self._arrival_count = 0.0, 0
        n = self._rx_from[addr] + k
        self._rx_from[addr] = n
        if droppable:
            self._rx_droppable[addr] += droppable
        if n - self._acked_at.get(addr, 0) >= ACK_EVERY:
            self._ack(addr, worker, it, tid, dtype)

    def _ack(self, addr: Address, worker: int, it: int, tid: int, dtype: int) -> None:
        n = self._rx_from[addr]
        self._acked_at[addr] = n
        self.acks_sent += 1
        hdr = P.DlcpHeader(msg_type=P.MSG_CONTROL, flags=P.FLAG_CRITICAL, dtype=dtype, job_id=self.cfg.job_id,
                           worker_id=worker, iteration=it, tensor_id=tid)
        body = P.pack_ack(n, self._rx_droppable[addr], self.cfg.protected_mag_class) if self.cfg.ack_split \
            else P.pack_ack(n)
        self._send(hdr.pack() + P.CONTROL_HEAD.pack(P.CTRL_ACK) + body, addr)

    def _regrant(self, now: float, opener: Address | None = None) -> None:
        """Grant every active sender an equal share of our link (CONTROL/GRANT, bytes/s), and every
        sender that was active lately a standby share it may start its next tensor with.

        Active: sent to every active sender whose share changed since its last grant (a sender
        joined, finished or went quiet), the opener of a tensor included (before its OPEN_ACK, so
        its first DATA is already paced); an opener whose share is unchanged holds its grant and
        gets it again only when it is older than ``GRANT_REFRESH`` (a lost grant is repaired).
        Standby: a sender that was active in the last ``GRANT_MEMORY`` s but is not now (between a
        training job's tensors and iterations) holds the share it would get if every recent sender
        were back (link / n recent), so when they all start the next iteration together they fill
        the link without overrunning the queue, and none waits a round trip for a fresh grant; one
        that returns alone gets the whole link with the grant its OPEN triggers (its share changed). Senders pace each destination at its grant
        (ratecontrol.GrantPacer). No link rate configured: no grants.
        """
        if self.cfg.link_rate is None:
            return
        self._next_grant_check = now + GRANT_TICK
        active = self.active_senders(now)
        for peer, asm in active.items():
            self._recent[peer] = (now, self._grant_header(asm))
        for peer in [p for p, (seen, _a) in self._recent.items() if now - seen > GRANT_MEMORY]:
            del self._recent[peer]
        if active:
            self.active_senders_max = max(self.active_senders_max, len(active))
            share = self._share(len(active))
            for peer in active:
                # the opener holds its grant already unless its share changed (or the grant is old: it
                # may have been lost); one GRANT per OPEN was a third of the PS server's control packets
                stale = peer == opener and now - self._granted_at.get(peer, -1e9) > GRANT_REFRESH
                if self._granted.get(peer) != share or stale:
                    self._grant(peer, self._recent[peer][1], share, len(active))
        standby = self._share(len(self._recent)) if self._recent else None   # none left: nobody to grant
        for peer, (_seen, hdr) in self._recent.items():
            if peer not in active and self._granted.get(peer) != standby:
                self.standby_grants_sent += 1
                self._grant(peer, hdr, standby, len(self._recent))
        for peer in [p for p in self._granted if p not in self._recent]:
            del self._granted[peer]
            self._granted_at.pop(peer, None)

    def _share(self, senders: int) -> tuple[int, int, int]:
        """(bytes/s, window in packets, GRANT flags) for each of ``senders`` senders sharing our link:
        GRANT_FLAG_SHED when they are more than ``cfg.shed_senders`` and ``cfg.shed_droppable`` is on."""
        assert self.cfg.link_rate is not None and senders > 0
        shed = P.GRANT_FLAG_SHED if self.cfg.shed_droppable and senders > self.cfg.shed_senders else 0
        return (int(GRANT_SHARE * self.cfg.link_rate / senders), max(WINDOW_MIN, WINDOW_PACKETS // senders),
                shed)

    @staticmethod
    def _grant_header(asm: TensorAssembly) -> P.DlcpHeader:
        return P.DlcpHeader(msg_type=P.MSG_CONTROL, flags=P.FLAG_CRITICAL, dtype=asm.dtype, job_id=asm.job_id,
                            worker_id=asm.worker_id, iteration=asm.iteration, tensor_id=asm.tensor_id)

    def _grant(self, peer: Address, hdr: P.DlcpHeader, share: tuple[int, int, int], senders: int) -> None:
        self._granted[peer] = share
        self._granted_at[peer] = time.monotonic()
        self.grants_sent += 1
        rate, window, flags = share
        if flags & P.GRANT_FLAG_SHED:
            self.shed_grants_sent += 1
        # format 2 (with the flags byte) when shedding is on, so a flag that clears is said too; off: format 1
        body = P.pack_grant(rate, senders, window, flags if self.cfg.shed_droppable else None)
        self._send(hdr.pack() + P.CONTROL_HEAD.pack(P.CTRL_GRANT) + body, peer)

    def _expire_idle(self, now: float) -> None:
        """Forget unfinished tensors that got no DATA for ``idle_timeout`` s (forged or dead OPENs).

        Their staging is freed; an expect()ed tensor keeps its expectation, so the genuine sender's
        next PROBE opens it again (its BITMAP then asks for everything).
        """
        timeout = self.cfg.idle_timeout
        self._next_expiry = now + max(0.01, timeout / 4)
        for key, asm in list(self.assemblies.items()):
            if asm.complete or now - asm.last_data < timeout:
                continue
            self.drops["expired"] += 1
            h = self._asm_handle.get(id(asm))
            self._held.discard(asm)
            del self.assemblies[key]
            self._forget(asm)
            if h is not None and h.out is not None:     # still expected: keep waiting for it
                h.assembly = None
                self.handles[h.key] = h
            elif h is not None:
                self.handles.pop(h.key, None)

    def _bound_ends_wait(self, asm: TensorAssembly) -> bool:
        """A PROBE needs no hold-off once the loss bound is met (``complete_when_bound_met``).

        The PROBE marks the end of the sender's queue, so what is still missing is lost or, at
        most, the loss budget's worth of stragglers: waiting for them cannot avoid a repair round,
        it only delays the tensor (measured: a droppable LAST packet shed by the switch held every
        such PROBE for the 20 ms no-LAST wait, p50 49 ms, docs/experiments-history.md).
        """
        return self.cfg.complete_when_bound_met and asm.bound_met()

    def holdoff(self, asm: TensorAssembly) -> float:
        """DATA silence after which a PROBE is answered: stragglers are no longer on their way.

        At least ``probe_holdoff``; more when this tensor's packets arrive far apart (a shared
        bottleneck: ``HOLDOFF_GAPS`` smoothed inter-arrival times) or when packets were seen
        arriving this much behind the one sent after them (sprayed paths with a delay spread).
        Capped at ``HOLDOFF_MAX`` so a lost packet still costs bounded time.
        """
        if self.cfg.probe_holdoff <= 0:       # hold-off switched off: answer at once
            return 0.0
        h = max(self.cfg.probe_holdoff, HOLDOFF_GAPS * asm.gap, HOLDOFF_REORDER * self.reorder)
        if not asm.last_seen and not asm.retx_seen:
            # the first transmission's LAST packet is not here: the PROBE overtook DATA queued
            # behind it (e.g. a strict-priority bottleneck), unless LAST itself was lost
            h = max(h, HOLDOFF_NO_LAST)
        return min(h, HOLDOFF_MAX)

    def _answer_probe(self, asm: TensorAssembly, round_: int) -> None:
        if not asm.complete and not asm.bound_met():
            self.reorder *= REORDER_DECAY     # forget an old delay spread slowly (per BITMAP)
        self._answer_probe_now(asm, round_)

    # -- internals -----------------------------------------------------------------------------
    def _answer_probe_now(self, asm: TensorAssembly, round_: int) -> None:
        if asm.complete or asm.bound_met():
            self._complete(asm)
        else:
            asm.bitmap_round = round_
            for chunk in asm.bitmap_chunks(round_):
                self._reply(asm, P.MSG_BITMAP, chunk, round_)

    def _open(self, layer: int, dtype: int, worker: int, it: int, tid: int, body: bytes,
              addr: tuple[str, int]) -> TensorAssembly | None:
        """Find or create the assembly announced by an OPEN or PROBE descriptor."""
        try:
            desc, token = P.unpack_announcement(body)
        except ValueError:
            self.drops["bad_descriptor"] += 1
            return None
        if dtype not in P.DTYPE_SIZES:
            self.drops["bad_dtype"] += 1
            return None
        asm = self.assemblies.get((worker, tid))
        if asm is not None:
            if asm.iteration == it:
                if self._asm_peer.get(id(asm)) != addr:
                    self.drops["wrong_peer"] += 1
                    return None
                if self._asm_token[id(asm)] != token:
                    self.drops["bad_token"] += 1
                    return None
                if asm.desc != desc or asm.dtype != dtype:
                    self.drops["descriptor_mismatch"] += 1
                    return None
                return asm
            if it < asm.iteration:
                self.drops["wrong_iteration"] += 1
                return None
        key = (worker, it, tid)
        h = self.handles.get(key)
        want = NUMPY_OF_DTYPE[dtype]
        if h is not None and h.out is not None:
            if h.out.size != desc.n_elements or h.out.dtype != want:
                self.drops["descriptor_mismatch"] += 1
                return None
            target = h.out.reshape(-1)
        else:
            charge = max(desc.n_elements, STAGING_MIN_CHARGE)
            if not self.cfg.stage_unexpected or self._staged_charge + charge > self.cfg.max_staged_elements:
                self.drops["unexpected_tensor"] += 1
                return None
            if self._peer_charge[addr] + charge > self.cfg.max_staged_elements * self.cfg.max_staged_peer_share:
                self.drops["peer_staging_full"] += 1
                return None
            target = np.zeros(desc.n_elements, want)
            self.staged_elements += desc.n_elements
            self._staged[key] = (addr, charge)
            self._staged_charge += charge
            self._peer_charge[addr] += charge
            if h is None:
                h = RecvHandle(worker, it, tid, None, None)
                self.handles[key] = h
        deadline = None if self.cfg.receive_deadline is None else time.monotonic() + self.cfg.receive_deadline
        asm = TensorAssembly(job_id=self.cfg.job_id, worker_id=worker, iteration=it, tensor_id=tid,
                             dtype=dtype, desc=desc, out=target, loss_bound=h.loss_bound, deadline=deadline)
        h.assembly, h.layer_class, h.kind, h.peer = asm, layer, desc.kind, addr
        old = self.assemblies.get((worker, tid))
        if old is not None:
            self._forget(old)
        self.assemblies[(worker, tid)] = asm
        self._asm_handle[id(asm)] = h
        self._asm_peer[id(asm)] = addr
        self._asm_token[id(asm)] = token
        self._regrant(time.monotonic(), opener=addr)
        if self._early_count:
            self._replay_early(worker, it, tid)
        return asm

    def _forget(self, asm: TensorAssembly) -> None:
        h = self._asm_handle.pop(id(asm), None)
        self._asm_peer.pop(id(asm), None)
        self._asm_token.pop(id(asm), None)
        self._asm_echo.pop(id(asm), None)
        self._asm_ce_own.pop(id(asm), None)
        if h is not None:
            self._unstage(h.key, asm.desc.n_elements)
        if h is not None and h.out is not None:
            self.handles.pop(h.key, None)

    def _unstage(self, key: tuple[int, int, int], n_elements: int) -> None:
        """Return the staging a tensor held (no-op for tensors that were not staged)."""
        entry = self._staged.pop(key, None)
        if entry is None:
            return
        peer, charge = entry
        self.staged_elements -= n_elements
        self._staged_charge -= charge
        self._peer_charge[peer] -= charge
        if self._peer_charge[peer] <= 0:
            del self._peer_charge[peer]

    def _reply(self, asm: TensorAssembly, msg: int, body: bytes, seq: int = 0) -> None:
        hdr = P.DlcpHeader(msg_type=msg, flags=P.FLAG_CRITICAL, dtype=asm.dtype, job_id=asm.job_id,
                           worker_id=asm.worker_id, iteration=asm.iteration, tensor_id=asm.tensor_id,
                           seq=seq)
        peer = self._asm_peer.get(id(asm))
        if peer is not None:
            self._send(hdr.pack() + body, peer)

    def own_port_full(self) -> bool:
        """DATA arrives at OWN_PORT_FULL of what we grant in total or more: our link is the bottleneck."""
        if self.cfg.link_rate is None or not self._granted:
            return False
        rate = self.arrival_rate
        if self._arrival_count >= 8 and self._arrival_busy > 0:   # the window being counted, once it says something
            rate = max(rate, self._arrival_count / self._arrival_busy)
        return rate * WIRE_PACKET_BYTES >= OWN_PORT_FULL * GRANT_SHARE * self.cfg.link_rate

    def _echo_ce(self, asm: TensorAssembly) -> None:
        if self.own_port_full():
            self.ce_own_port += 1
            self._asm_ce_own[id(asm)] += 1
            return
        now = time.monotonic()
        if now - self._asm_echo.get(id(asm), -1.0) >= ECN_ECHO_GAP:
            self._asm_echo[id(asm)] = now
            # the echo counts the marks set elsewhere only (cumulative, so the sender's share of
            # marked packets does not take in the ones our own full link set)
            marks = asm.ce_marks - self._asm_ce_own[id(asm)]
            self._reply(asm, P.MSG_CONTROL, P.CONTROL_HEAD.pack(P.CTRL_ECN_ECHO) + P.ECN_ECHO_BODY.pack(marks))

    def _complete(self, asm: TensorAssembly) -> None:
        first = not asm.complete
        body = asm.done_body()
        peer = self._asm_peer.get(id(asm))
        if self.cfg.link_rate is not None and peer is not None and asm.desc.n_packets >= ACK_EVERY \
                and self._rx_from[peer] > self._acked_at.get(peer, 0):
            # the exact count before the DONE: the sender writes off what is unacknowledged when the
            # DONE comes, and dates its ACK round trips from there (ratecontrol.GrantPacer.on_ack).
            # Not for tensors of a few packets: in `accuracy` (16-packet iterations, 6 workers) one
            # more control packet per tensor overflowed the control queue at the server's port.
            self._ack(peer, asm.worker_id, asm.iteration, asm.tensor_id, asm.dtype)
        self._reply(asm, P.MSG_DONE, body)
        h = self._asm_handle.get(id(asm))
        if first and self._granted:
            self._regrant(time.monotonic())     # one sender fewer: the others' shares grow
        if first and h is not None:
            h.stats = asm.stats
            h.done = True
            if h.out is not None:
                self._deliver(h)
            elif self.on_unexpected is not None:
                self.on_unexpected(h)

    def _deliver(self, h: RecvHandle) -> None:
        """Copy a staged tensor into the caller's array (parameters: received packets only)."""
        asm = h.assembly
        assert asm is not None and h.out is not None
        flat = h.out.reshape(-1)
        if np.may_share_memory(asm.out, flat):
            return
        if h.out.size != asm.desc.n_elements or h.out.dtype != asm.out.dtype:
            h.failed = True
            return
        if asm.desc.kind == P.KIND_GRADIENT or asm.all_received:
            flat[:] = asm.out
        else:
            mask = np.repeat(asm.received, asm.desc.elems_per_packet)[: asm.desc.n_elements]
            flat[mask] = asm.out[mask]
        self._unstage(h.key, asm.desc.n_elements)
        asm.out = flat
