/*
 * stats.p4 (TNA) -- per (port, queue) transmit counters, same name and
 * index (port*8 + queue) as on BMv2.
 *
 * Why this file exists: what left on which queue is the operator's first
 * question under congestion; the controller reads DlcpEgress.port_queue_tx.
 */

control PortQueueStats(in dlcp_tna_headers_t hdr,
                       in egress_intrinsic_metadata_t eg_intr_md) {

    @name(".DlcpEgress.port_queue_tx")
    Counter<bit<64>, bit<12>>(PORT_QUEUE_CELLS, CounterType_t.PACKETS_AND_BYTES) port_queue_tx;

    apply {
        port_queue_tx.count(eg_intr_md.egress_port ++ hdr.bridged_md.queue);
    }
}
