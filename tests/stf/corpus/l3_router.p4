// an IPv4 router: parse, LPM next hop, MAC rewrite, TTL decrement, checksum update; non-IPv4 passes
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
header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}
header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t ip;
}

struct meta_t {
    bit<8> unused;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ip);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {  }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action set_nhop(bit<48> dmac, bit<48> smac, bit<9> port) {
        hdr.eth.dst = dmac;
        hdr.eth.src = smac;
        hdr.ip.ttl = hdr.ip.ttl - 1;
        sm.egress_spec = port;
    }
    table ipv4_lpm {
        key = { hdr.ip.dstAddr: lpm; }
        actions = { set_nhop; drop; }
        default_action = drop();
    }
    apply {
        if (hdr.ip.isValid()) {
            ipv4_lpm.apply();
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    
    apply {  }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply { update_checksum(hdr.ip.isValid(), { hdr.ip.version, hdr.ip.ihl, hdr.ip.diffserv, hdr.ip.totalLen, hdr.ip.identification,
              hdr.ip.flags, hdr.ip.fragOffset, hdr.ip.ttl, hdr.ip.protocol, hdr.ip.srcAddr, hdr.ip.dstAddr }, hdr.ip.hdrChecksum, HashAlgorithm.csum16); }
}

control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth);
        pkt.emit(hdr.ip); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
