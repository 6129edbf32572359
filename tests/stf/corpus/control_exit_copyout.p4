// `exit` in a sub-control still copies its out/inout arguments back, in parameter order (P4_16
// spec 12.5 and 6.8). simple_switch 1.15.5 (p4c 1.2.5) drops the copy-out (a named BMv2 bug).
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

control Sub(inout bit<8> x, inout headers_t hh) {
    apply {
        x = x + 1;
        headers_t tmp = hh;
        tmp.h.d = 0x44;
        hh = tmp;
        if (x == 2) {
            exit;
        }
        x = 0xff;
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action set_and_exit(inout bit<8> v, out bit<8> w) {
        v = 3;
        w = 4;
        exit;
    }
    apply {
        if (hdr.h.a == 0) {
            set_and_exit(hdr.h.b, hdr.h.c);
        } else {
            sub.apply(hdr.h.a, hdr);
        }
        hdr.h.d = 0x99;
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
