"""Traffic manager: the queues between ingress and egress, modelled on BMv2 simple_switch.

Per egress port there are N strict-priority FIFO queues (BMv2 numbering: 0 lowest, N-1 highest);
N defaults to 1, as simple_switch's does without ``--priority-queues``.
A packet whose priority is >= N is dropped and counted (BMv2 logs "Priority out of range"). Each
queue holds at most ``depth`` packets (tail drop when full, counted).

Two kinds of rate limit exist, and they differ on purpose:

* ``set_queue_rate`` (packets/s, BMv2 semantics): every priority queue is paced on its own. As in
  BMv2's ``QueueingLogicPriRL`` a packet's send time is fixed when it is enqueued
  (``max(now, last_send + 1/rate)``) and the scheduler serves the highest-priority queue whose head
  is due. Queues do not share anything, so eight queues at 1000 pps send 8000 pps together.
* ``set_port_rate`` (bits/s, p4sim only): the port is one link. A packet of L bytes holds it for
  ``8 L / rate`` seconds, and when it is free the highest-priority non-empty (and, if paced, due)
  queue sends. This is what makes a high-priority packet overtake queued low-priority ones.

Queueing metadata follows simple_switch exactly: ``enq_qdepth`` is the port's occupancy (all
priorities) just before the packet is added, ``deq_qdepth`` the occupancy just after it is removed,
``enq_timestamp`` and ``deq_timedelta`` are microseconds, ``qid`` is the priority queue served.
``queue_enq_qdepth``/``queue_deq_qdepth`` are the same two depths of the packet's own queue: what
Tofino's TM reports in ``enq_qdepth``/``deq_qdepth`` (the TNA model uses them).

Time is passed in by the caller (integer nanoseconds, monotonic) so the TM is deterministic and
testable without sleeping. The TM is not thread-safe; the device serialises access.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from p4sim.errors import UserError

DEFAULT_QUEUE_DEPTH = 64
DEFAULT_PRIORITY_QUEUES = 1       # as simple_switch without --priority-queues
# How far a link may "catch up" after the loop woke late: the packets it would have sent meanwhile
# leave at once, as in BMv2 (its rate limiter fixes each packet's send time at enqueue, so a late
# egress thread releases every overdue packet back to back). 20 ms, not unbounded: a CPU-starved
# switch (its packet thread waiting for a CPU 45-50 % of a tcp-bulk run under 0.5 core of extra
# load) lost 2-4.6 s of link time per run with 1 ms (session 9, `link_lost_ms`), and a 20 ms burst is
# at most 34 full frames at 20 Mbit/s, which the next switch's ring (1024 frames) and queues take.
PORT_CATCH_UP_NS = 20_000_000


class TrafficManagerError(UserError):
    """A bad traffic-manager setting (negative depth, priority out of range, ...)."""


class Dequeued(NamedTuple):
    """One packet leaving the TM, with the queueing metadata the egress pipeline sees."""

    port: int
    qid: int
    packet: object            # the QueuedPacket given to enqueue
    enq_timestamp: int        # us
    enq_qdepth: int
    deq_qdepth: int
    deq_timedelta: int        # us
    queue_enq_qdepth: int = 0  # the packet's queue alone (Tofino's enq_qdepth), before it was added
    queue_deq_qdepth: int = 0  # the packet's queue alone (Tofino's deq_qdepth), after it was removed


class _Queue:
    __slots__ = ("items", "depth", "rate_pps", "gap_ns", "last_send_ns",
                 "enqueued", "dequeued", "tail_drops")

    def __init__(self, depth: int, rate_pps: int) -> None:
        self.items: deque = deque()
        self.depth = depth
        self.rate_pps = 0
        self.gap_ns = 0
        self.last_send_ns = -(1 << 62)
        self.enqueued = 0
        self.dequeued = 0
        self.tail_drops = 0
        self.set_rate(rate_pps)

    def set_rate(self, pps: int) -> None:
        self.rate_pps = pps
        self.gap_ns = 1_000_000_000 // pps if pps > 0 else 0


@dataclass
class _Port:
    queues: list[_Queue]
    rate_bps: int = 0         # 0: no link rate
    free_at_ns: int = 0
    size: int = 0             # packets in all queues (BMv2's egress_buffers.size(port))
    sent_bytes: int = 0

    def __post_init__(self) -> None:
        # highest priority first, for the scheduler's scan
        self.by_priority = [(qid, q) for qid, q in reversed(list(enumerate(self.queues)))]


class TrafficManager:
    """Per-port strict-priority queues with depth limits, per-queue pps and per-port bit rates."""

    def __init__(self, priority_queues: int = DEFAULT_PRIORITY_QUEUES,
                 queue_depth: int = DEFAULT_QUEUE_DEPTH) -> None:
        if not 1 <= priority_queues <= 32:
            raise TrafficManagerError(f"--priority-queues: {priority_queues} is not in 1..32")
        _check_depth(queue_depth)
        self.nb_queues = priority_queues
        self.default_depth = queue_depth
        self.default_rate_pps = 0
        self.default_port_rate_bps = 0
        self.ports: dict[int, _Port] = {}
        self.priority_drops = 0          # priority >= N
        self.size = 0                    # packets queued on all ports

    # ---- configuration (p4sim ctl, CLI) ------------------------------------------------------

    def _port(self, port: int) -> _Port:
        p = self.ports.get(port)
        if p is None:
            p = _Port([_Queue(self.default_depth, self.default_rate_pps) for _ in range(self.nb_queues)],
                      rate_bps=self.default_port_rate_bps)
            self.ports[port] = p
        return p

    def add_port(self, port: int) -> None:
        """Create ``port``'s queues now (an attached interface), with the current defaults."""
        self._port(port)

    def _select(self, port: int | None, prio: int | None) -> list[_Queue]:
        if prio is not None and not 0 <= prio < self.nb_queues:
            raise TrafficManagerError(f"priority {prio} is not in 0..{self.nb_queues - 1}")
        if port is None:
            if prio is not None:
                raise TrafficManagerError("a priority needs a port")
            return [q for p in self.ports.values() for q in p.queues]
        if port < 0:
            raise TrafficManagerError(f"port {port} is negative")
        queues = self._port(port).queues
        return queues if prio is None else [queues[prio]]

    def set_queue_depth(self, depth: int, port: int | None = None, prio: int | None = None) -> None:
        """BMv2 ``set_queue_depth``: all ports (and future ones) when ``port`` is None."""
        _check_depth(depth)
        for q in self._select(port, prio):
            q.depth = depth
        if port is None:
            self.default_depth = depth

    def set_queue_rate(self, rate_pps: int, port: int | None = None, prio: int | None = None) -> None:
        """BMv2 ``set_queue_rate`` in packets/s (0 = unlimited), each queue paced on its own."""
        if rate_pps < 0:
            raise TrafficManagerError(f"queue rate {rate_pps} pps is negative")
        for q in self._select(port, prio):
            q.set_rate(rate_pps)
        if port is None:
            self.default_rate_pps = rate_pps

    def set_port_rate(self, port: int | None, rate_bps: int) -> None:
        """Shared link rate of a port in bits/s (0 = unlimited); ``None`` = all ports."""
        if rate_bps < 0:
            raise TrafficManagerError(f"port rate {rate_bps} bit/s is negative")
        if port is None:
            self.default_port_rate_bps = rate_bps
            for p in self.ports.values():
                p.rate_bps = rate_bps
        else:
            self._select(port, None)
            self._port(port).rate_bps = rate_bps

    # ---- packet path ---------------------------------------------------------------------------

    def enqueue(self, port: int, priority: int, packet: object, now_ns: int) -> bool:
        """Queue ``packet``; False when dropped (priority out of range or queue full)."""
        if not 0 <= priority < self.nb_queues:
            self.priority_drops += 1
            return False
        p = self.ports.get(port) or self._port(port)
        q = p.queues[priority]
        if len(q.items) >= q.depth:
            q.tail_drops += 1
            return False
        if not p.size and p.free_at_ns < now_ns:
            p.free_at_ns = now_ns        # an idle link banks no credit
        if q.gap_ns:
            send = q.last_send_ns + q.gap_ns
            if send < now_ns:
                send = now_ns
            q.last_send_ns = send
        else:
            send = 0
        q.items.append((packet, send, now_ns, p.size, len(q.items)))
        q.enqueued += 1
        p.size += 1
        self.size += 1
        return True

    def cut_through(self, port: int, priority: int, length: int, now_ns: int) -> bool:
        """Enqueue-and-dequeue in one step when that is what would happen: the port is empty and
        neither it nor the queue is rate-limited. True: the packet left now with all queueing
        metadata zero (qid = priority); False: use ``enqueue``."""
        p = self.ports.get(port)
        if p is None or p.size or p.rate_bps or not 0 <= priority < self.nb_queues:
            return False
        q = p.queues[priority]
        if q.gap_ns:
            return False
        q.enqueued += 1
        q.dequeued += 1
        p.sent_bytes += length
        return True

    def dequeue_ready(self, now_ns: int, limit: int = 1 << 30) -> list[Dequeued]:
        """Every packet allowed to leave at ``now_ns`` (at most ``limit``), port by port."""
        out: list[Dequeued] = []
        if not self.size:
            return out
        for port, p in self.ports.items():
            while p.size and len(out) < limit:
                if p.rate_bps and p.free_at_ns > now_ns:
                    break
                chosen = -1
                for qid, q in p.by_priority:
                    if q.items and q.items[0][1] <= now_ns:
                        chosen = qid
                        break
                if chosen < 0:
                    break
                packet, _send, enq_ns, enq_depth, q_enq_depth = q.items.popleft()
                q.dequeued += 1
                p.size -= 1
                self.size -= 1
                length = getattr(packet, "length", 0)
                p.sent_bytes += length
                if p.rate_bps:
                    start = max(p.free_at_ns, now_ns - PORT_CATCH_UP_NS)
                    p.free_at_ns = start + (length * 8 * 1_000_000_000) // p.rate_bps
                out.append(Dequeued(port, chosen, packet, enq_ns // 1000, enq_depth, p.size,
                                    (now_ns - enq_ns) // 1000, q_enq_depth, len(q.items)))
        return out

    def recharge(self, port: int, delta_bytes: int) -> None:
        """The packet just dequeued on ``port`` left with ``delta_bytes`` more (or fewer) bytes than
        it was charged with: egress changed its length (a TNA program's bridged header removed, a
        v1model egress encapsulation), so the link is busy for what was really sent."""
        p = self.ports.get(port)
        if p is None or not delta_bytes:
            return
        p.sent_bytes += delta_bytes
        if p.rate_bps:
            p.free_at_ns += (delta_bytes * 8 * 1_000_000_000) // p.rate_bps

    def next_event_ns(self) -> int | None:
        """Earliest time at which ``dequeue_ready`` may return something (None: TM empty)."""
        if not self.size:
            return None
        best: int | None = None
        for p in self.ports.values():
            if not p.size:
                continue
            t = min(q.items[0][1] for q in p.queues if q.items)
            if p.rate_bps and p.free_at_ns > t:
                t = p.free_at_ns
            if best is None or t < best:
                best = t
        return best

    def clear(self) -> None:
        """Drop every queued packet (new pipeline); counters and settings stay."""
        for p in self.ports.values():
            for q in p.queues:
                q.items.clear()
            p.size = 0
        self.size = 0

    def snapshot(self) -> dict:
        """Depths, limits, rates and counters of every port, JSON-ready (``p4sim ctl show_queues``)."""
        ports = {}
        for port in sorted(self.ports):
            p = self.ports[port]
            ports[str(port)] = {
                "rate_bps": p.rate_bps,
                "size": p.size,
                "sent_bytes": p.sent_bytes,
                "queues": [{"prio": i, "depth": len(q.items), "limit": q.depth, "rate_pps": q.rate_pps,
                            "enqueued": q.enqueued, "dequeued": q.dequeued, "tail_drops": q.tail_drops}
                           for i, q in enumerate(p.queues)],
            }
        return {"priority_queues": self.nb_queues, "default_depth": self.default_depth,
                "default_rate_pps": self.default_rate_pps,
                "default_port_rate_bps": self.default_port_rate_bps,
                "priority_drops": self.priority_drops, "queued": self.size, "ports": ports}


def _check_depth(depth: int) -> None:
    if depth < 1:
        raise TrafficManagerError(f"queue depth {depth} must be at least 1 packet")
