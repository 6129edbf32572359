"""P4Info for small programs against P4Info written by hand from the p4info.proto rules
(fully-qualified names, shortest-suffix aliases, prefixed ids from p4c's name hash, match
fields and params numbered from 1, @defaultonly scope, const default action, extern specs)."""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from backend.helpers import needs_frontend, simple_program
from p4sim.backend import ids

pytestmark = needs_frontend

INGRESS = """
    counter(16, CounterType.packets_and_bytes) c;
    register<bit<32>>(8) r;
    meter(4, MeterType.bytes) m;
    action fwd(bit<9> port, bit<16> tag) { sm.egress_spec = port; hdr.h.b = tag; }
    @name("drop_it") action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.h.a: exact @name("a_key"); hdr.h.b: ternary; }
        actions = { fwd; drop; @defaultonly NoAction; }
        const default_action = NoAction();
        size = 64;
    }
    apply { t.apply(); c.count(0); r.write(0, 1); }
"""


def _id(prefix: int, name: str) -> int:
    return prefix << 24 | ids.jenkins_one_at_a_time(name) & 0xFFFFFF


def expected() -> p4info_pb2.P4Info:
    t, fwd, drop, na = (_id(ids.TABLE, "I.t"), _id(ids.ACTION, "I.fwd"), _id(ids.ACTION, "I.drop_it"),
                        _id(ids.ACTION, "NoAction"))
    text = f"""
pkg_info {{ arch: "v1model" }}
tables {{
  preamble {{ id: {t} name: "I.t" alias: "t" }}
  match_fields {{ id: 1 name: "a_key" bitwidth: 8 match_type: EXACT }}
  match_fields {{ id: 2 name: "hdr.h.b" bitwidth: 16 match_type: TERNARY }}
  action_refs {{ id: {fwd} }}
  action_refs {{ id: {drop} }}
  action_refs {{ id: {na} scope: DEFAULT_ONLY annotations: "@defaultonly" }}
  const_default_action_id: {na}
  size: 64
}}
actions {{ preamble {{ id: {fwd} name: "I.fwd" alias: "fwd" }}
  params {{ id: 1 name: "port" bitwidth: 9 }}
  params {{ id: 2 name: "tag" bitwidth: 16 }} }}
actions {{ preamble {{ id: {drop} name: "I.drop_it" alias: "drop_it" }} }}
actions {{ preamble {{ id: {na} name: "NoAction" alias: "NoAction" annotations: "@noWarn(\\"unused\\")" }} }}
counters {{ preamble {{ id: {_id(ids.COUNTER, "I.c")} name: "I.c" alias: "c" }} spec {{ unit: BOTH }} size: 16 }}
meters {{ preamble {{ id: {_id(ids.METER, "I.m")} name: "I.m" alias: "m" }} spec {{ unit: BYTES }} size: 4 }}
registers {{ preamble {{ id: {_id(ids.REGISTER, "I.r")} name: "I.r" alias: "r" }}
  type_spec {{ bitstring {{ bit {{ bitwidth: 32 }} }} }} size: 8 }}
"""
    return text_format.Parse(text, p4info_pb2.P4Info())


def normalized(info: p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    out = p4info_pb2.P4Info()
    out.CopyFrom(info)
    for field in ("tables", "actions", "counters", "meters", "registers"):
        items = sorted(getattr(out, field), key=lambda x: x.preamble.id)
        del getattr(out, field)[:]
        getattr(out, field).extend(items)
    return out


def test_p4info_matches_hand_written(tmp_path):
    prog = simple_program(tmp_path, "bit<8> a; bit<16> b;", INGRESS)
    got = normalized(prog.p4info)
    want = normalized(expected())
    assert text_format.MessageToString(got) == text_format.MessageToString(want)


def test_explicit_id_annotation_wins(tmp_path):
    src = INGRESS.replace("table t {", "@id(0x1234) table t {")
    prog = simple_program(tmp_path, "bit<8> a; bit<16> b;", src)
    assert prog.p4info.tables[0].preamble.id == 0x02001234
