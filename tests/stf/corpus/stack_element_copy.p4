// assigning one header-stack element to another
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> x;
    bit<32> y;
}
header t_t {
    bit<8> v;
}

struct headers_t {
    h_t h;
    t_t[3] ts;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition parse_t;
    }
    state parse_t {
        pkt.extract(hdr.ts.next);
        transition select(hdr.ts.last.v) {
            0: accept;
            default: parse_t;
        }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {
        sm.egress_spec = 1;
        hdr.ts[0] = hdr.ts[1];
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {  }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h);
        pkt.emit(hdr.ts); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
