/* v1model "special operations": resubmit, recirculate and clones selected with macros on
 * instance_type, a top-level action bound to standard_metadata in actions lists, a sub-control
 * with an out parameter, and parser/control-local constants. */
#include <core.p4>
#include <v1model.p4>

const bit<32> INSTANCE_NORMAL = 0;
const bit<32> INSTANCE_I2E = 1;
const bit<32> INSTANCE_E2E = 2;
const bit<32> INSTANCE_RECIRC = 4;
const bit<32> INSTANCE_RESUBMIT = 6;
#define IS_KIND(sm, kind) (sm.instance_type == INSTANCE_##kind)

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
    bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header cpu_t { bit<32> word0; bit<32> word1; }
struct fwd_t { bit<32> l2ptr; bit<24> out_bd; }
struct meta_t { fwd_t fwd; }
struct headers_t { cpu_t cpu; ethernet_t ethernet; ipv4_t ipv4; }

action my_drop(inout standard_metadata_t smeta) {
    mark_to_drop(smeta);
}

parser ParserImpl(packet_in packet, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t standard_metadata) {
    const bit<16> ETHERTYPE_IPV4 = 16w0x0800;
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etype) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control fill_address(out bit<32> addr, in bit<8> b0, in bit<8> b1, in bit<8> b2, in bit<8> b3) {
    apply {
        addr = b0 ++ b1 ++ b2 ++ b3;
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    fill_address() c_fill;
    const bit<32> RESUBMITTED_L2PTR = 0xe50b;

    action set_l2ptr(bit<32> l2ptr) { meta.fwd.l2ptr = l2ptr; }
    action do_resubmit(bit<32> new_dst) {
        hdr.ipv4.dst = new_dst;
        resubmit({});
    }
    action do_clone_i2e(bit<32> l2ptr) {
        clone3(CloneType.I2E, 5, {});
        meta.fwd.l2ptr = l2ptr;
    }
    table ipv4_da_lpm {
        key = { hdr.ipv4.dst: lpm; }
        actions = { set_l2ptr; do_resubmit; do_clone_i2e; my_drop(standard_metadata); }
        default_action = my_drop(standard_metadata);
    }
    apply {
        if (IS_KIND(standard_metadata, RESUBMIT)) {
            c_fill.apply(hdr.ipv4.src, 10, 252, 129, 2);
            meta.fwd.l2ptr = RESUBMITTED_L2PTR;
        } else {
            ipv4_da_lpm.apply();
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t standard_metadata) {
    action do_recirculate(bit<32> new_dst) {
        hdr.ipv4.dst = new_dst;
        recirculate({});
    }
    action do_clone_e2e(bit<48> smac) {
        hdr.ethernet.src = smac;
        clone3(CloneType.E2E, 11, {});
    }
    table send_frame {
        key = { meta.fwd.out_bd: exact; }
        actions = { do_recirculate; do_clone_e2e; my_drop(standard_metadata); }
        default_action = my_drop(standard_metadata);
    }
    apply {
        if (IS_KIND(standard_metadata, I2E)) {
            hdr.cpu.setValid();
            hdr.cpu.word0 = 0x012e012e;
        } else if (!IS_KIND(standard_metadata, E2E)) {
            send_frame.apply();
        }
    }
}

control DeparserImpl(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr); }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
