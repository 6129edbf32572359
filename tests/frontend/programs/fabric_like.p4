/* A fabric-style v1model program exercising a broad slice of the language: header stacks
 * (MPLS), header unions (IPv4/IPv6), value sets, varbit options, serializable enums, tuples,
 * every v1model table feature (lpm/ternary/range/optional keys, const entries with priorities,
 * action selectors, direct counters and meters) and most v1model externs. */
#include <core.p4>
#include <v1model.p4>

#define MPLS_DEPTH 3
#define CPU_PORT 255
#if defined(CPU_PORT) && CPU_PORT > 128
const bit<9> CPU = CPU_PORT;
#else
#error "bad CPU port"
#endif

typedef bit<48> mac_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
type bit<32> next_id_t;

enum bit<16> EtherType {
    IPV4 = 0x0800,
    IPV6 = 0x86dd,
    MPLS = 0x8847,
    VLAN = 0x8100
}

enum FwdType { BRIDGING, UNICAST_V4, MPLS_POP }

error { BadIhl, BadMplsDepth }

header ethernet_t { mac_t dst; mac_t src; bit<16> eth_type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> eth_type; }
header mpls_t { bit<20> label; bit<3> tc; bit<1> bos; bit<8> ttl; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset; bit<8> ttl;
    bit<8> protocol; bit<16> hdr_checksum; ipv4_addr_t src; ipv4_addr_t dst;
}
header ipv4_options_t { varbit<320> options; }
header ipv6_t {
    bit<4> version; bit<8> traffic_class; bit<20> flow_label; bit<16> payload_len;
    bit<8> next_hdr; bit<8> hop_limit; ipv6_addr_t src; ipv6_addr_t dst;
}
header_union ip_t { ipv4_t v4; ipv6_t v6; }
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> checksum; }

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }

struct headers_t {
    packet_in_t packet_in;
    ethernet_t ethernet;
    vlan_t vlan;
    mpls_t[MPLS_DEPTH] mpls;
    ip_t ip;
    ipv4_options_t ipv4_options;
    udp_t udp;
}

struct fwd_meta_t {
    FwdType fwd_type;
    next_id_t next_id;
    bit<16> l4_sport;
    bit<16> l4_dport;
    bit<32> hash;
    bit<2> color;
    bool skip_forwarding;
}

struct metadata_t {
    fwd_meta_t fwd;
    @field_list(1)
    bit<9> ingress_port;
    bit<8> mpls_depth;
}

struct digest_t { mac_t src; bit<9> port; }

parser FabricParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    value_set<bit<16>>(4) special_udp_ports;

    state start {
        meta.ingress_port = std_meta.ingress_port;
        meta.mpls_depth = 0;
        transition select(std_meta.ingress_port) {
            CPU: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.advance(16);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.eth_type) {
            EtherType.VLAN: parse_vlan;
            EtherType.MPLS: parse_mpls;
            EtherType.IPV4: parse_ipv4;
            EtherType.IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.eth_type) {
            0x8847: parse_mpls;
            0x0800: parse_ipv4;
            0x0000 .. 0x05ff: accept;
            _: accept;
        }
    }
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        meta.mpls_depth = meta.mpls_depth + 1;
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: parse_after_mpls;
        }
    }
    state parse_after_mpls {
        verify(hdr.mpls.lastIndex < MPLS_DEPTH, error.BadMplsDepth);
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_ipv4;
            6: parse_ipv6;
            default: reject;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ip.v4);
        verify(hdr.ip.v4.ihl >= 5, error.BadIhl);
        transition select(hdr.ip.v4.ihl) {
            5: dispatch_l4;
            default: parse_ipv4_options;
        }
    }
    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ip.v4.ihl - 5) * 32));
        transition dispatch_l4;
    }
    state dispatch_l4 {
        transition select(hdr.ip.v4.frag_offset, hdr.ip.v4.protocol) {
            (0, 17): parse_udp;
            (0 &&& 0x1fff, 6 .. 7): accept;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ip.v6);
        transition select(hdr.ip.v6.next_hdr) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        meta.fwd.l4_sport = hdr.udp.sport;
        meta.fwd.l4_dport = hdr.udp.dport;
        transition select(hdr.udp.dport) {
            special_udp_ports: accept;
            default: accept;
        }
    }
}

control FabricVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ip.v4.isValid() && hdr.ip.v4.ihl == 5,
            { hdr.ip.v4.version, hdr.ip.v4.ihl, hdr.ip.v4.dscp, hdr.ip.v4.ecn,
              hdr.ip.v4.total_len, hdr.ip.v4.identification, hdr.ip.v4.flags,
              hdr.ip.v4.frag_offset, hdr.ip.v4.ttl, hdr.ip.v4.protocol,
              hdr.ip.v4.src, hdr.ip.v4.dst },
            hdr.ip.v4.hdr_checksum, HashAlgorithm.csum16);
    }
}

bit<16> swap_bytes(in bit<16> x) {
    return x[7:0] ++ x[15:8];
}

control Filtering(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) ingress_port_vlan_counter;

    action deny() {
        meta.fwd.skip_forwarding = true;
        ingress_port_vlan_counter.count();
    }
    action permit() {
        ingress_port_vlan_counter.count();
    }

    @name("ingress_port_vlan")
    table ingress_port_vlan {
        key = {
            sm.ingress_port : exact @name("ig_port");
            hdr.vlan.isValid() : exact @name("vlan_is_valid");
            hdr.vlan.vid : ternary @name("vlan_id");
        }
        actions = { deny; permit; }
        const default_action = deny();
        counters = ingress_port_vlan_counter;
        size = 1024;
    }

    apply {
        ingress_port_vlan.apply();
    }
}

control Forwarding(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<2>>(MeterType.bytes) fwd_meter;

    action set_next_id(next_id_t next_id) {
        meta.fwd.next_id = next_id;
        fwd_meter.read(meta.fwd.color);
    }
    @hidden
    action nop() { }

    table routing_v4 {
        key = { hdr.ip.v4.dst : lpm @name("ipv4_dst"); }
        actions = { set_next_id; @defaultonly nop; }
        default_action = nop();
        meters = fwd_meter;
        size = 1 << 12;
    }

    action pop_mpls_and_next(next_id_t next_id) {
        hdr.mpls.pop_front(1);
        meta.fwd.next_id = next_id;
    }

    table mpls {
        key = { hdr.mpls[0].label : exact @name("mpls_label"); }
        actions = { pop_mpls_and_next; @defaultonly nop; }
        const default_action = nop();
    }

    action set_fwd_type(FwdType t) { meta.fwd.fwd_type = t; }

    table fwd_classifier {
        key = {
            sm.ingress_port : optional @name("ig_port");
            hdr.ethernet.eth_type : ternary @name("eth_type");
            meta.fwd.l4_dport : range @name("l4_dport");
        }
        actions = { set_fwd_type; }
        const default_action = set_fwd_type(FwdType.BRIDGING);
        const entries = {
            (_, 0x0800 &&& 0xffff, _) : set_fwd_type(FwdType.UNICAST_V4);
            priority = 100: (1, 0x8847 &&& 0xffff, 0 .. 1023) : set_fwd_type(FwdType.MPLS_POP);
            (_, _, 4789) : set_fwd_type(FwdType.UNICAST_V4);
        }
    }

    apply {
        switch (fwd_classifier.apply().action_run) {
            set_fwd_type: {
                if (meta.fwd.fwd_type == FwdType.UNICAST_V4 && hdr.ip.v4.isValid()) {
                    routing_v4.apply();
                } else if (meta.fwd.fwd_type == FwdType.MPLS_POP) {
                    if (!mpls.apply().hit) {
                        exit;
                    }
                }
            }
        }
    }
}

