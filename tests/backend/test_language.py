"""Language features in generated code: functions, nested controls, exit, return in actions,
header unions, varbit extract/emit, stack push/pop, struct/header equality and assignment,
switch on values, value sets, verify_checksum."""

from __future__ import annotations

from .helpers import needs_frontend, path_for, simple_program

pytestmark = needs_frontend


def test_function_exit_return_and_nested_control(tmp_path):
    extra = """
    bit<8> max8(in bit<8> a, in bit<8> b) { if (a > b) { return a; } return b; }
    control Inner(inout hdr_t h, inout standard_metadata_t sm) {
        action early() { h.r = 0x11; return; h.r = 0x22; }
        apply {
            if (h.op == 2) { early(); return; }
            if (h.op == 3) { h.r = 0x33; exit; }
            h.r = max8(h.a, h.b);
        }
    }
    """
    ingress = """
    Inner() inner;
    apply {
        sm.egress_spec = 1;
        inner.apply(hdr.h, sm);
        hdr.h.after = 1;
    }
    """
    p = path_for(simple_program(tmp_path, "bit<8> op; bit<8> a; bit<8> b; bit<8> r; bit<8> after;",
                                ingress, late=extra))
    assert p.process(bytes([0, 5, 9, 0, 0]), 0) == [(1, bytes([0, 5, 9, 9, 1]))]
    assert p.process(bytes([0, 9, 5, 0, 0]), 0) == [(1, bytes([0, 9, 5, 9, 1]))]
    assert p.process(bytes([2, 0, 0, 0, 0]), 0) == [(1, bytes([2, 0, 0, 0x11, 1]))]   # return: rest runs
    assert p.process(bytes([3, 0, 0, 0, 0]), 0) == [(1, bytes([3, 0, 0, 0x33, 0]))]   # exit: ingress ends


def test_header_union_extract_and_validity(tmp_path):
    extra = """
    header v4_t { bit<8> a; }
    header v6_t { bit<16> b; }
    header_union ip_u { v4_t v4; v6_t v6; }
    """
    parser = """
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) { 4: p4; 6: p6; default: accept; }
    }
    state p4 { pkt.extract(hdr.u.v4); transition accept; }
    state p6 { pkt.extract(hdr.u.v6); transition accept; }
    """
    ingress = """
    apply {
        sm.egress_spec = 1;
        if (hdr.u.v4.isValid()) { hdr.h.r = 4; }
        if (hdr.u.v6.isValid()) { hdr.h.r = 6; hdr.u.v4.setValid(); hdr.u.v4.a = 0x44; }
    }
    """
    p = path_for(simple_program(tmp_path, "bit<8> kind; bit<8> r;", ingress, parser=parser,
                                headers="hdr_t h; ip_u u;", extra=extra,
                                deparser="apply { pkt.emit(hdr.h); pkt.emit(hdr.u); }"))
    assert p.process(bytes([4, 0, 0xAA, 0xFF]), 0) == [(1, bytes([4, 4, 0xAA, 0xFF]))]
    # setValid on v4 invalidates v6 (union): only v4 is emitted
    assert p.process(bytes([6, 0, 0xBB, 0xCC, 0xFF]), 0) == [(1, bytes([6, 6, 0x44, 0xFF]))]


def test_varbit_extract_and_emit(tmp_path):
    extra = "header opt_t { bit<8> len; varbit<32> data; }"
    parser = """
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.o, (bit<32>)hdr.h.n * 8);
        transition accept;
    }
    """
    ingress = "apply { sm.egress_spec = 1; hdr.o.len = 0xEE; }"
    p = path_for(simple_program(tmp_path, "bit<8> n;", ingress, parser=parser, headers="hdr_t h; opt_t o;",
                                extra=extra, deparser="apply { pkt.emit(hdr.h); pkt.emit(hdr.o); }"))
    assert p.process(bytes([2, 0, 0xA1, 0xA2, 0x99]), 0) == [(1, bytes([2, 0xEE, 0xA1, 0xA2, 0x99]))]
    # more than varbit<32> allows: HeaderTooShort (error 4), packet continues, o invalid
    out = p.process(bytes([5, 0, 1, 2, 3, 4, 5]), 0)
    assert out == [(1, bytes([5, 0, 1, 2, 3, 4, 5]))]


def test_stack_push_pop_and_assignment_copies(tmp_path):
    extra = "header item_t { bit<8> v; }"
    parser = "state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }"
    ingress = """
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            hdr.s.push_front(1);
            hdr.s[0].setValid();
            hdr.s[0].v = 0x77;
        } else if (hdr.h.op == 2) {
            hdr.s.pop_front(1);
        } else if (hdr.h.op == 3) {
            hdr.s[1] = hdr.s[0];
            hdr.s[0].v = 0x55;       // the copy is not an alias
        }
        if (hdr.s[0] == hdr.s[1]) { hdr.h.eq = 1; }
    }
    """
    p = path_for(simple_program(tmp_path, "bit<8> op; bit<8> eq;", ingress, parser=parser,
                                headers="hdr_t h; item_t[3] s;", extra=extra,
                                deparser="apply { pkt.emit(hdr.h); pkt.emit(hdr.s); }"))
    assert p.process(bytes([1, 0, 0xA, 0xB]), 0) == [(1, bytes([1, 0, 0x77, 0xA, 0xB]))]
    assert p.process(bytes([2, 0, 0xA, 0xB]), 0) == [(1, bytes([2, 0, 0xB]))]
    assert p.process(bytes([3, 0, 0xA, 0xB]), 0) == [(1, bytes([3, 0, 0x55, 0xA]))]
    assert p.process(bytes([0, 0, 0xA, 0xA]), 0) == [(1, bytes([0, 1, 0xA, 0xA]))]


