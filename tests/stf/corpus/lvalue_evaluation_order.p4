// evaluation order of an assignment (P4_16 spec 8.x): the left-hand side's index is evaluated
// once, before the right-hand side; a compound assignment evaluates its lvalue's side effects once
#include <core.p4>
#include <v1model.p4>

header e_t {
    bit<8> v;
}
struct headers_t {
    e_t[4] s;
}
struct meta_t {
    bit<8> n;
}

bit<2> next_index(inout bit<8> n) {
    n = n + 1;
    return (bit<2>)n;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.n = 0;
        // index first (n = 1, s[1]), then the right-hand side (n = 2): s[1].v = 2
        hdr.s[next_index(meta.n)].v = (bit<8>)next_index(meta.n);
        // the lvalue once (n = 3, s[3]): s[3].v = s[3].v | 0x80, and n ends at 3
        hdr.s[next_index(meta.n)].v |= 0x80;
        hdr.s[0].v = meta.n;
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
