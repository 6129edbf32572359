"""Type checker: programs load, and the checked AST carries exact types, folded constants,
explicit casts and resolved declarations (the contract in ``p4sim/frontend/ast.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4sim.frontend import ast as A
from p4sim.frontend import load_program

from .conftest import PROGRAMS, V1_PRELUDE, compile_text

V1_BLOCKS = ["p", "vr", "ig", "eg", "ck", "dep"]


@pytest.mark.parametrize("name", ["basic", "basic_tunnel", "calc", "fabric_like", "special_ops"])
def test_example_programs_load_as_v1model(name):
    prog = load_program(str(PROGRAMS / f"{name}.p4"))
    assert prog.arch == "v1model"
    assert prog.main is not None and prog.main.name == "main"
    assert [n for n, _ in prog.main_blocks] == V1_BLOCKS
    kinds = [type(d).__name__ for _, d in prog.main_blocks]
    assert kinds == ["ParserDecl"] + ["ControlDecl"] * 5


def consts(tmp_path: Path, body: str) -> dict[str, A.Expression]:
    prog = compile_text(tmp_path, V1_PRELUDE + body, require_main=False)
    return {d.name: d.value for d in prog.decls if isinstance(d, A.ConstDecl)}


@pytest.mark.parametrize("expr,typ,value", [
    ("8w200 + 8w100", "bit<8>", 44),
    ("8w5 - 8w10", "bit<8>", 251),
    ("8w250 |+| 8w10", "bit<8>", 255),
    ("8w5 |-| 8w10", "bit<8>", 0),
    ("8s127 |+| 8s1", "int<8>", 127),
    ("-8s128 |-| 8s1", "int<8>", -128),
    ("8s127 + 8s1", "int<8>", -128),
    ("8w1 << 9", "bit<8>", 0),
    ("-8s8 >> 1", "int<8>", -4),
    ("8w0x80 >> 7", "bit<8>", 1),
    ("(bit<4>) 0x1F", "bit<4>", 15),
    ("(bit<8>) -1", "bit<8>", 255),
    ("(int<8>) 8w255", "int<8>", -1),
    ("(bit<16>) (int<16>) -8s1", "bit<16>", 65535),
    ("16w0xABCD[11:4]", "bit<8>", 0xBC),
    ("(4w0xA ++ 4w0x5)", "bit<8>", 0xA5),
    ("(bit<12>)(-4s1 ++ (int<8>)8w0)", "bit<12>", 0xF00),
    ("(bit<12>)(4w1 ++ -8s1)", "bit<12>", 0x1FF),
    ("~8w0x0F", "bit<8>", 0xF0),
    ("8w7 / 8w2", "bit<8>", 3),
    ("8w7 % 8w2", "bit<8>", 1),
    ("3 + 4 * 2", "bit<8>", 11),
    ("(bit<8>)(1 << 7)", "bit<8>", 128),
    ("(bit<1>) true", "bit<1>", 1),
])
def test_constant_folding_with_exact_widths(tmp_path, expr, typ, value):
    values = consts(tmp_path, f"const {typ} C = {expr};\n")
    lit = values["C"]
    assert isinstance(lit, A.IntLiteral), lit
    assert lit.value == value
    width = int(typ.split("<")[1].rstrip(">"))
    assert lit.type == A.BitT(width, typ.startswith("int"))


@pytest.mark.parametrize("expr,value", [
    ("8w1 == 1", True), ("8w1 != 1", False), ("3 > 2 && 1 < 0", False),
    ("true || false", True), ("!(2 >= 3)", True), ("error.NoError == error.NoError", True),
])
def test_boolean_constants_fold(tmp_path, expr, value):
    lit = consts(tmp_path, f"const bool C = {expr};\n")["C"]
    assert isinstance(lit, A.BoolLiteral) and lit.value is value


def test_const_references_and_enum_members_fold(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        const bit<16> BASE = 0x100;
        const bit<16> NEXT = BASE + 1;
        enum bit<8> Op { ADD = 1, SUB = 2 }
        enum Color { RED, GREEN }
        const bit<8> OPV = (bit<8>) Op.SUB;
        const Op OPE = Op.ADD;
        const Color C = Color.GREEN;
        const bit<32> W = ethernet_t.minSizeInBits() + 1;
        header ethernet_t { bit<48> d; bit<48> s; bit<16> t; }
    """.replace("const bit<32> W = ethernet_t.minSizeInBits() + 1;\n", ""), require_main=False)
    values = {d.name: d.value for d in prog.decls if isinstance(d, A.ConstDecl)}
    assert values["NEXT"].value == 0x101 and values["NEXT"].type == A.BitT(16)
    assert values["OPV"].value == 2 and values["OPV"].type == A.BitT(8)
    assert values["OPE"].value == 1 and isinstance(values["OPE"].type, A.SerEnumT)
    assert isinstance(values["C"], A.EnumConst) and values["C"].member == "GREEN"
    assert prog.find("ethernet_t").width == 112


