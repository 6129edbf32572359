// issue 14: digest members of header, header stack, header union, struct, bool, int and
// serializable enum types are described in type_info as p4c does
#include <core.p4>
#include <v1model.p4>
enum bit<8> K_t { A = 1 }
header h_t { bit<8> a; int<4> s; bit<4> pad; }
header g_t { bit<16> x; }
header_union u_t { h_t h; g_t g; }
struct inner_t { bool b; int<8> i; K_t k; }
struct H { h_t h; g_t[2] gs; u_t u; }
struct M { }
struct dg_t { h_t h; inner_t in1; bit<3> c; g_t[2] gs; u_t u; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { digest<dg_t>(1, {hdr.h, {true, -1, K_t.A}, 3, hdr.gs, hdr.u}); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
