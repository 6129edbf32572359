// copies to one port leave in BMv2's order: an I2E clone before the original, an E2E clone after it
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
    
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) { clone(CloneType.I2E, 32w3); }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply { hdr.h.b = (bit<8>)sm.instance_type;
        if (hdr.h.a == 2 && sm.instance_type == 0) { clone(CloneType.E2E, 32w3); } }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
