/* Clone and recirculation through the switch's traffic manager.
 * From port 1: forwarded to 2, and an ingress-to-egress clone (session 5) marked with source MAC
 * 00:00:00:00:00:cc. From port 2: sent towards 1, recirculated at egress keeping meta.passes (field
 * list 0), then forwarded to 3 with TTL = passes + 1.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> identification;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
struct metadata_t { @field_list(0) bit<8> passes; }
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }

parser CrParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}

control CrVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CrIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (std.instance_type == 4) {
            meta.passes = meta.passes + 1;
            hdr.ipv4.ttl = meta.passes;
            std.egress_spec = 3;
        } else if (std.ingress_port == 1) {
            std.egress_spec = 2;
            clone(CloneType.I2E, 5);
        } else if (std.ingress_port == 2) {
            meta.passes = 7;
            std.egress_spec = 1;
        } else {
            mark_to_drop(std);
        }
    }
}

control CrEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (std.ingress_port == 2 && meta.passes == 7) {   // first pass only (BMv2 resets instance_type)
            recirculate_preserving_field_list(0);
        }
        if (std.instance_type == 1) {
            hdr.ethernet.src = 0x0000000000cc;
        }
    }
}

control CrCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control CrDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}

V1Switch(CrParser(), CrVerify(), CrIngress(), CrEgress(), CrCompute(), CrDeparser()) main;
