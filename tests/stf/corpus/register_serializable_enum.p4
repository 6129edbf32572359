// a register whose cells are a serializable enum (p4c's BMv2 back end accepts it): the cell
// holds the enum's underlying bit<8>; reading it back compares equal to the member written (issue 14)
#include <core.p4>
#include <v1model.p4>

enum bit<8> Color_t { RED = 1, GREEN = 2, BLUE = 0x80 }

header h_t { bit<8> idx; bit<8> write; bit<8> seen; }
struct H { h_t h; }
struct M { }

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    register<Color_t>(4) colors;
    apply {
        bit<32> i = (bit<32>)hdr.h.idx;
        if (hdr.h.write == 1) {
            colors.write(i, Color_t.BLUE);
        }
        Color_t c;
        colors.read(c, i);
        hdr.h.seen = (bit<8>)c;
        if (c == Color_t.BLUE) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 3;
        }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
