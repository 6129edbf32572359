// compound assignments (p4c: `a op= b` is `a = a op b`)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<8>  d;
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
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.a += 0x10;
        hdr.h.a |+|= 0xf0;
        hdr.h.b -= 2;
        hdr.h.b ^= 0x0f;
        hdr.h.c <<= 4;
        hdr.h.c >>= 1;
        hdr.h.c |= 1;
        bit<8> n = 0;
        // five rounds, written out: p4c 1.2.5's BMv2 back end runs a for loop's body only once
        // (loops are exercised in for_loops.p4, a named BMv2 limitation)
        n *= 2; n += 1;
        n *= 2; n += 1;
        n *= 2; n += 1;
        n *= 2; n += 1;
        n *= 2; n += 1;
        hdr.h.d = n;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
