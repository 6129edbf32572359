"""The DLCP transport endpoint: one UDP socket, one single-threaded event loop, both directions.

An endpoint sends tensors (``send``: OPEN, paced DATA, PROBE rounds, selective retransmit until
DONE) and receives them (``expect``: payloads written in place, BITMAP answers, DONE on completion)
at the same time, which is what the collectives need (a ring step sends one chunk and receives
another). ``run(handles)`` turns the loop until the given handles are finished. Everything the
receiver drops is counted in ``drops[reason]``; nothing hostile is ever written out of bounds.
"""

from __future__ import annotations

import collections
import logging
import select
import socket
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from host_agent import protocol as P
from host_agent.assembly import NUMPY_OF_DTYPE, ReceiveStats, TensorAssembly
from host_agent.errors import TransportError, UserError
from host_agent.outgoing import OutgoingTensor, SendState, SendStats
from host_agent.packetizer import PacketizedTensor
from host_agent.ratecontrol import AimdPacer, RateConfig

log = logging.getLogger(__name__)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SOL_UDP = getattr(socket, "SOL_UDP", 17)
UDP_SEGMENT = getattr(socket, "UDP_SEGMENT", 103)   # Linux UDP GSO (send)
UDP_GRO = getattr(socket, "UDP_GRO", 104)           # Linux UDP GRO (receive)
GSO_MAX_SEGMENTS = 64
OFFLOAD_MODES = ("auto", "on", "off")
GSO_MAX_BYTES = 65000
ECN_ECHO_GAP = 0.001


@dataclass
class EndpointConfig:
    job_id: int = 0
    worker_id: int = 0
    bind: tuple[str, int] = ("127.0.0.1", 0)
    rate: RateConfig = field(default_factory=RateConfig)
    ecn: bool = True                   # send ECT(0), read the TOS byte of received packets
    rto_initial: float = 0.02          # s before the first re-probe
    rto_max: float = 0.5
    give_up_after: float = 10.0        # s without any answer from the receiver of a tensor
    stage_unexpected: bool = True      # OPENs with no expect() yet get a staging buffer
    max_staged_elements: int = 1 << 27   # elements held for OPENs nobody expect()ed yet
    receive_deadline: float | None = None  # s after OPEN: complete as soon as the bound is met
    probe_holdoff: float = 0.0005      # s of DATA silence before a PROBE is answered (reordering)
    socket_buffer: int = 64 << 20
    send_batch: int = 256
    # Linux UDP GSO (send 44 datagrams per syscall) / GRO (receive them as one buffer).
    # "auto": GRO always, GSO only towards loopback addresses: a GSO batch crossing a veth reaches an
    # AF_PACKET software switch (p4sim, BMv2) as one 64 KB frame unless the veth segments it.
    # "on": GSO to every destination (NICs and veths with tx-udp-segmentation off); "off": neither.
    offload: str = "auto"


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


