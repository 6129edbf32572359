// int<8> ++ int<8> is int<16> (signedness of the left operand; p4c refuses int ++ bit, so the
// right operand is cast); negative literal casts
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
        int<8> a = (int<8>)hdr.h.a;
        int<16> c = a ++ (int<8>)hdr.h.b;   // p4c refuses int ++ bit without the cast
        hdr.h.c = (bit<16>)c;
        hdr.h.x = (bit<32>)(int<32>)c;
        hdr.h.b = (bit<8>)-1;
        hdr.h.y = (bit<32>)(bit<8>)-1;
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
