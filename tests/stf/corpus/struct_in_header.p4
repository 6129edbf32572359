// a header field whose type is a struct (P4_16 allows structs of bit<> fields in headers):
// extracted, read, written and emitted in place
#include <core.p4>
#include <v1model.p4>

struct pair_t {
    bit<8> x;
    bit<8> y;
}
header h_t {
    bit<8> a;
    pair_t p;
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
    apply {
        hdr.h.d = hdr.h.p.x + hdr.h.p.y;
        pair_t q = hdr.h.p;
        hdr.h.p.x = q.y;
        hdr.h.p = { q.y, q.x };
        hdr.h.a = (bit<8>)(hdr.h.p == q ? 8w1 : 8w0);
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
