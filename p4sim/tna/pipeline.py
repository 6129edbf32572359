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
  ``copy_to_cpu`` adds a copy to the CPU port; ``bypass_egress`` skips the egress pipe; a packet
  whose ``ucast_egress_port`` ingress never wrote (and no multicast group) is dropped, as on Tofino
  (the field reads as 512 until written);
* egress: ``drop_ctl`` bit 0 drops, else the deparsed bytes are transmitted;
* a parser error does not drop the packet: ``parser_err`` carries it into the control
  (``PARSER_ERROR_NO_MATCH``/``PARSER_ERROR_PARTIAL_HDR``), as when a program reads it on Tofino.

It shares ``PacketPath`` (``ingress``, ``egress``, ``process``, ``drops``) with ``V1ModelPath``, so the switch
device and the tests drive both architectures the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4sim.backend.exprgen import width_of
from p4sim.backend.rt import AssertionFailed
from p4sim.errors import UserError
from p4sim.v1model.packet_path import Enqueue, PacketPath, QueuedPacket, QueueMetadata, Transmit

PARSER_ERROR_NO_MATCH = 0x0001
PARSER_ERROR_PARTIAL_HDR = 0x0002
PARSER_ERROR_CODES = {"NoMatch": PARSER_ERROR_NO_MATCH, "PacketTooShort": PARSER_ERROR_PARTIAL_HDR,
                      "HeaderTooShort": PARSER_ERROR_PARTIAL_HDR, "CounterRange": 0x0004}
_M48 = (1 << 48) - 1
# ``ucast_egress_port`` before ingress writes it: one above the 9-bit range (any write masks it to
# 9 bits). Tofino's TM sends no unicast copy when the program never wrote the port.
UCAST_UNSET = 1 << 9
# ``resubmit_type`` before ingress writes it: outside its 3 bits, so no ``== type`` test in the
# deparser is true (Tofino resubmits only when the program wrote a type, 0 included).
RESUBMIT_UNSET = 1 << 3


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
    """Packs named fields of a header layout into an int (fields not given are 0): the shift and
    mask of each field, so a packet's prefix is a few shifts and one ``to_bytes``."""

    def __init__(self, layout: list[tuple[str, int]], trailing_bits: int = 0) -> None:
        total = sum(w for _, w in layout)
        self.nbytes = (total + trailing_bits) // 8
        self.shifts: dict[str, tuple[int, int]] = {}
        pos = total + trailing_bits
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


