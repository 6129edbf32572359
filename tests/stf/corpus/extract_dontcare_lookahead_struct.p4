// extract<T>(_) skips a T (PacketTooShort when it does not fit); lookahead<S>() of a struct
// splits the bits field by field, first field in the most significant bits
#include <core.p4>
#include <v1model.p4>

header skip_t {
    bit<16> x;
}
header h_t {
    bit<8> a;
    bit<8> b;
}
struct peek_t {
    bit<4> hi;
    bit<12> lo;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract<skip_t>(_);
        peek_t p = pkt.lookahead<peek_t>();
        transition select(p.hi) {
            0xf: accept;
            default: parse_h;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) {
            mark_to_drop(sm);
        } else if (hdr.h.isValid()) {
            hdr.h.b = hdr.h.a;
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
