// action parameters with default values: a direct call may omit (or name away) a defaulted
// argument; table entries and default actions must give every action-data value (p4c rejects them)
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

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_sum(bit<8> v, bit<8> w = 7) {
        hdr.h.b = v + w;
    }
    table t {
        key = { hdr.h.a: exact; }
        actions = { set_sum; NoAction; }
        const entries = {
            2: set_sum(1, 1);
        }
        default_action = NoAction();
    }
    apply {
        if (hdr.h.a == 1) {
            set_sum(1);            // direct call: w takes its default
        } else if (hdr.h.a == 3) {
            set_sum(v = 2);        // named argument, w defaulted
        } else {
            t.apply();             // table entries give every action-data value (p4c requires it)
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
