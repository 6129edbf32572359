/*
 * packetio.p4 (TNA) -- controller packet I/O over the CPU port (PCIe port,
 * DLCP_CPU_PORT, 192 by default for a 2-pipe Tofino; override with -D).
 *
 * Why this file exists: same contract as on BMv2: a PacketOut goes straight
 * to the port its packet_out header names; a packet leaving on the CPU port
 * gets a packet_in header with its ingress port.  TNA difference: egress
 * cannot see the ingress port, so ingress adds packet_in once the route
 * chose the CPU port; both directions bypass egress (no bridged header,
 * no egress counters for controller traffic).
 */

control PacketIoIngress(inout dlcp_tna_headers_t hdr,
                        in ingress_intrinsic_metadata_t ig_intr_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    apply {
        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = hdr.packet_out.egress_port;
            ig_tm_md.bypass_egress = 1;
            hdr.packet_out.setInvalid();
        } else if (ig_tm_md.ucast_egress_port == DLCP_CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = ig_intr_md.ingress_port;
            hdr.packet_in._pad = 0;
            ig_tm_md.bypass_egress = 1;
        }
    }
}