def test_switch_on_values_with_fallthrough(tmp_path):
    ingress = """
    apply {
        sm.egress_spec = 1;
        switch (hdr.h.op) {
            1:
            2: { hdr.h.r = 12; }
            3: { hdr.h.r = 3; }
            default: { hdr.h.r = 0xDD; }
        }
    }
    """
    p = path_for(simple_program(tmp_path, "bit<8> op; bit<8> r;", ingress))
    assert [p.process(bytes([op, 0]), 0)[0][1][1] for op in (1, 2, 3, 9)] == [12, 12, 3, 0xDD]


def test_value_set_in_select(tmp_path):
    parser = """
    value_set<bit<8>>(4) kinds;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.op) { kinds: mark; default: accept; }
    }
    state mark { hdr.h.r = 1; transition accept; }
    """
    prog = simple_program(tmp_path, "bit<8> op; bit<8> r;", "apply { sm.egress_spec = 1; }", parser=parser)
    p = path_for(prog)
    assert p.process(bytes([7, 0]), 0) == [(1, bytes([7, 0]))]
    p.pipeline.value_sets["P.kinds"].set([((7, 0xFF),)])
    assert p.process(bytes([7, 0]), 0) == [(1, bytes([7, 1]))]
    assert [v.preamble.name for v in prog.p4info.value_sets] == ["P.kinds"]


def test_verify_checksum_sets_checksum_error(tmp_path):
    from p4sim.backend import compile_file

    src = tmp_path / "ck.p4"
    src.write_text("""
#include <core.p4>
#include <v1model.p4>
header hdr_t { bit<16> a; bit<16> b; bit<16> ck; bit<8> err; }
struct headers_t { hdr_t h; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) {
    apply { verify_checksum(true, { hdr.h.a, hdr.h.b }, hdr.h.ck, HashAlgorithm.csum16); }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.err = (bit<8>)sm.checksum_error; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")
    p = path_for(compile_file(str(src)))
    good = (~(0x1234 + 0x5678) & 0xFFFF).to_bytes(2, "big")
    assert p.process(bytes.fromhex("12345678") + good + b"\x00", 0)[0][1][-1] == 0
    assert p.process(bytes.fromhex("12345679") + good + b"\x00", 0)[0][1][-1] == 1


def test_copy_out_functions_respect_short_circuit_and_order(tmp_path):
    late = """
    bool touch(inout bit<8> v) { v = v + 1; return true; }
    bit<8> twice(inout bit<8> v) { v = v * 2; return v; }
    """
    ingress = """
    table t { key = { hdr.h.a: exact; } actions = { NoAction; } }
    apply {
        sm.egress_spec = 1;
        bool x = true || touch(hdr.h.a);          // not evaluated
        x = false || touch(hdr.h.b);              // evaluated: b + 1
        x = (hdr.h.c == 0) ? touch(hdr.h.c) : touch(hdr.h.d);
        hdr.h.r = twice(hdr.h.d) + hdr.h.d;       // copy-out happens before the right operand
        if (false && t.apply().hit) { hdr.h.a = 0xFF; }
    }
    """
    p = path_for(simple_program(tmp_path, "bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> r;", ingress,
                                late=late))
    assert p.process(bytes([5, 5, 0, 3, 0]), 0) == [(1, bytes([5, 6, 1, 6, 12]))]
    assert p.process(bytes([5, 5, 9, 3, 0]), 0) == [(1, bytes([5, 6, 9, 8, 16]))]


def test_sub_parser_shares_the_cursor_and_copies_out(tmp_path):
    late = """
    parser Sub(packet_in pkt, inout headers_t hdr, out bit<8> kind) {
        state start { pkt.extract(hdr.x); kind = hdr.x.v; transition accept; }
    }
    """
    parser = """
    Sub() sub;
    bit<8> k;
    state start {
        pkt.extract(hdr.h);
        sub.apply(pkt, hdr, k);
        transition select(k) { 1: one; default: accept; }
    }
    state one { pkt.extract(hdr.y); transition accept; }
    """
    ingress = "apply { sm.egress_spec = 1; if (hdr.y.isValid()) { hdr.h.r = 0x11; } }"
    p = path_for(simple_program(tmp_path, "bit<8> r;", ingress, parser=parser,
                                headers="hdr_t h; item_t x; item_t y;", extra="header item_t { bit<8> v; }",
                                late=late,
                                deparser="apply { pkt.emit(hdr.h); pkt.emit(hdr.x); pkt.emit(hdr.y); }"))
    assert p.process(bytes([0, 1, 7, 9]), 0) == [(1, bytes([0x11, 1, 7, 9]))]
    assert p.process(bytes([0, 2, 7, 9]), 0) == [(1, bytes([0, 2, 7, 9]))]


def test_lvalue_index_with_copy_out_call_is_evaluated_first(tmp_path):
    late = "bit<8> pick(inout bit<8> v) { v = v + 1; return 1; }"
    ingress = "apply { sm.egress_spec = 1; hdr.s[pick(hdr.h.n)].v = hdr.h.n; }"
    p = path_for(simple_program(tmp_path, "bit<8> n;", ingress, extra="header item_t { bit<8> v; }",
                                headers="hdr_t h; item_t[2] s;", late=late,
                                parser="state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next); "
                                       "pkt.extract(hdr.s.next); transition accept; }",
                                deparser="apply { pkt.emit(hdr.h); pkt.emit(hdr.s); }"))
    # the index call runs (n: 4 -> 5) before the right-hand side reads n
    assert p.process(bytes([4, 0, 0]), 0) == [(1, bytes([5, 0, 5]))]
