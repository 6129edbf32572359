"""Parser: P4_16 constructs become the right AST nodes; syntax errors are one exact line."""

from __future__ import annotations

import time

import pytest

from p4sim.errors import P4CompileError
from p4sim.frontend import ast as A
from p4sim.frontend import parse_source
from p4sim.frontend.parser import parse_int_literal

from .conftest import PROGRAMS


def parse(text: str) -> A.Program:
    return parse_source(text, "t.p4")


def expr_of(text: str) -> A.Expression:
    prog = parse(f"const bit<32> X = {text};")
    decl = prog.decls[0]
    assert isinstance(decl, A.ConstDecl)
    return decl.value


@pytest.mark.parametrize("text,value,width,signed", [
    ("5", 5, None, False), ("0x1F", 31, None, False), ("0b1010", 10, None, False),
    ("0o17", 15, None, False), ("0d99", 99, None, False), ("8w255", 255, 8, False),
    ("16s0x10", 16, 16, True), ("1_000", 1000, None, False), ("32w0xFFFF_FFFF", 2**32 - 1, 32, False),
])
def test_integer_literals(text, value, width, signed):
    v, w, s, _ = parse_int_literal(text)
    assert (v, w, s) == (value, width, signed)
    lit = expr_of(text)
    assert isinstance(lit, A.IntLiteral) and lit.value == value and lit.width == width


def test_operator_precedence_follows_p4():
    e = expr_of("a + b * c << 2 & d == e || f && g")
    # || is lowest, then &&, ==, &, <<, +, *
    assert isinstance(e, A.Binary) and e.op == "||"
    left = e.left
    assert left.op == "==" and left.left.op == "&" and left.left.left.op == "<<"
    assert left.left.left.left.op == "+" and left.left.left.left.right.op == "*"


def test_comparison_binds_looser_than_bitwise_or():
    e = expr_of("a | b < c")
    assert e.op == "<" and e.left.op == "|"


def test_shift_right_is_two_tokens_and_nested_type_args_close():
    prog = parse("extern register<T> { register(bit<32> s); }\n"
                 "control C() { register<bit<32>>(4) r; apply { x = y >> 2; } }")
    ctrl = prog.decls[1]
    inst = ctrl.locals[0]
    assert isinstance(inst, A.Instantiation)
    assert isinstance(inst.type, A.SpecializedTypeName) and inst.type.args == (A.BitT(32),)
    assign = ctrl.apply.stmts[0]
    assert isinstance(assign.rhs, A.Binary) and assign.rhs.op == ">>"


def test_saturating_concat_slice_cast_conditional():
    e = expr_of("(bit<8>)(a |+| b)[7:0] ++ c |-| d")
    assert e.op == "|-|"
    assert e.left.op == "++"
    cast = e.left.left
    assert isinstance(cast, A.Cast) and cast.target == A.BitT(8)
    assert isinstance(cast.expr, A.Slice)
    assert isinstance(expr_of("a > b ? c : d"), A.Conditional)


def test_generic_call_with_type_arguments_in_expression():
    prog = parse("#include <core.p4>\nparser P(packet_in p) { state start { "
                 "transition select(p.lookahead<bit<8>>()) { 1: accept; default: reject; } } }")
    sel = prog.find("P").states[0].transition.select
    call = sel.keys[0]
    assert isinstance(call, A.MethodCall) and call.type_args == [A.BitT(8)]


def test_select_keysets_tuple_mask_range_default_dontcare():
    prog = parse("parser P() { value_set<bit<16>>(4) vs; state start { transition select(a, b) {"
                 " (1, 2): s1; (0x800 &&& 0xF00, 1 .. 5): s2; (_, _): accept; vs: accept;"
                 " default: reject; } } }")
    cases = prog.decls[0].states[0].transition.select.cases
    assert isinstance(cases[0].keyset, A.ListExpr) and len(cases[0].keyset.items) == 2
    assert isinstance(cases[1].keyset.items[0], A.Mask)
    assert isinstance(cases[1].keyset.items[1], A.Range)
    assert all(isinstance(i, A.DontCare) for i in cases[2].keyset.items)
    assert isinstance(cases[3].keyset, A.PathExpr)
    assert isinstance(cases[4].keyset, A.DefaultExpr)
    assert isinstance(prog.decls[0].locals[0], A.ValueSetDecl)


def test_state_without_transition_goes_to_reject():
    prog = parse("parser P() { state start { } }")
    assert prog.decls[0].states[0].transition.next_state == "reject"


