/* Traffic-manager probe for p4sim switch tests.
 * Ingress: ports 1 and 3 forward to 2, 2 forwards to 1; priority = IPv4 DSCP's top 3 bits.
 * Egress: UDP packets to port 9999 carry a probe header the egress fills with the queueing
 * metadata BMv2 exposes, so a test can compare what the program saw with the queue it built.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> identification;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}
header udp_t { bit<16> src_port; bit<16> dst_port; bit<16> length; bit<16> checksum; }
header probe_t {
    bit<32> seq; bit<32> enq_timestamp; bit<32> enq_qdepth; bit<32> deq_qdepth;
    bit<32> deq_timedelta; bit<32> qid; bit<32> egress_port;
}

struct metadata_t { @alias("queueing_metadata.qid") bit<5> qid; }
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; udp_t udp; probe_t probe; }

parser ProbeParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 17: parse_udp; default: accept; }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) { 9999: parse_probe; default: accept; }
    }
    state parse_probe { pkt.extract(hdr.probe); transition accept; }
}

control ProbeVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ProbeIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    action forward(bit<9> port) { std.egress_spec = port; }
    action drop() { mark_to_drop(std); }
    table port_forward {
        key = { std.ingress_port: exact; }
        actions = { forward; drop; }
        default_action = drop();
        const entries = { 1 : forward(2); 2 : forward(1); 3 : forward(2); }
    }
    apply {
        port_forward.apply();
        if (hdr.ipv4.isValid()) {
            std.priority = hdr.ipv4.diffserv[7:5];
        }
    }
}

control ProbeEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply {
        if (hdr.probe.isValid()) {
            hdr.probe.enq_timestamp = std.enq_timestamp;
            hdr.probe.enq_qdepth = (bit<32>) std.enq_qdepth;
            hdr.probe.deq_qdepth = (bit<32>) std.deq_qdepth;
            hdr.probe.deq_timedelta = std.deq_timedelta;
            hdr.probe.qid = (bit<32>) meta.qid;
            hdr.probe.egress_port = (bit<32>) std.egress_port;
            hdr.udp.checksum = 0;
        }
    }
}

control ProbeCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ProbeDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.probe);
    }
}

V1Switch(ProbeParser(), ProbeVerify(), ProbeIngress(), ProbeEgress(), ProbeCompute(),
         ProbeDeparser()) main;
