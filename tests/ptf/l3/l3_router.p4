/* A small IPv4 router for the PTF suite: longest-prefix match to a next hop (port, MAC),
 * source MAC rewrite, TTL decrement with checksum update; drops non-IPv4, TTL <= 1 and misses.
 * Routes are const entries, so the suite needs no control plane and runs unchanged on BMv2.
 */
#include <core.p4>
#include <v1model.p4>

const bit<48> ROUTER_MAC = 0x02_00_00_00_00_fe;

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> identification;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
struct metadata_t { }
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }

parser RouterParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}

control RouterVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouterIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action drop() { mark_to_drop(std); }
    action set_nhop(bit<48> dmac, bit<9> port) {
        hdr.ethernet.src = ROUTER_MAC;
        hdr.ethernet.dst = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        std.egress_spec = port;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_nhop; drop; }
        default_action = drop();
        const entries = {
            0x0a000100 &&& 0xffffff00 : set_nhop(0x02_00_00_00_01_01, 1);
            0x0a000200 &&& 0xffffff00 : set_nhop(0x02_00_00_00_02_02, 2);
            0x0a000203 &&& 0xffffffff : set_nhop(0x02_00_00_00_03_03, 3);
        }
    }
    apply {
        if (!hdr.ipv4.isValid() || std.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
            drop();
        } else {
            ipv4_lpm.apply();
        }
    }
}

control RouterEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

control RouterCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouterDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}

V1Switch(RouterParser(), RouterVerify(), RouterIngress(), RouterEgress(), RouterCompute(),
         RouterDeparser()) main;
