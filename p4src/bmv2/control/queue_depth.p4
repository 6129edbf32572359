/*
 * queue_depth.p4 (v1model) -- the per (port, queue) depth register and the
 * egress code that records it and repeats the selective-drop check.
 *
 * Why this file exists: v1model ingress cannot see queue depths, so egress
 * writes the dequeue depth of every packet into queue_depth_reg and
 * ingress (selective_drop.p4) reads the last value for the packet's
 * (egress port, queue).  Declared at top level so both controls share it.
 * The controller only reads it (p4sim; BMv2's P4Runtime cannot read
 * registers).
 */

/* index port*8 + queue; value = last deq_qdepth seen for that queue */
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

        /* Safety net: the register is one packet stale; the enqueue depth
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