def _action_stmts(prog: A.Program, control: str, action: str) -> list[A.Statement]:
    ctrl = prog.find(control)
    act = next(d for d in ctrl.locals if d.name == action)
    return act.body.stmts


def test_unsized_literals_take_the_width_of_the_other_operand():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    stmt = _action_stmts(prog, "MyIngress", "ipv4_forward")[3]
    assert isinstance(stmt.rhs, A.Binary) and stmt.rhs.type == A.BitT(8)
    assert isinstance(stmt.rhs.right, A.IntLiteral)
    assert stmt.rhs.right.type == A.BitT(8) and stmt.rhs.right.width == 8


def test_names_resolve_to_declarations():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    stmt = _action_stmts(prog, "MyIngress", "ipv4_forward")[0]
    lhs = stmt.lhs
    assert isinstance(lhs, A.Member) and lhs.member == "egress_spec"
    assert isinstance(lhs.expr, A.PathExpr) and isinstance(lhs.expr.decl, A.Param)
    assert lhs.expr.decl.direction == "inout"
    assert stmt.rhs.decl.name == "port" and stmt.rhs.type == A.BitT(9)


def test_extract_infers_its_type_argument():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    state = prog.find("MyParser").state("parse_ethernet")
    call = state.stmts[0].call
    assert call.kind == "extern_method" and call.method == "extract"
    assert isinstance(call.decl, A.MethodDecl) and len(call.params) == 1
    assert isinstance(call.type_args[0], A.HeaderT) and call.type_args[0].name == "ethernet_t"
    assert call.target.decl.name == "packet"


def test_select_cases_and_transitions_are_resolved():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    parser = prog.find("MyParser")
    tr = parser.state("parse_ethernet").transition
    case0 = tr.select.cases[0]
    assert isinstance(case0.keyset, A.IntLiteral) and case0.keyset.value == 0x800
    assert case0.keyset.type == A.BitT(16)
    assert case0.state is parser.state("parse_ipv4")
    assert tr.select.cases[1].state is A.ACCEPT
    assert parser.state("start").transition.state is parser.state("parse_ethernet")


def test_tables_are_fully_resolved():
    prog = load_program(str(PROGRAMS / "fabric_like.p4"))
    fwd = prog.find("Forwarding")
    t = next(d for d in fwd.locals if d.name == "fwd_classifier")
    assert [k.match_kind for k in t.keys] == ["optional", "ternary", "range"]
    assert [k.name for k in t.keys] == ["ig_port", "eth_type", "l4_dport"]
    assert t.default_is_const and t.default_action.decl.name == "set_fwd_type"
    assert isinstance(t.default_action.args[0], A.EnumConst)
    e1 = t.entries[1]
    assert e1.priority.value == 100 and e1.is_const
    assert isinstance(e1.keys[0], A.IntLiteral) and e1.keys[0].type == A.BitT(9)
    assert isinstance(e1.keys[2], A.Range) and e1.keys[2].high.value == 1023
    routing = next(d for d in fwd.locals if d.name == "routing_v4")
    assert routing.size == 4096 and routing.meters.name == "fwd_meter"
    nxt = prog.find("Next")
    hashed = next(d for d in nxt.locals if d.name == "hashed")
    assert hashed.implementation.name == "ecmp_selector"
    assert hashed.implementation.type.name == "action_selector"
    assert isinstance(hashed.implementation.args[0], A.EnumConst)
    filt = next(d for d in prog.find("Filtering").locals if d.name == "ingress_port_vlan")
    assert filt.counters.name == "ingress_port_vlan_counter"


def test_switch_on_action_run_resolves_labels():
    prog = load_program(str(PROGRAMS / "fabric_like.p4"))
    sw = prog.find("Forwarding").apply.stmts[0]
    assert isinstance(sw.expr.type, A.ActionEnumT) and sw.expr.type.table == "fwd_classifier"
    assert sw.expr.expr.kind == "table_apply"
    assert isinstance(sw.cases[0].labels[0].decl, A.ActionDecl)


