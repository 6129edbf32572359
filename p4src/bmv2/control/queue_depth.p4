/*
 * queue_depth.p4 (v1model) -- the depth registers, the egress code that
 * records them and the egress repeat of the selective-drop check.
 *
 * Why this file exists: v1model ingress cannot see queue depths, so egress
 * writes the dequeue depth of every packet it sends, and ingress
 * (selective_drop.p4) reads the last value for the packet's egress port.
 *
 * The depth BMv2 (and p4sim) report in enq_qdepth/deq_qdepth is the whole
 * PORT's occupancy, all priority queues together, so it is recorded per
 * port: every packet dequeued on the port refreshes it, whatever its queue.
 * It is stamped with egress_global_timestamp, and ingress treats a record
 * older than DlcpIngress.depth_settings' max age as 0: a port that drained
 * while nothing was sent on it must not keep dropping the packets that
 * would have refreshed it (the black hole a per (port, queue) record made).
 * Declared at top level so both controls share them.  The controller only
 * reads them (p4sim; BMv2's P4Runtime cannot read registers).
 */

/* index port; value = deq_qdepth of the last packet dequeued on the port */
register<qdepth_t>(PORT_CELLS) port_depth_reg;
/* index port; value = egress_global_timestamp (us) of that update */
register<bit<48>>(PORT_CELLS) port_depth_ts_reg;
/* index port*8 + queue; value = last deq_qdepth seen by a packet of that
 * queue.  Observability only (what the controller's stats show per queue):
 * nothing drops on it, because it goes stale when the queue goes quiet. */
register<qdepth_t>(PORT_QUEUE_CELLS) queue_depth_reg;

control QueueDepthRecord(inout dlcp_headers_t hdr,
                         inout dlcp_metadata_t meta,
                         inout standard_metadata_t standard_metadata) {

    /* index queue*16 + mag_class */
    @name(".DlcpEgress.egress_safety_drops")
    counter(QUEUE_MAG_CELLS, CounterType.packets_and_bytes) egress_safety_drops;

    apply {
        bit<32> depth_index = ((bit<32>)standard_metadata.egress_port << DLCP_QUEUE_SHIFT)
                              + (bit<32>)meta.queue;
        queue_depth_reg.write(depth_index, (qdepth_t)standard_metadata.deq_qdepth);
        bit<32> port_index = (bit<32>)standard_metadata.egress_port;
        port_depth_reg.write(port_index, (qdepth_t)standard_metadata.deq_qdepth);
        port_depth_ts_reg.write(port_index, standard_metadata.egress_global_timestamp);

        /* Safety net: the register is one packet stale (or aged out); the enqueue depth
         * is exact.  Same rule as ingress, same thresholds (carried in
         * metadata from the ingress drop_thresholds lookup). */
        if (meta.has_thresholds == 1
                && meta.msg_type == DLCP_MSG_DATA
                && (meta.flags & DLCP_FLAG_CRITICAL) == 0
                && (qdepth_t)standard_metadata.enq_qdepth > meta.drop_depth) {
            meta.drop = 1;
            mark_to_drop(standard_metadata);
            egress_safety_drops.count(((bit<32>)meta.queue << DLCP_MAG_CLASS_SHIFT)
                                      + (bit<32>)meta.mag_class);
        }
    }
}
