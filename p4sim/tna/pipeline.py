"""The TNA packet path: ingress parser .. ingress deparser, the traffic manager, egress parser ..
egress deparser, with the Tofino intrinsic metadata.

Why it exists: a TNA program sees the chip's metadata as *bytes*: the ingress parser extracts
``ingress_intrinsic_metadata_t`` and skips ``PORT_METADATA_SIZE`` bits of port metadata in front
of the packet, the egress parser extracts ``egress_intrinsic_metadata_t`` (built from what the
traffic manager measured) in front of what the ingress deparser emitted. ``TnaPath`` builds those
prefixes and applies the decisions TNA leaves to the deparsers and the TM:

* ingress: ``drop_ctl`` bit 0 drops; ``mcast_grp_a``/``mcast_grp_b`` replicate through the PRE
  (p4sim's packet replication engine, as the v1model path); otherwise the packet goes to
  ``ucast_egress_port`` in queue ``qid`` (the TM's queue index, not a v1model priority);
  ``copy_to_cpu`` adds a copy to the CPU port; ``bypass_egress`` skips the egress pipe;
* egress: ``drop_ctl`` bit 0 drops, else the deparsed bytes are transmitted;
* a parser error does not drop the packet: ``parser_err`` carries it into the control
  (``PARSER_ERROR_NO_MATCH``/``PARSER_ERROR_PARTIAL_HDR``), as when a program reads it on Tofino.

It has ``V1ModelPath``'s interface (``ingress``, ``egress``, ``process``, ``drops``), so the switch
device and the tests drive both architectures the same way.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass
from typing import Any

from p4sim.backend.exprgen import width_of
from p4sim.backend.rt import AssertionFailed
from p4sim.errors import UserError
from p4sim.v1model.pipeline import Enqueue, QueuedPacket, QueueMetadata, Transmit

log = logging.getLogger("p4sim.tna")

PARSER_ERROR_NO_MATCH = 0x0001
PARSER_ERROR_PARTIAL_HDR = 0x0002
PARSER_ERROR_CODES = {"NoMatch": PARSER_ERROR_NO_MATCH, "PacketTooShort": PARSER_ERROR_PARTIAL_HDR,
                      "HeaderTooShort": PARSER_ERROR_PARTIAL_HDR, "CounterRange": 0x0004}
_M48 = (1 << 48) - 1


@dataclass(slots=True)
class TnaPacket:
    """What crosses the TM: the ingress-deparsed bytes and the metadata egress is given."""

    data: bytes
    ingress_port: int
    qid: int
    rid: int
    bypass_egress: bool


def _layout(program: Any, name: str) -> list[tuple[str, int]]:
    decl = program.find(name)
    return [(f.name, width_of(f.type)) for f in decl.fields]


class _Packer:
    """Packs named fields of a header layout into bytes (fields not given are 0)."""

    def __init__(self, layout: list[tuple[str, int]]) -> None:
        total = sum(w for _, w in layout)
        self.nbytes = total // 8
        self.shifts: dict[str, tuple[int, int]] = {}
        pos = total
        for fname, width in layout:
            pos -= width
            self.shifts[fname] = (pos, (1 << width) - 1)

    def pack(self, **values: int) -> bytes:
        acc = 0
        shifts = self.shifts
        for fname, value in values.items():
            shift, fmask = shifts[fname]
            acc |= (value & fmask) << shift
        return acc.to_bytes(self.nbytes, "big")


class TnaPath:
    """Runs packets through one TNA ``Pipeline`` (see the module docstring)."""

    def __init__(self, pipeline: Any, cpu_port: int | None = None, drop_port: int = 511) -> None:
        self.pipeline = pipeline
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.drops: collections.Counter[str] = collections.Counter()
        ns = pipeline.namespace
        self._ns = ns
        program = pipeline.program
        self._ctx = pipeline.ctx
        self._pre = pipeline.pre
        self._errors = list(program.module.errors)
        ast_program = program.ast
        self._ig = _Packer(_layout(ast_program, "ingress_intrinsic_metadata_t"))
        eg_layout = _layout(ast_program, "egress_intrinsic_metadata_t")
        self._eg = _Packer(eg_layout)
        size = ast_program.find("PORT_METADATA_SIZE")
        self._port_md = bytes(int(size.value.value) // 8)
        self._qmask = (1 << dict(eg_layout)["egress_qid"]) - 1
        # the classes of each block's arguments (None: packet_in/packet_out)
        self._ig_new = ns["_NEW_ingress_parser"][1:] + (ns["_NEW_ingress"][4],)
        self._eg_new = ns["_NEW_egress_parser"][1:] + (ns["_NEW_egress"][5],)
        self._blocks = {role[7:]: ns[role] for role in ns if role.startswith("_BLOCK_")}
        self._nparams = {role[9:]: ns[role] for role in ns if role.startswith("_NPARAMS_")}

    # ---- helpers ---------------------------------------------------------------------------
    def _parse(self, role: str, data: bytes, objs: list[Any]) -> tuple[int, int]:
        """Run a parser over ``data``; (payload offset, parser_err bits)."""
        ctx = self._ctx
        ctx.parser_error = None
        off = self._blocks[role](data, *objs[: self._nparams[role] - 1])
        code = ctx.parser_error
        if code is None:
            return off, 0
        name = self._errors[code] if 0 <= code < len(self._errors) else ""
        return off, PARSER_ERROR_CODES.get(name, PARSER_ERROR_NO_MATCH)

    def _failed(self, err: Exception) -> None:
        self.drops["assert" if isinstance(err, AssertionFailed) else "extern_error"] += 1
        log.warning("packet dropped: %s", err)

    # ---- ingress ---------------------------------------------------------------------------
    def ingress(self, data: bytes, port: int, now_us: int, context: Any = None) -> list[QueuedPacket]:
        """Ingress parser .. ingress deparser for one packet on ``port``: what enters the TM."""
        data = bytes(data)
        ctx = self._ctx
        ctx.length = len(data)
        ctx.now = now_us
        h, m, ig, tm, prs, dpr = (cls() for cls in self._ig_new)
        full = self._ig.pack(ingress_port=port, ingress_mac_tstamp=now_us * 1000) + self._port_md + data
        nparams = self._nparams
        try:
            off, err = self._parse("ingress_parser", full, [h, m, ig, tm, prs])
            prs.parser_err = err
            prs.global_tstamp = (now_us * 1000) & _M48
            payload = full[off:]
            self._blocks["ingress"](*[h, m, ig, prs, dpr, tm][:nparams["ingress"]])
            parts: list[bytes] = []
            self._blocks["ingress_deparser"](*[parts, h, m, dpr, ig][:nparams["ingress_deparser"]])
        except (AssertionFailed, UserError) as err:
            self._failed(err)
            return []
        if dpr.drop_ctl & 1:
            self.drops["ingress_drop"] += 1
            return []
        out_bytes = b"".join(parts) + payload
        length = len(out_bytes)
        qid = tm.qid & self._qmask
        out: list[QueuedPacket] = []
        for mgid in (tm.mcast_grp_a, tm.mcast_grp_b):
            if mgid:
                replicas = self._pre.replicate(mgid)
                if not replicas:
                    self.drops["mcast_empty_group"] += 1
                for rid, eport in replicas:
                    out.append(QueuedPacket(eport, qid, length,
                                            TnaPacket(out_bytes, port, qid, rid, bool(tm.bypass_egress))))
        if not (tm.mcast_grp_a or tm.mcast_grp_b):
            eport = tm.ucast_egress_port
            out.append(QueuedPacket(eport, qid, length, TnaPacket(out_bytes, port, qid, 0, bool(tm.bypass_egress))))
        if tm.copy_to_cpu and self.cpu_port is not None:
            out.append(QueuedPacket(self.cpu_port, 0, length, TnaPacket(out_bytes, port, 0, 0, True)))
        return out

    # ---- egress ----------------------------------------------------------------------------
    def egress(self, pkt: QueuedPacket, qmeta: QueueMetadata, now_us: int) -> list[Any]:
        """Egress parser .. egress deparser for one packet leaving the TM on ``pkt.egress_port``."""
        tp: TnaPacket = pkt.context
        port = pkt.egress_port
        if tp.bypass_egress:
            return [Transmit(port, tp.data)]
        ctx = self._ctx
        ctx.length = len(tp.data)
        ctx.now = now_us
        full = self._eg.pack(egress_port=port, enq_qdepth=qmeta.enq_qdepth, deq_qdepth=qmeta.deq_qdepth,
                             enq_tstamp=qmeta.enq_timestamp, deq_timedelta=qmeta.deq_timedelta,
                             egress_rid=tp.rid, egress_qid=tp.qid, pkt_length=len(tp.data)) + tp.data
        h, m, eg, eprs, edpr, oport = (cls() for cls in self._eg_new)
        nparams = self._nparams
        try:
            off, err = self._parse("egress_parser", full, [h, m, eg, eprs, edpr])
            eprs.parser_err = err
            eprs.global_tstamp = (now_us * 1000) & _M48
            payload = full[off:]
            self._blocks["egress"](*[h, m, eg, eprs, edpr, oport][:nparams["egress"]])
            parts: list[bytes] = []
            self._blocks["egress_deparser"](*[parts, h, m, edpr, eg, eprs][:nparams["egress_deparser"]])
        except (AssertionFailed, UserError) as err:
            self._failed(err)
            return []
        if edpr.drop_ctl & 1:
            self.drops["egress_drop"] += 1
            return []
        return [Transmit(port, b"".join(parts) + payload)]

    def ghost(self, qid: int, qlength: int, pipe_id: int = 0) -> None:
        """Tofino2's ghost thread: report queue ``qid``'s length (no-op without a ghost block)."""
        block = self._blocks.get("ghost")
        if block is None:
            return
        gh = self._ns["_NEW_ghost"][0]()
        gh.qid, gh.qlength, gh.pipe_id = qid & 0x7FF, qlength & 0x3FFFF, pipe_id & 3
        gh._v = True
        block(gh)

    # ---- convenience -----------------------------------------------------------------------
    def process(self, data: bytes, port: int, now_us: int = 0, qdepth: int = 0,
                max_passes: int = 256) -> list[tuple[int, bytes]]:
        """Run one packet to completion (queues reported at depth ``qdepth``): (port, bytes) sent."""
        sent: list[tuple[int, bytes]] = []
        queue = collections.deque(self.ingress(data, port, now_us))
        passes = 0
        while queue and passes < max_passes:
            passes += 1
            qp = queue.popleft()
            for o in self.egress(qp, QueueMetadata(now_us, qdepth, qdepth, 0, qp.priority), now_us):
                if isinstance(o, Transmit):
                    sent.append((o.port, o.data))
                elif isinstance(o, Enqueue):
                    queue.append(o.packet)
        return sent


def is_tna(program: Any) -> bool:
    """Whether a compiled program is a TNA/T2NA one (else v1model)."""
    return getattr(program, "arch", "v1model") in ("tna", "t2na")


__all__ = ["TnaPath", "TnaPacket", "is_tna"]
