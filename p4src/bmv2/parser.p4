/*
 * parser.p4 (v1model) -- DlcpParser and DlcpDeparser.
 *
 * Why this file exists: it is the only place that knows the header order
 * on the wire.  Parse graph:
 *   [packet_out if from the CPU port] -> ethernet -> ipv4 (ihl == 5 and not a
 *   non-first fragment) -> tcp | udp -> dlcp when the UDP destination port is
 *   DLCP's and the first nibble says version 1.
 * A DLCP packet too short for its header ends in reject with
 * PacketTooShort; BMv2 (and p4sim) still hand it to ingress with
 * standard_metadata.parser_error set, where it is counted and dropped.
 */

parser DlcpParser(packet_in packet,
                  out dlcp_headers_t hdr,
                  inout dlcp_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    /* UDP destination ports that carry DLCP.  Installed by the controller
     * (dlcpctl, from the network YAML; 9290 by default) so a site can move
     * DLCP to another port without recompiling. */
    value_set<bit<16>>(DLCP_UDP_PORTS_SIZE) dlcp_udp_ports;

    state start {
        transition select(standard_metadata.ingress_port) {
            DLCP_CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        /* L4 only for option-less, first (or only) fragments. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (IPV4_IHL_MIN, 0, IP_PROTO_TCP): parse_tcp;
            (IPV4_IHL_MIN, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            dlcp_udp_ports: parse_dlcp_version;
#ifndef DLCP_PORT_FROM_CONTROLLER_ONLY
            DLCP_UDP_PORT_DEFAULT: parse_dlcp_version;
#endif
            default: accept;
        }
    }

    /* Peek at the version nibble: an unknown version stays plain UDP. */
    state parse_dlcp_version {
        transition select(packet.lookahead<bit<4>>()) {
            DLCP_VERSION: parse_dlcp;
            default: accept;
        }
    }

    state parse_dlcp {
        packet.extract(hdr.dlcp);
        transition accept;
    }
}

control DlcpDeparser(packet_out packet, in dlcp_headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.dlcp);
    }
}
