/*
 * packetio.p4 (v1model) -- controller packet I/O over the CPU port.
 *
 * Why this file exists: P4Runtime PacketOut/PacketIn carry a small header
 * (packet_out / packet_in, @controller_header) that only this file
 * interprets.  A PacketOut is sent straight to the port it names, bypassing
 * routing; a packet routed to the CPU port gets a packet_in header saying
 * where it came from.
 */

control PacketIoIngress(inout dlcp_headers_t hdr,
                        inout dlcp_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = hdr.packet_out.egress_port;
        hdr.packet_out.setInvalid();
    }
}

control PacketIoEgress(inout dlcp_headers_t hdr,
                       in standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == DLCP_CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}