def test_table_properties_are_structured():
    prog = parse("""control C() {
        table t {
            key = { h.a: exact @name("a_key"); h.b: lpm; }
            actions = { @tableonly a1; @defaultonly a2; a3(x); }
            const default_action = a2(7);
            const entries = {
                (1, 2): a1();
                priority = 3: (_, 4 &&& 0xff): a1();
            }
            size = 1024;
            implementation = prof;
            @my_anno support_timeout = true;
        }
        apply { } }""")
    t = prog.decls[0].locals[0]
    assert isinstance(t, A.TableDecl)
    assert [k.match_kind for k in t.keys] == ["exact", "lpm"] and t.keys[0].name == "a_key"
    assert [a.name for a in t.actions] == ["a1", "a2", "a3"]
    assert t.actions[0].has_annotation("tableonly") and t.actions[1].has_annotation("defaultonly")
    assert t.default_action.name == "a2" and t.default_is_const
    assert len(t.entries) == 2 and t.entries[1].priority.value == 3
    assert [p.name for p in t.properties] == ["size", "implementation", "support_timeout"]
    assert t.properties[2].annotations[0].name == "my_anno"


def test_switch_with_fallthrough_and_default():
    prog = parse("control C() { apply { switch (t.apply().action_run) { a: b: { } default: { } } } }")
    sw = prog.decls[0].apply.stmts[0]
    assert isinstance(sw, A.SwitchStmt)
    assert sw.cases[0].body is None and isinstance(sw.cases[2].labels[0], A.DefaultExpr)
    assert isinstance(sw.expr, A.Member) and sw.expr.member == "action_run"


def test_declarations_of_every_kind():
    prog = parse("""extern packet_in { }
        typedef bit<8> byte_t;
        type bit<9> port_t;
        header h_t { bit<8> a; varbit<32> opts; }
        header_union u_t { h_t x; h_t y; }
        struct s_t { h_t[4] stack; tuple<bit<8>, bool> tup; }
        enum Color { RED, GREEN, }
        enum bit<2> Ser { A = 1, B = 2 }
        error { Oops }
        match_kind { fancy }
        extern Thing<T> { Thing(bit<32> n); T get<U>(in U u); abstract void cb(); }
        extern void f<T>(in T x, @optional in bit<8> y);
        bit<8> g(in bit<8> x) { return x; }
        action act(inout bit<8> x, bit<8> data) { x = data; }
        package Pkg<H>(Thing<H> t);
        parser PT(packet_in p);
        control CT(inout bit<8> x);
    """)
    kinds = [type(d).__name__ for d in prog.decls[1:]]
    assert kinds == ["TypedefDecl", "TypedefDecl", "HeaderDecl", "HeaderUnionDecl", "StructDecl",
                     "EnumDecl", "EnumDecl", "ErrorDecl", "MatchKindDecl", "ExternDecl",
                     "ExternFunctionDecl", "FunctionDecl", "ActionDecl", "PackageTypeDecl",
                     "ParserTypeDecl", "ControlTypeDecl"]
    assert prog.decls[2].is_newtype
    assert isinstance(prog.decls[3].fields[1].type, A.VarbitT)
    assert prog.decls[7].underlying == A.BitT(2)
    ext = prog.decls[10]
    assert ext.constructors()[0].params[0].name == "n"
    assert ext.methods[2].is_abstract
    assert prog.decls[11].params[1].optional
    assert [p.direction for p in prog.decls[13].params] == ["inout", ""]


def test_struct_initializers_list_and_invalid_header():
    prog = parse("control C() { apply { h = { a = 1, b = 2 }; t = { 1, 2 }; h2 = {#}; } }")
    s = prog.decls[0].apply.stmts
    assert isinstance(s[0].rhs, A.StructInit) and [f for f, _ in s[0].rhs.fields] == ["a", "b"]
    assert isinstance(s[1].rhs, A.ListExpr)
    assert isinstance(s[2].rhs, A.InvalidHeader)


def test_annotations_are_parsed_with_expression_bodies():
    prog = parse('@name(".my.table") @id(0x01000001) @brief("a, b") @hidden\n'
                 "action a() { }")
    annos = prog.decls[0].annotations
    assert [a.name for a in annos] == ["name", "id", "brief", "hidden"]
    assert annos[0].args[0].value == ".my.table"
    assert annos[1].args[0].value == 0x01000001
    assert annos[2].args[0].value == "a, b"


def test_named_and_dontcare_arguments():
    prog = parse("control C() { apply { f(x = 1, y = _); g(_, 2); } }")
    c0, c1 = [s.call for s in prog.decls[0].apply.stmts]
    assert [a.name for a in c0.args] == ["x", "y"] and isinstance(c0.args[1].value, A.DontCare)
    assert isinstance(c1.args[0].value, A.DontCare)


def test_contextual_keywords_can_be_field_names():
    prog = parse("struct s { bit<8> key; bit<8> state; bit<8> entries; bit<8> priority; }"
                 "control C(inout s m) { apply { m.key = m.state; } }")
    assert [f.name for f in prog.decls[0].fields] == ["key", "state", "entries", "priority"]


