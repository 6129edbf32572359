// extern instances as constructor arguments: two instances of a control given the same
// register and counter share their state
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
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

control Acc(inout bit<8> x)(register<bit<8>> r, counter c) {
    apply {
        bit<8> v;
        r.read(v, 0);
        v = v + x;
        r.write(0, v);
        x = v;
        c.count(1);
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(1) total;
    counter(2, CounterType.packets) calls;
    Acc(total, calls) first;
    Acc(total, calls) second;
    apply {
        first.apply(hdr.h.a);
        second.apply(hdr.h.b);
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
