"""The runner's output matching rules (bmv2stf.py semantics) and its table programming,
driven with real runtime tables and a tiny hand-written packet path instead of a compiled program."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from p4sim.errors import StfError
from p4sim.runtime.externs import Counter, Register
from p4sim.runtime.pre import PacketReplicationEngine
from p4sim.runtime.tables import ActionCall, KeyField, Table
from p4sim.stf.parser import parse_text
from p4sim.stf.runner import StfRun, compare_outputs, compare_packet, resolve_name


def test_prefix_match_and_dollar():
    data = bytes.fromhex("0102030405")
    assert compare_packet("0102", data) is None                  # prefix match
    assert compare_packet("0102030405$", data) is None
    assert "too long" in compare_packet("0102$", data)
    assert "too short" in compare_packet("010203040506", data)
    assert compare_packet("01**03", data) is None                 # don't-care nibbles
    assert compare_packet("0*0*0*", data) is None
    why = compare_packet("0103", data)
    assert "differs at hex digit 3: expected 3, received 2" in why


def test_counts_per_port_and_unobserved_ports():
    ports = {0, 1, 2}
    out = {1: [b"\x01"], 2: [b"\x02", b"\x03"], 7: [b"\x09"]}     # port 7 is not observed
    assert compare_outputs(ports, {1: ["01"], 2: ["02", "03"]}, set(), out) == []
    errs = compare_outputs(ports, {1: ["01"], 2: ["02"]}, set(), out)
    assert errs[0] == "port 2: expected 1 packet(s), got 2 (unexpected packet(s))"
    errs = compare_outputs(ports, {0: ["00"], 1: ["01"], 2: ["02", "03"]}, set(), out)
    assert errs[0] == "port 0: expected 1 packet(s), got 0 (missing packet(s))"
    # a bare "expect PORT" accepts any number of packets there
    assert compare_outputs(ports, {1: ["01"]}, {2}, out) == []
    # order matters within a port
    errs = compare_outputs(ports, {1: ["01"], 2: ["03", "02"]}, set(), out)
    assert errs and errs[0].startswith("port 2: packet #1:")


def test_resolve_name_suffix_and_ambiguity():
    names = ["ingress.fwd", "ingress.acl.fwd2", "egress.rewrite"]
    assert resolve_name("fwd", names, "table") == "ingress.fwd"
    assert resolve_name("rewrite", names, "table") == "egress.rewrite"
    with pytest.raises(ValueError, match="no table 'nope'"):
        resolve_name("nope", names, "table")
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_name("t", ["a.t", "b.t"], "table")


# --- a hand-written packet path over real runtime tables --------------------------------------

@dataclass
class Transmit:
    port: int
    data: bytes


@dataclass
class Queued:
    egress_port: int
    data: bytes
    priority: int = 0
    length: int = 0
    context: object = None


@dataclass
class QMeta:
    enq_timestamp: int
    enq_qdepth: int
    deq_qdepth: int
    deq_timedelta: int
    qid: int


@dataclass
class FakeProgram:
    p4info: object


@dataclass
class MiniPipeline:
    """Forward by the first byte (exact table) and count per ingress port, in pure Python."""

    tables: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    registers: dict = field(default_factory=dict)
    pre: PacketReplicationEngine = field(default_factory=PacketReplicationEngine)
    program: object = None


class MiniPath:
    def __init__(self, pipeline: MiniPipeline) -> None:
        self.p = pipeline

    def ingress(self, data: bytes, port: int, now_us: int) -> list[Queued]:
        self.p.counters["ingress.c"].count(port, len(data))
        t = self.p.tables["ingress.fwd"]
        e = t.lookup((data[0],))
        action = e.action if e else t.default_action
        if action.name == "ingress.drop":
            return []
        if action.name == "ingress.mcast":
            return [Queued(p, data) for _, p in self.p.pre.replicate(action.args[0])]
        return [Queued(action.args[0], data)]

    def egress(self, pkt: Queued, qmeta: QMeta, now_us: int) -> list[Transmit]:
        return [Transmit(pkt.egress_port, pkt.data + bytes([self.p.registers["egress.tag"].read(0)]))]


def make_pipeline() -> MiniPipeline:
    from p4.config.v1 import p4info_pb2

    info = p4info_pb2.P4Info()
    for name, params in (("ingress.fwd_to", [("port", 9)]), ("ingress.drop", []),
                         ("ingress.mcast", [("grp", 16)])):
        a = info.actions.add()
        a.preamble.name = name
        for pname, width in params:
            p = a.params.add()
            p.name, p.bitwidth = pname, width
    pipe = MiniPipeline(program=FakeProgram(info))
    pipe.tables["ingress.fwd"] = Table("ingress.fwd", [KeyField("hdr.b.first", "exact", 8)], 16,
                                       ["ingress.fwd_to", "ingress.drop", "ingress.mcast"],
                                       ActionCall("ingress.drop"))
    pipe.counters["ingress.c"] = Counter("ingress.c", 8)
    pipe.registers["egress.tag"] = Register("egress.tag", 1, 8)
    return pipe


def run(text: str) -> tuple[list[str], StfRun]:
    r = StfRun(make_pipeline(), parse_text(text, "t.stf"), MiniPath, QMeta)
    return r.run(), r


def test_runner_programs_tables_and_passes():
    errors, _ = run("""