control Next(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w1024, 32w16) ecmp_selector;
    counter(16, CounterType.packets) next_counter;
    register<bit<32>>(64) flow_bytes;
    meter(8, MeterType.packets) port_meter;

    action output(bit<9> port_num) {
        sm.egress_spec = port_num;
    }
    action set_mcast_group(bit<16> gid) {
        sm.mcast_grp = gid;
    }

    table hashed {
        key = {
            meta.fwd.next_id : exact @name("next_id");
            hdr.ip.v4.dst : selector;
            hdr.ip.v4.src : selector;
            meta.fwd.l4_sport : selector;
        }
        actions = { output; @tableonly set_mcast_group; NoAction; }
        implementation = ecmp_selector;
        const default_action = NoAction();
    }

    apply {
        hash(meta.fwd.hash, HashAlgorithm.crc32, 32w0,
             { hdr.ip.v4.src, hdr.ip.v4.dst, hdr.ip.v4.protocol, meta.fwd.l4_sport,
               meta.fwd.l4_dport }, 32w65536);
        hashed.apply();
        next_counter.count((bit<32>) sm.egress_spec[3:0]);
        bit<32> bytes;
        flow_bytes.read(bytes, meta.fwd.hash[5:0] ++ 26w0 >> 26);
        bytes = bytes |+| sm.packet_length;
        flow_bytes.write((bit<32>)meta.fwd.hash[5:0], bytes);
        port_meter.execute_meter((bit<32>)sm.ingress_port[2:0], meta.fwd.color);
        if (meta.fwd.color == V1MODEL_METER_COLOR_RED) {
            mark_to_drop(sm);
        }
    }
}

control FabricIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t sm) {
    Filtering() filtering;
    Forwarding() forwarding;
    Next() next;

    apply {
        if (hdr.ethernet.eth_type == EtherType.IPV4 && !hdr.ip.v4.isValid()) {
            log_msg("ipv4 ethertype without header on port {}", {sm.ingress_port});
        }
        filtering.apply(hdr, meta, sm);
        if (!meta.fwd.skip_forwarding) {
            forwarding.apply(hdr, meta, sm);
            next.apply(hdr, meta, sm);
        }
        if (sm.ingress_port == CPU) {
            digest<digest_t>(1, { hdr.ethernet.src, sm.ingress_port });
        }
        if (hdr.ip.v4.isValid() && hdr.ip.v4.ttl == 0) {
            clone_preserving_field_list(CloneType.I2E, 32w100, 1);
        }
        if (sm.instance_type == 0 && hdr.udp.isValid() && hdr.udp.dport == 9999) {
            resubmit_preserving_field_list(1);
        }
        sm.priority = (bit<3>) hdr.vlan.pcp;
        hdr.udp.checksum = swap_bytes(hdr.udp.checksum);
    }
}

control FabricEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.ingress_port;
            hdr.packet_in._pad = 0;
            exit;
        }
        if (hdr.mpls[0].isValid()) {
            hdr.mpls[0].ttl = hdr.mpls[0].ttl |-| 1;
        } else if (meta.fwd.fwd_type == FwdType.MPLS_POP) {
            hdr.mpls.push_front(1);
            hdr.mpls[0].setValid();
            hdr.mpls[0] = { 20w100, 3w0, 1w1, 8w64 };
        }
        if (hdr.ip.v4.isValid()) {
            hdr.ip.v4.ttl = hdr.ip.v4.ttl > 1 ? hdr.ip.v4.ttl - 1 : 8w0;
            hdr.ip.v4.dscp = (bit<6>)(sm.enq_qdepth > 100 ? 6w46 : 6w0);
            hdr.ip.v4.ecn = sm.deq_qdepth[18:17] | (bit<2>)(sm.deq_timedelta > 1000 ? 1w1 : 1w0);
        }
        if (sm.egress_rid != 0) {
            hdr.ethernet.src = (mac_t) sm.egress_global_timestamp;
        }
        truncate(1500);
    }
}

control FabricComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ip.v4.isValid(),
            { hdr.ip.v4.version, hdr.ip.v4.ihl, hdr.ip.v4.dscp, hdr.ip.v4.ecn,
              hdr.ip.v4.total_len, hdr.ip.v4.identification, hdr.ip.v4.flags,
              hdr.ip.v4.frag_offset, hdr.ip.v4.ttl, hdr.ip.v4.protocol,
              hdr.ip.v4.src, hdr.ip.v4.dst },
            hdr.ip.v4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid() && hdr.ip.v4.isValid(),
            { hdr.ip.v4.src, hdr.ip.v4.dst, 8w0, hdr.ip.v4.protocol, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control FabricDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.udp);
    }
}

V1Switch(FabricParser(), FabricVerifyChecksum(), FabricIngress(), FabricEgress(),
         FabricComputeChecksum(), FabricDeparser()) main;
