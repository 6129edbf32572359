// const declarations inside a parser and a control
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
    t_t t;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<16> ETHERTYPE = 16w0x0800;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.c) {
            ETHERTYPE: parse_t;
            default: accept;
        }
    }
    state parse_t {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> MARK = 0xE5;
    apply {
        sm.egress_spec = 1;
        if (hdr.t.isValid()) { hdr.h.a = MARK; }
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
        pkt.emit(hdr.t); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
