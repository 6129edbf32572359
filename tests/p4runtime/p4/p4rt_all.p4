/* A v1model program with one table per match kind and every P4Runtime-visible object:
 * controller packet-in/out headers, an action selector, indirect and direct counters and meters,
 * a register, a digest, clone sessions and multicast groups. The P4Runtime tests program it
 * through p4runtime-shell and raw stubs and check the packets it forwards. */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 64;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
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
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
}

struct learn_t {
    bit<48> srcAddr;
    bit<9>  port;
}

struct metadata_t {
    bit<16> flow_hash;
}

parser MyParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    counter(8, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    meter(8, MeterType.bytes) port_meter;
    register<bit<32>>(16) last_seen;
    action_selector(HashAlgorithm.crc16, 32w128, 32w16) ecmp_selector;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    action set_mcast(bit<16> group) {
        standard_metadata.mcast_grp = group;
    }
    action acl_forward(bit<9> port) {
        standard_metadata.egress_spec = port;
        acl_counter.count();
    }
    action acl_drop() {
        mark_to_drop(standard_metadata);
        acl_counter.count();
    }
    action learn() {
        digest<learn_t>(1, { hdr.ethernet.srcAddr, standard_metadata.ingress_port });
    }

    table l2_exact {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; set_mcast; to_cpu; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; drop; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    table acl_ternary {
        key = {
            hdr.ipv4.srcAddr: ternary;
            hdr.ipv4.protocol: ternary;
        }
        actions = { acl_forward; acl_drop; NoAction; }
        counters = acl_counter;
        default_action = NoAction();
        size = 256;
    }
    table port_range {
        key = { hdr.ipv4.totalLen: range; }
        actions = { forward; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table ttl_optional {
        key = {
            hdr.ipv4.ttl: optional;
            standard_metadata.ingress_port: exact;
        }
        actions = { learn; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table ecmp {
        key = {
            hdr.ipv4.dstAddr: exact;
            hdr.ipv4.srcAddr: selector;
        }
        actions = { forward; NoAction; }
        implementation = ecmp_selector;
        size = 64;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        port_counter.count((bit<32>) standard_metadata.ingress_port);
        l2_exact.apply();
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
            acl_ternary.apply();
            port_range.apply();
            ttl_optional.apply();
            ecmp.apply();
            last_seen.write((bit<32>) standard_metadata.ingress_port, hdr.ipv4.srcAddr);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
