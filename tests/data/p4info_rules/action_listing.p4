// issue 14: which actions p4c lists in P4Info and with which parameters (table-listed, called
// directly from a control body, called only from other actions, both)
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action both(bit<8> v) { hdr.h.a = v; }
    action direct_twice(bit<8> v) { hdr.h.b = v; }
    action inner(bit<8> v) { hdr.h.b = hdr.h.b + v; }
    action outer_tbl(bit<8> w) { inner(w); }
    action inner_and_direct(bit<8> v) { hdr.h.a = hdr.h.a ^ v; }
    action outer2() { inner_and_direct(3); }
    action dirparam(inout bit<8> q, bit<8> d) { q = d; }
    action inner_tbl(bit<8> v) { hdr.h.a = v + 1; }
    action outer3() { inner_tbl(9); }
    action unused(bit<8> u) { hdr.h.a = u; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { both; outer_tbl; outer2; dirparam(m.x); inner_tbl; outer3; }
    }
    apply {
        t.apply();
        both(1);
        direct_twice(2);
        direct_twice(hdr.h.a);
        inner_and_direct(hdr.h.b);
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
