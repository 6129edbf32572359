// a table keyed on isValid(), entries written with the call spelling hdr.t.isValid() (issue 14)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<32> x;
    bit<32> y;
}
header t_t {
    bit<8> v;
}

struct headers_t {
    h_t h;
    t_t t;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: parse_t;
            default: accept;
        }
    }
    state parse_t {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table t {
        key = { hdr.t.isValid(): exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {  }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h);
        pkt.emit(hdr.t); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
