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

// values of a type variable can only be moved (p4c refuses operators on them)
control Copy<T>(in T src, out T dst) {
    apply {
        dst = src;
    }
}

parser Keep<T>(packet_in p, in T v, out T o) {
    state start {
        o = v;
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Keep<bit<8>>() keep;
    state start {
        pkt.extract(hdr.h);
        keep.apply(pkt, hdr.h.a, meta.unused);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Copy<bit<8>>() copy8;
    Copy<bit<16>>() copy16;
    apply {
        copy8.apply(hdr.h.a + 1, hdr.h.a);
        copy16.apply(hdr.h.c + 1, hdr.h.c);
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
