// top-level blocks with constructor parameters: arguments given in the package instantiation
// (`P(8w0x11)`, `I(16w7)`); a named top-level instance (`I(16w7) ig;`) is refused, as by p4c
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  tag;
    bit<16> x;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm)(bit<8> mark) {
    state start {
        pkt.extract(hdr.h);
        hdr.h.tag = hdr.h.tag ^ mark;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm)(bit<16> k) {
    apply {
        hdr.h.x = hdr.h.x + k;
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

V1Switch(P(8w0x11), VC(), I(16w7), E(), CC(), D()) main;