def test_sub_control_apply_and_builtins():
    prog = load_program(str(PROGRAMS / "fabric_like.p4"))
    ing = prog.find("FabricIngress")
    calls = [s.call for s in ing.apply.stmts if isinstance(s, A.MethodCallStmt)]
    assert calls[0].kind == "control_apply" and calls[0].decl.name == "Filtering"
    eg = prog.find("FabricEgress")
    set_valid = eg.apply.stmts[0].then.stmts[0].call
    assert set_valid.kind == "builtin" and set_valid.method == "setValid"
    assert set_valid.target.type.name == "packet_in_t"


def test_serializable_enum_compares_and_casts(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        enum bit<16> ET { IPV4 = 0x800 }
        header h_t { bit<16> t; }
        control C(inout h_t h) {
            apply {
                if (h.t == ET.IPV4) { h.t = ET.IPV4; }
            }
        }
    """, require_main=False)
    stmt = prog.find("C").apply.stmts[0]
    cond = stmt.cond
    assert cond.type == A.BoolT() and cond.right.type == A.BitT(16)
    assign = stmt.then.stmts[0]
    assert assign.rhs.type == A.BitT(16) and assign.rhs.value == 0x800


def test_list_initializers_become_struct_inits(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        header h_t { bit<8> a; bit<16> b; }
        struct s_t { bit<8> x; bool y; }
        control C(inout h_t h) {
            apply {
                h = { 1, 2 };
                s_t s = { y = true, x = 3 };
            }
        }
    """, require_main=False)
    stmts = prog.find("C").apply.stmts
    init = stmts[0].rhs
    assert isinstance(init, A.StructInit) and init.type.name == "h_t"
    assert [(n, v.type) for n, v in init.fields] == [("a", A.BitT(8)), ("b", A.BitT(16))]
    decl = stmts[1].decl
    assert [n for n, _ in decl.init.fields] == ["x", "y"]


def test_stack_operations_are_typed(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        header m_t { bit<8> v; }
        struct hs_t { m_t[4] s; }
        parser P(packet_in pkt, out hs_t h) {
            state start {
                pkt.extract(h.s.next);
                transition select(h.s.last.v) { 0: start; default: accept; }
            }
        }
        control C(inout hs_t h) {
            apply {
                h.s.push_front(2);
                h.s[1].v = (bit<8>) h.s.lastIndex;
                h.s.pop_front(1);
                bit<32> n = h.s.size;
            }
        }
    """, require_main=False)
    st = prog.find("P").state("start")
    assert st.stmts[0].call.args[0].type.name == "m_t"
    c = prog.find("C").apply.stmts
    assert c[0].call.kind == "builtin" and c[0].call.args[0].value == 2
    assert c[1].rhs.expr.type == A.BitT(32)
    assert isinstance(c[3].decl.init, A.IntLiteral) and c[3].decl.init.value == 4


def test_errors_and_match_kinds_are_collected():
    prog = load_program(str(PROGRAMS / "fabric_like.p4"))
    assert prog.errors[:7] == ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                               "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"]
    assert prog.errors[7:] == ["BadIhl", "BadMplsDepth"]
    assert prog.match_kinds == ["exact", "ternary", "lpm", "range", "optional", "selector"]


def test_v1model_standard_metadata_matches_p4c():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    sm = prog.find("standard_metadata_t")
    fields = [(f.name, f.type) for f in sm.fields]
    assert fields == [
        ("ingress_port", A.BitT(9)), ("egress_spec", A.BitT(9)), ("egress_port", A.BitT(9)),
        ("instance_type", A.BitT(32)), ("packet_length", A.BitT(32)),
        ("enq_timestamp", A.BitT(32)), ("enq_qdepth", A.BitT(19)),
        ("deq_timedelta", A.BitT(32)), ("deq_qdepth", A.BitT(19)),
        ("ingress_global_timestamp", A.BitT(48)), ("egress_global_timestamp", A.BitT(48)),
        ("mcast_grp", A.BitT(16)), ("egress_rid", A.BitT(16)), ("checksum_error", A.BitT(1)),
        ("parser_error", A.ErrorT()), ("priority", A.BitT(3)),
    ]
    aliases = {f.name: f.annotation("alias").args[0].value for f in sm.fields
               if f.annotation("alias")}
    assert aliases["enq_qdepth"] == "queueing_metadata.enq_qdepth"
    assert aliases["priority"] == "intrinsic_metadata.priority"
    assert aliases["mcast_grp"] == "intrinsic_metadata.mcast_grp"
    assert sm.annotation("name").args[0].value == "standard_metadata"


def test_v1model_declares_every_extern():
    prog = load_program(str(PROGRAMS / "basic.p4"))
    names = {d.name for d in prog.decls}
    for extern in ["counter", "direct_counter", "meter", "direct_meter", "register",
                   "action_profile", "action_selector", "random", "digest", "mark_to_drop",
                   "hash", "verify_checksum", "update_checksum",
                   "verify_checksum_with_payload", "update_checksum_with_payload", "clone",
                   "clone_preserving_field_list", "resubmit_preserving_field_list",
                   "recirculate_preserving_field_list", "truncate", "log_msg", "assert",
                   "assume", "Checksum16", "V1Switch", "HashAlgorithm", "CloneType"]:
        assert extern in names, extern
    hash_fn = prog.find("hash")
    assert [(p.direction, p.name) for p in hash_fn.params] == [
        ("out", "result"), ("in", "algo"), ("in", "base"), ("in", "data"), ("in", "max")]
    algos = prog.find("HashAlgorithm")
    assert [m.name for m in algos.members] == ["crc32", "crc32_custom", "crc16", "crc16_custom",
                                               "random", "identity", "csum16", "xor16"]


def test_v1model_version_switches_to_generic_counters(tmp_path):
    prog = compile_text(tmp_path, "#define V1MODEL_VERSION 20200408\n" + V1_PRELUDE + """
        control C(inout standard_metadata_t sm) {
            counter<bit<10>>(1024, CounterType.packets) c;
            apply { c.count((bit<10>) sm.ingress_port); }
        }
    """, require_main=False)
    assert prog.find("PortId_t") is not None
    inst = prog.find("C").locals[0]
    assert inst.type == A.ExternT("counter", (A.BitT(10),))
    call = prog.find("C").apply.stmts[0].call
    assert call.params[0].type == A.BitT(10)


def test_register_index_literal_is_sized(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        control C(inout bit<32> x) {
            register<bit<32>>(16) r;
            apply { r.read(x, 3); r.write(0, x + 1); }
        }
    """, require_main=False)
    inst = prog.find("C").locals[0]
    assert inst.type == A.ExternT("register", (A.BitT(32),))
    assert inst.args[0].value == 16 and inst.args[0].type == A.BitT(32)
    read = prog.find("C").apply.stmts[0].call
    assert read.args[1].type == A.BitT(32) and read.args[1].value == 3
    assert read.params[0].type == A.BitT(32)


