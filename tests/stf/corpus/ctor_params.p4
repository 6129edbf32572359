// controls and parsers with constructor parameters: compile-time values and a control-typed
// parameter; two instances given the same control instance share its state (one counter)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

control step_t(inout bit<8> x);

control Add(inout bit<8> x)(bit<8> k, bool twice) {
    apply {
        x = x + k;
        if (twice) {
            x = x + k;
        }
    }
}

control Count(inout bit<8> x) {
    bit<8> seen = 0;
    register<bit<8>>(1) calls;
    apply {
        calls.read(seen, 0);
        seen = seen + 1;
        calls.write(0, seen);
        x = x ^ seen;
    }
}

control Twice(inout bit<8> x)(step_t s) {
    apply {
        s.apply(x);
        s.apply(x);
    }
}

parser Sub(packet_in pkt, out h_t h)(bit<8> mark) {
    state start {
        pkt.extract(h);
        h.c = mark;
        transition accept;
    }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub(0x5a) sub;
    state start {
        sub.apply(pkt, hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Add(3, false) add3;
    Add(5, true) add10;
    Count() count;
    Twice(count) t1;
    Twice(count) t2;
    apply {
        add3.apply(hdr.h.a);
        add10.apply(hdr.h.a);
        t1.apply(hdr.h.b);
        t2.apply(hdr.h.b);
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
