/*
 * validate.p4 (v1model) -- DLCP well-formedness checks and the malformed
 * counter.
 *
 * Why this file exists: docs/protocol.md promises that malformed DLCP
 * (truncated header, impossible length, unknown dtype) is dropped and
 * counted, never forwarded half-understood.  It also copies the DLCP tags
 * into metadata, zero for non-DLCP packets, so later tables key on
 * well-defined values.  It decides which UDP packets are DLCP at all: those
 * to DLCP_UDP_PORT_DEFAULT and to the ports the controller installs in
 * dlcp_udp_ports (a table, not a parser value_set: P4Runtime servers of
 * BMv2 and Tofino do not write value sets; docs/dataplane.md).
 */

control DlcpValidate(inout dlcp_headers_t hdr,
                     inout dlcp_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    /* 0 truncated, 1 bad length, 2 bad dtype, 3 bad IPv4 header */
    @name(".DlcpIngress.malformed")
    counter(MALFORMED_CELLS, CounterType.packets_and_bytes) malformed;

    action reject_malformed(bit<32> reason) {
        meta.drop = 1;
        mark_to_drop(standard_metadata);
        malformed.count(reason);
    }

    @name(".DlcpIngress.dlcp_port")
    action dlcp_port() { }

    /* UDP destination ports carrying DLCP besides DLCP_UDP_PORT_DEFAULT
     * (which needs no entry unless built with -DDLCP_PORT_FROM_CONTROLLER_ONLY).
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
            reject_malformed(MALFORMED_BAD_IPV4);
            return;
        }
        if (standard_metadata.parser_error != error.NoError) {
            /* A DLCP port's datagram cut short before or inside the DLCP
             * header: truncated DLCP.  Other parser errors (truncated
             * IPv4/L4, a UDP length beyond the frame) are dropped too. */
            if (on_dlcp_port && !hdr.dlcp.isValid()) {
                reject_malformed(MALFORMED_TRUNCATED);
            } else {
                meta.drop = 1;
                mark_to_drop(standard_metadata);
            }
            return;
        }
        if (standard_metadata.checksum_error == 1) {
            meta.drop = 1;                  /* corrupt IPv4 header */
            mark_to_drop(standard_metadata);
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
            reject_malformed(MALFORMED_TRUNCATED);
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
            bit<32> payload = (bit<32>)hdr.dlcp.count;
            if (hdr.dlcp.dtype == DLCP_DTYPE_FLOAT32) {
                payload = payload << 2;
            } else if (hdr.dlcp.dtype == DLCP_DTYPE_FLOAT16
                    || hdr.dlcp.dtype == DLCP_DTYPE_BFLOAT16) {
                payload = payload << 1;
            } else if (hdr.dlcp.dtype != DLCP_DTYPE_INT8) {
                reject_malformed(MALFORMED_BAD_DTYPE);
                return;
            }
            if ((bit<32>)hdr.udp.length
                    != (bit<32>)(UDP_HEADER_LEN + DLCP_HEADER_LEN) + payload) {
                reject_malformed(MALFORMED_BAD_LENGTH);
            }
        }
    }
}
