/*
 * headers.p4 -- the ONE definition of every header the DLCP programs parse,
 * plus the header and metadata structs both targets share.
 *
 * Why this file exists: the BMv2 and Tofino programs must agree bit for bit
 * on the wire format (docs/protocol.md).  Target-specific metadata (TNA
 * bridged metadata) lives in the target directory, never here.
 */
#ifndef _DLCP_HEADERS_P4_
#define _DLCP_HEADERS_P4_

#include "constants.p4"

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  dlcp_port_t;     /* physical port id (BMv2 and Tofino 1/2) */
typedef bit<19> qdepth_t;        /* queue depth in packets (cells on Tofino) */

/* Controller packet I/O: prepended to packets sent to / received from the
 * CPU port.  Names and widths are part of the control API. */
@controller_header("packet_in")
header packet_in_h {
    dlcp_port_t ingress_port;
    bit<7>      _pad;
}

@controller_header("packet_out")
header packet_out_h {
    dlcp_port_t egress_port;
    bit<7>      _pad;
}

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* IPv4 options: (ihl - 5) 32-bit words, at most 40 bytes.  Carried through
 * unchanged; the header checksum covers them (docs/protocol.md). */
header ipv4_options_h {
    varbit<320> options;
}

header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* The DLCP header: 24 bytes, network byte order, right after UDP.
 * docs/protocol.md is the normative description of every field. */
header dlcp_h {
    bit<4>  version;      /* 1; other versions are forwarded as plain UDP */
    bit<4>  msg_type;     /* DLCP_MSG_* */
    bit<3>  layer_class;  /* 7 = front layers (most urgent) */
    bit<1>  reserved0;
    bit<4>  mag_class;    /* 15 = largest magnitudes */
    bit<8>  flags;        /* DLCP_FLAG_* */
    bit<4>  dtype;        /* DLCP_DTYPE_* */
    bit<4>  reserved1;
    bit<16> job_id;
    bit<16> worker_id;
    bit<32> iteration;
    bit<16> tensor_id;
    bit<16> count;        /* elements in this packet (DATA) */
    bit<32> offset;       /* element offset of the first element */
    bit<32> seq;          /* per-sender packet sequence: spraying entropy */
}

struct dlcp_headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    ipv4_options_h ipv4_options;
    tcp_h        tcp;
    udp_h        udp;
    dlcp_h       dlcp;
}

/* Per-packet state computed in ingress.  Flags are bit<1> (not bool) so they
 * can be table keys and be bridged to the Tofino egress pipe unchanged. */
struct dlcp_metadata_t {
    /* parsed DLCP view, zero for non-DLCP packets (table keys) */
    bit<1>      is_dlcp;
    bit<4>      msg_type;
    bit<3>      layer_class;
    bit<4>      mag_class;
    bit<8>      flags;
    /* L4 ports for the ECMP hash, zero when neither TCP nor UDP */
    bit<16>     l4_src_port;
    bit<16>     l4_dst_port;
    /* routing */
    bit<1>      drop;
    bit<1>      has_nexthop;
    bit<1>      use_group;
    bit<16>     nexthop_id;
    bit<16>     group_id;
    bit<8>      ecmp_num_members;
    bit<1>      ecmp_spray;
    bit<8>      ecmp_member_index;
    /* queueing and selective dropping */
    bit<3>      queue;
    bit<1>      has_thresholds;
    qdepth_t    drop_depth;
    qdepth_t    ecn_depth;
    qdepth_t    observed_depth;
    bit<32>     depth_max_age_us;   /* DlcpIngress.depth_settings */
    /* parser verdicts, read by DlcpValidate */
    bit<1>      ipv4_bad;          /* IPv4 version != 4 or IHL < 5: malformed */
    bit<1>      dlcp_short;        /* UDP payload empty, or starting with DLCP's
                                    * version but shorter than a DLCP header */
    /* Tofino: parser's IPv4 checksum verdict (BMv2 uses checksum_error) */
    bool        ipv4_checksum_err;
}

#endif /* _DLCP_HEADERS_P4_ */
