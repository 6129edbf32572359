/*
 * stats.p4 (v1model) -- per (port, queue) transmit counters.
 *
 * Why this file exists: the operator's first question under congestion is
 * "what left on which queue"; the controller reads DlcpEgress.port_queue_tx
 * and compares it with what hosts sent.
 */

control PortQueueStats(in dlcp_metadata_t meta,
                       in standard_metadata_t standard_metadata) {

    /* index port*8 + queue; counts packets that leave the switch */
    @name(".DlcpEgress.port_queue_tx")
    counter(PORT_QUEUE_CELLS, CounterType.packets_and_bytes) port_queue_tx;

    apply {
        port_queue_tx.count(((bit<32>)standard_metadata.egress_port << DLCP_QUEUE_SHIFT)
                            + (bit<32>)meta.queue);
    }
}