def test_locations_point_at_original_lines():
    prog = parse("\n\n  const bit<8> A = 1;\n")
    assert (prog.decls[0].loc.line, prog.decls[0].loc.col) == (3, 3)


@pytest.mark.parametrize("src,message", [
    ("const bit<8> A = 1", "t.p4:1:19: error: syntax error, unexpected end of file"),
    ("control C() { apply { x = ; } }", "t.p4:1:27: error: syntax error, unexpected ';'"),
    ("header h { bit<8> a }", "t.p4:1:21: error: syntax error, unexpected '}'"),
    ("parser P() { state start { transition } }",
     "t.p4:1:39: error: syntax error, unexpected '}'"),
    ("struct s { bit<8> a; }\nfoo bar;", "t.p4:2:1: error: syntax error, unexpected identifier 'foo'"),
    ("const bit<8> A = 1 $ 2;", "t.p4:1:20: error: syntax error, unexpected character '$'"),
    ("control C() { apply { if x { } } }", "t.p4:1:26: error: syntax error, unexpected identifier 'x'"),
    ("action a() { x = 1 }", "t.p4:1:20: error: syntax error, unexpected '}'"),
    ("const bit<0> A = 1;", "t.p4:1:11: error: invalid type width 0: must be positive"),
])
def test_syntax_errors(src, message):
    with pytest.raises(P4CompileError) as info:
        parse(src)
    assert str(info.value) == message


def test_syntax_error_location_in_included_file(tmp_path):
    (tmp_path / "bad.p4").write_text("header h {\n  bit<8> a\n}\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "bad.p4"\n')
    with pytest.raises(P4CompileError) as info:
        parse_source(main.read_text(), str(main))
    assert str(info.value) == f"{tmp_path / 'bad.p4'}:3:1: error: syntax error, unexpected '}}'"


def test_large_program_parses_fast():
    text = (PROGRAMS / "fabric_like.p4").read_text()
    parse_source(text, str(PROGRAMS / "fabric_like.p4"))  # warm the grammar
    start = time.perf_counter()
    prog = parse_source(text, str(PROGRAMS / "fabric_like.p4"))
    elapsed = time.perf_counter() - start
    assert prog.find("FabricIngress") is not None
    # ~650 lines with the shipped includes: generous bound, real figure is ~0.2 s
    assert elapsed < 3.0


def test_comparisons_in_call_arguments_are_not_type_arguments():
    prog = parse("control C() { apply { f(a < b, c > (d)); g(x << 2 >> 1); } }")
    call = prog.decls[0].apply.stmts[0].call
    assert call.type_args == [] and [a.value.op for a in call.args] == ["<", ">"]
    shift = prog.decls[0].apply.stmts[1].call.args[0].value
    assert shift.op == ">>" and shift.left.op == "<<"


def test_generic_call_statement_with_explicit_type_arguments():
    prog = parse("header h_t { bit<8> a; }\n"
                 "control C() { apply { random<bit<8>>(x, 0, 7); p.extract<h_t>(y); } }")
    calls = [s.call for s in prog.find("C").apply.stmts]
    assert calls[0].type_args == [A.BitT(8)]
    assert isinstance(calls[1].type_args[0], A.TypeName) and calls[1].type_args[0].name == "h_t"


def test_parameters_named_like_a_parser_shadow_the_type_name():
    prog = parse("#include <core.p4>\nheader h_t { bit<8> a; }\n"
                 "parser p(packet_in b, out h_t h) { state start { b.extract(h); transition accept; } }\n"
                 "control d(packet_out p, in h_t h) { apply { p.emit(h); } }\n"
                 "control e(inout h_t p) { apply { p.a = 1; if (p.isValid()) { p.a = p.a + 1; } } }\n"
                 "control f(inout h_t h) { p() sub; apply { } }\n")
    emit = prog.find("d").apply.stmts[0].call
    assert isinstance(emit.func, A.Member) and isinstance(emit.func.expr, A.PathExpr)
    assert emit.func.expr.name == "p"
    assign = prog.find("e").apply.stmts[0]
    assert isinstance(assign.lhs, A.Member) and assign.lhs.expr.name == "p"
    inst = prog.find("f").locals[0]
    assert isinstance(inst, A.Instantiation) and inst.type.name == "p"


def test_unknown_type_name_gets_a_hint():
    with pytest.raises(P4CompileError) as info:
        parse("control C() { apply { foo_t x; } }")
    assert str(info.value) == ("t.p4:1:29: error: syntax error, unexpected identifier 'x' "
                               "(is 'foo_t' an undeclared type?)")
