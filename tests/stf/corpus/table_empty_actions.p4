// a table with an empty actions list (p4c accepts it): every lookup misses and runs the
// implicit default action NoAction
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table nothing {
        key = { hdr.h.a: exact; }
        actions = { }
    }
    apply {
        if (nothing.apply().hit) {
            hdr.h.b = 1;
        } else {
            hdr.h.b = 2;
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
