// for loops in actions and control apply blocks (P4_16 1.2.5): three-clause loops with break and
// continue, `return` from inside a loop in an action, for-in over a range and a header stack
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> n;
    bit<8> r1;
    bit<8> r2;
}
header e_t {
    bit<8> v;
}
struct headers_t {
    h_t h;
    e_t[3] s;
}
struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
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
    // sum of 1..n, skipping 3, stopping after 6
    action sum_skip() {
        hdr.h.r1 = 0;
        for (bit<8> i = 1; i <= hdr.h.n; i = i + 1) {
            if (i == 3) {
                continue;
            }
            if (i > 6) {
                break;
            }
            hdr.h.r1 = hdr.h.r1 + i;
        }
    }
    // nested loops, `return` from the inner one leaves the whole action
    action find_pair() {
        hdr.h.r1 = 0;
        hdr.h.r2 = 0;
        for (bit<8> i = 0; i < 8; i = i + 1) {
            for (bit<8> j = 0; j < 8; j = j + 1) {
                if (i * j == hdr.h.n) {
                    hdr.h.r1 = i;
                    hdr.h.r2 = j;
                    return;
                }
            }
        }
        hdr.h.r1 = 0xff;
    }
    table t {
        key = { hdr.h.op: exact; }
        actions = { sum_skip; find_pair; NoAction; }
        const entries = {
            1: sum_skip();
            2: find_pair();
        }
        default_action = NoAction();
    }
    apply {
        t.apply();
        if (hdr.h.op == 3) {
            bit<8> acc = 0;
            for (bit<8> k in 2 .. hdr.h.n) {
                acc = acc + k;
            }
            hdr.h.r1 = acc;
            bit<8> total = 0;
            for (e_t e in hdr.s) {
                total = total + e.v;
                e.v = 0;     // the loop variable is a copy
            }
            hdr.h.r2 = total;
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
