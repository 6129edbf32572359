/*
 * validate.p4 (TNA) -- DLCP well-formedness checks and the malformed counter;
 * copies the DLCP tags into metadata.  Same rules as p4src/bmv2/control/validate.p4.
 *
 * Why this file exists: malformed DLCP is dropped and counted, never
 * forwarded half-understood (docs/protocol.md).  Reading parser_err here
 * also tells bf-p4c not to drop parser-error packets silently in the parser.
 * Note: Tofino pads frames to 64 bytes, so a DLCP header cut short inside
 * the padding parses "fine" and is caught by the length rule instead.
 * Which UDP ports are DLCP: DLCP_UDP_PORT_DEFAULT and the controller's
 * entries in dlcp_udp_ports (a table, not a parser value_set, so P4Runtime
 * can write it; docs/dataplane.md).
 */

control DlcpValidate(inout dlcp_tna_headers_t hdr,
                     inout dlcp_metadata_t meta,
                     in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                     inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {

    /* 0 truncated, 1 bad length, 2 bad dtype, 3 bad IPv4 header */
    @name(".DlcpIngress.malformed")
    Counter<bit<64>, bit<2>>(MALFORMED_CELLS, CounterType_t.PACKETS_AND_BYTES) malformed;

    bit<32> payload;

    action reject_malformed(bit<2> reason) {
        meta.drop = 1;
        ig_dprsr_md.drop_ctl = 1;
        malformed.count(reason);
    }

    @name(".DlcpIngress.dlcp_port")
    action dlcp_port() { }

    /* UDP destination ports carrying DLCP besides DLCP_UDP_PORT_DEFAULT.
     * Installed by the controller (dlcpctl: the policy's dlcp_udp_ports). */
    @name(".DlcpIngress.dlcp_udp_ports")
    table dlcp_udp_ports {
        key = {
            hdr.udp.dst_port : exact @name("udp_dst_port");
        }
        actions = {
            dlcp_port;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = DLCP_UDP_PORTS_SIZE;
    }

    apply {
        bool on_dlcp_port = false;
        if (hdr.udp.isValid()) {
            if (dlcp_udp_ports.apply().hit) {
                on_dlcp_port = true;
            }
#ifndef DLCP_PORT_FROM_CONTROLLER_ONLY
            if (hdr.udp.dst_port == DLCP_UDP_PORT_DEFAULT) {
                on_dlcp_port = true;
            }
#endif
        }
        if (meta.ipv4_bad == 1) {
            reject_malformed((bit<2>)MALFORMED_BAD_IPV4);
            return;
        }
        if (ig_prsr_md.parser_err != PARSER_ERROR_OK) {
            if (on_dlcp_port && !hdr.dlcp.isValid()) {
                reject_malformed((bit<2>)MALFORMED_TRUNCATED);
            } else {
                meta.drop = 1;
                ig_dprsr_md.drop_ctl = 1;
            }
            return;
        }
        if (meta.ipv4_checksum_err) {
            meta.drop = 1;                  /* corrupt IPv4 header */
            ig_dprsr_md.drop_ctl = 1;
            return;
        }
        if (hdr.tcp.isValid()) {
            meta.l4_src_port = hdr.tcp.src_port;
            meta.l4_dst_port = hdr.tcp.dst_port;
        } else if (hdr.udp.isValid()) {
            meta.l4_src_port = hdr.udp.src_port;
            meta.l4_dst_port = hdr.udp.dst_port;
        }
        if (!on_dlcp_port) {
            return;                 /* not DLCP; a DLCP-shaped header stays payload */
        }
        if (meta.dlcp_short == 1) {
            reject_malformed((bit<2>)MALFORMED_TRUNCATED);
            return;
        }
        if (!hdr.dlcp.isValid()) {
            return;                 /* unknown version: plain UDP */
        }
        meta.is_dlcp = 1;
        meta.msg_type = hdr.dlcp.msg_type;
        meta.layer_class = hdr.dlcp.layer_class;
        meta.mag_class = hdr.dlcp.mag_class;
        meta.flags = hdr.dlcp.flags;
        if (hdr.dlcp.msg_type == DLCP_MSG_DATA) {
            payload = (bit<32>)hdr.dlcp.count;
            if (hdr.dlcp.dtype == DLCP_DTYPE_FLOAT32) {
                payload = payload << 2;
            } else if (hdr.dlcp.dtype == DLCP_DTYPE_FLOAT16
                    || hdr.dlcp.dtype == DLCP_DTYPE_BFLOAT16) {
                payload = payload << 1;
            } else if (hdr.dlcp.dtype != DLCP_DTYPE_INT8) {
                reject_malformed((bit<2>)MALFORMED_BAD_DTYPE);
                return;
            }
            if ((bit<32>)hdr.udp.length
                    != (bit<32>)(UDP_HEADER_LEN + DLCP_HEADER_LEN) + payload) {
                reject_malformed((bit<2>)MALFORMED_BAD_LENGTH);
            }
        }
    }
}
