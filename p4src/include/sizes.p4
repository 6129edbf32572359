/*
 * sizes.p4 -- table, register and counter sizes, in one place, for both targets.
 *
 * Why this file exists: sizes are deployment choices, not logic; keeping them
 * together lets an operator resize the program without reading the controls.
 */
#ifndef _DLCP_SIZES_P4_
#define _DLCP_SIZES_P4_

#define IPV4_ROUTES_SIZE      16384  /* room for 10,000+ routes (controller benchmark) */
#define NEXTHOPS_SIZE         1024
#define ECMP_GROUPS_SIZE      256
#define ECMP_MEMBERS_SIZE     4096   /* groups * members per group */
#define ECMP_MAX_MEMBERS      16     /* members per group (Tofino selector) */
#define PRIORITY_MAP_SIZE     256
#define DROP_THRESHOLDS_SIZE  128    /* 8 queues * 16 magnitude classes */
#define DLCP_UDP_PORTS_SIZE   4      /* table DlcpIngress.dlcp_udp_ports */
#define PORT_DRAIN_SIZE       512    /* DlcpEgress.port_drain: one entry per port */

#define PORT_CELLS            512    /* one cell per 9-bit port number */
#define PORT_QUEUE_CELLS      4096   /* 512 ports * 8 queues, index port*8+queue */
#define QUEUE_MAG_CELLS       128    /* 8 queues * 16 classes, index queue*16+mag */
#define MALFORMED_CELLS       4      /* truncated, bad length, bad dtype, spare */

#endif /* _DLCP_SIZES_P4_ */
