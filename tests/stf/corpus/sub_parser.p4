// a sub-parser instantiated and applied from a parser state
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
parser sub(packet_in p, out t_t tt) {
    state start {
        p.extract(tt);
        transition accept;
    }
}

struct headers_t {
    h_t h;
    t_t t;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    sub() sub_inst;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: parse_sub;
            default: accept;
        }
    }
    state parse_sub {
        sub_inst.apply(pkt, hdr.t);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {
        if (hdr.t.isValid()) { sm.egress_spec = 2; } else { sm.egress_spec = 1; }
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