class TnaPath(PacketPath):
    """Runs packets through one TNA ``Pipeline`` (see the module docstring)."""

    QID_FROM_QUEUE = True
    QDEPTH_OF_OWN_QUEUE = True      # Tofino's TM reports the packet's queue, not the port

    def __init__(self, pipeline: Any, cpu_port: int | None = None, drop_port: int = 511) -> None:
        super().__init__(pipeline, cpu_port, drop_port)
        ns = self._ns
        program = pipeline.program
        self._errors = list(program.module.errors)
        ast_program = program.ast
        port_md_bits = int(ast_program.find("PORT_METADATA_SIZE").value.value)
        # the ingress prefix: ingress_intrinsic_metadata_t, then the port metadata (zeros)
        self._ig = ig = _Packer(_layout(ast_program, "ingress_intrinsic_metadata_t"), port_md_bits)
        self._ig_port, self._ig_tstamp = ig.shifts["ingress_port"], ig.shifts["ingress_mac_tstamp"]
        self._resubmit_flag = 1 << ig.shifts["resubmit_flag"][0]
        self._port_md_bytes = port_md_bits // 8
        # port -> its port metadata (PORT_METADATA_SIZE bits, what Tofino's per-port table gives
        # the ingress parser; p4sim default 0), as an int: the pipeline's port-metadata table
        # (P4Runtime, p4sim.tna.control_values) or ``set_port_metadata``
        self.port_metadata: dict[int, int] = getattr(pipeline, "port_metadata", {})
        self._port_md_bits = port_md_bits
        eg_layout = _layout(ast_program, "egress_intrinsic_metadata_t")
        self._eg = eg = _Packer(eg_layout)
        self._eg_fields = tuple(eg.shifts[f] for f in ("egress_port", "enq_qdepth", "deq_qdepth", "enq_tstamp",
                                                       "deq_timedelta", "egress_rid", "egress_qid", "pkt_length"))
        self._qmask = (1 << dict(eg_layout)["egress_qid"]) - 1
        # one call that makes each pipe's per-packet objects: the generated ``_FRESH_<pipe>()``
        # (only the headers the pipe's code touches; ucast_egress_port and resubmit_type preset to
        # UCAST_UNSET/RESUBMIT_UNSET), else built here from the blocks' argument classes
        self._ig_fresh = ns.get("_FRESH_ingress") or self._fresh(
            ns["_NEW_ingress_parser"][1:] + (ns["_NEW_ingress"][4],), preset=True)
        self._eg_fresh = ns.get("_FRESH_egress") or self._fresh(
            ns["_NEW_egress_parser"][1:] + (ns["_NEW_egress"][5],), preset=False)
        self._blocks = {role[7:]: ns[role] for role in ns if role.startswith("_BLOCK_")}
        self._nparams = {role[9:]: ns[role] for role in ns if role.startswith("_NPARAMS_")}
        nparams = self._nparams
        # each block's callable and how many of the architecture's arguments it declares
        self._ig_run = tuple((self._blocks[r], nparams[r]) for r in ("ingress_parser", "ingress", "ingress_deparser"))
        self._eg_run = tuple((self._blocks[r], nparams[r]) for r in ("egress_parser", "egress", "egress_deparser"))
        # one function per pipe that calls its three blocks with exactly the arguments they declare
        self._ig_pipe = self._pipe_runner(self._ig_run, "h, m, ig, tm, prs, dpr", "h, m, ig, tm, prs",
                                          "h, m, ig, prs, dpr, tm", "h, m, dpr, ig")
        self._eg_pipe = self._pipe_runner(self._eg_run, "h, m, eg, prs, dpr, oport", "h, m, eg, prs, dpr",
                                          "h, m, eg, prs, dpr, oport", "h, m, dpr, eg, prs")

    def set_port_metadata(self, port: int, data: bytes) -> None:
        """The port metadata the ingress parser finds in front of packets from ``port`` (Tofino's
        per-port table; the first bytes of the PORT_METADATA_SIZE bits, the rest zero)."""
        if len(data) > self._port_md_bytes:
            raise UserError(f"port {port}: {len(data)} bytes of port metadata, at most {self._port_md_bytes}")
        self.port_metadata[port] = int.from_bytes(bytes(data).ljust(self._port_md_bytes, b"\0"), "big")

    # ---- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _fresh(classes: tuple, preset: bool) -> Any:
        """``() -> (instances of classes)``, the ingress one (``preset``) with the TM's unicast
        port and the resubmit type at their not-written values."""
        if preset:
            new_h, new_m, new_ig, new_tm, new_prs, new_dpr = classes

            def fresh_ingress() -> tuple:
                tm, dpr = new_tm(), new_dpr()
                tm.ucast_egress_port = UCAST_UNSET
                dpr.resubmit_type = RESUBMIT_UNSET
                return new_h(), new_m(), new_ig(), tm, new_prs(), dpr
            return fresh_ingress
        new_h, new_m, new_eg, new_prs, new_dpr, new_oport = classes
        return lambda: (new_h(), new_m(), new_eg(), new_prs(), new_dpr(), new_oport())

    def _parser_err(self, code: int | None) -> int:
        """The ``parser_err`` bits for the error the parser stopped with (None: 0)."""
        if code is None:
            return 0
        name = self._errors[code] if 0 <= code < len(self._errors) else ""
        return PARSER_ERROR_CODES.get(name, PARSER_ERROR_NO_MATCH)

    def _pipe_runner(self, run: tuple, objects: str, prs_args: str, ctl_args: str, dpr_args: str) -> Any:
        """A function ``(full, <objects>, tstamp) -> (offset of the payload in full, deparsed
        headers)`` running one pipe's parser, control and deparser, each given the first as many of
        the architecture's arguments (``*_args``, in the order the TNA blocks declare them) as it
        declares (trailing ``@optional`` parameters may be left out). Built once per path so a
        packet pays plain calls, not argument tuples sliced per block (issue 15: the TNA path's
        per-packet cost against v1model's)."""
        (parse, np_prs), (control, np_ctl), (deparse, np_dpr) = run

        def take(names: str, n: int) -> str:
            return "".join(", " + a for a in names.split(", ")[:n])

        src = (f"def pipe(full, {objects}, tstamp):\n"
               "    ctx.parser_error = None\n"
               f"    off = parse(full{take(prs_args, np_prs - 1)})\n"
               "    code = ctx.parser_error\n"
               "    if code is not None:\n"
               "        prs.parser_err = parser_err(code)\n"
               "    prs.global_tstamp = tstamp\n"
               f"    control({take(ctl_args, np_ctl)[2:]})\n"
               "    parts = []\n"
               f"    deparse(parts{take(dpr_args, np_dpr - 1)})\n"
               "    return off, parts\n")
        scope = {"ctx": self._ctx, "parse": parse, "control": control, "deparse": deparse,
                 "parser_err": self._parser_err}
        exec(compile(src, f"<tna pipe {objects}>", "exec"), scope)     # noqa: S102 - our own source
        return scope["pipe"]

    # ---- ingress ---------------------------------------------------------------------------
    def ingress(self, data: bytes, port: int, now_us: int, context: Any = None) -> list[QueuedPacket]:
        """Ingress parser .. ingress deparser for one packet on ``port``: what enters the TM.
        ``context``: the resubmit header bytes of a resubmitted packet (``Resubmit.emit``)."""
        if type(data) is not bytes:
            data = bytes(data)
        ctx = self._ctx
        ctx.length = len(data)
        ctx.now = now_us
        h, m, ig, tm, prs, dpr = self._ig_fresh()
        tstamp = (now_us * 1000) & _M48
        (pshift, pmask), (tshift, tmask) = self._ig_port, self._ig_tstamp
        prefix = ((port & pmask) << pshift) | ((tstamp & tmask) << tshift)
        if context is None and self.port_metadata:
            prefix |= self.port_metadata.get(port, 0)
        if context is not None:     # resubmitted: the flag, and its header where the port metadata was
            prefix |= self._resubmit_flag | int.from_bytes(bytes(context)[:self._port_md_bytes].ljust(
                self._port_md_bytes, b"\0"), "big")
        full = prefix.to_bytes(self._ig.nbytes, "big") + data
        try:
            off, parts = self._ig_pipe(full, h, m, ig, tm, prs, dpr, tstamp)
        except (AssertionFailed, UserError) as err:
            ctx.mirrors.clear()
            ctx.resubmit.clear()
            self._assert_failed(err)
            return []
        out: list[QueuedPacket] = []
        if ctx.mirrors:             # a copy of the packet as it arrived, behind the mirror header
            self._mirror(ctx.mirrors, data, port, out)
        if ctx.resubmit:
            resubmit = ctx.resubmit[-1]
            ctx.resubmit.clear()
            if context is not None:
                self.drops["resubmit_again"] += 1     # Tofino resubmits a packet once
                return out
            return out + self.ingress(data, port, now_us, resubmit)
        if dpr.drop_ctl & 1:
            self.drops["ingress_drop"] += 1
            return out
        parts.append(full[off:])
        out_bytes = b"".join(parts)
        length = len(out_bytes)
        qid = tm.qid & self._qmask
        bypass = bool(tm.bypass_egress)
        grp_a, grp_b = tm.mcast_grp_a, tm.mcast_grp_b
        if grp_a or grp_b:
            for mgid in (grp_a, grp_b):
                if mgid:
                    replicas = self._pre.replicate(mgid)
                    if not replicas:
                        self.drops["mcast_empty_group"] += 1
                    for rid, eport in replicas:
                        out.append(QueuedPacket(eport, qid, length, TnaPacket(out_bytes, port, qid, rid, bypass)))
        elif tm.ucast_egress_port != UCAST_UNSET:
            out.append(QueuedPacket(tm.ucast_egress_port, qid, length, TnaPacket(out_bytes, port, qid, 0, bypass)))
        elif not tm.copy_to_cpu:
            self.drops["no_egress_port"] += 1       # Tofino: no unicast port written, no group
        if tm.copy_to_cpu and self.cpu_port is not None:
            out.append(QueuedPacket(self.cpu_port, 0, length, TnaPacket(out_bytes, port, 0, 0, True)))
        return out

    # ---- egress ----------------------------------------------------------------------------
    def egress(self, pkt: QueuedPacket, qmeta: QueueMetadata, now_us: int) -> list[Any]:
        """Egress parser .. egress deparser for one packet leaving the TM on ``pkt.egress_port``."""
        tp: TnaPacket = pkt.context
        port = pkt.egress_port
        data = tp.data
        if tp.bypass_egress:
            return [Transmit(port, data)]
        ctx = self._ctx
        length = len(data)
        ctx.length = length
        ctx.now = now_us
        (s_port, m_port), (s_enq, m_enq), (s_deq, m_deq), (s_ets, m_ets), (s_dtd, m_dtd), (s_rid, m_rid), \
            (s_qid, m_qid), (s_len, m_len) = self._eg_fields
        acc = ((port & m_port) << s_port | (qmeta.enq_qdepth & m_enq) << s_enq | (qmeta.deq_qdepth & m_deq) << s_deq
               | (qmeta.enq_timestamp & m_ets) << s_ets | (qmeta.deq_timedelta & m_dtd) << s_dtd
               | (tp.rid & m_rid) << s_rid | (tp.qid & m_qid) << s_qid | (length & m_len) << s_len)
        full = acc.to_bytes(self._eg.nbytes, "big") + data
        h, m, eg, eprs, edpr, oport = self._eg_fresh()
        try:
            off, parts = self._eg_pipe(full, h, m, eg, eprs, edpr, oport, (now_us * 1000) & _M48)
        except (AssertionFailed, UserError) as err:
            ctx.mirrors.clear()
            self._assert_failed(err)
            return []
        parts.append(full[off:])
        out_bytes = b"".join(parts)
        outputs: list[Any] = []
        if ctx.mirrors:             # a copy of the packet as deparsed, behind the mirror header
            copies: list[QueuedPacket] = []
            self._mirror(ctx.mirrors, out_bytes, tp.ingress_port, copies)
            outputs += [Enqueue(c) for c in copies]
        if edpr.drop_ctl & 1:
            self.drops["egress_drop"] += 1
            return outputs
        outputs.append(Transmit(port, out_bytes))
        return outputs

    def _mirror(self, mirrors: list[tuple[int, bytes]], data: bytes, port: int, out: list[QueuedPacket]) -> None:
        """One copy per ``Mirror.emit`` to the session's ports (p4sim's clone sessions, set with
        P4Runtime's CloneSessionEntry): the mirror header, then ``data``, truncated as the
        session says; it enters the TM in queue 0 and crosses egress."""
        for session, header in mirrors:
            targets = self._pre.clone_targets(session)
            if not targets:
                self.drops["mirror_no_session"] += 1
            sess = self._pre.session(session)
            copy = header + data
            if sess is not None and sess.truncate_length:
                copy = copy[:sess.truncate_length]
            for rid, eport in targets:
                out.append(QueuedPacket(eport, 0, len(copy), TnaPacket(copy, port, 0, rid, False)))
        mirrors.clear()

    def ghost(self, qid: int, qlength: int, pipe_id: int = 0) -> None:
        """Tofino2's ghost thread: report queue ``qid``'s length (no-op without a ghost block)."""
        block = self._blocks.get("ghost")
        if block is None:
            return
        gh = self._ns["_NEW_ghost"][0]()
        gh.qid, gh.qlength, gh.pipe_id = qid & 0x7FF, qlength & 0x3FFFF, pipe_id & 3
        gh._v = True
        block(gh)


def is_tna(program: Any) -> bool:
    """Whether a compiled program is a TNA/T2NA one (else v1model)."""
    return getattr(program, "arch", "v1model") in ("tna", "t2na")


__all__ = ["TnaPath", "TnaPacket", "is_tna"]
