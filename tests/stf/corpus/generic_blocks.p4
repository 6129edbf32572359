// generic controls and parsers: each instantiation with its own type arguments is checked and
// generated separately (bit<8> wraps where bit<16> does not)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> c;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

control Inc<T>(inout T x) {
    apply {
        x = x + 1;
    }
}

parser Take<H>(packet_in p, out H h) {
    state start {
        p.extract(h);
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Take<h_t>() take;
    state start {
        take.apply(pkt, hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inc<bit<8>>() inc8;
    Inc<bit<16>>() inc16;
    apply {
        inc8.apply(hdr.h.a);
        inc16.apply(hdr.h.c);
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