class Endpoint:
    """See module docstring. Not thread-safe: one endpoint per thread/process."""

    def __init__(self, cfg: EndpointConfig | None = None) -> None:
        self.cfg = cfg or EndpointConfig()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._size_buffers()
        if self.cfg.ecn:
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, P.ECN_ECT0)
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
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
        self.pacer = AimdPacer(self.cfg.rate)
        self.drops: collections.Counter[str] = collections.Counter()
        self.outgoing: dict[tuple[tuple[str, int], int], OutgoingTensor] = {}
        self._active: list[OutgoingTensor] = []
        self.assemblies: dict[tuple[int, int], TensorAssembly] = {}
        self.handles: dict[tuple[int, int, int], RecvHandle] = {}
        self._asm_handle: dict[int, RecvHandle] = {}
        self._asm_peer: dict[int, tuple[str, int]] = {}
        self._asm_echo: dict[int, float] = {}
        self.staged_elements = 0
        self._staged: set[tuple[int, int, int]] = set()
        self._held: set[TensorAssembly] = set()      # probes waiting for DATA to go quiet
        self.on_unexpected = None  # callable(RecvHandle) for completed tensors nobody expected
        self._buf = bytearray(65536)
        self._rec_dtypes: dict[int, np.dtype] = {}
        self._mv = memoryview(self._buf)
        self.ecn_echoes_received = 0
        self.ready_peers: set[tuple[str, int]] = set()
        self.packets_received = 0

    def _size_buffers(self) -> None:
        for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, force, self.cfg.socket_buffer)
            except OSError:
                self.sock.setsockopt(socket.SOL_SOCKET, plain, self.cfg.socket_buffer)

    @property
    def address(self) -> tuple[str, int]:
        return self.sock.getsockname()

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
        tx = OutgoingTensor(pt, dest, now, self.cfg.rto_initial)
        key = (dest, pt.tensor_id)
        old = self.outgoing.get(key)
        if old is not None and old.state in (SendState.OPENING, SendState.SENDING, SendState.PROBING):
            raise TransportError(f"tensor {pt.tensor_id} to {dest[0]}:{dest[1]} is already in flight")
        self.outgoing[key] = tx
        self._active.append(tx)
        if dest not in self.ready_peers:         # first contact: wait for OPEN_ACK before DATA
            tx.state = SendState.OPENING
            tx.probe_due = now + tx.rto
        self._sendto(tx.open_message(), dest)
        return SendHandle(tx)

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
        if h.key in self._staged:
            self._staged.discard(h.key)
            self.staged_elements -= h.assembly.desc.n_elements
        h.assembly.drop_buffer()
        self.handles.pop(h.key, None)

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
            if self.pacer.wait_time() and any(t.state is SendState.SENDING for t in self._active):
                wait = min(wait, self.pacer.wait_time())
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

    def _pump(self) -> bool:
        worked = False
        now = time.monotonic()
        for tx in self._active:
            if tx.state is not SendState.SENDING:
                continue
            before = tx.pos
            self._send_some(tx)
            worked |= tx.pos != before
            if tx.pos >= tx.queue.size:
                tx.start_probe(now)
                self._sendto(tx.probe_message(), tx.dest)
                worked = True
        return worked

    def _send_some(self, tx: OutgoingTensor) -> None:
        """Send up to send_batch packets of ``tx`` (GSO batches for runs of full packets)."""
        pt, sock, dest, pacer = tx.pt, self.sock, tx.dest, self.pacer
        queue, pos = tx.queue, tx.pos
        end = min(pos + self.cfg.send_batch, queue.size)
        lengths, stride = pt.lengths, pt.stride
        full = pt.full_packets
        gso_ok = self._gso and tx.sequential and (self.cfg.offload == "on" or dest[0].startswith("127."))
        gso_k = min(GSO_MAX_SEGMENTS, GSO_MAX_BYTES // stride) if gso_ok else 0
        while pos < end:
            i = int(queue[pos])
            k = min(gso_k, end - pos, full - i)
            try:
                if k > 1:
                    nbytes = k * stride
                    if not pacer.allow(nbytes):
                        break
                    try:
                        sock.sendmsg([pt.run(i, k)], [(SOL_UDP, UDP_SEGMENT, stride.to_bytes(2, sys.byteorder))],
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
                        break
                    sock.sendto(pt.packet(i), dest)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                log.debug("sendto %s failed: %s", dest, exc)
            tx.stats.packets += k
            tx.stats.bytes += nbytes
            pos += k
        tx.pos = pos

    def _timers(self) -> float:
        now = time.monotonic()
        wait = 0.05
        keep = []
        for tx in self._active:
            if tx.state is SendState.OPENING:
                if now - tx.last_heard > self.cfg.give_up_after:
                    tx.state = SendState.FAILED
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
                    if tx.chunks:
                        self._plan(tx, now)
                    else:
                        tx.on_timeout(now, self.cfg.rto_max)
                        tx.start_probe(now)
                        self._sendto(tx.probe_message(), tx.dest)
                if tx.state is SendState.PROBING:
                    wait = min(wait, max(0.0, tx.probe_due - now))
            if tx.state in (SendState.OPENING, SendState.SENDING, SendState.PROBING):
                keep.append(tx)
        self._active = keep
        for asm in list(self._held):
            if asm.complete:
                self._held.discard(asm)
            elif now - asm.last_data >= self.cfg.probe_holdoff:
                self._held.discard(asm)
                self._answer_probe(asm, asm.held_probe)
            else:
                wait = min(wait, asm.last_data + self.cfg.probe_holdoff - now)
        if self.cfg.receive_deadline is not None:
            for asm in list(self.assemblies.values()):
                if not asm.complete and asm.deadline is not None and now >= asm.deadline and asm.bound_met():
                    self._complete(asm)
        return wait

    def _plan(self, tx: OutgoingTensor, now: float) -> None:
        plan = tx.plan_retransmit()
        if plan.size:
            self.pacer.on_congestion()  # loss in the round is a congestion signal too
            tx.begin_retransmit(plan, now)
        else:
            tx.on_timeout(now, self.cfg.rto_max)
            tx.start_probe(now)
            self._sendto(tx.probe_message(), tx.dest)

    # -- receive path --------------------------------------------------------------------------
    def _drain(self, budget: int) -> bool:
        """Read up to ``budget`` datagrams (a GRO super-datagram counts once) and dispatch them."""
        sock, mv = self.sock, self._mv
        use_msg = self.cfg.ecn or self._gro
        got = 0
        cmsg_space = 2 * socket.CMSG_SPACE(4)
        while got < budget:
            ce = False
            seg = 0
            try:
                if use_msg:
                    n, anc, _flags, addr = sock.recvmsg_into([mv], cmsg_space)
                    for level, ctype, cdata in anc:
                        if level == socket.IPPROTO_IP and ctype == socket.IP_TOS and cdata:
                            ce = (cdata[0] & 3) == P.ECN_CE
                        elif level == SOL_UDP and ctype == UDP_GRO and len(cdata) >= 2:
                            seg = int.from_bytes(cdata[:2], sys.byteorder)
                else:
                    n, addr = sock.recvfrom_into(mv)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # ICMP errors surface here on Linux; not fatal
                log.debug("recv error: %s", exc)
                continue
            got += 1
            if seg and seg < n:           # GRO: equal-size datagrams glued together, split again
                done = self._gro_batch(seg, n, ce) if seg > P.DLCP_HEADER_LEN else 0
                for start in range(done, n, seg):
                    self._datagram(mv[start:min(start + seg, n)], ce, addr)
            else:
                self._datagram(mv[:n], ce, addr)
        return got > 0

    def _gro_batch(self, seg: int, n: int, ce: bool) -> int:
        """Vectorised path for a GRO run of consecutive full DATA packets of one tensor.

        Returns the bytes consumed (0: let the per-packet path handle every datagram).
        """
        k = n // seg
        if k < 2:
            return 0
        dt = self._rec_dtypes.get(seg)
        if dt is None:
            dt = self._rec_dtypes[seg] = np.dtype({
                "names": ["b0", "flags", "b3", "jwi", "tc", "off"],
                "formats": ["u1", "u1", "u1", "<u8", "<u4", ">u4"],
                "offsets": [0, 2, 3, 4, 12, 16], "itemsize": seg})
        v = np.frombuffer(self._buf, dtype=dt, count=k)
        h = v[0]
        if h["b0"] != (P.VERSION << 4 | P.MSG_DATA):
            return 0
        b0, b1, flags, b3, job, worker, it, tid, count, off, seq = P.HEADER_STRUCT.unpack_from(self._buf)
        if job != self.cfg.job_id:
            return 0
        asm = self.assemblies.get((worker, tid))
        if asm is None or asm.iteration != it:
            return 0
        offs = v["off"]
        # same job/worker/iteration (jwi), tensor/count (tc), version/type, dtype; consecutive offsets
        if not ((v["jwi"] == h["jwi"]).all() and (v["tc"] == h["tc"]).all() and (v["b0"] == b0).all()
                and (v["b3"] == b3).all() and int(offs[-1]) - off == (k - 1) * count
                and (np.diff(offs.astype(np.int64)) == count).all()):
            return 0
        payload = np.frombuffer(self._buf, np.uint8, count=k * seg).reshape(k, seg)[:, P.DLCP_HEADER_LEN:]
        n_crit = int(np.count_nonzero(v["flags"] >= P.FLAG_CRITICAL))
        if not asm.accept_run(b3 >> 4, count, off, payload, n_crit, ce):
            return 0
        self.packets_received += k
        asm.last_data = time.monotonic()
        if ce:
            self._echo_ce(asm)
        if asm.all_received:
            self._complete(asm)
        return k * seg

    def _datagram(self, mv: memoryview, ce: bool, addr: tuple[str, int]) -> None:
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
            asm = self.assemblies.get((worker, tid))
            if asm is None:
                drops["unknown_tensor"] += 1
                return
            if asm.iteration != it:
                drops["wrong_iteration"] += 1
                return
            reason = asm.accept(b3 >> 4, flags, count, off, mv[P.DLCP_HEADER_LEN:], ce)
            if reason is not None:
                drops[reason] += 1
                return
            self.packets_received += 1
            asm.last_data = time.monotonic()
            if ce:
                self._echo_ce(asm)
            if asm.all_received:
                self._complete(asm)
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
                if self._open(layer, dtype, worker, it, tid, rest, addr) is not None:
                    hdr = P.DlcpHeader(msg_type=P.MSG_CONTROL, flags=P.FLAG_CRITICAL, dtype=dtype,
                                       job_id=self.cfg.job_id, worker_id=worker, iteration=it, tensor_id=tid)
                    self._sendto(hdr.pack() + P.CONTROL_HEAD.pack(P.CTRL_OPEN_ACK), addr)
            elif sub == P.CTRL_OPEN_ACK:
                self._peer_ready(addr)
            elif sub == P.CTRL_ECN_ECHO:
                tx = self.outgoing.get((addr, tid))
                if tx is not None and tx.pt.iteration == it:
                    self.ecn_echoes_received += 1
                    self.pacer.on_congestion()
            else:
                self.drops["bad_control"] += 1
        elif msg == P.MSG_PROBE:
            asm = self._open(layer, dtype, worker, it, tid, body, addr)
            if asm is None:
                return
            self._asm_peer[id(asm)] = addr
            asm.probed = True
            if not asm.complete and now - asm.last_data < self.cfg.probe_holdoff:
                asm.held_probe = seq          # DATA still trickling in (reordering): answer when quiet
                self._held.add(asm)
            else:
                self._answer_probe(asm, seq)
        elif msg == P.MSG_BITMAP:
            tx = self.outgoing.get((addr, tid))
            if tx is None or tx.pt.iteration != it or len(body) < P.BITMAP_HEAD.size:
                self.drops["stale_control"] += 1
                return
            round_, chunk, n_chunks, first, nbits, deficit, _mc = P.BITMAP_HEAD.unpack_from(body)
            if tx.on_bitmap(round_, chunk, n_chunks, first, nbits, deficit, body[P.BITMAP_HEAD.size:], now):
                self._plan(tx, now)
        elif msg == P.MSG_DONE:
            tx = self.outgoing.get((addr, tid))
            if tx is None or tx.pt.iteration != it:
                self.drops["stale_control"] += 1
                return
            tx.on_done(body, now)
        else:
            self.drops["bad_msg_type"] += 1

    def _answer_probe(self, asm: TensorAssembly, round_: int) -> None:
        if asm.complete or asm.bound_met():
            self._complete(asm)
        else:
            for chunk in asm.bitmap_chunks(round_):
                self._reply(asm, P.MSG_BITMAP, chunk, round_)

    def _peer_ready(self, addr: tuple[str, int]) -> None:
        if addr in self.ready_peers:
            return
        self.ready_peers.add(addr)
        now = time.monotonic()
        for tx in self._active:
            if tx.state is SendState.OPENING and tx.dest == addr:
                tx.state = SendState.SENDING
                tx.rto = tx.rto_initial
                tx.last_heard = now

    def _open(self, layer: int, dtype: int, worker: int, it: int, tid: int, body: bytes,
              addr: tuple[str, int]) -> TensorAssembly | None:
        """Find or create the assembly announced by an OPEN or PROBE descriptor."""
        try:
            desc = P.TensorDescriptor.unpack(body)
        except ValueError:
            self.drops["bad_descriptor"] += 1
            return None
        if dtype not in P.DTYPE_SIZES:
            self.drops["bad_dtype"] += 1
            return None
        asm = self.assemblies.get((worker, tid))
        if asm is not None:
            if asm.iteration == it:
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
            if not self.cfg.stage_unexpected or self.staged_elements + desc.n_elements > self.cfg.max_staged_elements:
                self.drops["unexpected_tensor"] += 1
                return None
            target = np.zeros(desc.n_elements, want)
            self.staged_elements += desc.n_elements
            self._staged.add(key)
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
        return asm

    def _forget(self, asm: TensorAssembly) -> None:
        h = self._asm_handle.pop(id(asm), None)
        self._asm_peer.pop(id(asm), None)
        self._asm_echo.pop(id(asm), None)
        if h is not None and h.key in self._staged:
            self._staged.discard(h.key)
            self.staged_elements -= asm.desc.n_elements
        if h is not None and h.out is not None:
            self.handles.pop(h.key, None)

    def _reply(self, asm: TensorAssembly, msg: int, body: bytes, seq: int = 0) -> None:
        hdr = P.DlcpHeader(msg_type=msg, flags=P.FLAG_CRITICAL, dtype=asm.dtype, job_id=asm.job_id,
                           worker_id=asm.worker_id, iteration=asm.iteration, tensor_id=asm.tensor_id,
                           seq=seq)
        peer = self._asm_peer.get(id(asm))
        if peer is not None:
            self._sendto(hdr.pack() + body, peer)

    def _echo_ce(self, asm: TensorAssembly) -> None:
        now = time.monotonic()
        if now - self._asm_echo.get(id(asm), -1.0) >= ECN_ECHO_GAP:
            self._asm_echo[id(asm)] = now
            self._reply(asm, P.MSG_CONTROL, P.CONTROL_HEAD.pack(P.CTRL_ECN_ECHO) + P.ECN_ECHO_BODY.pack(asm.ce_marks))

    def _complete(self, asm: TensorAssembly) -> None:
        first = not asm.complete
        body = asm.done_body()
        self._reply(asm, P.MSG_DONE, body)
        h = self._asm_handle.get(id(asm))
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
        if h.key in self._staged:
            self._staged.discard(h.key)
            self.staged_elements -= asm.desc.n_elements
        asm.out = flat
