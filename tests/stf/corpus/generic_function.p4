// generic functions: type arguments inferred from the arguments or given explicitly; one
// specialisation per type-argument list, each with its own widths (wrap-around differs)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<16> d;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

// values of a type variable can only be moved (p4c refuses operators on them)
T pick<T>(in bool first, in T x, in T y) {
    if (first) {
        return x;
    }
    return y;
}

T id<T>(in T x) {
    return x;
}

void swap<T>(inout T x, inout T y) {
    T t = x;
    x = y;
    y = t;
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
        hdr.h.a = pick(hdr.h.a > hdr.h.b, hdr.h.a, hdr.h.b);
        hdr.h.b = id(hdr.h.b) + 1;
        hdr.h.c = id<bit<16>>(hdr.h.c) + 1;
        swap(hdr.h.c, hdr.h.d);
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
