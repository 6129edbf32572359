// issue 14: the serializable enums p4c lists in P4Info type_info (match key, table action
// parameter, controller header, digest member) and the ones it leaves out
#include <core.p4>
#include <v1model.p4>
enum bit<4> InParam_t { A = 1, B = 2 }
enum bit<8> InKey_t { X = 7, Y = 9 }
enum bit<8> InCtl_t { C = 3 }
enum bit<8> InDirect_t { D = 4 }
enum bit<8> InDigest_t { G = 5 }
enum bit<8> InReg_t { R = 6 }
@controller_header("packet_in") header pin_t { InCtl_t c; bit<8> pad; }
header h_t { InKey_t a; bit<8> b; }
struct H { pin_t pin; h_t h; }
struct dg_t { InDigest_t g; bit<8> z; }
struct M { bit<8> x; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {

    action setp(InParam_t v) { hdr.h.b = (bit<8>)(bit<4>)v; }
    action dir(InDirect_t v) { hdr.h.b = (bit<8>)v; }
    table t { key = { hdr.h.a : exact; } actions = { setp; } }
    apply { t.apply(); dir(InDirect_t.D); digest<dg_t>(1, {InDigest_t.G, 1}); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.pin); pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
