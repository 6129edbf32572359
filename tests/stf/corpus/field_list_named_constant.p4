// @field_list(KEEP_LIST) with a named constant, as the p4lang tutorials write it (p4c accepts it)
#include <core.p4>
#include <v1model.p4>

const bit<8> KEEP_LIST = 1;

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
    @field_list(KEEP_LIST)
    bit<8> keep;
    bit<8> lose;
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
        if (sm.instance_type == 0) {
            meta.keep = 0x11;
            meta.lose = 0x22;
            resubmit_preserving_field_list(KEEP_LIST);
        } else {
            hdr.h.b = meta.keep;
            hdr.h.c = (bit<16>)meta.lose;
            hdr.h.y = sm.instance_type;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {  }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
