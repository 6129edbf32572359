// varbit: two-argument extract with a run-time size, emitted back
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
header l_t {
    bit<8> len;
}
header v_t {
    varbit<64> data;
}

struct headers_t {
    h_t h;
    l_t l;
    v_t v;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.l);
        pkt.extract(hdr.v, (bit<32>)hdr.l.len * 8);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {
        sm.egress_spec = 1;
        hdr.h.a = 0x77;
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
        pkt.emit(hdr.l);
        pkt.emit(hdr.v); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
