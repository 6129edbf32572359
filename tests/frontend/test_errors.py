"""Front-end error reporting: each mistake gives one exact ``file:line:col: error|unsupported:``
line (never a traceback). Expected lines were derived from the P4_16 spec and v1model rules."""

from __future__ import annotations

import pytest

from .conftest import compile_error

P = "#include <core.p4>\n#include <v1model.p4>\n"
H = "header h_t { bit<8> a; bit<16> b; }\n"

CASES = [
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply { x = y; }\n}\n',
                 "prog.p4:4:15: error: 'y' is not declared", False, id='undeclared'),
    pytest.param(P + 'header h { later_t x; }\nheader later_t { bit<8> a; }\n',
                 "prog.p4:3:12: error: unknown type 'later_t'", False, id='unknown_type'),
    pytest.param(P + 'control C(inout bit<8> a, in bit<16> b) {\n  apply { a = b; }\n}\n',
                 'prog.p4:4:15: error: assignment: cannot convert bit<16> to bit<8>', False, id='assign_width'),
    pytest.param(P + 'control C(inout bit<8> a, in bit<16> b) {\n  apply { a = a + b; }\n}\n',
                 "prog.p4:4:15: error: operator '+': operands have different types bit<8> and bit<16>; use a cast", False, id='binop_width'),
    pytest.param(P + 'control C(inout bit<8> a) {\n  apply { a = a + true; }\n}\n',
                 "prog.p4:4:15: error: operator '+' needs integer operands, got bit<8> and bool", False, id='binop_bool'),
    pytest.param(P + 'control C(inout bit<8> a) {\n  apply { if (a) { a = 1; } }\n}\n',
                 'prog.p4:4:15: error: if condition must be bool, not bit<8>', False, id='if_not_bool'),
    pytest.param(P + 'control C(in bit<8> x) {\n  apply { x = 1; }\n}\n',
                 "prog.p4:4:11: error: assignment: cannot write to parameter 'x', it is 'in'", False, id='write_in_param'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a(bit<8> d) { d = 1; }\n  apply { }\n}\n',
                 "prog.p4:4:24: error: assignment: cannot write to parameter 'd', it is directionless (action data)", False, id='write_action_data'),
    pytest.param(P + 'const bit<8> K = 1;\ncontrol C(inout bit<8> x) {\n  apply { K = x; }\n}\n',
                 "prog.p4:5:11: error: assignment: cannot write to constant 'K'", False, id='write_const'),
    pytest.param(P + H + 'control C(inout h_t h) {\n  apply { h.c = 1; }\n}\n',
                 "prog.p4:5:11: error: h_t has no field 'c'", False, id='no_field'),
    pytest.param(P + 'control C(inout standard_metadata_t sm) {\n  apply { truncate(); }\n}\n',
                 "prog.p4:4:11: error: 'truncate' expects 1 argument(s), got 0", False, id='arity'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply { random(8w5, 0, 1); }\n}\n',
                 "prog.p4:4:18: error: argument 'result' of 'random': expression is not a left-value", False, id='out_not_lvalue'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a() { }\n  action b() { }\n  table t {\n    key = { x: exact; }\n    actions = { a; }\n    default_action = b();\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:9:22: error: default action 'b' is not in the actions list of table 't'", False, id='default_not_listed'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a() { }\n  table t {\n    key = { x: exact; }\n    actions = { @defaultonly a; }\n    const entries = {\n      1: a();\n    }\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:9:10: error: action 'a' is @defaultonly and cannot be used in entries", False, id='entry_defaultonly'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  table t {\n    key = { x: fuzzy; }\n    actions = { NoAction; }\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:5:13: error: unknown match kind 'fuzzy' (declared: exact, ternary, lpm, range, optional, selector)", False, id='bad_match_kind'),
    pytest.param(P + 'control C(inout bit<8> x, inout bit<8> y) {\n  table t {\n    key = { x: lpm; y: lpm; }\n    actions = { NoAction; }\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:4:3: error: table 't' has more than one lpm key", False, id='two_lpm'),
    pytest.param(P + 'const bit<8> A = 1;\nconst bit<8> A = 2;\n',
                 "prog.p4:4:1: error: 'A' is already declared (first declared at prog.p4:3:1)", False, id='duplicate_decl'),
    pytest.param(P + 'parser P(packet_in p) {\n  state begin { transition accept; }\n}\n',
                 "prog.p4:3:1: error: parser 'P' has no 'start' state", False, id='no_start'),
    pytest.param(P + 'parser P(packet_in p) {\n  state start { transition nowhere; }\n}\n',
                 "prog.p4:4:17: error: unknown parser state 'nowhere'", False, id='unknown_state'),
    pytest.param(P + H + 'parser P(packet_in p, out h_t h) {\n  state start {\n    p.extract(h);\n    transition select(h.a, h.b) {\n      1: accept;\n    }\n  }\n}\n',
                 'prog.p4:8:7: error: keyset has 1 element(s) but there are 2 keys', False, id='keyset_arity'),
    pytest.param(P + 'parser P(packet_in p) {\n  state start { exit; }\n}\n',
                 "prog.p4:4:17: error: 'exit' cannot be used in a parser", False, id='exit_in_parser'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a() { return 1; }\n  apply { }\n}\n',
                 "prog.p4:4:16: error: 'return' with a value outside a function", False, id='return_value_in_action'),
    pytest.param(P + 'control C(inout bit<16> x) {\n  apply { hash(x, HashAlgorithm.random, 16w0, { x }, 16w100); }\n}\n',
                 "prog.p4:4:19: unsupported: HashAlgorithm.random in hash(): BMv2 does not register a 'random' hash algorithm, so the program would not load on BMv2", False, id='hash_random'),
    pytest.param(P + 'control C(inout bit<16> x) {\n  action_selector(HashAlgorithm.random, 32w16, 32w8) sel;\n  apply { }\n}\n',
                 "prog.p4:4:19: unsupported: HashAlgorithm.random in action_selector: BMv2 does not register a 'random' hash algorithm, so the program would not load on BMv2", False, id='selector_random'),
    pytest.param(P + 'T id<T>(in T x) { return x; }\ncontrol C(inout bit<8> y) {\n  apply { y = id(1); }\n}\n',
                 "prog.p4:5:18: error: could not infer a width for the unsized constant '1' (type parameter 'T' of 'id'); give it one, e.g. 16w0 or (bit<16>)0, as p4c requires", False, id='generic_function_width'),
    pytest.param(P + 'T id<T>(in T x) { return x + 1; }\ncontrol C(inout bool y) {\n  apply { y = id(y); }\n}\n',
                 "prog.p4:3:26: error: +: cannot be applied to an expression of type variable 'T'", False, id='generic_function_body'),
    pytest.param(P + 'T big<T>(in T x, in T y) { return x > y ? x : y; }\ncontrol C(inout bit<8> y) {\n  apply { y = big(y, y); }\n}\n',
                 "prog.p4:3:35: error: >: cannot be applied to an expression of type variable 'T'", False, id='generic_function_compare'),
    pytest.param(P + 'parser Take<H>(packet_in p, out H h) {\n  state start { p.extract(h); transition accept; }\n}\n'
                 'header h_t { bit<8> a; }\nparser Q(packet_in p, out h_t hh) {\n  Take<h_t>() t;\n'
                 '  state start { t.apply(p, hh); transition accept; }\n}\n',
                 "prog.p4:4:27: error: 'extract': argument must be a header, not a value of type variable 'H'", False, id='generic_extract'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply { int<8> a = 1; int<16> c = a ++ x; }\n}\n',
                 "prog.p4:4:42: error: '++': a signed left operand (int<8>) needs a signed right operand, got bit<8>; cast it, e.g. (int<8>)", False, id='concat_signed_unsigned'),
    pytest.param(P + 'control C(inout bit<8> x)(bit<8> k) {\n  apply { }\n}\nC(1) c;\n',
                 "prog.p4:6:1: error: c: cannot instantiate a control at top-level", False, id='control_at_top_level'),
    pytest.param(P + 'control G<T>(inout T x) {\n  apply { }\n}\ncontrol C(inout bit<8> y) {\n  G() g;\n  apply { g.apply(y); }\n}\n',
                 "prog.p4:7:3: error: 'G' needs 1 type argument(s), got 0", False, id='generic_control_args'),
    pytest.param(P + 'extern Cb {\n  Cb();\n  abstract void fire();\n}\nCb() cb;\n',
                 "prog.p4:7:1: error: instance 'cb' of 'Cb' must implement fire in an initializer { ... }",
                 False, id='abstract_method_not_implemented'),
    pytest.param(P + 'extern Cb {\n  Cb();\n  abstract void fire();\n}\nCb() cb = {\n  void other() { }\n};\n',
                 "prog.p4:8:3: error: 'other' is not an abstract method of 'Cb'", False,
                 id='initializer_not_abstract'),
    pytest.param(P + 'extern Cb {\n  Cb();\n  void fire();\n}\nCb() cb = {\n  void fire() { }\n};\n',
                 "prog.p4:7:1: error: extern 'Cb' has no abstract methods to implement", False,
                 id='initializer_without_abstract'),
    pytest.param(P + 'control C(inout bit<8> x)(direct_counter c) {\n  apply { }\n}\n',
                 "prog.p4:3:27: unsupported: constructor parameter of type direct_counter", False, id='ctor_params'),
    pytest.param(P + 'control C(inout bit<8> x)(bit<8> k) {\n  apply { }\n}\n'
                 'control D(inout bit<8> x) {\n  C() c;\n  apply { c.apply(x); }\n}\n',
                 "prog.p4:7:3: error: 'C' expects 1 constructor argument(s), got 0", False, id='ctor_args'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply { x = (bit<8>) x[8:1]; }\n}\n',
                 'prog.p4:4:24: error: slice [8:1] out of range for bit<8>', False, id='slice_range'),
    pytest.param(P + H + 'header bad_t { h_t inner; }\n',
                 "prog.p4:4:16: error: field 'inner' of header 'bad_t' has type h_t; header fields must be bit<W>, int<W>, bool, varbit or a serializable enum", False, id='header_field_type'),
    pytest.param(P + H + 'struct s_t { h_t[2] st; }\ncontrol C(inout s_t s) {\n  apply { s.st[2].a = 1; }\n}\n',
                 'prog.p4:6:16: error: header stack index 2 out of range (stack size 2)', False, id='stack_index'),
    pytest.param(P + 'control C(inout bit<8> x, in int<8> n) {\n  apply { x = x << n; }\n}\n',
                 'prog.p4:4:20: error: shift amount must be an unsigned integer, not int<8>', False, id='signed_shift'),
    pytest.param(P + 'control C(inout bit<16> x) {\n  apply { x = 8w1 ++ 1; }\n}\n',
                 "prog.p4:4:22: error: '++' needs sized operands; give the constant a width (e.g. 8w1)", False, id='concat_unsized'),
    pytest.param(P + 'parser P(packet_in p) {\n  state start { verify(false, error.Nope); transition accept; }\n}\n',
                 'prog.p4:4:31: error: error.Nope is not declared', False, id='undeclared_error'),
    pytest.param(P + 'enum E { A, B }\nconst E e = E.C;\n',
                 "prog.p4:4:13: error: enum E has no member 'C'", False, id='enum_member'),
    pytest.param(P + 'const bit<16> X = (bit<16>) -8s1;\n',
                 'prog.p4:3:19: error: cannot cast int<8> to bit<16>', False, id='cast_sign_width'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply {\n    switch (x) {\n      1: { }\n      1: { }\n    }\n  }\n}\n',
                 'prog.p4:7:7: error: duplicate switch label', False, id='switch_dup'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a() { }\n  action b() { }\n  table t { key = { x: exact; } actions = { a; } }\n  apply {\n    switch (t.apply().action_run) {\n      b: { }\n    }\n  }\n}\n',
                 "prog.p4:9:7: error: 'b' is not an action of table 't'", False, id='switch_not_action'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply {\n    switch (x) {\n      default: { }\n      1: { }\n    }\n  }\n}\n',
                 "prog.p4:6:7: error: 'default' must be the last switch label", False, id='switch_default_last'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  table t { key = { x: exact; } actions = { NoAction; } }\n  action a() { t.apply(); }\n  apply { }\n}\n',
                 "prog.p4:5:16: error: tables can only be applied in a control's apply block", False, id='apply_in_action'),
    pytest.param(P + H + 'control C(packet_in p, inout h_t h) {\n  apply { p.extract(h); }\n}\n',
                 "prog.p4:5:11: error: 'extract' can only be called in a parser", False, id='extract_in_control'),
    pytest.param(P + H + 'struct s_t { h_t[2] st; }\ncontrol C(inout s_t s) {\n  apply { s.st.next.a = 1; }\n}\n',
                 "prog.p4:6:11: error: header stack '.next' can only be used in a parser", False, id='next_outside_parser'),
    pytest.param(P + 'bit<8> f(in bit<8> x) {\n  if (x > 1) { return x; }\n}\n',
                 "prog.p4:3:1: error: function 'f' does not return a value on every path", False, id='function_no_return'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply { log_msg("x={} y={}", { x }); }\n}\n',
                 "prog.p4:4:11: error: log_msg(): the message has 2 '{}' placeholder(s) but 1 value(s) are given", False, id='log_msg_holes'),
    pytest.param(P + 'const bool ok = static_assert(1 > 2, "one is not above two");\n',
                 'prog.p4:3:17: error: static_assert failed: one is not above two', False, id='static_assert'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  register(4) r;\n  apply { }\n}\n',
                 "prog.p4:4:3: error: register 'r' needs its cell type: register<bit<W>>(size)", False, id='register_no_type'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  counter(0, CounterType.packets) c;\n  apply { }\n}\n',
                 "prog.p4:4:11: error: counter 'c': size must be positive, got 0", False, id='counter_zero'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  action a(bit<8> d) { x = d; }\n  table t { key = { x: exact; } actions = { a; } default_action = a(x); }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:5:69: error: argument 'd' of action 'a': action data must be a compile-time constant", False, id='default_data_nonconst'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  counter(4, CounterType.packets) c;\n  table t { key = { x: exact; } actions = { NoAction; } implementation = c; }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:5:74: error: table property 'implementation' must name an action_profile or an action_selector or an ActionProfile or an ActionSelector instance; 'c' is not one", False, id='impl_not_profile'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  register<bit<8>>(4) r;\n  apply { r.write(_, x); }\n}\n',
                 "prog.p4:5:19: error: '_' can only be passed to an 'out' parameter, 'index' is in", False, id='dontcare_in'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  register<bit<8>>(4) r;\n  apply { r.write(idx = 0, value = x); }\n}\n',
                 "prog.p4:5:19: error: 'register.write' has no parameter named 'idx'", False, id='named_unknown'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  apply {\n    const bit<8> K = x;\n  }\n}\n',
                 "prog.p4:5:22: error: value of constant 'K' is not a compile-time constant", False, id='const_nonconst'),
    pytest.param(P + 'const bit<8> Z = 8w1 / 8w0;\n',
                 'prog.p4:3:18: error: division by zero', False, id='div_zero'),
    pytest.param(P + 'header v_t { varbit<8> a; varbit<8> b; }\n',
                 "prog.p4:3:14: error: header 'v_t' has more than one varbit field", False, id='two_varbits'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  table t {\n    key = { x: exact; }\n    actions = { NoAction; }\n    const entries = { 1 &&& 0xF: NoAction(); }\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:7:23: error: exact key 'x' needs a value, not a mask", False, id='exact_mask'),
    pytest.param(P + 'control C(inout bit<8> x) {\n  table t {\n    key = { x: lpm; }\n    actions = { NoAction; }\n    const entries = { 1 &&& 0x0F: NoAction(); }\n  }\n  apply { t.apply(); }\n}\n',
                 "prog.p4:7:23: error: lpm key 'x': mask 0xf is not a prefix", False, id='lpm_mask'),
    pytest.param(P + 'error { PacketTooShort }\n',
                 'prog.p4:3:1: error: error.PacketTooShort is already declared', False, id='dup_error'),
    pytest.param(P + 'const bit<8> A = 1;\n',
                 "prog.p4:3:1: error: program has no 'main' package instantiation", True, id='no_main'),
    pytest.param(P + H + 'struct m_t { }\nparser MyP(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) { state start { transition accept; } }\ncontrol MyC(inout h_t h, inout m_t m) { apply { } }\ncontrol MyI(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }\ncontrol MyD(packet_out p, in h_t h) { apply { } }\nV1Switch(MyP(), MyC(), MyI(), MyI(), MyI(), MyD()) main;\n',
                 "prog.p4:9:38: error: 'MyI' has 3 parameters but ComputeChecksum needs 2", True, id='wrong_block'),
    pytest.param(P + H + 'struct m_t { }\nparser MyP(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) { state start { transition accept; } }\ncontrol MyC(inout h_t h, inout m_t m) { apply { } }\ncontrol MyI(inout h_t h, inout m_t m) { apply { } }\ncontrol MyD(packet_out p, in h_t h) { apply { } }\nV1Switch(MyP(), MyC(), MyI(), MyI(), MyC(), MyD()) main;\n',
                 "prog.p4:9:24: error: 'MyI' has 2 parameters but Ingress needs 3", True, id='block_signature'),
    pytest.param(P + H + 'header_union u_t { h_t x; }\ncontrol C(inout u_t u) {\n  apply { u.setValid(); }\n}\n',
                 "prog.p4:6:11: error: header_union has no method 'setValid'", False, id='set_valid_union'),
    pytest.param(P + 'control C(inout bit<8> x, in bool c) {\n  apply { if ((c ? 1 : 2) == x) { } }\n}\n',
                 'prog.p4:4:16: error: conditional expression with unsized constant branches: give the constants a width', False, id='infint_conditional'),
    pytest.param(P + H + 'control C(inout h_t h, inout bit<8> x) {\n  apply { if (h == x) { } }\n}\n',
                 "prog.p4:5:15: error: operator '==' needs integer operands, got h_t and bit<8>", False, id='compare_header_bits'),
    pytest.param(P + 'enum bit<8> E { A = 1 }\ncontrol C(inout bit<8> x) {\n  apply { E e = 1; }\n}\n',
                 "prog.p4:5:17: error: initializer of 'e': cannot convert an integer to enum E implicitly; use a cast", False, id='int_to_enum'),
]


@pytest.mark.parametrize("text,message,with_main", CASES)
def test_error_message(tmp_path, text, message, with_main):
    assert compile_error(tmp_path, text, require_main=with_main) == message


LOOP_CASES = [
    pytest.param(P + "control C(inout bit<8> x) {\n  apply {\n    break;\n  }\n}\n",
                 "prog.p4:5:5: error: 'break' outside a for loop", id="break_outside"),
    pytest.param(P + "control C(inout bit<8> x) {\n  apply {\n    for (bit<8> i = 0; i; i = i + 1) { }\n  }\n}\n",
                 "prog.p4:5:24: error: for loop condition must be bool, not bit<8>", id="for_cond"),
    pytest.param(P + "parser Q(packet_in p) {\n  state start {\n    for (bit<8> i in 1 .. 2) { }\n    transition accept;\n  }\n}\n",
                 "prog.p4:5:5: unsupported: for loops in a parser", id="for_in_parser"),
]


@pytest.mark.parametrize("text,message", LOOP_CASES)
def test_loop_errors(tmp_path, text, message):
    assert compile_error(tmp_path, text) == message


def test_block_parameter_direction_must_match(tmp_path):
    text = (P + "header h_t { bit<8> a; }\nstruct m_t { }\n"
            "parser MyP(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) "
            "{ state start { transition accept; } }\n"
            "control MyC(inout h_t h, inout m_t m) { apply { } }\n"
            "control MyI(inout h_t h, inout m_t m, standard_metadata_t sm) { apply { } }\n"
            "control MyD(packet_out p, in h_t h) { apply { } }\n"
            "V1Switch(MyP(), MyC(), MyI(), MyI(), MyC(), MyD()) main;\n")
    assert compile_error(tmp_path, text, require_main=True) == (
        "prog.p4:7:39: error: parameter 'sm' of 'MyI' must be 'inout' as in Ingress")


def test_narrower_direction_for_verify_checksum_is_accepted(tmp_path):
    from .conftest import compile_text
    text = (P + "header h_t { bit<8> a; }\nstruct m_t { }\n"
            "parser MyP(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) "
            "{ state start { transition accept; } }\n"
            "control MyV(in h_t h, inout m_t m) { apply { } }\n"
            "control MyC(inout h_t h, inout m_t m) { apply { } }\n"
            "control MyI(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }\n"
            "control MyD(packet_out p, in h_t h) { apply { } }\n"
            "V1Switch(MyP(), MyV(), MyI(), MyI(), MyC(), MyD()) main;\n")
    prog = compile_text(tmp_path, text)
    assert prog.block("vr").name == "MyV"


HINT_CASES = [
    pytest.param(P + "control C(inout bit<8> count) {\n  apply { count = coutn + 1; }\n}\n",
                 "prog.p4:4:19: error: 'coutn' is not declared (did you mean 'count'?)", id="name"),
    pytest.param(P + "header e_t { bit<16> ether_type; }\ncontrol C(inout e_t h) {\n"
                 "  apply { h.ethertype = 1; }\n}\n",
                 "prog.p4:5:11: error: e_t has no field 'ethertype' (did you mean 'ether_type'?)",
                 id="field"),
    pytest.param(P + "parser Q(packet_in p) {\n  state start { transition acept; }\n}\n",
                 "prog.p4:4:17: error: unknown parser state 'acept' (did you mean 'accept'?)",
                 id="state"),
    pytest.param(P + "control C(inout standard_metadata_t sm) {\n  apply { mark_to_dorp(sm); }\n}\n",
                 "prog.p4:4:11: error: 'mark_to_dorp' is not declared (did you mean 'mark_to_drop'?)",
                 id="function"),
    pytest.param(P + "const bool B = error.PacketTooShrt == error.NoError;\n",
                 "prog.p4:3:16: error: error.PacketTooShrt is not declared (did you mean "
                 "'PacketTooShort'?)", id="error_member"),
]


@pytest.mark.parametrize("text,message", HINT_CASES)
def test_did_you_mean_hints(tmp_path, text, message):
    assert compile_error(tmp_path, text) == message


def test_unsized_constant_cannot_fix_a_type_parameter(tmp_path):
    text = (P + "control C(inout bit<16> x) {\n"
            "  apply { hash(x, HashAlgorithm.crc16, 0, { x }, 16w1024); }\n}\n")
    assert compile_error(tmp_path, text) == (
        "prog.p4:4:40: error: could not infer a width for the unsized constant '0' (type "
        "parameter 'T' of 'hash'); give it one, e.g. 16w0 or (bit<16>)0, as p4c requires")


def test_unsized_constant_in_field_list_is_rejected(tmp_path):
    text = (P + "control C(inout bit<16> x) {\n"
            "  apply { hash(x, HashAlgorithm.crc16, 16w0, { x, 5 }, 16w1024); }\n}\n")
    assert compile_error(tmp_path, text) == (
        "prog.p4:4:51: error: could not infer a width for the unsized constant '5' (type "
        "parameter 'D' of 'hash'); give it one, e.g. 16w0 or (bit<16>)0, as p4c requires")
