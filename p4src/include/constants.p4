/*
 * constants.p4 -- every named number of the DLCP data plane, shared by the
 * v1model (BMv2) and TNA (Tofino) programs.
 *
 * Why this file exists: the wire format is defined once.  host_agent/protocol.py
 * holds the same values for Python, and tests/dataplane/test_protocol_agreement.py
 * parses this file and proves the two agree.  Keep every constant here as a
 * one-line `const bit<W> NAME = VALUE;` so that test can read it.
 * See docs/protocol.md for the meaning of each field.
 */
#ifndef _DLCP_CONSTANTS_P4_
#define _DLCP_CONSTANTS_P4_

/* ---- Ethernet / IPv4 ------------------------------------------------- */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_TCP   = 6;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<4>  IPV4_VERSION   = 4;
const bit<4>  IPV4_IHL_MIN   = 5;          /* 20 bytes, no options */
const bit<4>  IPV4_IHL_BELOW_4_MASK = 0xC;  /* ihl & mask == 0  <=>  ihl 0..3 */
const bit<32> IPV4_WORD_BITS = 32;          /* IHL counts 32-bit words */
const bit<2>  ECN_NOT_ECT    = 0;
const bit<2>  ECN_CE         = 3;

/* ---- DLCP wire format ------------------------------------------------- */
/* UDP destination port recognised as DLCP without any control-plane state.
 * The controller adds more ports at run time as entries of the ingress table
 * DlcpIngress.dlcp_udp_ports (docs/dataplane.md "Which UDP ports are DLCP"). */
const bit<16> DLCP_UDP_PORT_DEFAULT = 9290;
/* Bytes of the DLCP header (directly after the 8-byte UDP header). */
const bit<16> DLCP_HEADER_LEN = 24;
const bit<16> UDP_HEADER_LEN  = 8;
/* udp.length & UDP_LEN_BELOW_8_MASK == 0  <=>  udp.length < 8 (impossible);
 * udp.length & UDP_LEN_BELOW_DLCP_MASK == 0  <=>  udp.length < 8 + 24, i.e. the
 * datagram is too short to carry a DLCP header (parser select masks). */
const bit<16> UDP_LEN_BELOW_8_MASK = 0xFFF8;
const bit<16> UDP_LEN_BELOW_DLCP_MASK = 0xFFE0;
/* The only version this data plane understands; others are plain UDP. */
const bit<4>  DLCP_VERSION = 1;

/* msg_type (4 bits) */
const bit<4> DLCP_MSG_DATA    = 0;
const bit<4> DLCP_MSG_PROBE   = 1;
const bit<4> DLCP_MSG_BITMAP  = 2;
const bit<4> DLCP_MSG_DONE    = 3;
const bit<4> DLCP_MSG_CONTROL = 4;

/* flags (8 bits) */
const bit<8> DLCP_FLAG_CRITICAL    = 0x80;
const bit<8> DLCP_FLAG_LAST        = 0x40;
const bit<8> DLCP_FLAG_RETX        = 0x20;
const bit<8> DLCP_FLAG_PULL        = 0x10;
const bit<8> DLCP_FLAG_ECN_CAPABLE = 0x08;

/* dtype (4 bits): element type of a DATA payload */
const bit<4> DLCP_DTYPE_FLOAT32  = 0;
const bit<4> DLCP_DTYPE_FLOAT16  = 1;
const bit<4> DLCP_DTYPE_BFLOAT16 = 2;
const bit<4> DLCP_DTYPE_INT8     = 3;

/* classes */
const bit<3> DLCP_LAYER_CLASS_MAX = 7;   /* most urgent (front layers) */
const bit<4> DLCP_MAG_CLASS_MAX   = 15;  /* largest magnitudes */

/* ---- queues ------------------------------------------------------------ */
/* Strict-priority egress queues per port; 7 is served first. */
#define DLCP_NUM_QUEUES 8
#define DLCP_QUEUE_SHIFT 3          /* index = port * 8 + queue */
#define DLCP_MAG_CLASS_SHIFT 4      /* index = queue * 16 + mag_class */
const bit<3> DLCP_DEFAULT_QUEUE = 0;
/* DSCP mirror of the queue: class selector CS<queue> = queue << 3. */
const bit<3> DSCP_CS_SHIFT = 3;

/* ---- queue depth (BMv2/p4sim: counted) ---------------------------------- */
/* Default of the keyless table DlcpIngress.depth_settings.  BMv2/p4sim count
 * each queue's packets (docs/dataplane.md "Per-queue depth") and resync on
 * events, not on age, so the value is applied but unused there, as on
 * Tofino; kept so controllers written against the table keep working. */
const bit<32> DLCP_DEPTH_MAX_AGE_US_DEFAULT = 2000;
/* Default of DlcpEgress.port_drain (20 Mbit/s / (1500 B * 8)).  No target's
 * drop rule reads it any more (depths are counted, not derived from waits);
 * the table stays for the controller's API. */
const bit<32> DLCP_PORT_DRAIN_PPS_DEFAULT = 1666;
/* Per-queue capacity (packets) the traffic manager enforces: simple_switch's
 * and p4sim's default, and the policy's queue_depth.  Ingress does not count
 * a packet into a queue the counts say is full, because the TM is about to
 * tail-drop it; a different real capacity is corrected by egress (clamp to
 * the port's occupancy, resync when the port is empty). */
const bit<32> DLCP_QUEUE_CAPACITY_DEFAULT = 64;
/* v1model: the egress_spec mark_to_drop sets (BMv2 and p4sim drop it) */
const bit<9> DLCP_V1MODEL_DROP_PORT = 511;
/* Counts are bit<32> and wrap; a difference above this is negative (more
 * dequeued than counted in: a counting race) and reads as 0. */
const bit<32> DLCP_COUNT_NEGATIVE = 0x7FFFFFFF;

/* ---- malformed counter indices ------------------------------------------ */
const bit<32> MALFORMED_TRUNCATED = 0;  /* too short for the DLCP header */
const bit<32> MALFORMED_BAD_LENGTH = 1; /* udp.length != 8 + 24 + count*elem */
const bit<32> MALFORMED_BAD_DTYPE = 2;  /* dtype not in 0..3 */
const bit<32> MALFORMED_BAD_IPV4 = 3;   /* IPv4 version != 4 or IHL < 5 */

/* ---- ports -------------------------------------------------------------- */
/* BMv2 CPU port (simple_switch_grpc --cpu-port 255); Tofino overrides it. */
#ifndef DLCP_CPU_PORT
#define DLCP_CPU_PORT 255
#endif

#endif /* _DLCP_CONSTANTS_P4_ */
