// 48-bit and 64-bit fields: carries across 32-bit boundaries, wrap-around, 64-bit register
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
    bit<48> m1;
    bit<48> m2;
    bit<64> q;
}

struct headers_t {
    w_t w;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.w);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<64>>(1) r;
    apply {
        sm.egress_spec = 1;
        hdr.w.m1 = hdr.w.m1 + 1;
        hdr.w.m2 = hdr.w.m2 + 1;
        r.write(0, hdr.w.q + 64w0x100000001);
        r.read(hdr.w.q, 0);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {  }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.w); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
