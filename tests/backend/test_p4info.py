"""P4Info for small programs against P4Info written by hand from the p4info.proto rules
(fully-qualified names, shortest-suffix aliases, prefixed ids from p4c's name hash, match
fields and params numbered from 1, @defaultonly scope, const default action, extern specs)."""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4sim.backend import ids

from .helpers import needs_frontend, simple_program

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
  initial_default_action {{ action_id: {na} }}
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
type_info {{ }}
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


INGRESS2 = """
    action_selector(HashAlgorithm.crc16, 32w128, 32w16) sel;
    direct_counter(CounterType.packets) dc;
    direct_meter<bit<8>>(MeterType.packets) dm;
    action fwd(bit<9> port) { sm.egress_spec = port; dm.read(meta.color); }
    table ecmp {
        key = { hdr.h.a: exact; hdr.h.b: selector; }
        actions = { fwd; }
        implementation = sel;
    }
    table acl {
        key = { hdr.h.a: ternary; }
        actions = { fwd; NoAction; }
        counters = dc;
        meters = dm;
    }
    apply {
        ecmp.apply();
        acl.apply();
        digest<learn_t>(1, { hdr.h.a, sm.ingress_port });
    }
"""

EXTRA2 = """
struct learn_t { bit<8> a; bit<9> port; }
@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> pad; }
"""


def test_p4info_profiles_direct_resources_digest_controller_header(tmp_path):
    # a table without default_action gets p4c's implicit `@defaultonly NoAction` default; a
    # controller header's id hashes its type's name (packet_in_t), as p4c's does
    prog = simple_program(tmp_path, "bit<8> a; bit<16> b;", INGRESS2, meta="bit<8> color;", extra=EXTRA2)
    ecmp, acl = _id(ids.TABLE, "I.ecmp"), _id(ids.TABLE, "I.acl")
    fwd, na = _id(ids.ACTION, "I.fwd"), _id(ids.ACTION, "NoAction")
    sel, dc, dm = (_id(ids.ACTION_PROFILE, "I.sel"), _id(ids.DIRECT_COUNTER, "I.dc"),
                   _id(ids.DIRECT_METER, "I.dm"))
    text = f"""
pkg_info {{ arch: "v1model" }}
tables {{ preamble {{ id: {ecmp} name: "I.ecmp" alias: "ecmp" }}
  match_fields {{ id: 1 name: "hdr.h.a" bitwidth: 8 match_type: EXACT }}
  action_refs {{ id: {fwd} }}
  action_refs {{ id: {na} scope: DEFAULT_ONLY annotations: "@defaultonly" }}
  initial_default_action {{ action_id: {na} }}
  implementation_id: {sel} size: 1024 }}
tables {{ preamble {{ id: {acl} name: "I.acl" alias: "acl" }}
  match_fields {{ id: 1 name: "hdr.h.a" bitwidth: 8 match_type: TERNARY }}
  action_refs {{ id: {fwd} }} action_refs {{ id: {na} }}
  initial_default_action {{ action_id: {na} }}
  direct_resource_ids: {dc} direct_resource_ids: {dm} size: 1024 }}
actions {{ preamble {{ id: {fwd} name: "I.fwd" alias: "fwd" }} params {{ id: 1 name: "port" bitwidth: 9 }} }}
actions {{ preamble {{ id: {na} name: "NoAction" alias: "NoAction" annotations: "@noWarn(\\"unused\\")" }} }}
action_profiles {{ preamble {{ id: {sel} name: "I.sel" alias: "sel" }} table_ids: {ecmp} with_selector: true size: 128 }}
direct_counters {{ preamble {{ id: {dc} name: "I.dc" alias: "dc" }} spec {{ unit: PACKETS }} direct_table_id: {acl} }}
direct_meters {{ preamble {{ id: {dm} name: "I.dm" alias: "dm" }} spec {{ unit: PACKETS }} direct_table_id: {acl} }}
digests {{ preamble {{ id: {_id(ids.DIGEST, "learn_t")} name: "learn_t" alias: "learn_t" }}
  type_spec {{ struct {{ name: "learn_t" }} }} }}
controller_packet_metadata {{ preamble {{ id: {_id(ids.CONTROLLER_HEADER, "packet_in_t")} name: "packet_in"
  alias: "packet_in" annotations: "@controller_header(\\"packet_in\\")" }}
  metadata {{ id: 1 name: "ingress_port" bitwidth: 9 }} metadata {{ id: 2 name: "pad" bitwidth: 7 }} }}
type_info {{ structs {{ key: "learn_t" value {{
  members {{ name: "a" type_spec {{ bitstring {{ bit {{ bitwidth: 8 }} }} }} }}
  members {{ name: "port" type_spec {{ bitstring {{ bit {{ bitwidth: 9 }} }} }} }} }} }} }}
"""
    want = text_format.Parse(text, p4info_pb2.P4Info())
    fields = ("tables", "actions", "action_profiles", "direct_counters", "direct_meters", "digests",
              "controller_packet_metadata")

    def norm(info):
        out = p4info_pb2.P4Info()
        out.CopyFrom(info)
        for f in fields:
            items = sorted(getattr(out, f), key=lambda x: x.preamble.id)
            del getattr(out, f)[:]
            getattr(out, f).extend(items)
        return text_format.MessageToString(out)

    assert norm(prog.p4info) == norm(want)


def test_hash_random_is_rejected_like_bmv2(tmp_path):
    import pytest

    from p4sim.errors import P4CompileError

    ingress = "apply { bit<16> x; hash(x, HashAlgorithm.random, 16w0, { hdr.h.a }, 32w100); }"
    with pytest.raises(P4CompileError, match="random"):
        simple_program(tmp_path, "bit<8> a; bit<16> b;", ingress)


def test_inline_table_implementations(tmp_path):
    # `implementation = action_profile(N)` in the table: p4c names the profile by the property's
    # @name as written, without the control prefix (p4c's action_profile-bmv2 P4Info: "ap",
    # id 294074782); without @name p4c refuses P4Info generation, p4sim names it <table>_implementation
    ingress = """
    action set_b(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a: exact; }
        actions = { set_b; NoAction; }
        @name("ap") implementation = action_profile(32w16);
    }
    table t2 {
        key = { hdr.h.a: exact; hdr.h.b: selector; }
        actions = { set_b; NoAction; }
        implementation = action_selector(HashAlgorithm.identity, 32w64, 32w8);
    }
    apply { t.apply(); t2.apply(); }
    """
    prog = simple_program(tmp_path, "bit<8> a; bit<8> b;", ingress)
    profiles = {p.preamble.name: p for p in prog.p4info.action_profiles}
    assert sorted(profiles) == ["I.t2_implementation", "ap"]
    assert profiles["ap"].preamble.id == 294074782
    assert profiles["ap"].size == 16 and not profiles["ap"].with_selector
    assert profiles["I.t2_implementation"].size == 64 and profiles["I.t2_implementation"].with_selector
    tables = {t.preamble.name: t for t in prog.p4info.tables}
    assert tables["I.t"].implementation_id == profiles["ap"].preamble.id
    assert tables["I.t2"].implementation_id == profiles["I.t2_implementation"].preamble.id
    assert list(profiles["ap"].table_ids) == [tables["I.t"].preamble.id]
