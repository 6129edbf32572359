/*
 * headers_tna.p4 -- Tofino-only additions to p4src/include/headers.p4.
 *
 * Why this file exists: on TNA ingress and egress are separate pipes, so the
 * per-packet results egress needs (queue, DLCP tags, thresholds) travel in a
 * bridged header prepended by the ingress deparser.  The wire headers
 * themselves are the shared ones.
 */
#ifndef _DLCP_HEADERS_TNA_P4_
#define _DLCP_HEADERS_TNA_P4_

header bridged_md_h {
    bit<1>   is_dlcp;
    bit<1>   has_thresholds;
    bit<2>   _pad0;
    bit<4>   msg_type;
    bit<3>   queue;
    bit<1>   _pad1;
    bit<4>   mag_class;
    bit<8>   flags;
    bit<5>   _pad2;
    qdepth_t drop_depth;
    bit<5>   _pad3;
    qdepth_t ecn_depth;
}

struct dlcp_tna_headers_t {
    bridged_md_h bridged_md;
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    ipv4_options_h ipv4_options;
    tcp_h        tcp;
    udp_h        udp;
    dlcp_h       dlcp;
}

struct dlcp_eg_metadata_t {
    bit<32> depth_index;     /* port*8 + queue */
    bit<7>  class_index;     /* queue*16 + mag_class */
}

#endif /* _DLCP_HEADERS_TNA_P4_ */
