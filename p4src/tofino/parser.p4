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

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        /* every dlcp_metadata_t field, in order: Tofino does not zero metadata */
        meta = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false};
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
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (IPV4_VERSION, IPV4_IHL_MIN): parse_ipv4_checked;
            (IPV4_VERSION, 0 &&& IPV4_IHL_BELOW_4_MASK): ipv4_bad;
            (IPV4_VERSION, IPV4_IHL_MIN - 1): ipv4_bad;
            (IPV4_VERSION, _): parse_ipv4_options;
            default: ipv4_bad;
        }
    }

    /* Version != 4 or IHL < 5: DlcpValidate drops and counts it. */
    state ipv4_bad {
        meta.ipv4_bad = 1;
        transition accept;
    }

    /* The checksum covers the options too (docs/protocol.md). */
    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options,
                    ((bit<32>)(hdr.ipv4.ihl - IPV4_IHL_MIN)) * IPV4_WORD_BITS);
        ipv4_checksum.add(hdr.ipv4_options);
        transition parse_ipv4_checked;
    }

    state parse_ipv4_checked {
        /* Tofino's Checksum.verify() is the parser's checksum ERROR flag: true when the
         * header checksum is wrong (Intel's tna_checksum and switch.p4 use it so). */
        meta.ipv4_checksum_err = ipv4_checksum.verify();
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }

    /* Same UDP/DLCP graph as p4src/bmv2/parser.p4: which ports are DLCP is
     * decided in DlcpValidate by the table DlcpIngress.dlcp_udp_ports. */
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.length) {
            0 &&& UDP_LEN_BELOW_8_MASK: dlcp_short;
            UDP_HEADER_LEN: dlcp_short;
            0 &&& UDP_LEN_BELOW_DLCP_MASK: peek_short_version;
            default: parse_dlcp_version;
        }
    }

    state peek_short_version {
        transition select(pkt.lookahead<bit<4>>()) {
            DLCP_VERSION: dlcp_short;
            default: accept;
        }
    }

    state dlcp_short {
        meta.dlcp_short = 1;
        transition accept;
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
                  hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options });
        }
        pkt.emit(hdr.bridged_md);
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
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

    /* Only well-formed IPv4 reaches egress (ingress dropped IHL < 5). */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            IPV4_IHL_MIN: accept;
            default: parse_ipv4_options;
        }
    }

    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options,
                    ((bit<32>)(hdr.ipv4.ihl - IPV4_IHL_MIN)) * IPV4_WORD_BITS);
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
                  hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_options.options });
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
    }
}
