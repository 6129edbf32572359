// issue 14: p4c writes no type_info for a program with only actions and value sets
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) vs;
    state start { pk.extract(hdr.h); transition select(hdr.h.a) { vs: accept; default: accept; } }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { action a(bit<8> v) { sm.egress_spec = (bit<9>)v; } apply { a(3); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