def test_function_calls_and_returns(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        bit<8> max8(in bit<8> a, in bit<8> b) {
            if (a > b) { return a; } else { return b; }
        }
        control C(inout bit<8> x) {
            apply { x = max8(x, 7); }
        }
    """, require_main=False)
    call = prog.find("C").apply.stmts[0].rhs
    assert call.kind == "function" and call.type == A.BitT(8)
    assert call.args[1].type == A.BitT(8)


def test_for_loops_break_continue_and_atomic_blocks(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        header h_t { bit<8> count; bit<32> sum; }
        struct s_t { h_t[3] st; h_t h; }
        control C(inout s_t s) {
            action loop1() {
                for (bit<8> i = 1; i <= s.h.count; i = i + 1) {
                    if (i == 5) { break; }
                    if ((i & 1) == 0) { continue; }
                    s.h.sum = s.h.sum + (bit<32>)i;
                }
                for (bit<8> j in 1 .. 4) { s.h.sum = s.h.sum + 1; }
                for (h_t e in s.st) { s.h.sum = s.h.sum + e.sum; }
                @atomic { s.h.count = 1; }
            }
            apply { loop1(); }
        }
    """, require_main=False)
    body = prog.find("C").locals[0].body.stmts
    loop = body[0]
    assert isinstance(loop, A.ForStmt)
    assert isinstance(loop.init[0], A.DeclStmt) and loop.init[0].decl.type == A.BitT(8)
    assert loop.cond.type == A.BoolT() and loop.cond.right.type == A.BitT(8)
    assert isinstance(loop.update[0], A.AssignStmt)
    assert isinstance(loop.body.stmts[0].then.stmts[0], A.BreakStmt)
    rng = body[1]
    assert isinstance(rng, A.ForInStmt) and isinstance(rng.collection, A.Range)
    assert rng.collection.high.type == A.BitT(8) and rng.collection.high.value == 4
    stack_loop = body[2]
    assert stack_loop.collection.type == A.HeaderStackT(stack_loop.var.type, 3)
    assert isinstance(body[3], A.BlockStmt) and body[3].annotations[0].name == "atomic"


