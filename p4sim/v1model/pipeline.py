"""The v1model packet path with BMv2 ``simple_switch`` semantics (Contract 3).

``V1ModelPath.ingress`` runs parser, verifyChecksum and ingress (resubmissions loop inside) and
returns what enters the traffic manager: the unicast packet, multicast replicas and
ingress-to-egress clones. ``V1ModelPath.egress`` runs egress, computeChecksum and the deparser
and returns transmissions, egress-to-egress clones to enqueue, and recirculations.

The order of the decisions after each pipe, the ``instance_type`` values, what metadata clones
keep, and ``egress_spec`` drop points follow simple_switch.cpp: after ingress come I2E clone,
digest, resubmit, multicast, then the drop check; after egress come E2E clone, the drop check
(``egress_spec`` starts at drop_port + 1), deparse, then recirculate or transmit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4sim.backend.rt import AssertionFailed
from p4sim.errors import UserError
from p4sim.v1model.packet_path import Enqueue, PacketPath, QueuedPacket, QueueMetadata, Transmit

PKT_INSTANCE_TYPE_NORMAL = 0
PKT_INSTANCE_TYPE_INGRESS_CLONE = 1
PKT_INSTANCE_TYPE_EGRESS_CLONE = 2
PKT_INSTANCE_TYPE_COALESCED = 3
PKT_INSTANCE_TYPE_RECIRC = 4
PKT_INSTANCE_TYPE_REPLICATION = 5
PKT_INSTANCE_TYPE_RESUBMIT = 6

MAX_RESUBMITS = 64


@dataclass
class RecircContext:
    """What a recirculated packet carries back to ingress: preserved metadata."""

    meta: Any
    field_list: int


class RecircData(bytes):
    """Packet bytes that remember their recirculation context (so ``ingress(data, ...)`` works)."""

    context: RecircContext | None = None


@dataclass
class Recirculate:
    data: bytes
    port: int                  # the original ingress port (BMv2 keeps it)
    context: RecircContext

    @property
    def ingress_port(self) -> int:
        return self.port


# QueuedPacket.context is the tuple (headers, metadata, standard_metadata, payload, length)


_M32 = 0xFFFFFFFF
_M48 = (1 << 48) - 1
_M19 = (1 << 19) - 1


class V1ModelPath(PacketPath):
    """Runs packets through one ``Pipeline`` with simple_switch semantics."""

    def __init__(self, pipeline: Any, cpu_port: int | None = None, drop_port: int = 511) -> None:
        super().__init__(pipeline, cpu_port, drop_port)
        ns = self._ns
        ns["_DROP_PORT"] = drop_port
        self._parse = ns["_BLOCK_parser"]
        module = pipeline.program.module
        empty = module.empty_blocks
        self._verify = None if "verify_checksum" in empty else ns["_BLOCK_verify_checksum"]
        self._ingress = ns["_BLOCK_ingress"]
        self._egress = None if "egress" in empty else ns["_BLOCK_egress"]
        self._compute = None if "compute_checksum" in empty else ns["_BLOCK_compute_checksum"]
        self._uses_ctx = module.uses_ctx
        self._deparse = ns["_BLOCK_deparser"]
        self._new_h, self._new_m, self._new_s = ns["_NEW_H"], ns["_NEW_M"], ns["_NEW_S"]
        probe = self._new_s()
        self._sm_fields = {f for f in type(probe).__slots__ if not f.startswith("_")}
        self._has_priority = "priority" in self._sm_fields
        self._has_queueing = {"enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth"} <= self._sm_fields
        aliases = pipeline.program.module.aliases or {}
        sm_names = pipeline.program.module.sm_aliases or {}
        # user metadata fields bound by @alias to intrinsic metadata (BMv2 honours these): they
        # mirror the standard_metadata field; queueing values without one come from the TM
        self._bound = [(name, sm_names[alias], (1 << width) - 1)
                       for alias, fields in aliases.items() if alias in sm_names for name, width in fields]
        self._egress_aliases = [(alias.split(".", 1)[1], name, (1 << width) - 1)
                                for alias, fields in aliases.items()
                                if alias not in sm_names and alias.startswith("queueing_metadata.")
                                for name, width in fields]

    # ---- helpers ---------------------------------------------------------------------------
    def _preserve(self, src: Any, dst: Any, field_list: int) -> None:
        """Copy the user-metadata fields of ``field_list`` (dotted paths for nested structs)."""
        for path in self.pipeline.field_lists.get(field_list, ()):
            s, d = src, dst
            *parents, last = path.split(".")
            for p in parents:
                s, d = getattr(s, p), getattr(d, p)
            value = getattr(s, last)
            setattr(d, last, value._copy() if hasattr(value, "_copy") else value)

    def _bind_in(self, m: Any, s: Any) -> list[int]:
        """Copy standard_metadata into @alias-bound user fields; returns the copied values."""
        snap = []
        for name, field, mask in self._bound:
            value = getattr(s, field) & mask
            setattr(m, name, value)
            snap.append(value)
        return snap

    def _bind_out(self, m: Any, s: Any, snap: list[int]) -> None:
        """Alias-bound user fields the program changed write through to standard_metadata."""
        for (name, field, _mask), before in zip(self._bound, snap, strict=True):
            value = getattr(m, name)
            if value != before:
                setattr(s, field, value)

    def _parse_into(self, data: bytes, port: int, itype: int, now_us: int, length: int) -> tuple[Any, Any, Any, bytes]:
        h, m, s = self._new_h(), self._new_m(), self._new_s()
        s.ingress_port = port
        s.instance_type = itype
        s.packet_length = length
        s.ingress_global_timestamp = now_us & _M48
        ctx = self._ctx
        ctx.sm = s
        ctx.length = length
        ctx.now = now_us
        return h, m, s, data[self._parse(data, h, m, s):]

    # ---- ingress ---------------------------------------------------------------------------
    def ingress(self, data: bytes, port: int, now_us: int, context: RecircContext | None = None) -> list[QueuedPacket]:
        """Parser .. ingress for one packet arriving on ``port``; returns what enters the TM."""
        if type(data) is not bytes:
            if context is None and isinstance(data, RecircData):
                context = data.context
            data = bytes(data)
        itype = PKT_INSTANCE_TYPE_NORMAL
        carry = None
        field_list = 0
        if context is not None:
            itype, carry, field_list = PKT_INSTANCE_TYPE_RECIRC, context.meta, context.field_list
        length = len(data)
        ctx = self._ctx
        out: list[QueuedPacket] = []
        resubmits = 0
        while True:
            h, m, s = self._new_h(), self._new_m(), self._new_s()
            s.ingress_port = port
            if itype:
                s.instance_type = itype
            s.packet_length = length
            s.ingress_global_timestamp = now_us & _M48
            if carry is not None:
                self._preserve(carry, m, field_list)
            if self._uses_ctx:
                ctx.sm = s
                ctx.length = length
                ctx.now = now_us
            snap = self._bind_in(m, s) if self._bound else None
            try:
                payload = data[self._parse(data, h, m, s):]
                if self._verify is not None:
                    ctx.payload = payload
                    self._verify(h, m)
                self._ingress(h, m, s)
            except (AssertionFailed, UserError) as err:
                self._assert_failed(err)
                return out
            if snap is not None:
                self._bind_out(m, s, snap)
            clone = s._clone
            if clone is not None:
                s._clone = None
                self._ingress_clone(data, port, now_us, length, m, clone, out)
            if s._resubmit is None:
                break
            carry, field_list, itype = m, s._resubmit, PKT_INSTANCE_TYPE_RESUBMIT
            resubmits += 1
            if resubmits > MAX_RESUBMITS:
                self.drops["resubmit_loop"] += 1
                return out
        mgid = s.mcast_grp
        if mgid:
            s.instance_type = PKT_INSTANCE_TYPE_REPLICATION
            self._multicast(h, m, s, payload, length, mgid, out)
            return out
        spec = s.egress_spec
        if spec == self.drop_port:
            self.drops["ingress_drop"] += 1
            return out
        s.instance_type = PKT_INSTANCE_TYPE_NORMAL
        s.egress_port = spec
        out.append(QueuedPacket(spec, s.priority if self._has_priority else 0, length,
                                (h, m, s, payload, length)))
        return out

    def recirculate(self, rec: Recirculate, now_us: int) -> list[QueuedPacket]:
        """Feed a ``Recirculate`` output back into ingress (keeps its preserved metadata)."""
        return self.ingress(rec.data, rec.port, now_us, rec.context)

    def _multicast(self, h: Any, m: Any, s: Any, payload: bytes, length: int, mgid: int,
                   out: list[QueuedPacket]) -> None:
        replicas = self._pre.replicate(mgid)
        if not replicas:
            self.drops["mcast_empty_group"] += 1
        prio = s.priority if self._has_priority else 0
        for rid, port in replicas:
            s2 = s._copy()
            s2.egress_rid = rid
            s2.egress_port = port
            out.append(QueuedPacket(port, prio, length, (h._copy(), m._copy(), s2, payload, length)))

    def _ingress_clone(self, data: bytes, port: int, now_us: int, length: int, m: Any,
                       clone: tuple[int, int, int], out: list[QueuedPacket]) -> None:
        _kind, session, field_list = clone
        targets = self._pre.clone_targets(session)
        sess = self._pre.session(session)
        for rid, eport in targets:
            h2, m2, s2, payload = self._parse_into(data, port, PKT_INSTANCE_TYPE_INGRESS_CLONE, now_us, length)
            self._preserve(m, m2, field_list)
            s2.egress_rid = rid
            s2.egress_port = eport
            if sess is not None and sess.truncate_length:
                s2._trunc = sess.truncate_length
            out.append(QueuedPacket(eport, 0, length, (h2, m2, s2, payload, length)))

    # ---- egress ----------------------------------------------------------------------------
    def egress(self, pkt: QueuedPacket, qmeta: QueueMetadata, now_us: int) -> list[Any]:
        """Egress .. deparser for one packet leaving the TM on ``pkt.egress_port``."""
        h, m, s, payload, length = pkt.context
        port = pkt.egress_port
        s.egress_port = port
        s.egress_spec = (self.drop_port + 1) & 0x1FF   # BMv2 writes drop_port + 1 into the 9-bit field
        s.packet_length = length
        s.egress_global_timestamp = now_us & _M48
        if self._has_queueing:
            s.enq_timestamp = qmeta.enq_timestamp & _M32
            s.enq_qdepth = qmeta.enq_qdepth & _M19
            s.deq_timedelta = qmeta.deq_timedelta & _M32
            s.deq_qdepth = qmeta.deq_qdepth & _M19
        if self._egress_aliases:
            for attr, name, mask in self._egress_aliases:
                setattr(m, name, getattr(qmeta, attr, 0) & mask)
        snap = self._bind_in(m, s) if self._bound else None
        ctx = self._ctx
        if self._uses_ctx:
            ctx.sm = s
            ctx.length = length
            ctx.now = now_us
            ctx.payload = payload
        outputs: list[Any] = []
        try:
            if self._egress is not None:
                self._egress(h, m, s)
                if snap is not None:
                    self._bind_out(m, s, snap)
                clone = s._clone
                if clone is not None:
                    s._clone = None
                    self._egress_clone(h, m, s, payload, length, clone, outputs)
                if s.egress_spec == self.drop_port:
                    self.drops["egress_drop"] += 1
                    return outputs
            if self._compute is not None:
                self._compute(h, m)
            parts: list[bytes] = []
            self._deparse(parts, h)
        except (AssertionFailed, UserError) as err:
            self._assert_failed(err)
            return outputs
        parts.append(payload)
        data = b"".join(parts)
        if s._trunc:
            data = data[:s._trunc]
        if s._recirc is not None:
            rec = RecircData(data)
            rec.context = RecircContext(m, s._recirc)
            outputs.append(Recirculate(rec, s.ingress_port, rec.context))
            return outputs
        outputs.append(Transmit(port, data))
        return outputs

    def _egress_clone(self, h: Any, m: Any, s: Any, payload: bytes, length: int, clone: tuple[int, int, int],
                      outputs: list[Any]) -> None:
        _kind, session, field_list = clone
        sess = self._pre.session(session)
        for rid, eport in self._pre.clone_targets(session):
            m2, s2 = self._new_m(), self._new_s()
            self._preserve(m, m2, field_list)
            s2.instance_type = PKT_INSTANCE_TYPE_EGRESS_CLONE    # all other metadata reset (BMv2)
            s2.egress_rid = rid
            s2.egress_port = eport
            if sess is not None and sess.truncate_length:
                s2._trunc = sess.truncate_length
            outputs.append(Enqueue(QueuedPacket(eport, 0, length, (h._copy(), m2, s2, payload, length))))


__all__ = ["V1ModelPath", "QueuedPacket", "QueueMetadata", "Transmit", "Enqueue", "Recirculate",
           "RecircContext", "RecircData"]
