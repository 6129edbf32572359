// exit in a nested control ends the whole ingress, not just the callee
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
control inner(inout h_t hh, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 2;
        if (hh.a == 1) {
            exit;
        }
    }
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
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    inner() c_inner;
    apply {
        c_inner.apply(hdr.h, sm);
        sm.egress_spec = 3;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply { hdr.h.b = 0x77; }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
