// a header stack indexed by an int<8> value (p4c accepts signed indexes); negative or too
// large run-time indexes read an invalid header and write nothing
#include <core.p4>
#include <v1model.p4>

header idx_t {
    int<8> i;
}
header e_t {
    bit<8> v;
}
struct headers_t {
    idx_t idx;
    e_t[3] s;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.idx);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.s[hdr.idx.i].v = hdr.s[hdr.idx.i].v + 0x10;
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
