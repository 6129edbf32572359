/*
 * parser.p4 (v1model) -- DlcpParser and DlcpDeparser.
 *
 * Why this file exists: it is the only place that knows the header order
 * on the wire.  Parse graph:
 *   [packet_out if from the CPU port] -> ethernet -> ipv4 [-> options]
 *   (version 4, IHL >= 5; L4 only for a first or only fragment) -> tcp | udp
 *   -> dlcp when the UDP payload starts with DLCP's version and is long
 *   enough for a DLCP header.
 * The parser does not know which UDP ports carry DLCP: that is the
 * controller's table DlcpIngress.dlcp_udp_ports (validate.p4).  A DLCP-shaped
 * header on another port is parsed but left alone: the deparser emits its
 * bytes unchanged, so it stays ordinary payload (docs/dataplane.md "Which UDP
 * ports are DLCP").  Verdicts the validator needs (malformed IPv4, a UDP
 * payload too short for DLCP) go to metadata; a packet shorter than its own
 * headers ends in reject with PacketTooShort, and BMv2 (and p4sim) still
 * hand it to ingress with standard_metadata.parser_error set, where it is
 * dropped (and counted when it was DLCP).
 */

parser DlcpParser(packet_in packet,
                  out dlcp_headers_t hdr,
                  inout dlcp_metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

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
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (IPV4_VERSION, IPV4_IHL_MIN): parse_ipv4_l4;
            (IPV4_VERSION, 0 &&& IPV4_IHL_BELOW_4_MASK): ipv4_bad;
            (IPV4_VERSION, IPV4_IHL_MIN - 1): ipv4_bad;
            (IPV4_VERSION, _): parse_ipv4_options;
            default: ipv4_bad;
        }
    }

    /* Version != 4 or IHL < 5: validate.p4 drops and counts it. */
    state ipv4_bad {
        meta.ipv4_bad = 1;
        transition accept;
    }

    state parse_ipv4_options {
        packet.extract(hdr.ipv4_options,
                       ((bit<32>)(hdr.ipv4.ihl - IPV4_IHL_MIN)) * IPV4_WORD_BITS);
        transition parse_ipv4_l4;
    }

    /* L4 only for first (or only) fragments. */
    state parse_ipv4_l4 {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.length) {
            0 &&& UDP_LEN_BELOW_8_MASK: dlcp_short;   /* impossible length */
            UDP_HEADER_LEN: dlcp_short;               /* empty payload */
            0 &&& UDP_LEN_BELOW_DLCP_MASK: peek_short_version;
            default: parse_dlcp_version;
        }
    }

    /* 1..23 payload bytes: too short for DLCP; remember it when the payload
     * starts with DLCP's version (malformed on a DLCP port, else plain UDP). */
    state peek_short_version {
        transition select(packet.lookahead<bit<4>>()) {
            DLCP_VERSION: dlcp_short;
            default: accept;
        }
    }

    state dlcp_short {
        meta.dlcp_short = 1;
        transition accept;
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
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
        packet.emit(hdr.dlcp);
    }
}
