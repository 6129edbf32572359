"""What every architecture's packet path shares: the pipeline handles, drop accounting and the
run-to-completion loop of ``process``.

Why it exists: ``V1ModelPath`` (simple_switch semantics) and ``TnaPath`` (Tofino) run different
blocks in a different order, but the switch device and the tests drive both through the same
interface (``ingress``, ``egress``, ``process``, ``drops``); this base holds that interface's
common part so the two cannot drift apart.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass
from typing import Any

from p4sim.backend.rt import AssertionFailed, ParserLoopLimit

log = logging.getLogger("p4sim.path")


@dataclass(slots=True)
class QueuedPacket:
    egress_port: int
    priority: int
    length: int
    context: object        # opaque to the traffic manager


@dataclass
class QueueMetadata:
    enq_timestamp: int
    enq_qdepth: int
    deq_qdepth: int
    deq_timedelta: int
    qid: int


@dataclass(slots=True)
class Transmit:
    port: int
    data: bytes


@dataclass
class Enqueue:
    packet: QueuedPacket

    @property
    def pkt(self) -> QueuedPacket:
        return self.packet


class PacketPath:
    """The pipeline's namespace, packet context and PRE, the drop counters, and ``process``."""

    # the queue id ``process`` reports to egress: the packet's TM queue (TNA's qid) or 0 (v1model)
    QID_FROM_QUEUE = False
    # what ``enq_qdepth``/``deq_qdepth`` count: the packet's own queue (Tofino) or the whole port (BMv2)
    QDEPTH_OF_OWN_QUEUE = False

    def __init__(self, pipeline: Any, cpu_port: int | None = None, drop_port: int = 511) -> None:
        self.pipeline = pipeline
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.drops: collections.Counter[str] = collections.Counter()
        self._ns = pipeline.namespace
        self._ctx = pipeline.ctx
        self._pre = pipeline.pre

    def _assert_failed(self, err: Exception) -> None:
        """A failed assert/assume, a parser loop, or an extern refusing the packet (e.g. a register
        index out of range): the packet is dropped and counted; the switch keeps running."""
        if isinstance(err, ParserLoopLimit):
            self.drops["parser_loop"] += 1
        else:
            self.drops["assert" if isinstance(err, AssertionFailed) else "extern_error"] += 1
        log.warning("packet dropped: %s", err)

    def ingress(self, data: bytes, port: int, now_us: int, context: Any = None) -> list[QueuedPacket]:
        raise NotImplementedError

    def egress(self, pkt: QueuedPacket, qmeta: QueueMetadata, now_us: int) -> list[Any]:
        raise NotImplementedError

    def recirculate(self, rec: Any, now_us: int) -> list[QueuedPacket]:
        """Feed a recirculation output back into ingress (architectures that have one)."""
        raise NotImplementedError

    def process(self, data: bytes, port: int, now_us: int = 0, max_passes: int = 256,
                qdepth: int = 0) -> list[tuple[int, bytes]]:
        """Run one packet to completion, every queue reported at depth ``qdepth``: the
        (port, bytes) of each transmitted copy."""
        sent: list[tuple[int, bytes]] = []
        queue = collections.deque(self.ingress(data, port, now_us))
        passes = 0
        by_queue = self.QID_FROM_QUEUE
        while queue and passes < max_passes:
            passes += 1
            qp = queue.popleft()
            qmeta = QueueMetadata(now_us, qdepth, qdepth, 0, qp.priority if by_queue else 0)
            for o in self.egress(qp, qmeta, now_us):
                if isinstance(o, Transmit):
                    sent.append((o.port, o.data))
                elif isinstance(o, Enqueue):
                    queue.append(o.packet)
                else:
                    queue.extend(self.recirculate(o, now_us))
        return sent