add fwd first:0x01 fwd_to(port:2)
register_write egress.tag 0 0xEE
packet 0 01 02
expect 2 0102 EE $
packet 0 05
check_counter c(0) packets == 2
""")
    assert errors == []


def test_runner_reports_unexpected_and_missing():
    errors, _ = run("add fwd first:0x01 fwd_to(port:2)\npacket 0 01\npacket 0 01\nexpect 2 01\n"
                    "expect 3 01\n")
    assert "port 2: expected 1 packet(s), got 2 (unexpected packet(s))" in errors
    assert "port 3: expected 1 packet(s), got 0 (missing packet(s))" in errors
    # port 2 named by no packet/expect line: BMv2 has no interface there, the packet is lost
    errors, _ = run("add fwd first:0x01 fwd_to(port:2)\npacket 0 01\n")
    assert errors == []


def test_runner_multicast_commands():
    errors, _ = run("""
mc_mgrp_create 7
mc_node_create 0 1 3
mc_node_associate 7 0
add fwd first:0x09 mcast(grp:7)
packet 0 09
expect 1 0900
expect 3 0900
""")
    assert errors == []


def test_runner_counter_check_failure_and_refusals_are_notes():
    errors, r = run("""
add fwd first:0x01 fwd_to(port:2)
add fwd first:0x01 fwd_to(port:3)
packet 0 01
expect 2 01
check_counter c(0) packets == 5
""")
    assert len(errors) == 1 and "packets is 1, expected == 5" in errors[0]
    assert any("already exists" in n for n in r.notes)


def test_runner_bad_names_are_stf_errors():
    with pytest.raises(StfError, match=r"t.stf:1: error: no table 'nope'"):
        run("add nope first:1 fwd_to(port:1)\n")
    with pytest.raises(StfError, match="missing parameter 'port'"):
        run("add fwd first:1 fwd_to()\n")
    with pytest.raises(StfError, match="has no key 'second'"):
        run("add fwd second:1 fwd_to(port:1)\n")


def test_validity_key_spellings_all_name_the_dollar_valid_key():
    # p4c (and p4sim) name a key on `hdr.t.isValid()` `hdr.t.$valid$`; a table-add line may
    # write it either way, with or without the leading `hdr.` (issue 14)
    from p4sim.stf.matching import resolve_key
    table = Table("ingress.t", [KeyField("hdr.a.f", "exact", 8), KeyField("hdr.t.$valid$", "exact", 1)], 16,
                  ["NoAction"], ActionCall("NoAction"))
    for spelling in ("hdr.t.$valid$", "t.$valid$", "hdr.t.isValid()", "t.isValid()", "hdr.t.valid"):
        assert resolve_key(spelling, table) == 1, spelling
    assert resolve_key("hdr.a.f", table) == 0
    with pytest.raises(ValueError, match="has no key 'hdr.u.isValid\\(\\)'"):
        resolve_key("hdr.u.isValid()", table)
