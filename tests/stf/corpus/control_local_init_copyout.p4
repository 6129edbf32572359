// a control-local initializer may call a function with an inout parameter: arguments are
// evaluated left to right and the copy-out lands before the next argument is read
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

bit<8> bump(inout bit<8> s) {
    s = s + 1;
    return 8w0x20;
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
    headers_t tmp = { { hdr.h.a, bump(hdr.h.a), hdr.h.a } };
    tuple<bit<8>, bit<8>> t = { bump(hdr.h.a), hdr.h.a };
    apply {
        hdr = tmp;
        hdr.h.a = t[1];
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
