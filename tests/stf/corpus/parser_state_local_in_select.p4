// a variable declared in a parser state is visible in that state's select (P4_16 spec 13.4)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> len;
    bit<8> pos;
}
header b_t {
    bit<8> v;
}
struct headers_t {
    h_t h;
    b_t b;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        bit<8> left = hdr.h.len - hdr.h.pos;
        transition select(left) {
            0: accept;
            default: more;
        }
    }
    state more {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.b.isValid()) {
            hdr.b.v = 0xee;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
