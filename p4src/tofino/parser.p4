/*
 * parser.p4 (TNA) -- ingress/egress parsers and deparsers.
 *
 * Why this file exists: the only place that knows header order on the wire
 * (same parse graph as p4src/bmv2/parser.p4) plus the TNA plumbing:
 * intrinsic metadata, port metadata, the bridged header between the pipes,
 * and the IPv4 checksum (TNA computes it in the deparsers).
 */

parser DlcpIngressParser(packet_in pkt,
                         out dlcp_tna_headers_t hdr,
                         out dlcp_metadata_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {

    Checksum() ipv4_checksum;

    /* Same P4Info name as on BMv2.  Installed by the controller. */
    @name(".DlcpParser.dlcp_udp_ports")
    value_set<bit<16>>(DLCP_UDP_PORTS_SIZE) dlcp_udp_ports;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        /* every dlcp_metadata_t field, in order: Tofino does not zero metadata */
        meta = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false};
        transition select(ig_intr_md.ingress_port) {
            DLCP_CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        meta.ipv4_checksum_err = !ipv4_checksum.verify();
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (IPV4_IHL_MIN, 0, IP_PROTO_TCP): parse_tcp;
            (IPV4_IHL_MIN, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            dlcp_udp_ports: parse_dlcp_version;
#ifndef DLCP_PORT_FROM_CONTROLLER_ONLY
            DLCP_UDP_PORT_DEFAULT: parse_dlcp_version;
#endif
            default: accept;
        }
    }

    state parse_dlcp_version {
        transition select(pkt.lookahead<bit<4>>()) {
            DLCP_VERSION: parse_dlcp;
            default: accept;
        }
    }

    state parse_dlcp {
        pkt.extract(hdr.dlcp);
        transition accept;
    }
}

control DlcpIngressDeparser(packet_out pkt,
                            inout dlcp_tna_headers_t hdr,
                            in dlcp_metadata_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update(
                { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                  hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                  hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                  hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.bridged_md);
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.dlcp);
    }
}

/* Egress sees the bridged header, then re-parses Ethernet/IPv4 (Tofino1
 * marks ECN in egress).  Nothing deeper is needed there. */
parser DlcpEgressParser(packet_in pkt,
                        out dlcp_tna_headers_t hdr,
                        out dlcp_eg_metadata_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged_md);
        meta = {0, 0};
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control DlcpEgressDeparser(packet_out pkt,
                           inout dlcp_tna_headers_t hdr,
                           in dlcp_eg_metadata_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update(
                { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                  hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                  hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                  hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}
