// copy-in/copy-out (P4_16 spec 6.8) with aliasing: an action that names the caller's header
// directly while it also has it as an inout parameter works on a copy that is written back at the
// end; the same header passed twice to a control is two copies, written back left to right
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
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

control Two(inout h_t x, inout h_t y) {
    apply {
        x.a = 7;
        y.b = x.a;
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Two() two;
    action touch(inout h_t hh) {
        hh.b = 5;
        hdr.h.c = hh.b;
        hdr.h.d = hdr.h.b;
    }
    apply {
        if (hdr.h.a == 1) {
            touch(hdr.h);
        } else {
            two.apply(hdr.h, hdr.h);
        }
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
