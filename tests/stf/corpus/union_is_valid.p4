// isValid() on a header union is true when any member is valid
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
header w_t {
    bit<16> v;
}
header_union u_t {
    t_t t1;
    w_t w;
}

struct headers_t {
    h_t h;
    u_t u;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: parse_t1;
            default: accept;
        }
    }
    state parse_t1 {
        pkt.extract(hdr.u.t1);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {
        if (hdr.u.isValid()) { sm.egress_spec = 2; } else { sm.egress_spec = 3; }
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
        pkt.emit(hdr.u); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