def test_sub_parser_with_out_parameter(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        header h_t { bit<8> t; }
        struct hs_t { h_t[2] st; }
        parser Sub(packet_in pkt, inout hs_t hdr, out bit<8> next_t) {
            state start { pkt.extract(hdr.st.next); next_t = hdr.st.last.t; transition accept; }
        }
        parser P(packet_in pkt, out hs_t hdr) {
            Sub() subp;
            bit<8> nt;
            state start {
                subp.apply(pkt, hdr, nt);
                transition select(nt) { 1: start; default: accept; }
            }
        }
    """, require_main=False)
    st = prog.find("P").state("start")
    call = st.stmts[0].call
    assert call.kind == "parser_apply" and call.decl.name == "Sub"
    assert [p.direction for p in call.params] == ["", "inout", "out"]
    assert isinstance(prog.find("P").locals[1], A.VariableDecl)


def test_legacy_priority_annotations_become_larger_wins_priorities(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        control C(inout bit<16> k, inout bit<9> port) {
            action a(bit<9> x) { port = x; }
            table t {
                key = { k : ternary; }
                actions = { a; }
                const entries = {
                    0x1111 &&& 0xF    : a(1) @priority(3);
                    0x1181            : a(2);
                    0x1181 &&& 0xF00F : a(3) @priority(1);
                }
            }
            apply { t.apply(); }
        }
    """, require_main=False)
    t = prog.find("C").locals[1]
    # BMv2 order (smallest wins): 3, 2 (position), 1 -> larger-wins: 1, 2, 3
    assert [e.priority.value for e in t.entries] == [1, 2, 3]


def test_serializable_enum_keys_accept_underlying_masks(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        enum bit<8> E1 { M1 = 0, M2 = 0xff }
        enum bit<16> E2 { M1 = 10, M2 = 0xab00 }
        header h_t { E1 f1; E2 f2; }
        control C(inout h_t h, inout bit<9> port) {
            action a(bit<9> x) { port = x; }
            table t {
                key = { h.f1 : exact; h.f2 : ternary; }
                actions = { a; }
                const entries = {
                    (E1.M1, _) : a(1);
                    (E1.M2, ((bit<16>)E2.M2) &&& 0xff00) : a(2);
                }
            }
            apply { t.apply(); }
        }
    """, require_main=False)
    e0, e1 = prog.find("C").locals[1].entries
    assert e0.keys[0].value == 0 and isinstance(e0.keys[0].type, A.SerEnumT)
    assert e1.keys[1].value.value == 0xab00 and e1.keys[1].mask.value == 0xff00
    assert e1.keys[1].mask.type == A.BitT(16)


def test_direct_application_and_type_size_builtins(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        typedef bit<32> T;
        header h_t { bit<8> a; bit<16> b; }
        control Inner(inout bit<8> x) { apply { x = x + 1; } }
        control Outer(inout bit<8> x, inout bit<32> n) {
            apply {
                Inner.apply(x);
                n = (bit<32>) (T.minSizeInBits() + h_t.minSizeInBytes());
            }
        }
    """, require_main=False)
    outer = prog.find("Outer")
    call = outer.apply.stmts[0].call
    assert call.kind == "control_apply" and call.decl.name == "Inner"
    inst = call.target.decl
    assert isinstance(inst, A.Instantiation) and inst in outer.locals and inst.decl.name == "Inner"
    size = outer.apply.stmts[1].rhs
    assert isinstance(size, A.IntLiteral) and size.value == 32 + 3


def test_named_optional_and_default_arguments(tmp_path):
    prog = compile_text(tmp_path, V1_PRELUDE + """
        extern Thing {
            Thing();
            bit<16> update<T>(in T data, @optional in bool zeros_as_ones);
        }
        bit<8> add(in bit<8> a, in bit<8> b = 8w7) { return a + b; }
        control C(inout bit<16> x, inout bit<8> y) {
            Thing() thing;
            register<bit<16>>(4) r;
            apply {
                x = thing.update({ y });
                y = add(y);
                r.write(value = x, index = 2);
            }
        }
    """, require_main=False)
    stmts = prog.find("C").apply.stmts
    assert stmts[0].rhs.args[1] is None and stmts[0].rhs.type == A.BitT(16)
    default = stmts[1].rhs.args[1]
    assert isinstance(default, A.IntLiteral) and default.value == 7
    write = stmts[2].call
    assert [p.name for p in write.params] == ["index", "value"]
    assert write.args[0].value == 2 and write.args[0].type == A.BitT(32)
    assert write.args[1].decl.name == "x"
