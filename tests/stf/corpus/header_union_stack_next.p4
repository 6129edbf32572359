// a stack of header unions: extracting into s.next.a advances the stack's next index, so two
// extracts fill s[0] and s[1] (P4_16 spec: header union stacks)
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8> v;
}
header b_t {
    bit<16> w;
}
header_union u_t {
    a_t a;
    b_t b;
}
struct headers_t {
    u_t[3] s;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.s.next.a);
        pkt.extract(hdr.s.next.a);
        transition select(hdr.s[1].a.v) {
            0xBB: third_b;
            default: accept;
        }
    }
    state third_b {
        pkt.extract(hdr.s.next.b);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.s[0].a.isValid() && hdr.s[1].a.isValid()) {
            hdr.s[0].a.v = hdr.s[0].a.v + hdr.s[1].a.v;
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
