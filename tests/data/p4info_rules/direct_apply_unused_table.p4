// issue 14: a directly applied control is named after its type (I.Sub.st), a table nothing
// applies is removed with the actions only it lists, tables are listed in declaration order
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control Sub(inout H hdr) {
    action set(bit<8> v) { hdr.h.b = v; }
    table st { key = { hdr.h.a : exact; } actions = { set; } }
    apply { st.apply(); }
}
control Twice(inout H hdr) {
    action set2(bit<8> v) { hdr.h.a = v; }
    table tt { key = { hdr.h.b : exact; } actions = { set2; } }
    apply { tt.apply(); }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Twice() tw;
    action a1(bit<8> v) { hdr.h.a = v; }
    action only_never() { hdr.h.a = 1; }
    table never { key = { hdr.h.a : exact; } actions = { a1; only_never; } }
    table used { key = { hdr.h.b : exact; } actions = { a1; } }
    apply { used.apply(); Sub.apply(hdr); tw.apply(hdr); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { Sub.apply(hdr); } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
